"""What the brokers see of the coordinator lookup loop (state/clients/lookup_loop.py): which broker a
synthetic client's FindCoordinator reaches, and the rows of the looping clients' requests that arrived.

A lookup reaches a broker and is answered from its metadata (a `requests` and a `responses` row, at the broker
`lookup_node` draws); a heartbeat or commit sent to the down broker reaches none, and only its failed
connection is written. The loop's closed form on the client side says which requests arrived; this side
writes them, in the order the coordinator takes requests in.
"""

from __future__ import annotations

import hashlib

from state.clients.fleet import SYNTHETIC
from state.request_rows import request_row


def lookup_node(group_id: str, live: list[int], request_id: str) -> int | None:
    """The broker a synthetic client's FindCoordinator `request_id` goes to. The Java client sends it to
    NetworkClient.leastLoadedNode: from a random offset over its metadata's nodes, the first with a ready
    connection and nothing in flight, else the one with the fewest requests in flight; a node whose
    connection was refused is in reconnect backoff and never ready. Here: a draw from the group and the
    request among the brokers up now (None when the input names none: a run without a cluster)."""
    if not live:
        return None
    key = f"{group_id}\x00{request_id}".encode()
    return live[int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") % len(live)]


class LookupAnswers:
    """The brokers' half of the lookup loop: what the loop's client half (state/clients/lookup_loop.py) is given
    instead of the runtime. It holds the group's runtime (`runtime`), of which it reads the coordinator's
    identity and writes the rows of the requests that arrived."""

    def __init__(self, runtime) -> None:
        self.runtime = runtime

    def loop_goes_round(self) -> bool:
        """A client that looks the coordinator up goes round the loop: FindCoordinator names a down broker, or
        no broker leads the group's partition."""
        rt = self.runtime
        return rt.coordinator_epoch in rt.down_epochs or rt.leaderless

    @property
    def coordinator_epoch(self) -> int:
        """The coordinator epoch of the group now: the one a lookup that finds a coordinator names."""
        return self.runtime.coordinator_epoch

    @property
    def discoverable_coordinator(self) -> int | None:
        """The coordinator epoch FindCoordinator names now; None while the partition has no leader."""
        return self.runtime.discoverable_coordinator

    def failed_connection(self, request, at: int, sent_to: int) -> dict:
        """The `responses` row of a request to the down broker of epoch `sent_to`, its connection failed at `at`."""
        return self.runtime.failed_connection(request, at, sent_to)

    def has_open_runs(self, origin: str) -> bool:
        """A quiet run of the client's is still open (state/runtime/quiet_runs.py)."""
        return self.runtime.quiet.has_open(origin)

    def write_arrivals(self, arrived: list[tuple]) -> dict[str, dict]:
        """Write the requests that arrived, each (arrival, seq, line, chain, sent, client, ...) with chain None
        for a lookup, in the order the coordinator takes them; the `responses` row of each client's last lookup,
        by client id (its answer, on its way back)."""
        rt = self.runtime
        arrived.sort(key=lambda a: a[:3])
        # A client's requests of a chain differ only in when they were sent and their number: each is its first
        # one's rows with those changed.
        first: dict[tuple[str, str | None], tuple[dict | None, dict]] = {}
        answers: dict[str, dict] = {}
        for arrival, seq, _, chain, sent, client, *_ in arrived:
            request_id = (client.request_id(seq) if chain is None
                          else rt.fleet.periodic_request_id(client, chain, sent))
            if (client.client_id, chain) not in first:
                if chain is None:
                    event = rt.fleet.lookup_request(client, seq, sent)
                    raw, row = request_row(event), rt.out.response_row(event, arrival, rt.lookup_error)
                else:
                    event, raw = rt.fleet.periodic_request(client, chain, sent, seq)[0], None
                    row = rt.failed_connection(event, arrival, rt.coordinator_epoch)
                first[client.client_id, chain] = raw, row
            raw, row = first[client.client_id, chain]
            row = dict(row, request_ts=arrival, response_ts=arrival, request_id=request_id, request_seq=seq)
            if chain is None:
                rt.out.request(dict(raw, ts=arrival, seq=seq, request_id=request_id))
                row["node_id"] = lookup_node(rt.group_id, rt.live_brokers, request_id)
                answers[client.client_id] = row
            rt.out.emit("responses", row)
        arrival, seq, line = arrived[-1][:3]
        rt._last_key = (arrival, seq, SYNTHETIC, line)
        rt.last_event_ts = max(rt.last_event_ts, arrival)
        return answers
