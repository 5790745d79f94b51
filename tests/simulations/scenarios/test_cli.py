"""`coordsim generate` and `coordsim run` end to end, and their user errors (one line, exit 2)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from simulations import scenarios
from simulations.cli import main
from tableio.parquet import PART_FILE, read_table
from state.tables import TABLES

from ..conftest import REPO
from ..test_cli import assert_user_error

SCENARIO = """\
name: tiny
duration: 3m
seed: 5
broker:
  group.initial.rebalance.delay.ms: 1000
group_sets:
  - name: orders
    groups: 2
    members: 3
    topics: [{name: orders, partitions: 6, records_per_second: 20}]
  - name: audit
    members: 2
    topics: [{name: audit, partitions: 2}]
    assignors: [cooperative-sticky]
timeline:
  - {at: 30s, action: rolling_restart, target: orders, downtime: 5s, gap: 10s}
  - {at: 1m, action: crash, target: audit, restart_after: 20s}
"""


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(SCENARIO)
    return path


def cli(*args):
    args = [str(a) for a in args]
    if args[:1] == ["run"] and "--help" not in args:
        # The Spark engine's parity with the local one is tested in tests/streaming.
        args += ["--engine", "local"]
    return CliRunner().invoke(main, args)


def test_generate_writes_the_events_as_jsonl(scenario_file, tmp_path):
    result = cli("generate", scenario_file, "--out", tmp_path / "events.jsonl")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert rows == scenarios.generate(scenarios.load_scenario(scenario_file)).rows
    assert "groups       3 in 2 group set(s)" in result.output
    assert "--until 2026-01-01T00:03:00.000+00:00 --out DIR --set group.initial.rebalance.delay.ms=1000" in result.output
    assert cli("generate", scenario_file, "--out", tmp_path / "folder").exit_code == 0
    assert (tmp_path / "folder" / "events.jsonl").read_text() == (tmp_path / "events.jsonl").read_text()


def test_run_writes_every_table_and_summarizes_each_group_set(scenario_file, tmp_path):
    result = cli("run", scenario_file, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    for table in TABLES:
        assert (tmp_path / "out" / table / PART_FILE).is_file()
    assert (tmp_path / "out" / "scenario" / "scenario.yaml").read_text() == SCENARIO
    assert len(read_table(tmp_path / "out", "metrics")) == 3
    # the run ends with its report and a passing validation
    report = (tmp_path / "out" / "report.html").read_text()
    assert "<svg" in report
    # The report puts the summary's group sets side by side, and its header's rebalances are the metrics table's.
    sets = re.search(r'<section id="group_sets">.*?</section>', report, re.S).group(0)
    assert "<th>orders</th><th>audit</th>" in sets and "member_leave 6" in sets
    assert "<b>rebalances after formation</b>: those started after it, alike for both protocols" in sets
    rebalances = int(read_table(tmp_path / "out", "metrics")["rebalances"].sum())
    assert f"<dt>rebalances</dt><dd>{rebalances}</dd>" in report
    assert "PASSED" in result.output
    for text in ("tiny (", "groups     3 in 2 group set(s)", "settings   group.initial.rebalance.delay.ms=1000",
                 "orders", "audit", "rebalances", "member_leave 6", "member_join 2",
                 "rebalances after formation", "later rebalance p50/p99/max", "24.02 / 24.02 / 24.02 s",
                 "formation p50/p99/max", "partitions moved",
                 "unconsumed partition-seconds", "unconsumed gap p50/p99/max", "end states"):
        assert text in result.output, text


def test_run_gives_the_tables_of_generate_then_replay_until_the_end(scenario_file, tmp_path):
    assert cli("run", scenario_file, "--out", tmp_path / "run").exit_code == 0
    assert cli("generate", scenario_file, "--out", tmp_path / "events.jsonl").exit_code == 0
    result = cli("replay", "--engine", "local", tmp_path / "events.jsonl", "--out", tmp_path / "replay", "--until",
                 "2026-01-01T00:03:00Z", "--set", "group.initial.rebalance.delay.ms=1000")
    assert result.exit_code == 0, result.output
    for table in TABLES:
        run_bytes = (tmp_path / "run" / table / PART_FILE).read_bytes()
        assert run_bytes == (tmp_path / "replay" / table / PART_FILE).read_bytes(), table


def test_settings_layer_scenario_then_conf_then_set(scenario_file, tmp_path):
    conf = tmp_path / "broker.yaml"
    conf.write_text("coordinator:\n  group.initial.rebalance.delay.ms: 2000\n  offsets.topic.num.partitions: 10\n")
    result = cli("run", scenario_file, "--out", tmp_path / "out", "--conf", conf, "--set", "offsets.topic.num.partitions=7")
    assert result.exit_code == 0, result.output
    assert "group.initial.rebalance.delay.ms=2000, offsets.topic.num.partitions=7" in result.output


def test_run_help_and_the_readme_list_every_shipped_scenario():
    shipped = list(scenarios.shipped())
    help_text = CliRunner().invoke(main, ["run", "--help"], terminal_width=400, max_content_width=400).output
    # However click wraps the list (a long one wraps even at 400 columns, at a space or after a hyphen).
    help_text = " ".join(re.sub(r"-\n\s*", "-", help_text).split())
    assert f"the name of a shipped scenario ({', '.join(shipped)})" in help_text
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert [name for name in shipped if f"`{name}`" not in readme] == []


def test_a_rerun_without_report_leaves_no_report_of_the_earlier_run(scenario_file, tmp_path):
    assert cli("run", scenario_file, "--out", tmp_path / "out", "--no-validate").exit_code == 0
    assert (tmp_path / "out" / "report.html").is_file()
    result = cli("run", scenario_file, "--out", tmp_path / "out", "--no-validate", "--no-report")
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "out" / "report.html").exists()


def test_shipped_scenarios_are_found_by_name():
    assert scenarios.resolve("crash") == scenarios.shipped()["crash"]
    assert scenarios.resolve("crash").read_text().startswith("#")
    assert "docs/scenarios.md" in cli("run", "--help").output


@pytest.mark.parametrize("command, change, message", [
    ("run", None, "nope.yaml: no such file, and no shipped scenario of that name (shipped: "),
    ("run", ("members: 3", "members: lots"), "tiny.yaml:9: group_sets[0].members: must be an integer, got str 'lots'"),
    ("generate", ("action: crash", "action: crush"), "tiny.yaml:17: timeline[1].action: must be one of "),
    ("run", ("duration: 3m", "duration: 3m\ncolour: blue"), "tiny.yaml:3: colour: unknown key 'colour'"),
])
def test_scenario_errors_exit_2_with_the_line(scenario_file, tmp_path, command, change, message):
    if change:
        scenario_file.write_text(SCENARIO.replace(*change))
    target = tmp_path / "nope.yaml" if change is None else scenario_file
    assert_user_error(cli(command, target, "--out", tmp_path / "out"), message)


def test_other_user_errors_exit_2(scenario_file, tmp_path):
    assert_user_error(cli("run", scenario_file, "--out", tmp_path / "out", "--set", "group.max.size=many"),
                      "setting group.max.size must be an integer")
    (tmp_path / "taken").write_text("")
    assert_user_error(cli("run", scenario_file, "--out", tmp_path / "taken"), "taken is not a folder")
    assert_user_error(cli("generate", scenario_file, "--out", tmp_path / "events.parquet"), "written as JSONL")
