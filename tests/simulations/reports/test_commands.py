"""The click commands of simulations.reports.commands, invoked directly: output, exit codes, and user
errors as one line with exit code 2."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys

import pytest
import pyarrow.parquet as pq
from click.testing import CliRunner

from simulations.cli import main
from simulations.reports import commands
from simulations.reports.dashboard import make_server
from tableio.parquet import PART_FILE

from ..conftest import REPO
from ..views.runs import T0


def invoke(command, *args):
    return CliRunner().invoke(command, [str(a) for a in args])


def assert_user_error(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_report_writes_the_file_it_names(tiny_run, tmp_path):
    result = invoke(commands.report, tiny_run, "--out", tmp_path / "r.html", "--group", "exporter")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"report: {tmp_path / 'r.html'} (")
    assert "Partition ownership over time: exporter" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_describe_prints_the_tool_s_table_and_its_notes(tiny_run):
    result = invoke(commands.describe, tiny_run, "--group", "orders", "--members", "--at", "2026-03-02T09:00:08.050Z")
    assert result.exit_code == 0, result.output
    assert "Warning: Consumer group 'orders' is rebalancing." in result.output
    assert result.output.rstrip().endswith("/10.0.0.1       c1              0")
    state = invoke(commands.describe, tiny_run, "--group", "orders", "--state", "--at", T0 + 6_500)
    assert state.output.splitlines()[-1].split() == ["orders", "__consumer_offsets-31", "(31)", "range", "Stable", "2"]
    default = invoke(commands.describe, tiny_run, "--group", "exporter")
    assert default.output.splitlines()[-1].split()[:4] == ["exporter", "invoices", "1", "7"]


def test_offsets_prints_one_record_per_line(tiny_run):
    result = invoke(commands.offsets, tiny_run, "--group", "exporter")
    assert [json.loads(line)["key"]["data"]["partition"] for line in result.output.splitlines()] == [0, 1, 0]
    result = invoke(commands.offsets, tiny_run, "--group", "exporter", "--format", "legacy")
    assert result.output.splitlines() == [
        "[exporter,invoices,0]::[OffsetMetadata[42,batch-17],CommitTime 1772442001000,ExpirationTime 1772442061000]",
        "[exporter,invoices,1]::[OffsetMetadata[7,NO_METADATA],CommitTime 1772442002000,ExpirationTime _]",
        "[exporter,invoices,0]::NULL",
    ]


def test_lag_prints_each_group_then_its_partitions_as_burrow_lists_them(lagging_run):
    result = invoke(commands.lag, lagging_run)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == ("etl: WARN at 1970-01-01T00:02:00.000Z, complete 1.00, 2 partitions, total lag 6000, "
                        "maxlag t-0 (6000)")
    assert lines[1].split() == ["TOPIC", "PARTITION", "STATUS", "START-OFFSET", "START-LAG", "START-TIME", "END-OFFSET",
                                "END-LAG", "END-TIME", "CURRENT-LAG"]
    assert lines[2].split() == ["t", "0", "WARN", "1500", "1500", "1970-01-01T00:00:30.000Z", "6000", "6000",
                                "1970-01-01T00:02:00.000Z", "6000"]
    assert len(lines) == 3  # without --group, only the partitions that are not OK
    early = invoke(commands.lag, lagging_run, "--group", "etl", "--at", "1970-01-01T00:00:40Z").output.splitlines()
    assert early[0].startswith("etl: WARN at 1970-01-01T00:00:40.000Z, complete 0.00, 2 partitions")
    assert [line.split()[:5] for line in early[2:]] == [["t", "0", "WARN", "500", "500"], ["t", "1", "OK", "1000", "0"]]
    # Burrow's settings: a window of 3 commits, and lag up to 5000 counted as none.
    tuned = invoke(commands.lag, lagging_run, "--group", "etl", "--intervals", "3", "--allowed-lag", "5000")
    assert tuned.output.splitlines()[0].startswith("etl: OK") and tuned.output.splitlines()[2].split()[3] == "5000"
    assert invoke(commands.lag, lagging_run, "--at", 9_999).output == (
        "etl: NOTFOUND at 1970-01-01T00:00:09.999Z (no commit yet, none since the group was deleted, or none "
        "within expire-group)\n")


def test_lag_says_why_a_replay_of_captured_requests_has_no_status(tiny_run):
    lines = invoke(commands.lag, tiny_run, "--group", "orders").output.splitlines()
    assert lines[0].startswith("orders: no status at 2026-03-02T09:11:40.000Z, 4 partitions: no log-end offset")
    assert lines[2].split() == ["orders", "0"] + ["-"] * 8
    assert lines[-1].startswith("  STATUS -: no log-end offset in the commits")


@pytest.mark.parametrize("command, args, message", [
    (commands.describe, ["{missing}", "--group", "g"], "no such run folder"),
    # Every command that takes a group names the run's groups when it is not one of them.
    (commands.describe, ["{run}", "--group", "nope"], "group 'nope' is not in this run (groups: exporter, orders)"),
    (commands.offsets, ["{run}", "--group", "nope"], "group 'nope' is not in this run (groups: exporter, orders)"),
    (commands.lag, ["{run}", "--group", "nope"], "group 'nope' is not in this run (groups: exporter, orders)"),
    (commands.report, ["{run}", "--group", "nope", "--out", "{empty}/r.html"],
     "group 'nope' is not in this run (groups: exporter, orders)"),
    (commands.dashboard, ["{run}", "--group", "nope", "--port", "0"],
     "group 'nope' is not in this run (groups: exporter, orders)"),
    (commands.lag, ["{missing}"], "no such run folder"),
    (commands.report, ["{empty}"], "not a run folder"),
    (commands.validate, ["{empty}"], "not a run folder"),
])
def test_user_errors_are_one_line_and_exit_2(tiny_run, tmp_path, command, args, message):
    (tmp_path / "empty").mkdir()
    paths = {"run": tiny_run, "missing": tmp_path / "missing", "empty": tmp_path / "empty"}
    assert_user_error(invoke(command, *(a.format(**paths) for a in args)), message)


@pytest.mark.parametrize("command, args", [
    (commands.describe, ["--group", "orders"]),
    (commands.report, ["--out", "{tmp}/r.html"]),
    (commands.metrics, ["--out", "{tmp}/m.prom"]),
    (commands.lag, []),
])
def test_a_run_written_before_a_column_was_added_is_refused_naming_it(tiny_run, tmp_path, command, args):
    old = tmp_path / "old"
    shutil.copytree(tiny_run, old)
    path = old / "group_states" / PART_FILE
    pq.write_table(pq.read_table(path).drop_columns(["group_type"]), path)
    assert_user_error(invoke(command, old, *(a.format(tmp=tmp_path) for a in args)),
                      "written by an older coordsim, its group_states table lacks group_type; run it again")


def test_a_report_of_an_unknown_group_writes_nothing(tiny_run, tmp_path):
    invoke(commands.report, tiny_run, "--group", "nope", "--out", tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_the_dashboard_of_a_run_in_progress_takes_a_group_still_to_come(tmp_path):
    (tmp_path / "run").mkdir()  # nothing committed yet: any group may still appear
    server = make_server(tmp_path / "run", "127.0.0.1", 0, group="later")
    server.server_close()


def test_a_bad_at_is_one_line_and_exit_2(tiny_run):
    result = CliRunner().invoke(main, ["describe", str(tiny_run), "--group", "orders", "--at", "yesterday"])
    assert_user_error(result, "Invalid value for '--at': field 'at' must be epoch milliseconds or ISO-8601 with a "
                              "zone, got 'yesterday'")


def test_describe_during_a_coordinator_outage_says_so_and_exits_0_as_the_tool_does(failed_broker_run):
    result = invoke(commands.describe, failed_broker_run, "--group", "payments-17", "--at", "2026-01-01T00:03:05Z")
    assert result.exit_code == 0, result.output
    assert result.output == ("\nError: Executing consumer group command failed due to org.apache.kafka.common."
                             "errors.CoordinatorNotAvailableException: The coordinator is not available.\n")


def test_dashboard_on_a_busy_port_is_a_user_error(tiny_run):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = invoke(commands.dashboard, tiny_run, "--port", port)
    assert_user_error(result, f"cannot listen on 127.0.0.1:{port}")


def test_the_commands_leave_great_expectations_unimported():
    probe = ("import sys; from simulations.reports import commands; "
             "print(sorted(m for m in ('great_expectations', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
