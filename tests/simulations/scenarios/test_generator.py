"""The generator: names, order, timing and determinism of the directive events it writes."""

from __future__ import annotations

import textwrap
from collections import Counter

from simulations import scenarios
from simulations.scenarios.generator import JOIN_SPREAD_MS
from state.events import parse_event

from .helpers import run

BASE = """\
duration: 30m
seed: 3
group_sets:
  - name: orders
    groups: 12
    members: 3
    topics: [{name: orders, partitions: 6, records_per_second: 10}]
"""


def generate(text: str, timeline: str = ""):
    scenario = scenarios.parse_scenario(textwrap.dedent(text) + textwrap.dedent(timeline), "g.yaml", "g")
    return scenario, scenarios.generate(scenario)


def offsets(generated, etype: str, client_id: str) -> list[int]:
    return [r["ts"] - generated.start_ms for r in generated.rows if r["type"] == etype and r.get("client_id") == client_id]


def test_rows_are_valid_sorted_events_with_a_seq_per_group():
    _, generated = generate(BASE, "timeline:\n  - {at: 1m, action: rolling_restart, downtime: 5s}\n")
    assert [(r["ts"], r["group_id"]) for r in generated.rows] == sorted((r["ts"], r["group_id"]) for r in generated.rows)
    seqs: dict[str, list[int]] = {}
    for line, row in enumerate(generated.rows, start=1):
        parse_event(row, "g", line)
        seqs.setdefault(row["group_id"], []).append(row["seq"])
    assert all(s == list(range(1, len(s) + 1)) for s in seqs.values())
    assert generated.until_ms == generated.start_ms + 30 * 60_000


def test_names_are_padded_group_ids_and_per_member_client_ids():
    _, generated = generate(BASE)
    assert generated.groups == {"orders": [f"orders-{i:02d}" for i in range(12)]}
    starts = [r for r in generated.rows if r["type"] == "CLIENT_START" and r["group_id"] == "orders-07"]
    assert sorted(r["client_id"] for r in starts) == ["orders-07-c0", "orders-07-c1", "orders-07-c2"]
    assert all("group_instance_id" not in r and r["topics"] == ["orders"] for r in starts)


def test_static_members_keep_their_instance_id_across_restarts():
    _, generated = generate(BASE + "    membership: static\n",
                            "timeline:\n  - {at: 1m, action: rolling_restart, downtime: 5s}\n"
                            "  - {at: 10m, action: crash, members: all, restart_after: 1m}\n")
    instances = {}
    for row in generated.rows:
        if row["type"] == "CLIENT_START":
            instances.setdefault(row["client_id"], set()).add(row["group_instance_id"])
    assert len(instances) == 36 and all(ids == {client.replace("-c", "-i")} for client, ids in instances.items())
    assert Counter(r["type"] for r in generated.rows if r.get("client_id") == "orders-03-c1") == \
        {"CLIENT_START": 3, "CLIENT_STOP": 1, "CLIENT_CRASH": 1}


def test_groups_start_staggered_and_their_members_close_together():
    _, generated = generate(BASE)
    firsts = {}
    for row in generated.rows:
        firsts.setdefault(row["group_id"], []).append(row["ts"] - generated.start_ms)
    assert len({times[0] for times in firsts.values()}) == 12  # no two groups on the same millisecond
    assert all(0 <= times[0] < 5_000 and max(times) - times[0] < JOIN_SPREAD_MS for times in firsts.values())


def test_the_same_seed_gives_the_same_rows_and_another_seed_other_rows():
    timeline = ("timeline:\n  - {at: 1m, action: pause, members: 2, duration: {distribution: exponential, mean: 20s}}\n"
                "  - {action: crash, groups: 50%, restart_after: {distribution: uniform, min: 1s, max: 1m}}\n")
    assert generate(BASE, timeline)[1].rows == generate(BASE, timeline)[1].rows
    assert generate(BASE, timeline)[1].rows != generate(BASE.replace("seed: 3", "seed: 4"), timeline)[1].rows


def test_adding_a_group_set_leaves_the_other_sets_rows_alone():
    timeline = "timeline:\n  - {at: 1m, action: crash, target: orders, members: 1, restart_after: 30s}\n"
    alone = generate(BASE, timeline)[1].rows
    other = BASE + "  - {name: audit, groups: 3, members: 2, topics: [{name: audit, partitions: 2}]}\n"
    together = generate(other, timeline)[1].rows
    assert [r for r in together if r["group_id"].startswith("orders-")] == alone


