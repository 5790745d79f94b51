"""Burrow's lag status on small shipped scenarios: a consumer that stops committing goes STOP until its
partitions are consumed again, and the group is ERR meanwhile."""

from __future__ import annotations

import pytest

from tableio.lag_status import LagHistory, Settings, lag_status

from .helpers import run, shipped_small


def status_changes(result, settings: Settings) -> list[tuple[float, str, tuple]]:
    """(seconds after the start, group status, partition statuses) of the first group, each time it changes
    when evaluated every second."""
    history = LagHistory.from_tables(result.result.tables, settings)
    group, changes, previous = history.groups[0], [], None
    for at in range(result.scenario.start_ms, result.result.final_ts + 1, 1000):
        evaluated = history.evaluate(group, at)
        state = None if evaluated is None else (evaluated.status, tuple(p.status for p in evaluated.partitions))
        if state != previous:
            changes.append(((at - result.scenario.start_ms) / 1000, *(state or (None, ()))))
            previous = state
    return changes


def stopped(changes) -> list[tuple[float, float, set[int]]]:
    """(from, to, partitions) of every stretch with STOP partitions."""
    stretches = []
    for (t0, _, statuses), (t1, _, _) in zip(changes, changes[1:]):
        if "STOP" in statuses:
            stretches.append((t0, t1, {i for i, s in enumerate(statuses) if s == "STOP"}))
    return stretches


def test_a_crashed_members_partitions_stop_until_the_group_reassigns_them():
    result = run(shipped_small("crash", {"*": {"groups": 2}}))
    # The member crashes at 2 m after its commit at ~116 s; its session expires 45 s after its last heartbeat
    # and the new owners commit ~5 s later. Sampling broker offsets every second, Burrow sees the silence
    # outlast the 45 s window before the new owners commit.
    changes = status_changes(result, Settings(offset_refresh_ms=1000))
    [(start, end, partitions)] = stopped(changes)
    assert 160 <= start < end <= 170 and len(partitions) == 3
    assert [c[1] for c in changes if c[0] == start] == ["ERR"]
    assert changes[-1][1] == "OK"
    # Burrow's default keeps 100 s of broker offsets: one showed the consumer caught up, so no STOP yet.
    assert stopped(status_changes(result, Settings())) == []


def test_a_static_member_that_stays_down_stops_with_burrows_defaults():
    result = run(shipped_small("crash", {"*": {"groups": 2, "membership": "static",
                                                "config": {"session.timeout.ms": 300_000}}},
                               [{"restart_after": "3m"}]))
    # Its partitions stay assigned to it while it is down: STOP once the caught-up broker sample is older than
    # the 100 s Burrow keeps, until it restarts at 5 m and commits again.
    [(start, end, partitions)] = stopped(status_changes(result, Settings()))
    assert 200 <= start <= 220 and 300 <= end <= 310 and len(partitions) == 3


def test_a_stalled_poll_loop_stops_committing_so_its_partitions_stop():
    result = run(shipped_small("slow-consumer", {"*": {"groups": 2}}, [{"duration": "90s"}]))
    # The synthetic consumer keeps up whenever it polls: a stalled poll loop commits nothing (STOP), it does
    # not fall behind while committing (WARN needs a consumer slower than production: see the replay tests).
    [(start, end, partitions)] = stopped(status_changes(result, Settings(offset_refresh_ms=1000)))
    assert 120 < start < end < 200 and len(partitions) == 3
    table = result.result.tables["lag_status"]
    assert {r["status"] for r in table} == {"OK"} and {r["evaluated_ts"] for r in table} == {result.result.final_ts}


def test_every_commit_of_a_run_carries_the_log_end_offset_of_its_time():
    """Commit runs are written once (docs/tables.md, "Quiet runs"): expanded, each commit's log_end_offset is
    the partition's production up to its write time, as if every commit had been written on its own."""
    result = run(shipped_small("partition-increase", sets={"*": {"groups": 2, "members": 3}}))
    runs = [r for r in result.result.tables["offsets"] if r["repeat_count"] > 1 and r["log_end_offset"] is not None]
    assert runs and all(r["log_end_origin_ts"] is not None for r in runs)
    checked = 0
    for group_id in result.group_ids():
        [declared] = [r for r in result.directives("TOPIC_METADATA", group_id) if "records_per_second" in r["topics"][0]]
        rates = {t["topic"]: t["records_per_second"] for t in declared["topics"]}
        for row in result.rows("offsets", group_id):
            if row["offset"] is None:
                continue
            expected = int(rates[row["topic"]] * (row["write_ts"] - declared["ts"]) / 1000)
            assert row["log_end_offset"] == expected, row
            checked += 1
    assert checked > 10 * len(runs)


def test_a_consumer_slower_than_production_falls_behind_and_one_faster_catches_up_after_a_move():
    result = run(shipped_small("lagging-consumer", sets={"*": {"groups": 1}}))
    end = result.result.final_ts
    history = LagHistory.from_tables(result.result.tables, Settings(offset_refresh_ms=1000))
    [behind] = result.group_ids("behind")
    evaluated = history.evaluate(behind, end)
    # 100 records/s produced, 80 read: 20 records/s more lag per partition over the 5 minutes.
    assert evaluated.status == "WARN" and {p.status for p in evaluated.partitions} == {"WARN"}
    assert all(5_500 <= p.current_lag <= 6_600 for p in evaluated.partitions)
    [catching_up] = result.group_ids("catching-up")
    evaluated = history.evaluate(catching_up, end)
    assert evaluated.status == "OK" and all(p.current_lag <= 500 for p in evaluated.partitions)
    # The crashed member's partitions: unowned until its session times out (45 s), then their new owner starts
    # from the last commit and catches up at 150 - 100 records/s, its commits' lag shrinking to nothing.
    [crashed] = [r["client_id"] for r in result.directives("CLIENT_CRASH", catching_up)]
    moved = 0
    for partition in range(6):
        commits = [r for r in result.rows("offsets", catching_up) if r["offset"] is not None
                   and r["partition"] == partition]
        lags = [(r["member_id"], r["log_end_offset"] - r["offset"]) for r in commits]
        new_owner = next((i for i in range(1, len(lags))
                          if lags[i - 1][0].startswith(f"{crashed}-") and not lags[i][0].startswith(f"{crashed}-")),
                         None)
        if new_owner is None:
            continue
        moved += 1
        behind = [lag for _, lag in lags[new_owner:]]
        assert behind[0] > 4_000 and behind[-1] == 0, (partition, behind)
        caught_up = behind.index(0)
        assert behind[:caught_up] == sorted(behind[:caught_up], reverse=True)
        assert all(240 <= a - b <= 260 for a, b in zip(behind, behind[1:caught_up])), behind  # 50/s x 5 s
    assert moved >= 2


@pytest.mark.parametrize("name, sets", [
    ("crash", {"*": {"groups": 2}}),
    ("lagging-consumer", {"*": {"groups": 1}}),
])
def test_a_history_read_for_one_time_judges_that_time_as_the_whole_history(name, sets):
    """The engines read only the commits a window can hold at the run's end (`until`); at any time, that
    reading and the whole history give the same status rows, quiet runs and moved partitions included."""
    result = run(shipped_small(name, sets))
    tables, whole = result.result.tables, LagHistory.from_tables(result.result.tables)
    start, end = result.scenario.start_ms, result.result.final_ts
    for at in [start + (end - start) * k // 40 for k in range(41)]:
        assert lag_status(LagHistory.from_tables(tables, until=at), at) == lag_status(whole, at), at
