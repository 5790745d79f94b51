"""Writers: the exact schema of `state.tables`, every table always written, byte-identical reruns."""

from __future__ import annotations

import random

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tableio import parquet as parquet_tables
from tableio.parquet import (PART_FILE, OutputError, arrow_schema, read_table, rows_to_arrow, sort_table,
                                        write_arrow_tables, write_tables)
from state.tables import TABLES, columns


def offset_row(out_seq: int, group_id: str = "g", offset: int | None = 5) -> dict:
    return {"group_id": group_id, "topic": "t", "partition": 0, "offset": offset, "log_end_offset": None,
            "metadata": "", "leader_epoch": -1, "commit_ts": 10, "expire_ts": None, "topic_id": None, "write_ts": 10,
            "generation_id": 1, "member_id": "m", "coordinator_partition": 3, "coordinator_id": None,
            "repeat_count": 3, "repeat_interval_ms": 5_000, "records_per_second": 2.5, "rate_origin_ts": 1, "log_end_origin_ts": None,
            "out_seq": out_seq}


def generation_row(out_seq: int) -> dict:
    return {"group_id": "g", "generation_id": 1, "protocol_type": "consumer", "protocol_name": "range",
            "leader_id": "m", "members": [{"member_id": "m", "group_instance_id": None, "client_id": "c",
                                           "client_host": "/h"}],
            "member_count": 1, "rebalance_start_ts": 0, "join_complete_ts": 3, "stable_ts": None,
            "cause": "member_join", "coordinator_partition": 3, "coordinator_id": 2, "out_seq": out_seq}


def test_arrow_schema_follows_state_tables():
    schema = arrow_schema("responses")
    assert schema.names == columns("responses")
    assert schema.field("api_version").type == pa.int32()
    assert schema.field("skip_assignment").type == pa.bool_()
    assert schema.field("assignment").type == pa.list_(
        pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))]))
    assert schema.field("members").type.value_type.field("metadata").type == pa.binary()


def test_every_table_is_written_with_its_schema_even_when_empty(tmp_path):
    write_tables(tmp_path, {"offsets": [offset_row(0)]})
    for table in TABLES:
        data = pq.read_table(tmp_path / table / PART_FILE)
        assert data.schema.equals(arrow_schema(table)), table
        assert data.num_rows == (1 if table == "offsets" else 0)


def test_rows_are_sorted_and_nulls_survive(tmp_path):
    rows = [offset_row(2, "b"), offset_row(1, "a", offset=None), offset_row(0, "b")]
    write_tables(tmp_path, {"offsets": rows, "generations": [generation_row(0)]})
    offsets = read_table(tmp_path, "offsets")
    assert list(zip(offsets.group_id, offsets.out_seq)) == [("a", 1), ("b", 0), ("b", 2)]
    assert offsets.offset.isna().tolist() == [True, False, False]
    assert str(offsets.offset.dtype) == "Int64"
    generation = read_table(tmp_path, "generations").iloc[0]
    assert generation.members[0]["client_host"] == "/h"
    assert generation.stable_ts is pd.NA


def test_same_rows_in_any_order_give_identical_bytes(tmp_path):
    rows = [offset_row(i, f"g{i % 3}") for i in range(50)]
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    write_tables(tmp_path / "a", {"offsets": rows, "generations": [generation_row(60)]})
    write_tables(tmp_path / "b", {"offsets": shuffled, "generations": [generation_row(60)]})
    for table in TABLES:
        assert (tmp_path / "a" / table / PART_FILE).read_bytes() == (tmp_path / "b" / table / PART_FILE).read_bytes()


def test_arrow_tables_in_any_order_and_chunking_give_the_rows_bytes(tmp_path):
    rows = [offset_row(i, f"g{i % 3}", offset=None if i % 7 == 0 else i) for i in range(50)]
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    # Three chunks, as the Spark engine's compaction concatenates the executors' tables.
    chunked = pa.concat_tables([rows_to_arrow("offsets", shuffled[i:i + 20]) for i in range(0, 50, 20)])
    assert chunked["offset"].num_chunks == 3
    write_tables(tmp_path / "rows", {"offsets": rows, "generations": [generation_row(60)]})
    write_arrow_tables(tmp_path / "arrow", {"offsets": chunked, "generations": rows_to_arrow("generations", [generation_row(60)])})
    for table in TABLES:
        assert (tmp_path / "rows" / table / PART_FILE).read_bytes() == (tmp_path / "arrow" / table / PART_FILE).read_bytes()


def test_arrow_tables_must_have_the_contract_schema(tmp_path):
    with pytest.raises(ValueError, match="offsets: Arrow schema differs"):
        write_arrow_tables(tmp_path, {"offsets": pa.table({"group_id": ["g"]})})
    with pytest.raises(ValueError, match="not output tables"):
        write_arrow_tables(tmp_path, {"offset": rows_to_arrow("offsets", [])})


def test_rows_with_a_column_the_contract_lacks_are_a_bug():
    with pytest.raises(ValueError, match=r"offsets rows do not match state.tables: extra \['extra'\]"):
        rows_to_arrow("offsets", [dict(offset_row(0), extra=1)])


def test_stale_parts_of_an_earlier_run_are_removed(tmp_path):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "part-00001.parquet").write_bytes(b"old")
    write_tables(tmp_path, {})
    assert sorted(p.name for p in (tmp_path / "offsets").iterdir()) == [PART_FILE]


def test_unwritable_output_folder(tmp_path):
    (tmp_path / "file").write_text("in the way")
    with pytest.raises(OutputError, match="file is not a folder"):
        write_tables(tmp_path / "file", {})
    # The system says only "Not a directory"; the message names the file in the way.
    with pytest.raises(OutputError, match=f"output folder {tmp_path}/file/out/deeper: {tmp_path}/file is not a folder"):
        write_tables(tmp_path / "file" / "out" / "deeper", {})


def test_a_row_that_breaks_the_contract_is_a_bug_not_a_silent_null(tmp_path):
    with pytest.raises(ValueError, match=r"extra \['surprise'\]"):
        write_tables(tmp_path, {"offsets": [dict(offset_row(0), surprise=1)]})


@pytest.mark.parametrize("sizes", [[100], [1, 99], [13, 0, 40, 47], [64, 36]])
def test_a_part_file_has_the_same_bytes_whatever_pieces_its_rows_came_in(tmp_path, monkeypatch, sizes):
    monkeypatch.setattr(parquet_tables, "ROW_GROUP_ROWS", 16)
    rows = sort_table("offsets", rows_to_arrow("offsets", [offset_row(i) for i in range(100)]))
    write_arrow_tables(tmp_path / "whole", {"offsets": rows})
    with parquet_tables.PartFileWriter(tmp_path / "pieces", "offsets") as writer:
        start = 0
        for size in sizes:
            writer.write(rows.slice(start, size))
            start += size
    assert writer.rows == 100
    written = tmp_path / "pieces" / "offsets" / PART_FILE
    assert written.read_bytes() == (tmp_path / "whole" / "offsets" / PART_FILE).read_bytes()
    metadata = pq.read_metadata(written)
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [16] * 6 + [4]
