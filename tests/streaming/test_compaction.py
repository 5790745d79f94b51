"""Out-of-core compaction: the local engine's files, byte for byte, whatever the ranges of groups, the pieces
decoded at once, the row groups and the way rows were spread over batches and envelopes."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tableio import parquet as parquet_tables
from tableio.parquet import PART_FILE, write_tables
from state.tables import GROUP_TABLES, TABLES
from streaming import compaction, sink
from tests.simulations.scenarios.helpers import run, shipped_small


def rejects(lines: range) -> list[dict]:
    return [{"raw": f"not json {line}", "reason": "not a JSON object", "source": "events.jsonl", "line": line}
            for line in lines]


@pytest.fixture(scope="module", params=["rolling-restart-dynamic-eager", "offsets-expiry"])
def local(request):
    """A small shipped scenario's local run (offsets-expiry: group tombstones for the lag status)."""
    return run(shipped_small(request.param, {"*": {"groups": 5, "members": 3}}))


def write_batches(root, tables: dict[str, list[dict]], seed: int) -> None:
    """`tables` as a Spark run's committed batches would hold them: rows shuffled across groups, envelopes of
    1 to 100 rows, three committed batches of one or two part files each, and a batch that was not committed."""
    rng = random.Random(seed)
    envelopes: dict[tuple[int, str], list[list[dict]]] = {}
    for table, rows in tables.items():
        rows = rows[:]
        rng.shuffle(rows)
        while rows:
            size = rng.randint(1, 100)
            envelopes.setdefault((rng.randrange(3), table), []).append(rows[:size])
            rows = rows[size:]
    envelopes[(3, "responses")] = [tables["responses"][:5]]  # a batch killed before its commit
    for (batch_id, table), chunks in envelopes.items():
        folder = sink.table_folder(root, batch_id, table)
        folder.mkdir(parents=True)
        half = (len(chunks) + 1) // 2
        for part, part_chunks in enumerate([chunks[:half], chunks[half:]]):
            if part_chunks:
                pq.write_table(pa.table({
                    "group_id": pa.array([None] * len(part_chunks), pa.string()),
                    "rows": pa.array([len(c) for c in part_chunks], pa.int64()),
                    "payload": pa.array([sink.encode_table(table, c) for c in part_chunks], pa.binary()),
                }), folder / f"part-{part}.parquet")
    (root / sink.COMMITTED).write_text("0\n1\n2\n")


@pytest.mark.parametrize("range_rows, piece_envelopes, row_group_rows, lane_rows", [
    (10**9, 16, 1 << 20, 10**9),  # one range, as a small run compacts, in one process
    (100, 1, 64, 0),              # many ranges, one envelope per piece, many row groups; three tables in children
    (7, 3, 1000, 0),              # more ranges than groups
])
def test_the_local_engines_files_whatever_the_ranges(local, tmp_path, monkeypatch, range_rows, piece_envelopes,
                                                     row_group_rows, lane_rows):
    monkeypatch.setattr(parquet_tables, "ROW_GROUP_ROWS", row_group_rows)
    monkeypatch.setattr(compaction, "RANGE_ROWS", range_rows)
    monkeypatch.setattr(compaction, "PIECE_ENVELOPES", piece_envelopes)
    monkeypatch.setattr(compaction, "LANE_ROWS", lane_rows)
    monkeypatch.setattr(compaction.os, "cpu_count", lambda: 3)
    tables = dict(local.result.tables, rejects=rejects(range(1, 30)))
    write_tables(tmp_path / "local", tables)
    write_batches(tmp_path / "batches", {name: tables[name] for name in (*GROUP_TABLES, "rejects")}, seed=range_rows)
    group_ids = local.group_ids()
    rows = compaction.compact(tmp_path / "batches", tmp_path / "spark", group_ids[::-1], local.result.final_ts)
    assert rows == {name: len(tables[name]) for name in TABLES}
    # Every offsets-expiry group is gone (Burrow's NOTFOUND) at the end: no lag status there.
    assert local.result.tables["lag_status"] or local.scenario.name == "offsets-expiry"
    for name in TABLES:
        expected = (tmp_path / "local" / name / PART_FILE).read_bytes()
        assert (tmp_path / "spark" / name / PART_FILE).read_bytes() == expected, name
    assert not (tmp_path / "spark" / compaction.SPILL_DIR).exists()


def test_a_killed_compactions_spill_files_are_replaced(local, tmp_path, monkeypatch):
    monkeypatch.setattr(compaction, "RANGE_ROWS", 100)
    write_batches(tmp_path / "batches", {name: local.result.tables[name] for name in GROUP_TABLES}, seed=1)
    leftover = tmp_path / "spark" / compaction.SPILL_DIR / "responses"
    leftover.mkdir(parents=True)
    (leftover / "0.arrow").write_bytes(b"cut short")
    compaction.compact(tmp_path / "batches", tmp_path / "spark", local.group_ids(), local.result.final_ts)
    assert pq.read_table(tmp_path / "spark" / "responses" / PART_FILE).num_rows == len(local.result.tables["responses"])


def test_group_ranges_cut_sorted_ids_evenly_and_place_nulls_first():
    ranges = compaction.GroupRanges.cut([f"g{i}" for i in range(10)], 3)
    assert ranges.bounds == ["g3", "g6"] and ranges.count == 3
    ids = pa.chunked_array([["g0", None, "g3"], ["g9", "g5", "a", "h"]])
    assert ranges.of(ids).tolist() == [0, 0, 1, 2, 1, 0, 2]
    assert compaction.GroupRanges.cut(["g0"], 5).count == 1
    assert compaction.GroupRanges.cut([], 5).of(pa.chunked_array([[None, "x"]], pa.string())).tolist() == [0, 0]
