"""When the real broker read each captured request: a request sent on a connection while an earlier one of
that connection was still unanswered (pipelined, as a Java consumer's close sends its LeaveGroup behind a
SyncGroup in flight) is read only once the broker has sent the earlier one's response. Kafka's SocketServer
mutes a connection from a request's receipt until its response is sent (Processor: `selector.mute` on
REQUEST_RECEIVED, `tryUnmuteChannel` on RESPONSE_SENT), so the requests of one connection are handled one at
a time, in order. The replay is given that time as the request's, not the time the capture saw it arrive.

`coordsim capture import` applies it unless told the capture's server reads every request as it comes
(`--pipelined as-captured`: librdkafka's mock cluster, which answered the shipped captures' commits while a
JoinGroup of the same connection was still pending).

Only the group requests the import keeps are known; the Java consumer's coordinator connection carries no
others once it is up. A request whose earlier one was never answered keeps its own time.
"""

from __future__ import annotations

# `coordsim capture import --pipelined`: when a pipelined request is replayed.
HELD, AS_CAPTURED = "held", "as-captured"
PIPELINED = (HELD, AS_CAPTURED)


def hold_pipelined(events: list[dict], captured: list[dict]) -> None:
    """Move each pipelined request's event (`ts`) to the response of the last request before it on its
    connection (both lists as `simulations.capture.importer` makes them: events and captured rows share
    `request_id`)."""
    read_at: dict[str, int] = {}
    busy_until: dict[str, int] = {}  # connection -> the latest response time of its requests so far
    for row in sorted(captured, key=lambda r: r["seq"]):
        connection, arrived = row["connection"], row["request_ts"]
        held = busy_until.get(connection)
        if held is not None and held > arrived:
            read_at[row["request_id"]] = held
        if row.get("response_ts") is not None:
            busy_until[connection] = max(busy_until.get(connection, row["response_ts"]), row["response_ts"])
    for event in events:
        ts = read_at.get(event.get("request_id"))
        if ts is not None:
            event["ts"] = ts
