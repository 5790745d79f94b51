"""Validation one range of groups at a time gives the result of one range over the whole run: every check,
passing or failing, on a run with defects in several ranges (a clean run validating is test_validate's)."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from simulations.cli import main
from tableio.parquet import PART_FILE
from simulations import group_ranges as ranges_module
from simulations.group_ranges import WHOLE, GroupRange, group_ranges
from simulations.validation import validate
from simulations.validation.raw_tables import read_range
from state.tables import TABLES


FLEET = """\
name: fleet
duration: 4m
seed: 3
broker:
  group.initial.rebalance.delay.ms: 1000
group_sets:
  - name: orders
    groups: 6
    members: 3
    topics: [{name: orders, partitions: 6, records_per_second: 20}]
  - name: audit
    groups: 2
    members: 2
    membership: static
    topics: [{name: audit, partitions: 2}]
    assignors: [cooperative-sticky]
timeline:
  - {at: 30s, action: rolling_restart, target: orders, downtime: 5s, gap: 10s}
  - {at: 1m, action: crash, target: audit, restart_after: 20s}
"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fleet")
    (folder / "fleet.yaml").write_text(FLEET)
    result = CliRunner().invoke(main, ["run", str(folder / "fleet.yaml"), "--out", str(folder / "run"),
                                       "--engine", "local", "--no-report", "--no-validate"])
    assert result.exit_code == 0, result.output
    return folder / "run"


def _events(run):
    return [run / "scenario" / "events.jsonl"]


def _ranged(monkeypatch, run, **options):
    """The validation in the fewest ranges of groups above two (each range a round of great-expectations
    runs: seconds apiece, so no more than the test needs)."""
    largest = max(pq.read_metadata(run / table / PART_FILE).num_rows for table in TABLES)
    for parts in range(3, largest + 1):
        monkeypatch.setattr(ranges_module, "ROWS_PER_RANGE", -(-largest // parts))
        if len(group_ranges(run)) > 2:
            break
    assert len(group_ranges(run)) > 2
    return validate(run, **options)


def _whole(monkeypatch, run, **options):
    monkeypatch.setattr(ranges_module, "ROWS_PER_RANGE", 10**9)
    assert group_ranges(run) == [WHOLE]
    return validate(run, **options)


def _rewrite(run, table: str, change) -> None:
    path = run / table / PART_FILE
    pq.write_table(change(pq.read_table(path)), path, row_group_size=7)  # several row groups to choose from


def _set_rows(data: pa.Table, column: str, rows: list[int], value) -> pa.Table:
    values = data[column].to_pylist()
    for row in rows:
        values[row] = value
    return data.set_column(data.schema.get_field_index(column), column, pa.array(values, data.schema.field(column).type))


def test_ranges_cover_every_row_once(fleet, monkeypatch, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(fleet, run)
    # Rows without a group (a defect) belong to the first range; several row groups per file.
    _rewrite(run, "generations", lambda t: _set_rows(t, "group_id", [5], None))
    monkeypatch.setattr(ranges_module, "ROWS_PER_RANGE", 40)
    ranges = group_ranges(run)
    assert len(ranges) > 2 and ranges[0].lo is None and ranges[-1].hi is None
    assert all(a.hi == b.lo for a, b in zip(ranges, ranges[1:]))
    for table in TABLES:
        whole = pq.read_table(run / table / PART_FILE).num_rows
        assert sum(len(read_range(run, r)[0][table]) for r in ranges) == whole, table
    assert read_range(run, ranges[0])[0]["generations"]["group_id"].isna().sum() == 1


def test_rejects_are_read_whole_with_the_first_range(tiny_run):
    assert len(read_range(tiny_run, GroupRange(None, "a"))[0]["rejects"]) == 1
    later = read_range(tiny_run, GroupRange("a", None))[0]
    assert later["rejects"].empty and list(later["rejects"].columns) == ["raw", "reason", "source", "line"]


def test_defects_in_several_ranges_add_up(fleet, monkeypatch, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(fleet, run)
    responses = pq.read_table(run / "responses" / PART_FILE)
    spread = [responses.num_rows // 5, responses.num_rows // 2, responses.num_rows - 3]
    _rewrite(run, "responses", lambda t: _set_rows(t, "error", spread, "NOT_A_KAFKA_ERROR").filter(
        pc.not_equal(pa.array(range(t.num_rows)), responses.num_rows // 3)))  # one response lost
    assignments = pq.read_table(run / "assignments" / PART_FILE)
    intruders = [1, assignments.num_rows - 1]
    _rewrite(run, "assignments", lambda t: pa.concat_tables(
        [t, _set_rows(t.take(intruders), "member_id", [0, 1], "intruder")]).sort_by(
        [("group_id", "ascending"), ("out_seq", "ascending")]))
    states = pq.read_table(run / "group_states" / PART_FILE)
    _rewrite(run, "group_states", lambda t: _set_rows(t, "from_state", [states.num_rows // 2, states.num_rows - 1],
                                                      "Dead"))
    offsets = pq.read_table(run / "offsets" / PART_FILE)
    # A column of another type, a null where none may be, and commits from no generation of theirs.
    _rewrite(run, "offsets", lambda t: _set_rows(_set_rows(
        t.set_column(t.schema.get_field_index("partition"), "partition", pc.cast(t["partition"], pa.int64())),
        "commit_ts", [0], None), "generation_id", [2, offsets.num_rows - 2], 99))
    _rewrite(run, "generations", lambda t: _set_rows(t, "generation_id", [3], 0))

    whole = _whole(monkeypatch, run, events=_events(run))
    failed = {c.name: c.detail for c in whole.failures}
    assert failed["responses.error: expect_column_values_to_be_in_set"].startswith("3 of ")
    assert failed["one owner per partition per generation"].startswith("2 partitions with several owners")
    assert failed["state transitions chain and are legal"].startswith("2 bad transitions")
    assert failed["accepted commits only from the current generation or standalone to an Empty group"].startswith(
        "2 commits")
    assert "generations only grow within a life of a group" in failed
    assert failed["every input row processed or rejected"].startswith("1 requests neither answered nor rejected")
    assert any(name.startswith("offsets.commit_ts") for name in failed), sorted(failed)
    assert _ranged(monkeypatch, run, events=_events(run), data_docs_dir=tmp_path / "docs").checks == whole.checks
    assert (tmp_path / "docs" / "index.html").is_file()
