"""The causes the conformance table gives answer differences (simulations/conformance/explain.py)."""

from __future__ import annotations

import pandas as pd

from simulations.conformance.explain import MADE_UP, OVERTAKEN, SWEPT, SWEPT_FOLLOWS, answer_causes, record_causes


def test_a_lookup_answered_by_a_broker_not_leading_yet_is_explained_and_other_errors_are_not():
    divergences = pd.DataFrame([
        {"api": "Heartbeat", "connection": "c", "request_ts": 0, "captured_response_ts": 1,
         "captured_assignment": None, "simulated_assignment": None, "divergence": "error", "captured_error": "NOT_COORDINATOR",
         "simulated_error": "COORDINATOR_NOT_AVAILABLE"},
        {"api": "Heartbeat", "connection": "c", "request_ts": 2, "captured_response_ts": 3,
         "captured_assignment": None, "simulated_assignment": None, "divergence": "error",
         "captured_error": "NOT_COORDINATOR", "simulated_error": "NONE"},
    ])
    causes = answer_causes(divergences)
    assert sum(causes.values()) == 2
    assert causes["unexplained: error (Heartbeat)"] == 1
    assert [n for cause, n in causes.items() if cause.startswith("not modelled: which broker")] == [1]


def heartbeat(connection, sent, answered, captured, simulated, divergence="assignment"):
    return {"api": "ConsumerGroupHeartbeat", "connection": connection, "request_ts": sent,
            "captured_response_ts": answered, "captured_error": "NONE", "simulated_error": "NONE",
            "captured_assignment": captured, "simulated_assignment": simulated, "divergence": divergence}


def test_a_request_answered_before_an_earlier_one_in_flight_is_timing_and_so_is_the_member_catching_up():
    # c3 releases orders-3 at 5005; the broker answers c1's heartbeat of 5007 first, without it, and gives it
    # at c1's next heartbeat, as coordsim (in arrival order) did at 5007.
    divergences = pd.DataFrame([
        heartbeat("c3", 5005, 5028, None, None, "none"),
        heartbeat("c1", 5007, 5013, None, "orders-2,orders-3"),
        heartbeat("c1", 6009, 6021, "orders-2,orders-3", None),
        heartbeat("c2", 7000, 7010, "orders-1", "orders-0"),  # nothing in flight: unexplained
    ])
    causes = answer_causes(divergences)
    assert causes[OVERTAKEN] == 1 and causes[MADE_UP] == 1
    assert causes["unexplained: assignment (ConsumerGroupHeartbeat)"] == 1


def join(connection, sent, answered, member, captured_error, simulated_error, api="JoinGroup"):
    return {"api": api, "connection": connection, "request_ts": sent, "captured_response_ts": answered,
            "captured_member_id": member, "captured_error": captured_error, "simulated_error": simulated_error,
            "captured_assignment": None, "simulated_assignment": None,
            "divergence": "none" if captured_error == simulated_error else "error"}


def test_a_join_refused_after_the_brokers_sweep_deleted_the_new_group_is_timing_and_so_is_the_rejoin():
    # classic-offsets-expiry against Kafka 4.4.0: the broker's 1 s sweep deleted the group 8 ms after c1's first
    # JoinGroup created it (a tombstone at 1008), so the JoinGroup with the id it handed out was refused; the
    # member joined again under a new id, which coordsim's group, still holding the first, did not know.
    divergences = pd.DataFrame([
        join("c1", 1000, 1002, "m1", "MEMBER_ID_REQUIRED", "MEMBER_ID_REQUIRED"),
        join("c1", 1024, 1064, "m1", "UNKNOWN_MEMBER_ID", "NONE"),
        join("c1", 1073, 1076, "m2", "MEMBER_ID_REQUIRED", "MEMBER_ID_REQUIRED"),
        join("c1", 1081, 4108, "m2", "NONE", "UNKNOWN_MEMBER_ID"),
        join("c1", 4134, 4159, "m2", "NONE", "ILLEGAL_GENERATION", api="SyncGroup"),
        join("c1", 4394, 4418, None, "NONE", "NONE", api="LeaveGroup"),
        join("c1", 9000, 9001, "m3", "NONE", "ILLEGAL_GENERATION", api="Heartbeat"),  # after it left
    ])
    causes = answer_causes(divergences, group_deleted_at=[1008])
    assert causes[SWEPT] == 1 and causes[SWEPT_FOLLOWS] == 2
    assert causes["unexplained: error (Heartbeat)"] == 1
    # No tombstone between the two answers: nothing is put down to a sweep.
    assert set(answer_causes(divergences, group_deleted_at=[900, 1070])) == {
        "unexplained: error (JoinGroup)", "unexplained: error (SyncGroup)", "unexplained: error (Heartbeat)"}
    records = pd.DataFrame([
        {"kind": "real_only", "real_ts": 1008, "simulated_ts": None},
        {"kind": "value", "real_ts": 900, "simulated_ts": 900},
        {"kind": "simulated_only", "real_ts": None, "simulated_ts": 5000},
    ])
    assert record_causes(records, swept_at=1008) == {SWEPT_FOLLOWS: 2, "unexplained: value (other fields differ)": 1}
