"""The group counts of `figures_at` by group type and state, as Kafka's GroupMetadataManager counts the groups its
coordinators hold: across an online upgrade, a group id counts as classic until it is converted and as a
consumer group from then on, and no Dead group is counted."""

from __future__ import annotations

from simulations.views.kafka_metrics import COLUMNS, GROUP_STATES, figures_at
from simulations.views.run_tables import load_run

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
