"""`describe` on the tiny trace, against text written out by hand from what kafka-consumer-groups.sh prints
(trailing spaces included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulations.views import UnknownGroup, describe, load_run
from simulations.views.describe import tool_order
from state.runtime.member_ids import MemberIds

from .runs import T0, TINY, live_run, replay

C1 = "c1-708a9f81-e5ca-4caf-baf4-419c55f7b26f"
C2 = "c2-static-d2dbf2a3-07ac-439e-bcf0-23e9c83a5988"
STABLE_GEN1 = T0 + 6_500  # both members Stable: c1 has orders-0,1, c2 (static) orders-2,3; nothing committed
AFTER_LEAVE = T0 + 8_050  # c2 left at +8 s; c1 has not rejoined: PreparingRebalance
REBALANCING = "\nWarning: Consumer group 'orders' is rebalancing.\n"
NO_MEMBERS = "\nConsumer group 'orders' has no active members.\n"


def test_offsets_of_a_stable_group_list_owners_by_partition_count(tiny_run):
    described = describe(tiny_run, "orders", STABLE_GEN1)
    assert described.err == ""
    assert described.out == (
        "\n"
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID                                    HOST            CLIENT-ID\n"
        f"orders          orders          2          -               -               -               {C2} /10.0.0.2       c2\n"
        f"orders          orders          3          -               -               -               {C2} /10.0.0.2       c2\n"
        f"orders          orders          0          -               -               -               {C1}        /10.0.0.1       c1\n"
        f"orders          orders          1          -               -               -               {C1}        /10.0.0.1       c1\n"
    )


def test_offsets_at_the_end_show_committed_partitions_without_owner(tiny_run):
    described = describe(tiny_run, "orders")  # the group expired into Empty; its offsets remain
    assert described.err == NO_MEMBERS
    assert described.out == (
        "\n"
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID\n"
        "orders          orders          0          100             -               -               -               -               -\n"
        "orders          orders          1          200             -               -               -               -               -\n"
        "orders          orders          2          300             -               -               -               -               -\n"
        "orders          orders          3          400             -               -               -               -               -\n"
    )


def test_a_rebalancing_group_has_no_owners(tiny_run):
    described = describe(tiny_run, "orders", AFTER_LEAVE, "offsets")
    assert described.err == REBALANCING
    assert described.out.splitlines()[2:] == [
        "orders          orders          0          100             -               -               -               -               -",
        "orders          orders          1          200             -               -               -               -               -",
        "orders          orders          2          300             -               -               -               -               -",
    ]


def test_members_with_a_static_member_show_its_instance_id(tiny_run):
    described = describe(tiny_run, "orders", STABLE_GEN1, "members")
    assert described.out == (
        "\n"
        "GROUP           CONSUMER-ID                                    GROUP-INSTANCE-ID HOST            CLIENT-ID       #PARTITIONS     \n"
        f"orders          {C2} c2-static         /10.0.0.2       c2              2               \n"
        f"orders          {C1}                          /10.0.0.1       c1              2               \n"
    )


def test_members_while_preparing_a_rebalance_leave_out_the_member_that_left(tiny_run):
    described = describe(tiny_run, "orders", AFTER_LEAVE, "members")
    assert described.err == REBALANCING
    assert described.out == (
        "\n"
        "GROUP           CONSUMER-ID                             HOST            CLIENT-ID       #PARTITIONS     \n"
        f"orders          {C1} /10.0.0.1       c1              0               \n"
    )


def test_members_of_an_empty_group_print_the_header_alone(tiny_run):
    described = describe(tiny_run, "orders", None, "members")
    assert (described.err, described.out) == (
        NO_MEMBERS, "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n")


def test_state_names_the_coordinator_partition(tiny_run):
    assert describe(tiny_run, "orders", STABLE_GEN1, "state").out == (
        "\n"
        "GROUP                       COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS\n"
        "orders                      __consumer_offsets-31  (31) range                Stable          2\n"
    )
    rebalancing = describe(tiny_run, "orders", AFTER_LEAVE, "state")
    assert rebalancing.out.splitlines()[-1] == (
        "orders                      __consumer_offsets-31  (31)                      PreparingRebalance 1")


def test_a_group_not_created_yet_does_not_exist(tiny_run):
    for mode in ("offsets", "state"):
        assert describe(tiny_run, "orders", T0 - 1, mode).out == "\nError: Consumer group 'orders' does not exist.\n"


OUTAGE = 1767225600000 + 185_000  # broker-failure: payments-17's coordinator failed at 3m, reloaded at 3m8.966s
NOT_AVAILABLE = ("\nError: Executing consumer group command failed due to "
                 "org.apache.kafka.common.errors.CoordinatorNotAvailableException: The coordinator is not available.\n")


def test_a_group_whose_coordinator_is_not_available_is_not_described(failed_broker_run):
    for mode in ("offsets", "members", "state"):
        described = describe(failed_broker_run, "payments-17", OUTAGE, mode)
        assert (described.out, described.err) == (NOT_AVAILABLE, ""), mode
    # Loaded at generation 1 on broker 6, with its members and their assignment as before the failure.
    state = describe(failed_broker_run, "payments-17", OUTAGE + 4_001, "state").out.splitlines()[-1]
    assert state.split() == ["payments-17", "__consumer_offsets-34", "(6)", "range", "Stable", "5"]
    owned = describe(failed_broker_run, "payments-17", OUTAGE + 4_001).out.splitlines()[2:]
    assert len(owned) == 10 and all(line.split()[6].startswith("payments-17-c") for line in owned)


def test_a_group_missing_from_the_run_is_an_error(tiny_run):
    with pytest.raises(UnknownGroup, match="group 'ordres' is not in this run \\(groups: exporter, orders\\)"):
        describe(tiny_run, "ordres")


@pytest.mark.parametrize("partitions, printed", [
    # What java.util.HashMap printed for these keys (TopicPartition.hashCode), checked with a JDK 17.
    ([("orders", p) for p in range(13)], [("orders", p) for p in [7, 8, 9, 10, 11, 12, 0, 1, 2, 3, 4, 5, 6]]),
    ([(t, p) for t in ("payments", "a") for p in range(3)],
     [("a", 2), ("a", 1), ("a", 0), ("payments", 0), ("payments", 2), ("payments", 1)]),
])
def test_partitions_come_in_the_tool_s_hash_map_order(partitions, printed):
    assert tool_order(partitions) == printed


def test_a_run_in_progress_is_read_from_its_committed_micro_batches(tmp_path, tiny_run):
    writer = live_run(TINY, tmp_path / "live", [T0 + 7_000, T0 + 800_000])
    next(writer)
    early = load_run(tmp_path / "live")
    assert early.live and early.end_ts <= T0 + 7_000
    assert describe(early, "orders", mode="state").out.splitlines()[-1].split()[-2:] == ["Stable", "2"]
    next(writer)
    final = load_run(tiny_run)
    for name, frame in load_run(tmp_path / "live").tables.items():
        assert len(frame) == len(final[name]), name


def test_offsets_show_log_end_offset_and_lag_where_the_run_models_production(lagging_run):
    # 100 records/s per partition from ts 0; by 35 s, commits at 10, 20, 30 s of 1500 (p0) and 3000 (p1). The
    # tool lists unowned partitions in its HashMap order.
    described = describe(lagging_run, "etl", 35_000)
    assert described.err == "\nConsumer group 'etl' has no active members.\n"
    assert described.out == (
        "\n"
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID\n"
        "etl             t               1          3000            3500            500             -               -               -\n"
        "etl             t               0          1500            3500            2000            -               -               -\n"
    )


def test_members_while_preparing_a_rebalance_come_from_the_members_table(tmp_path):
    # a and c are Stable at generation 1 (the initial delay, extended once for c, ends at +6 s); b joins at
    # +7 s and the rebalance waits (20 s) for a and c to rejoin. Neither does: a's session (10 s) expires at
    # +16.1 s, c (30 s session) stays until the rebalance times out at +27 s. At +18 s the coordinator's
    # members are c and b: a is gone though the join phase goes on.
    ids = MemberIds("g")
    a, c, b = (ids.member_id(client) for client in ("a", "c", "b"))  # the ids the coordinator hands out

    def join(ts, client, session_ms):
        return {"ts": T0 + ts, "group_id": "g", "type": "JOIN_GROUP", "api_version": 3, "client_id": client,
                "member_id": "", "protocol_type": "consumer", "protocols": [{"name": "range", "topics": ["t"]}],
                "session_timeout_ms": session_ms, "rebalance_timeout_ms": 20_000,
                "client_host": f"/10.0.0.{ord(client) - 96}"}

    def sync(ts, client, member_id, assignments=()):
        return {"ts": T0 + ts, "group_id": "g", "type": "SYNC_GROUP", "client_id": client, "member_id": member_id,
                "generation_id": 1, "assignments": list(assignments)}

    events = [join(0, "a", 10_000), join(10, "c", 30_000),
              sync(6_100, "a", a, [{"member_id": a, "partitions": [{"topic": "t", "partitions": [0]}]},
                                   {"member_id": c, "partitions": [{"topic": "t", "partitions": [1]}]}]),
              sync(6_110, "c", c), join(7_000, "b", 30_000)]
    trace = tmp_path / "expiry.jsonl"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    run = replay(trace, tmp_path / "run")

    described = describe(run, "g", T0 + 18_000, "members")
    assert described.err == "\nWarning: Consumer group 'g' is rebalancing.\n"
    assert described.out == (
        "\n"
        "GROUP           CONSUMER-ID                            HOST            CLIENT-ID       #PARTITIONS     \n"
        f"g               {b} /10.0.0.2       b               0               \n"
        f"g               {c} /10.0.0.3       c               0               \n"
    )  # the coordinator's HashMap order (b's bucket comes first), as DescribeGroups lists them
    assert describe(run, "g", T0 + 16_099, "state").out.split()[-1] == "3"  # a is still a member
    assert describe(run, "g", T0 + 18_000, "state").out.split()[-2:] == ["PreparingRebalance", "2"]


CG_SAMPLE = Path(__file__).resolve().parents[3] / "simulations" / "samples" / "consumer-group-heartbeats.jsonl"
CG_T0 = 1772442000000
CG_A, CG_B, CG_C = "k3P5YfTqQ3aTzq1oQJ0C9w", "Rr0bP2hXS1Gq5c8Wm7Lx4A", "9sDf3Jk2TQy8pV1nZc5BeQ"


@pytest.fixture(scope="module")
def consumer_group_run(tmp_path_factory):
    return replay(CG_SAMPLE, tmp_path_factory.mktemp("consumer-group") / "run")


def test_a_reconciling_consumer_group_lists_what_each_member_holds(consumer_group_run):
    # At +21 s the static member left with epoch -2 (keeping its partitions): the group is Reconciling.
    described = describe(consumer_group_run, "orders-cg", CG_T0 + 21_000, "members")
    assert described.err == "\nWarning: Consumer group 'orders-cg' is rebalancing.\n"
    assert described.out == (
        "\n"
        "GROUP           CONSUMER-ID            GROUP-INSTANCE-ID HOST            CLIENT-ID         #PARTITIONS     \n"
        f"orders-cg       {CG_A}                   -               consumer-orders-1 3               \n"
        f"orders-cg       {CG_C} orders-3          -               consumer-orders-3 2               \n"
        f"orders-cg       {CG_B}                   -               consumer-orders-2 3               \n"
    )
    state = describe(consumer_group_run, "orders-cg", CG_T0 + 21_000, "state")
    assert state.out.splitlines()[-1].split() == [
        "orders-cg", "__consumer_offsets-42", "(42)", "uniform", "Reconciling", "3"]
    owners = describe(consumer_group_run, "orders-cg", CG_T0 + 21_000, "offsets").out.splitlines()
    assert [line.split()[1:4] for line in owners[2:4]] == [["orders", "0", "1200"], ["orders", "1", "-"]]
