"""`coordsim sweep`: the variants a sweep names, its user errors, and the independence of its variants (each
variant's rows of every table are the rows of that variant run alone)."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from simulations.cli import main
from simulations.scenarios import ScenarioError, load_sweep
from state.tables import TABLES
from tableio.parquet import PART_FILE, variant_rows

from ..test_cli import assert_user_error

# Small, but with a cluster, a crash and its restart: the varied values change placement, formation and the
# rebalances of every group.
TEMPLATE = """\
name: small
duration: 2m
seed: 4
broker:
  group.initial.rebalance.delay.ms: {delay}
cluster:
  brokers: {brokers}
  offsets.topic.num.partitions: 10
  offsets.topic.replication.factor: 2
group_sets:
  - name: svc
    groups: 3
    members: {members}
    topics: [{{name: orders, partitions: 6, records_per_second: 50}}]
timeline:
  - {{at: 30s, action: crash, members: 1, restart_after: 20s}}
"""


def write(tmp_path, name="small.yaml", extra="", **values):
    values = {"delay": 3000, "brokers": 3, "members": 3, **values}
    path = tmp_path / name
    path.write_text(TEMPLATE.format(**values) + extra)
    return path


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_every_combination_is_a_variant_named_after_its_values(tmp_path):
    path = write(tmp_path, extra="sweep:\n  broker.group.initial.rebalance.delay.ms: [0, 3000]\n"
                                 "  group_sets.svc.members: [2, 4]\n")
    sweep = load_sweep(path, ["group_sets.svc.members=3,5", "group_sets.svc.config.session.timeout.ms=10000"])
    # --vary replaces the section's axis of the same name in place and adds the others after; the first axis
    # varies slowest.
    assert [v.name for v in sweep.variants] == [
        "group.initial.rebalance.delay.ms=0,members=3,session.timeout.ms=10000",
        "group.initial.rebalance.delay.ms=0,members=5,session.timeout.ms=10000",
        "group.initial.rebalance.delay.ms=3000,members=3,session.timeout.ms=10000",
        "group.initial.rebalance.delay.ms=3000,members=5,session.timeout.ms=10000",
    ]
    last = sweep.variants[-1].scenario
    assert last.broker["group.initial.rebalance.delay.ms"] == 3000
    assert last.group_sets[0].members == 5
    assert last.group_sets[0].config == {"session.timeout.ms": 10000}
    assert sweep.variants[0].values == {"broker.group.initial.rebalance.delay.ms": "0",
                                        "group_sets.svc.members": "3",
                                        "group_sets.svc.config.session.timeout.ms": "10000"}


def test_labels_grow_until_they_tell_the_axes_apart(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text(TEMPLATE.format(delay=0, brokers=3, members=2).replace(
        "timeline:", "  - {name: batch, members: 2, topics: [{name: jobs, partitions: 2}]}\ntimeline:"))
    sweep = load_sweep(path, ["group_sets.svc.members=2", "group_sets.batch.members=3",
                              "cluster.brokers=2", "group_sets.batch.topics.jobs.partitions=4",
                              "group_sets.svc.assignors=[range,cooperative-sticky]"])
    assert [v.name for v in sweep.variants] == [
        "svc.members=2,batch.members=3,brokers=2,partitions=4,assignors=[range,cooperative-sticky]"]
    scenario = sweep.variants[0].scenario
    assert len(scenario.cluster.brokers) == 2
    assert scenario.group_sets[1].topics[0].partitions == 4
    assert scenario.group_sets[0].config["partition.assignment.strategy"] == ["range", "cooperative-sticky"]


@pytest.mark.parametrize("vary, message", [
    ("group_sets.svx.members=2", "--vary: group_sets.svx.members: no group set 'svx' (did you mean 'svc'?)"),
    ("group_sets.svc.membrs=2", "a group set has no field 'membrs' (did you mean 'members'?)"),
    ("brokr.group.max.size=2", "cannot vary 'brokr' (did you mean 'broker'?)"),
    ("group_sets.svc.members=2,0",
     "variant members=0: --vary: group_sets.svc.members: must be >= 1, got 0"),
    ("group_sets.svc.config.session.timeout.ms=1000,2000",
     "variant session.timeout.ms=1000: --vary: group_sets.svc.config.session.timeout.ms: heartbeat.interval.ms "
     "must be > 0 and lower than session.timeout.ms"),
    ("duration=1m,2m", "vary neither start nor duration"),
    ("members", "--vary: 'members': expected NAME=V1,V2,..."),
    ("group_sets.svc.members=2,2", "value 2 is given twice"),
])
def test_a_bad_axis_is_one_line_naming_it(tmp_path, vary, message):
    result = cli("sweep", write(tmp_path), "--vary", vary, "--engine", "local", "--out", tmp_path / "out")
    assert_user_error(result, message)
    assert len(result.output.strip().splitlines()) == 1


def test_a_bad_value_of_the_sweep_section_names_its_line(tmp_path):
    path = write(tmp_path, extra="sweep:\n  group_sets.svc.members: [2, many]\n")
    with pytest.raises(ScenarioError, match=r"variant members=many: .*small.yaml:\d+: "
                                            r"sweep.group_sets.svc.members\[1\]: must be an integer, got str 'many'"):
        load_sweep(path)


def test_a_variant_whose_timeline_cannot_happen_is_named(tmp_path):
    path = tmp_path / "grow.yaml"
    path.write_text("duration: 2m\ngroup_sets:\n  - {name: svc, members: 2, topics: [{name: orders, partitions: 6}]}\n"
                    "timeline:\n  - {at: 30s, action: partition_increase, partitions: 12}\n")
    result = cli("sweep", path, "--vary", "group_sets.svc.topics.orders.partitions=6,24", "--engine", "local",
                 "--out", tmp_path / "out")
    assert_user_error(result, "variant partitions=24: ")
    assert "Kafka can only increase a partition count" in result.output


def test_nothing_to_vary_and_a_setting_given_twice_are_refused(tmp_path):
    assert_user_error(cli("sweep", write(tmp_path), "--engine", "local", "--out", tmp_path / "out"),
                      "nothing to vary")
    result = cli("sweep", write(tmp_path), "--vary", "broker.group.initial.rebalance.delay.ms=0,3000",
                 "--set", "group.initial.rebalance.delay.ms=10", "--engine", "local", "--out", tmp_path / "out")
    assert_user_error(result, "group.initial.rebalance.delay.ms: varied by the sweep and given by --set or --conf")


def test_each_variant_has_the_rows_it_has_alone(tmp_path):
    """The issue's independence: a 2x2 sweep of a broker setting and a group set's size on the local engine;
    each variant's rows of every table, the variant column dropped, equal the rows of the variant run alone."""
    sweep_dir = tmp_path / "sweep"
    result = cli("sweep", write(tmp_path), "--vary", "broker.group.initial.rebalance.delay.ms=0,3000",
                 "--vary", "group_sets.svc.members=2,4", "--engine", "local", "--no-report", "--no-validate",
                 "--out", sweep_dir)
    assert result.exit_code == 0, result.output
    assert "variant group.initial.rebalance.delay.ms=0,members=4" in result.output
    for delay in (0, 3000):
        for members in (2, 4):
            alone = tmp_path / f"alone-{delay}-{members}"
            scenario = write(tmp_path, f"alone-{delay}-{members}.yaml", delay=delay, members=members)
            ran = cli("run", scenario, "--engine", "local", "--no-report", "--no-validate", "--out", alone)
            assert ran.exit_code == 0, ran.output
            name = f"group.initial.rebalance.delay.ms={delay},members={members}"
            for table in TABLES:
                own = pq.read_table(alone / table / PART_FILE)
                swept = variant_rows(pq.read_table(sweep_dir / table / PART_FILE), name)
                assert swept.equals(own), (name, table)
                assert own.num_rows or table in ("rejects", "consumer_group_records"), table  # classic groups
            # The views read a variant as its run alone: capacity's figures, to the digit.
            own_csv = list(csv.reader(cli("capacity", alone, "--format", "csv").output.splitlines()))
            swept_csv = list(csv.reader(cli("capacity", sweep_dir, "--variant", name, "--format", "csv")
                                        .output.splitlines()))
            assert [row[1:] for row in swept_csv] == own_csv and len(own_csv) > 10


