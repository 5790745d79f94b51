"""simulations/capture/pipelined.py: a request sent behind another still unanswered on its connection is
replayed when the broker answered that one (Kafka's SocketServer mutes a connection until its response)."""

from simulations.capture.pipelined import hold_pipelined


def row(seq, connection, request_ts, response_ts):
    return {"seq": seq, "request_id": f"{connection}/{seq}", "connection": connection, "request_ts": request_ts,
            "response_ts": response_ts}


def event(captured_row):
    return {"ts": captured_row["request_ts"], "seq": captured_row["seq"], "request_id": captured_row["request_id"]}


def test_a_leavegroup_sent_behind_a_syncgroup_is_read_once_the_syncgroup_is_answered():
    # classic-slow-poll against Kafka 4.4.0: the follower's SyncGroup waits for the leader's; the follower
    # closes 3 ms later, its LeaveGroup behind it on the same connection; the leader's SyncGroup comes next.
    captured = [row(1, "a", 14271, 14293), row(2, "a", 14274, 14296), row(3, "b", 14284, 14292)]
    events = [event(r) for r in captured] + [{"ts": 14000, "seq": 0, "type": "TOPIC_METADATA"}]
    hold_pipelined(events, captured)
    assert [e["ts"] for e in events] == [14271, 14293, 14284, 14000]


def test_each_request_of_a_pipeline_waits_for_the_one_before():
    # An OffsetFetch and a heartbeat sent together, then a commit before either is answered.
    captured = [row(1, "a", 100, 104), row(2, "a", 100, 113), row(3, "a", 101, 120), row(4, "a", 130, 131)]
    events = [event(r) for r in captured]
    hold_pipelined(events, captured)
    assert [e["ts"] for e in events] == [100, 104, 113, 130]


def test_an_unanswered_request_holds_nothing_back():
    captured = [row(1, "a", 100, None), row(2, "a", 101, 105)]
    events = [event(r) for r in captured]
    hold_pipelined(events, captured)
    assert [e["ts"] for e in events] == [100, 101]