def test_rolling_restart_timing_downtime_gap_and_batches():
    _, generated = generate(BASE.replace("members: 3", "members: 4") + "    stagger: 0s\n",
                            "timeline:\n  - {at: 1m, action: rolling_restart, downtime: 10s, gap: 20s, batch: 2}\n")
    group = "orders-00"
    stops = {k: offsets(generated, "CLIENT_STOP", f"{group}-c{k}") for k in range(4)}
    restarts = {k: offsets(generated, "CLIENT_START", f"{group}-c{k}")[1:] for k in range(4)}
    assert stops == {0: [60_000], 1: [60_000], 2: [90_000], 3: [90_000]}
    assert restarts == {0: [70_000], 1: [70_000], 2: [100_000], 3: [100_000]}


def test_actions_without_at_follow_the_previous_one_and_idle_waits():
    scenario, generated = generate(BASE + "    stagger: 0s\n", """\
        timeline:
          - {at: 1m, action: rolling_restart, downtime: 10s, gap: 20s}
          - {action: idle, duration: 5m}
          - {action: scale_out, members: 2}
          - {action: scale_in, members: all}
        """)
    # the restart ends with the last member back: 60 s + 2 * 30 s + 10 s
    assert offsets(generated, "CLIENT_START", "orders-00-c3") == [130_000 + 300_000]
    assert offsets(generated, "CLIENT_STOP", "orders-00-c4") == [430_000]
    assert sorted(r["client_id"] for r in generated.rows if r["type"] == "CLIENT_STOP" and r["ts"] ==
                  generated.start_ms + 430_000 and r["group_id"] == "orders-00") == [f"orders-00-c{k}" for k in range(5)]


def test_each_action_but_idle_is_recorded_with_when_it_ran():
    _, generated = generate(BASE + "    stagger: 0s\n", """\
        timeline:
          - {at: 1m, action: rolling_restart, downtime: 10s, gap: 20s}
          - {action: idle, duration: 5m}
          - {action: scale_out, members: 2}
        """)
    start = generated.start_ms
    assert generated.actions == [
        {"action": "timeline[0] (rolling_restart, line 10)", "start_ts": start + 60_000, "end_ts": start + 130_000},
        {"action": "timeline[2] (scale_out, line 12)", "start_ts": start + 430_000, "end_ts": start + 430_000}]


def test_fractions_of_groups_and_members():
    _, generated = generate(BASE.replace("members: 3", "members: 8"),
                            "timeline:\n  - {at: 1m, action: crash, groups: 25%, members: 50%}\n")
    crashed = Counter(r["group_id"] for r in generated.rows if r["type"] == "CLIENT_CRASH")
    assert len(crashed) == 3 and set(crashed.values()) == {4}


def test_pauses_draw_their_lengths_per_member():
    _, generated = generate(BASE.replace("groups: 12", "groups: 40"), """\
        timeline:
          - {at: 1m, action: pause, duration: {distribution: uniform, min: 5s, max: 10s}}
          - {at: 5m, action: slow_poll, duration: {distribution: exponential, mean: 20s, max: 30s}}
        """)
    pauses = [r for r in generated.rows if r["type"] == "CLIENT_PAUSE"]
    uniform = [r["duration_ms"] for r in pauses if r["scope"] == "process"]
    exponential = [r["duration_ms"] for r in pauses if r["scope"] == "poll"]
    assert len(uniform) == len(exponential) == 40
    assert min(uniform) >= 5_000 and max(uniform) <= 10_000 and len(set(uniform)) > 30
    assert max(exponential) == 30_000 and min(exponential) < 10_000


