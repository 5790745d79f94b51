"""Parity of state/metrics.py's GroupMetrics and the native engine's (native/src/metrics.rs): the same
Hypothesis-generated sequence of what a runtime and its clients tell the metrics (events reaching the group,
rebalances of any cause within and beyond group.initial.rebalance.delay.ms of the formation's last, the group
Stable, Empty or Dead, generations, failed and unsent commits, consumers starting partitions with or without
another client's position, a committed offset or a reset, stopping them, consumption ending) gives the same
`metrics` row, field for field in order, after every step, the same `consumers` and the same consumption
state; and the nearest-rank percentile and the unconsumed figures agree on any counts."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.metrics import GroupMetrics, nearest_rank, unconsumed_figures
from tests.native import cores

WINDOW = 100
PARTITIONS = [("t", 0), ("t", 1), ("u", 0)]
CLIENTS = st.sampled_from(["c1", "c2", "c3"])
partitions = st.lists(st.sampled_from(PARTITIONS), max_size=3)
offsets = st.integers(0, 500)
rebalances = st.tuples(st.just("rebalance"), st.sampled_from(["member_join", "member_leave", "session_timeout"]))
stable = st.tuples(st.just("group_state"), st.just("Stable"))
steps = st.lists(st.one_of(
    rebalances, rebalances, stable, stable,
    st.tuples(st.just("activity")),
    st.tuples(st.just("rebalance"), st.sampled_from(["member_join", "member_leave", "session_timeout"])),
    st.tuples(st.just("group_state"), st.sampled_from(["Stable", "Stable", "Empty", "Dead", "PreparingRebalance",
                                                        "CompletingRebalance", "Reconciling"])),
    st.tuples(st.just("unsent_commit")),
    st.tuples(st.just("generation")),
    st.tuples(st.just("failed_commits"), st.integers(1, 3)),
    st.tuples(st.just("start"), CLIENTS, partitions, st.dictionaries(st.sampled_from(PARTITIONS), st.none() | offsets),
              st.fixed_dictionaries({tp: st.none() | offsets for tp in PARTITIONS}),
              st.fixed_dictionaries({tp: offsets for tp in PARTITIONS}), st.booleans()),
    st.tuples(st.just("stop"), CLIENTS, st.dictionaries(st.sampled_from(PARTITIONS), offsets)),
    st.tuples(st.just("ended")),
    st.tuples(st.just("consumers"), CLIENTS, partitions),
).map(lambda step: (step, None)) | st.tuples(st.just(None), st.sampled_from([0, 1, 5, 50, 99, 100, 400])),
    min_size=15, max_size=50)


def consumption(m: GroupMetrics) -> tuple:
    return tuple(sorted(d.items()) for d in (m.owner, m.unconsumed_since, m.last_owner, m.last_position))


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(steps=steps, end_state=st.sampled_from([None, "Stable", "Empty"]), end_members=st.integers(0, 3))
def test_group_metrics_parity(steps, end_state, end_members) -> None:
    native = cores.native_module("metrics").GroupMetrics()
    python, now = GroupMetrics(), 0
    for step, delta in steps:
        if step is None:
            now += delta
            continue
        name, args = step[0], step[1:]
        if name == "generation":
            python.generations += 1
            native.generations += 1
        elif name == "failed_commits":
            python.failed_commits += args[0]
            native.failed_commits += args[0]
        elif name == "rebalance":
            python.rebalance(now, args[0], WINDOW)
            native.rebalance(now, args[0], WINDOW)
        elif name == "start":
            python.start_consuming(now, *args)
            native.start_consuming(now, *args)
        elif name == "stop":
            python.stop_consuming(now, *args)
            native.stop_consuming(now, *args)
        elif name == "ended":
            python.consumption_ended(now)
            native.consumption_ended(now)
        elif name == "consumers":
            assert native.consumers(*args) == python.consumers(*args)
        elif name == "unsent_commit":
            python.unsent_commit()
            native.unsent_commit()
        else:  # activity, group_state
            getattr(python, name)(now, *args)
            getattr(native, name)(now, *args)
        expected = python.row(now, end_state, end_members)
        row = native.row(now, end_state, end_members)
        assert list(row.items()) == list(expected.items())
        assert native.consumption() == consumption(python)


counts = st.dictionaries(st.integers(0, 10**6), st.integers(1, 5), max_size=8)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(counts=counts, percent=st.integers(0, 100), open_since=st.lists(st.integers(0, 2000), max_size=5),
       now=st.integers(0, 2000))
def test_nearest_rank_and_unconsumed_figures(counts, percent, open_since, now) -> None:
    native = cores.native_module("metrics")
    assert native.nearest_rank(counts, percent) == nearest_rank(counts, percent)
    expected = unconsumed_figures(counts, open_since, now)
    assert list(native.unconsumed_figures(counts, open_since, now).items()) == list(expected.items())
