"""The causes the conformance table gives answer differences (simulations/conformance/explain.py)."""

from __future__ import annotations

import pandas as pd

from simulations.conformance.explain import MADE_UP, OVERTAKEN, answer_causes


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