def test_members_busy_with_an_earlier_action_are_not_picked_and_the_shortfall_is_noted():
    scenario, generated = generate(BASE.replace("groups: 12", "groups: 2").replace("members: 3", "members: 2"), """\
        timeline:
          - {at: 1m, action: pause, members: all, duration: 2m}
          - {at: 2m, action: crash, members: 1}
          - {at: 5m, action: flap, members: 1, cycles: 3, down: 10s, up: 20s}
          - {at: 5m30s, action: crash, members: 2}
        """)
    assert not [r for r in generated.rows if r["type"] == "CLIENT_CRASH" and r["ts"] < generated.start_ms + 300_000]
    late_crashes = Counter(r["group_id"] for r in generated.rows if r["type"] == "CLIENT_CRASH")
    assert late_crashes == {"orders-0": 1, "orders-1": 1}  # the flapping member was not available
    assert generated.notes == [
        "timeline[1] (crash, line 10): 2 of 2 member changes skipped in 2 group(s): too few members running "
        "and not busy with an earlier action at that time",
        "timeline[3] (crash, line 12): 2 of 4 member changes skipped in 2 group(s): too few members running "
        "and not busy with an earlier action at that time"]
    run(scenario)  # and no directive is rejected


def test_the_same_seed_gives_identical_tables():
    scenario = scenarios.parse_scenario(textwrap.dedent(BASE.replace("groups: 12", "groups: 2")) + textwrap.dedent("""\
        timeline:
          - {at: 1m, action: pause, members: 1, duration: {distribution: exponential, mean: 40s}}
          - {at: 3m, action: rolling_restart, downtime: 5s, gap: 10s, jitter: 3s}
        """), "g.yaml", "g")
    first, second = run(scenario).result.tables, run(scenario).result.tables
    assert first == second and first["generations"]


def test_a_restart_with_config_brings_each_client_back_with_it_over_its_sets_for_good():
    _, generated = generate(BASE.replace("groups: 12", "groups: 1") + "    assignors: [range]\n"
                            "    membership: static\n", """\
        timeline:
          - at: 1m
            action: rolling_restart
            downtime: 5s
            members: 2
            config: {group.protocol: consumer, partition.assignment.strategy: null, max.poll.interval.ms: 60000}
          - {at: 5m, action: crash, members: all, restart_after: 10s}
          - {at: 10m, action: crash, members: 1, restart_after: 10s, config: {group.protocol: classic}}
          - {at: 15m, action: scale_out}
        """)
    classic = {"partition.assignment.strategy": ["range"]}
    consumer = {"group.protocol": "consumer", "max.poll.interval.ms": 60000}
    starts: dict[str, list] = {}
    for row in generated.rows:
        if row["type"] == "CLIENT_START":
            starts.setdefault(row["client_id"], []).append(((row["ts"] - generated.start_ms) // 60_000,
                                                           row["group_instance_id"], row.get("config")))
            parse_event(row, "g", 1)  # a valid CLIENT_START of either protocol
    # c0 and c1 come back with the new settings over the set's, and keep them through a restart without
    # config (the crash at 5m); the same client and instance ids throughout. c2 is not restarted at 1m.
    assert starts["orders-0-c0"][:3] == [(0, "orders-0-i0", classic), (1, "orders-0-i0", consumer),
                                         (5, "orders-0-i0", consumer)]
    assert starts["orders-0-c1"][:3] == [(0, "orders-0-i1", classic), (1, "orders-0-i1", consumer),
                                         (5, "orders-0-i1", consumer)]
    assert [config for _, _, config in starts["orders-0-c2"][:2]] == [classic, classic]
    # The crash at 10m: its config is over the set's, not over the member's (the set's range is back).
    [back] = [start for client in starts.values() for start in client if start[0] == 10]
    assert back[2] == {**classic, "group.protocol": "classic"}
    # A member added later starts as its set says.
    assert starts["orders-0-c3"] == [(15, "orders-0-i3", classic)]


def test_a_topic_pattern_set_starts_its_members_with_the_pattern():
    _, generated = generate(BASE.replace("members: 3", "members: 3\n    topic_pattern: 'ord.*'\n"
                                                       "    config: {group.protocol: consumer}"))
    starts = [r for r in generated.rows if r["type"] == "CLIENT_START"]
    assert starts and all(r["topic_pattern"] == "ord.*" and "topics" not in r for r in starts)
    metadata = [r for r in generated.rows if r["type"] == "TOPIC_METADATA"]
    assert metadata and metadata[0]["topics"][0]["topic"] == "orders"  # the set's topics are the cluster's
    for line, row in enumerate(generated.rows, start=1):
        parse_event(row, "g", line)
