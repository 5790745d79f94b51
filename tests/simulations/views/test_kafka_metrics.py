"""The group counts of `figures_at` by group type and state, as Kafka's GroupMetadataManager counts the groups its
coordinators hold: across an online upgrade, a group id counts as classic until it is converted and as a
consumer group from then on, and no Dead group is counted; a client's failed connection is no broker's response,
and a failed commit of the clients' `coordsim_failed_commits_total`."""

from __future__ import annotations

import pyarrow.parquet as pq

from simulations import scenarios
from simulations.engines import run_local_to
from simulations.reports.prometheus import families
from simulations.views.kafka_metrics import COLUMNS, GROUP_STATES, figures_at
from simulations.views.quiet_runs import count_requests
from simulations.views.run_tables import load_run
from state.events import parse_event
from tableio.coordinator_settings import load_config
from tableio.parquet import PART_FILE

from ..scenarios.helpers import small_broker_failure
from .runs import T0, UPGRADE_MS


def counts(run, at: int) -> dict[str, dict[str, int]]:
    """{type: {state: n}} at `at`, leaving out the zeros."""
    figures = figures_at(run, at)
    assert figures.group_count == {kind: sum(by.values()) for kind, by in figures.groups_by_state.items()}
    assert {kind: tuple(by) for kind, by in figures.groups_by_state.items()} == GROUP_STATES  # every gauge
    return {kind: {state: n for state, n in by.items() if n} for kind, by in figures.groups_by_state.items()}


def test_groups_count_under_their_own_type_across_an_online_upgrade(upgraded_run):
    run = load_run(upgraded_run, COLUMNS)
    assert run.end_ts == T0 + UPGRADE_MS + 5_000
    # T0: `upgraded` waits out the initial rebalance delay; `native`'s first member is Stable at once.
    assert counts(run, T0) == {"classic": {"PreparingRebalance": 1}, "consumer": {"Stable": 1}}
    assert counts(run, T0 + UPGRADE_MS - 1) == {"classic": {"Stable": 1}, "consumer": {"Stable": 1}}
    # The conversion: the classic group's row goes Dead and the consumer group's follow at the same time;
    # the classic group is gone (not counted as Dead), the consumer group waits on its new member.
    for at in (T0 + UPGRADE_MS, run.end_ts):
        assert counts(run, at) == {"classic": {}, "consumer": {"Reconciling": 1, "Stable": 1}}
        figures = figures_at(run, at)
        assert figures.group_count == {"classic": 0, "consumer": 2}
        assert figures.members == {"native": 1, "upgraded": 3}


def test_a_failed_connection_is_a_failed_commit_of_the_client_and_no_brokers_response(tmp_path):
    # While broker 3 is down its groups' heartbeats and commits fail to connect: the RequestMetrics of the
    # brokers count none of them; the failed commits are the metrics table's, the same requests.
    scenario = small_broker_failure()
    generated = scenarios.generate(scenario)
    events = [parse_event(row, "scenario", line) for line, row in enumerate(generated.rows, start=1)]
    run_local_to(tmp_path, events, load_config(scenario=scenario.broker), generated.until_ms)
    run = load_run(tmp_path, COLUMNS)
    counts = figures_at(run, run.end_ts).counts
    responses = run["responses"]
    answered = responses[responses["error"] != "NETWORK_EXCEPTION"]
    assert len(answered) < len(responses)
    assert sum(counts.requests.values()) == count_requests(answered)
    assert not [error for _, error in counts.errors if error == "NETWORK_EXCEPTION"]
    failed = pq.read_table(tmp_path / "metrics" / PART_FILE)["failed_commits"].to_pylist()
    assert counts.failed_commits == sum(failed) > 0
    [family] = [f for f in families(figures_at(run, run.end_ts)) if f.name == "coordsim_failed_commits"]
    assert [sample.value for sample in family.samples] == [sum(failed)]
