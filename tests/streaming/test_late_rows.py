"""Rows later than the allowed lateness: Spark drops them, the run counts them (run record, a warning) and
still ends cleanly, with the tables of the same input without those rows."""

from __future__ import annotations

import json

import pytest

from state.config import CoordinatorConfig
from streaming.engine import RUN_FILE, run_spark
from tests.streaming import histories
from tests.streaming.conftest import assert_same_counts, assert_same_tables, local_run
from tests.streaming.inputs import DELAY_MS, FILES

pytestmark = pytest.mark.spark


def test_late_rows_are_counted_and_the_run_ends(spark, tmp_path, capsys):
    rows = histories.combined_history()
    on_time = histories.split_files(tmp_path / "in", rows, FILES)
    # In the last file (its own micro-batch), two requests from long before the watermark.
    late = [dict(rows[0], seq=len(rows), request_id="late-1"), dict(rows[1], seq=len(rows) + 1, request_id="late-2")]
    histories.write_jsonl(tmp_path / "in" / "zz-late.jsonl", late)
    assert rows[-1]["ts"] - late[-1]["ts"] > DELAY_MS

    settings = {"streaming.watermark.delay.ms": DELAY_MS, "streaming.files.per.trigger": 1}
    config = CoordinatorConfig()
    result = run_spark([str(on_time)], tmp_path / "out", config, None, settings, progress=True)

    assert result.late_rows == 2
    assert json.loads((tmp_path / "out" / RUN_FILE).read_text())["late_rows"] == 2
    # The live panel is gone at the end and the summary is the caller's: the warning is what run_spark leaves.
    shown = " ".join(capsys.readouterr().err.split())  # as the console's width wrapped it
    assert shown == ("2 input rows arrived later than streaming.watermark.delay.ms allows and were dropped; the "
                     "tables do not include them.")

    (tmp_path / "in" / "zz-late.jsonl").unlink()
    expected_dir, expected = local_run([str(on_time)], tmp_path / "local", config)
    assert_same_tables(expected_dir, tmp_path / "out")
    assert_same_counts(result, expected)