def test_the_variant_column_is_first_and_the_rows_sort_by_variant(tmp_path):
    result = cli("sweep", write(tmp_path), "--vary", "cluster.brokers=3,2", "--engine", "local", "--no-report",
                 "--no-validate", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    for table in TABLES:
        data = pq.read_table(tmp_path / "out" / table / PART_FILE)
        assert data.schema.names[0] == "variant"
        variants = data["variant"].to_pylist()
        if table not in ("rejects", "consumer_group_records"):  # the scenario's groups are classic
            assert variants == sorted(variants) and set(variants) == {"brokers=2", "brokers=3"}, table


def test_the_comparison_has_a_row_per_variant_with_the_runs_own_figures(tmp_path):
    out = tmp_path / "out"
    result = cli("sweep", write(tmp_path), "--vary", "cluster.brokers=3,2", "--vary", "group_sets.svc.members=2,4",
                 "--engine", "local", "--no-report", "--no-validate", "--out", out)
    assert result.exit_code == 0, result.output
    comparison = pq.read_table(out / "comparison" / PART_FILE)
    assert comparison.schema.names[:3] == ["variant", "cluster.brokers", "group_sets.svc.members"]
    rows = comparison.to_pylist()
    # Sweep order, not sorted by name: brokers=3 first, as given.
    assert [(r["cluster.brokers"], r["group_sets.svc.members"]) for r in rows] == [
        ("3", "2"), ("3", "4"), ("2", "2"), ("2", "4")]
    metrics = pq.read_table(out / "metrics" / PART_FILE).to_pandas()
    load = pq.read_table(out / "coordinator_load" / PART_FILE).to_pandas()
    for row in rows:
        own = metrics[metrics["variant"] == row["variant"]]
        assert row["groups"] == len(own) == 3
        assert row["rebalances"] == own["rebalances"].sum()
        later = sorted(entry["ms"] for durations in own["rebalance_durations"] for entry in durations
                       for _ in range(entry["count"]))
        assert row["rebalances_after_formation"] == own["rebalances_after_formation"].sum() >= len(later)
        assert row["rebalance_ms_max"] == later[-1]
        assert row["rebalance_ms_p99"] == later[-(-99 * len(later) // 100) - 1]
        for figure in ("unconsumed_partition_ms", "duplicate_records", "failed_commits"):
            assert row[figure] == own[figure].sum(), figure
        requests = load[(load["variant"] == row["variant"]) & (load["measure"] == "requests")
                        & load["broker_id"].notna()]
        per_window = requests.groupby(["broker_id", "window_start_ts"])["value"].sum()
        assert row["peak_broker_requests"] == per_window.max()
        assert (row["peak_broker_id"], row["peak_window_start_ts"]) == min(
            key for key, value in per_window.items() if value == per_window.max())
        lookups = load[(load["variant"] == row["variant"]) & (load["measure"] == "requests")
                       & (load["name"] == "FindCoordinator")]
        assert row["find_coordinator_requests"] == lookups["value"].sum()
    assert "comparison" in result.output and "  4  brokers=2,members=4" in result.output


def test_the_views_read_a_sweep_per_variant(tmp_path):
    out = tmp_path / "out"
    result = cli("sweep", write(tmp_path), "--vary", "group_sets.svc.members=2,3", "--engine", "local",
                 "--no-validate", "--out", out)
    assert result.exit_code == 0, result.output
    # The cluster's brokers, per variant, for `coordsim capacity`'s skew.
    assert json.loads((out / "scenario" / "brokers.json").read_text()) == {"members=2": [1, 2, 3],
                                                                           "members=3": [1, 2, 3]}
    page = (out / "report.html").read_text()
    assert "Variants side by side" in page and "Busiest broker&#x27;s busiest second (every API" in page
    assert page.count("<tr title=") == 2
    capacity = cli("capacity", out)
    assert capacity.exit_code == 0, capacity.output
    assert "variant members=2\n" in capacity.output and "variant members=3\n" in capacity.output
    assert cli("metrics", out, "--out", tmp_path / "m.om").exit_code == 0
    assert 'variant="members=3"' in (tmp_path / "m.om").read_text()
    assert_user_error(cli("describe", out, "--group", "svc-0"), "is a sweep of 2 variants: give --variant")
    assert_user_error(cli("lag", out, "--variant", "members=9"), "--variant members=9: not a variant of")
    assert cli("describe", out, "--group", "svc-0", "--variant", "members=2").exit_code == 0


def test_a_sweep_held_in_memory_derives_each_variants_tables_alone(tmp_path):
    """run_local without a folder: lag_status and coordinator_load per variant, as the written sweep's."""
    from simulations.engines import run_local
    from simulations.scenarios import generate
    from state.events import parse_event
    from tableio.coordinator_settings import load_config

    sweep = load_sweep(write(tmp_path), ["group_sets.svc.members=2,3"])
    configs = {v.name: load_config(scenario=v.scenario.broker) for v in sweep.variants}
    events = [parse_event(dict(row, variant=v.name), line=i, variants=configs)
              for v in sweep.variants for i, row in enumerate(generate(v.scenario).rows)]
    result = run_local(events, configs["members=2"], sweep.base.until_ms, variants=configs)
    out = tmp_path / "out"
    assert cli("sweep", write(tmp_path), "--vary", "group_sets.svc.members=2,3", "--engine", "local",
               "--no-report", "--no-validate", "--out", out).exit_code == 0
    for table in ("lag_status", "coordinator_load", "metrics"):
        written = pq.read_table(out / table / PART_FILE).to_pylist()
        assert _as_text(result.tables[table]) == _as_text(written), table


def _as_text(rows: list[dict]) -> list[str]:
    """Rows in an order and a key order of their own: the same rows compare equal however they were made."""
    return sorted(repr(sorted(row.items())) for row in rows)
