"""Writes `sample-trace.jsonl` next to this file: four minutes of Kafka consumer traffic to one coordinator.

The trace is closed-loop: each group's coordinator (`state.runtime.group_runtime.GroupRuntime`) runs inside this script,
and every request is what a Java KafkaConsumer would send next given the responses it got (member ids handed
out by the coordinator, the generation it announced, the leader's range assignment over the members the
JoinGroup response listed, committed offsets fetched after each assignment). Replaying the trace therefore
reproduces a conversation that makes sense end to end.

Groups (epoch-ms timestamps from 2026-03-02T09:00:00Z):
- orders-processing: three dynamic members (KIP-394 two-step join) on a 6-partition topic; heartbeats every
  3 s, auto-commits every 5 s; at +95 s one member closes (commit, LeaveGroup) and the others rejoin.
- inventory-sync: two static members (group.instance.id); at +70 s one restarts and rejoins with the same
  instance id within its session timeout: no rebalance.
- payments-audit: session.timeout.ms 10000; at +60 s a member crashes and is expired; it comes back at
  +120 s as a new member.
- billing-exporter: a standalone consumer (assign(), generation -1) committing every 10 s, plus OffsetFetches.
Two deliberately bad rows (one not JSON, one of a type the classic coordinator does not know) show rejects.

Deterministic: run `python simulations/samples/make_sample_trace.py` and the file is identical.
"""

from __future__ import annotations

import base64
import datetime as dt
import heapq
import itertools
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from state.classic import consumer_protocol
from state.assignors import range as range_assignor
from state.assignors.model import GroupAssignmentInput, MemberSubscription
from state.config import CoordinatorConfig
from state.events import NEWEST_API_VERSION, group_partitions, parse_event
from state.runtime.group_runtime import GroupRuntime

START = int(dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.timezone.utc).timestamp() * 1000)
END = START + 240_000
PARTITIONS = {"orders": 6, "inventory": 4, "payments": 3, "invoices": 2}
RECORDS_PER_SECOND = 40  # per partition; committed offsets follow the log end with a small lag
HEARTBEAT_INTERVAL_MS = 3_000
AUTO_COMMIT_INTERVAL_MS = 5_000
MAX_POLL_INTERVAL_MS = 300_000  # a consumer's rebalance timeout
OUTPUT = Path(__file__).with_name("sample-trace.jsonl")


def log_end_offset(topic: str, partition: int, now: int) -> int:
    return 10_000 * (partition + 1) + RECORDS_PER_SECOND * (now - START) // 1000


@dataclass
class Consumer:
    """One consumer process, as the coordinator sees it: its identity and its place in the group protocol."""

    client_id: str
    host: str
    topics: tuple[str, ...]
    instance_id: str | None = None
    session_timeout_ms: int = 45_000
    member_id: str = ""
    generation: int = -1
    assignment: list[dict] = field(default_factory=list)
    positions: dict[tuple[str, int], int] = field(default_factory=dict)
    # Bumped whenever the consumer leaves a phase: timers armed in an earlier phase then do nothing.
    epoch: int = 0

    def partitions(self) -> list[tuple[str, int]]:
        return [(a["topic"], p) for a in self.assignment for p in a["partitions"]]


class GroupLoop:
    """One group's coordinator and its consumers on a shared simulated clock."""

    def __init__(self, group_id: str, seed: int) -> None:
        self.group_id = group_id
        self.runtime = GroupRuntime(group_id, CoordinatorConfig())
        self.random = random.Random(seed)
        self.now = START
        self.agenda: list[tuple[int, int, Callable[[], None]]] = []
        self.order = itertools.count()
        self.rows: list[dict] = []
        self.request_numbers = itertools.count(1)
        self.waiting: dict[str, Callable[[dict], None]] = {}

    # -- clock ---------------------------------------------------------------------------------------------
    def at(self, ts: int, action: Callable[[], None], consumer: Consumer | None = None) -> None:
        """Run `action` at `ts`; with `consumer`, only if the consumer is still in the phase it is in now."""
        if ts > END:
            return  # the capture window ends
        if consumer is not None:
            epoch, inner = consumer.epoch, action

            def action() -> None:
                if consumer.epoch == epoch:
                    inner()

        heapq.heappush(self.agenda, (ts, next(self.order), action))

    def later(self, ms: int, action: Callable[[], None], consumer: Consumer | None = None) -> None:
        self.at(self.now + ms, action, consumer)

    def latency(self) -> int:
        """Milliseconds between a response leaving the coordinator and the client's next request arriving."""
        return self.random.randint(1, 12)

    def run(self) -> None:
        while self.agenda:
            ts = self.agenda[0][0]
            wakeup = self.runtime.next_wakeup()
            if wakeup is not None and wakeup <= ts:
                # Deadlines at a time fire before requests at that time, as in a replay.
                self._advance(wakeup)
                continue
            _, _, action = heapq.heappop(self.agenda)
            self.now = ts
            action()

    def _advance(self, ts: int) -> None:
        self.now = ts
        self.runtime.advance_to(ts)
        output = self.runtime.take_output()
        assert not output.rejects, output.rejects
        for response in output.tables["responses"]:
            self.now = response["response_ts"]
            self.waiting.pop(response["request_id"])(response)

    # -- requests ------------------------------------------------------------------------------------------
    def send(self, consumer: Consumer, etype: str, on_response: Callable[[dict], None], **fields) -> None:
        row = {"ts": self.now, "group_id": self.group_id, "type": etype,
               "request_id": f"{consumer.client_id}-{next(self.request_numbers)}",
               "client_id": consumer.client_id, "api_version": NEWEST_API_VERSION[etype], **fields}
        self.rows.append(row)
        self.waiting[row["request_id"]] = on_response
        self.runtime.offer([parse_event(row, self.group_id, len(self.rows))])
        self._advance(self.now)

    def member_fields(self, c: Consumer) -> dict:
        fields = {"member_id": c.member_id}
        if c.instance_id is not None:
            fields["group_instance_id"] = c.instance_id
        return fields

    # -- the consumer's group protocol ----------------------------------------------------------------------
    # Lifecycle events come from outside the protocol, so they are not tied to the consumer's current phase.
    def start(self, c: Consumer, ts: int) -> None:
        self.at(ts, lambda: self.join(c))

    def join(self, c: Consumer, reason: str | None = None) -> None:
        self.disarm(c)
        # Java's defaults, [range, cooperative-sticky], resolve to the eager protocol: partitions are revoked
        # before the join, so none are owned; cooperative-sticky's userData is its last generation.
        sticky_data = consumer_protocol.encode_cooperative_user_data(c.generation)
        protocols = [
            {"name": "range", "topics": list(c.topics), "owned_partitions": [], "generation_id": c.generation},
            {"name": "cooperative-sticky", "topics": list(c.topics), "owned_partitions": [],
             "generation_id": c.generation, "user_data": base64.b64encode(sticky_data).decode()},
        ]
        c.assignment = []
        self.send(c, "JOIN_GROUP", lambda r: self.on_join(c, r), **self.member_fields(c),
                  protocol_type="consumer", protocols=protocols, session_timeout_ms=c.session_timeout_ms,
                  rebalance_timeout_ms=MAX_POLL_INTERVAL_MS, client_host=c.host,
                  **({"reason": reason} if reason else {}))

    def rejoin(self, c: Consumer, reason: str) -> None:
        self.later(self.latency(), lambda: self.join(c, reason), c)

    def on_join(self, c: Consumer, r: dict) -> None:
        error = r["error"]
        if error == "MEMBER_ID_REQUIRED":
            c.member_id = r["member_id"]
            self.rejoin(c, f"need to re-join with the given member-id: {c.member_id}")
        elif error == "NONE":
            c.member_id, c.generation = r["member_id"], r["generation_id"]
            assignments = []
            if r["leader_id"] == c.member_id and not r["skip_assignment"]:
                assignments = self.range_assignment(r["members"])
            self.later(self.latency(), lambda: self.send(
                c, "SYNC_GROUP", lambda s: self.on_sync(c, s), **self.member_fields(c),
                generation_id=c.generation, protocol_type="consumer", protocol_name=r["protocol_name"],
                assignments=assignments), c)
        else:
            self.on_error(c, error)

    def range_assignment(self, members: list[dict]) -> list[dict]:
        subscriptions = [MemberSubscription.from_metadata(m["member_id"], m["metadata"], m["group_instance_id"])
                         for m in members]
        plan = range_assignor.assign(GroupAssignmentInput.build(subscriptions, PARTITIONS))
        return [{"member_id": member_id,
                 "partitions": [{"topic": p.topic, "partitions": list(p.partitions)} for p in group_partitions(tps)]}
                for member_id, tps in plan.items()]

    def on_sync(self, c: Consumer, r: dict) -> None:
        if r["error"] != "NONE":
            self.on_error(c, r["error"])
            return
        self.disarm(c)
        c.assignment = r["assignment"] or []
        self.later(HEARTBEAT_INTERVAL_MS + self.latency(), lambda: self.heartbeat(c), c)
        self.later(AUTO_COMMIT_INTERVAL_MS + self.latency(), lambda: self.auto_commit(c), c)
        if c.assignment:
            self.later(self.latency(), lambda: self.send(
                c, "OFFSET_FETCH", lambda f: self.on_fetch(c, f),
                partitions=c.assignment, require_stable=True), c)

    def on_fetch(self, c: Consumer, r: dict) -> None:
        for result in r["results"] or []:
            tp = (result["topic"], result["partition"])
            # No committed offset: auto.offset.reset=latest starts at the log end.
            c.positions[tp] = result["offset"] if result["offset"] >= 0 else log_end_offset(*tp, self.now)

    def heartbeat(self, c: Consumer) -> None:
        self.send(c, "HEARTBEAT", lambda r: self.on_heartbeat(c, r), **self.member_fields(c),
                  generation_id=c.generation)

    def on_heartbeat(self, c: Consumer, r: dict) -> None:
        if r["error"] == "NONE":
            self.later(HEARTBEAT_INTERVAL_MS + self.latency(), lambda: self.heartbeat(c), c)
        elif r["error"] == "REBALANCE_IN_PROGRESS":
            self.disarm(c)
            self.later(self.latency(), lambda: self.prepare_rejoin(c), c)
        else:
            self.on_error(c, r["error"])

    def prepare_rejoin(self, c: Consumer) -> None:
        """onJoinPrepare: commit synchronously what was consumed, then rejoin."""
        self.commit(c, lambda _: self.rejoin(c, "group is already rebalancing"))

    def auto_commit(self, c: Consumer) -> None:
        self.commit(c, lambda _: None)
        self.later(AUTO_COMMIT_INTERVAL_MS + self.latency(), lambda: self.auto_commit(c), c)

    def commit(self, c: Consumer, then: Callable[[dict], None]) -> None:
        offsets = []
        for tp in c.partitions():
            lag = self.random.randint(0, RECORDS_PER_SECOND)
            c.positions[tp] = max(c.positions.get(tp, 0), log_end_offset(*tp, self.now) - lag)
            offsets.append({"topic": tp[0], "partition": tp[1], "offset": c.positions[tp], "leader_epoch": 0,
                            "metadata": ""})
        if not offsets:
            then({})
            return
        self.send(c, "OFFSET_COMMIT", then, **self.member_fields(c), generation_id=c.generation, offsets=offsets)

    def on_error(self, c: Consumer, error: str) -> None:
        # AbstractCoordinator: ILLEGAL_GENERATION keeps the member id, UNKNOWN_MEMBER_ID starts over.
        if error == "REBALANCE_IN_PROGRESS":
            self.rejoin(c, "group is already rebalancing")
        elif error == "ILLEGAL_GENERATION":
            c.generation = -1
            self.rejoin(c, "encountered ILLEGAL_GENERATION")
        elif error == "UNKNOWN_MEMBER_ID":
            c.member_id, c.generation = "", -1
            self.rejoin(c, "encountered UNKNOWN_MEMBER_ID")
        else:  # FENCED_INSTANCE_ID and the rest are fatal to this sample's consumers
            self.disarm(c)

    @staticmethod
    def disarm(c: Consumer) -> None:
        c.epoch += 1  # every heartbeat, commit and retry armed so far will do nothing

    def close(self, c: Consumer, ts: int) -> None:
        """KafkaConsumer.close(): a last commit, then LeaveGroup (dynamic members only; a static member's
        session outlives the process so a restart can take its place)."""
        def leave(_):
            if c.instance_id is None:
                self.later(self.latency(), lambda: self.send(
                    c, "LEAVE_GROUP", lambda r: None,
                    members=[{"member_id": c.member_id, "reason": "the consumer is being closed"}]))

        def shutdown():
            self.disarm(c)
            self.commit(c, leave)

        self.at(ts, shutdown)

    def crash(self, c: Consumer, ts: int) -> None:
        """The process dies: not another request, so only its session timeout tells the coordinator."""
        self.at(ts, lambda: self.disarm(c))

    # -- a consumer outside any group protocol --------------------------------------------------------------
    def standalone(self, c: Consumer, partitions: list[tuple[str, int]], every_ms: int) -> None:
        c.assignment = [{"topic": p.topic, "partitions": list(p.partitions)} for p in group_partitions(partitions)]

        def commit_loop():
            self.commit(c, lambda _: None)
            self.later(every_ms, commit_loop, c)

        self.at(START + 9_000, lambda: self.send(c, "OFFSET_FETCH", lambda f: self.on_fetch(c, f),
                                                 partitions=c.assignment, require_stable=True))
        self.at(START + 10_000, commit_loop)
        self.at(START + 200_000, lambda: self.send(c, "OFFSET_FETCH", lambda r: None, partitions=None))


def consumer(group: str, n: int, topics: tuple[str, ...], **kw) -> Consumer:
    return Consumer(client_id=f"consumer-{group}-{n}", host=f"/10.20.{n}.{10 + len(group)}", topics=topics, **kw)


def build() -> list[dict]:
    orders = GroupLoop("orders-processing", seed=1)
    members = [consumer("orders-processing", n, ("orders",)) for n in (1, 2, 3)]
    for c, delay in zip(members, (120, 870, 1_530)):
        orders.start(c, START + delay)
    orders.close(members[2], START + 95_000)

    inventory = GroupLoop("inventory-sync", seed=2)
    static = [consumer("inventory-sync", n, ("inventory",), instance_id=f"inventory-sync-{n}") for n in (0, 1)]
    for c, delay in zip(static, (2_000, 2_310)):
        inventory.start(c, START + delay)
    inventory.close(static[1], START + 70_000)  # a rolling restart: the new process rejoins 8.4 s later
    restarted = consumer("inventory-sync", 1, ("inventory",), instance_id="inventory-sync-1")
    inventory.start(restarted, START + 78_400)

    payments = GroupLoop("payments-audit", seed=3)
    audit = [consumer("payments-audit", n, ("payments",), session_timeout_ms=10_000) for n in (1, 2)]
    for c, delay in zip(audit, (5_000, 5_400)):
        payments.start(c, START + delay)
    payments.crash(audit[1], START + 60_000)
    payments.start(consumer("payments-audit", 3, ("payments",), session_timeout_ms=10_000), START + 120_000)

    billing = GroupLoop("billing-exporter", seed=4)
    billing.standalone(consumer("billing-exporter", 1, ("invoices",)), [("invoices", 0), ("invoices", 1)], 10_000)

    loops = [orders, inventory, payments, billing]
    for loop in loops:
        loop.run()
    # One file ordered by time; rows of a group keep their order, which is the order they were applied in.
    merged = sorted(((row["ts"], g, i, row) for g, loop in enumerate(loops) for i, row in enumerate(loop.rows)),
                    key=lambda item: item[:3])
    return [row for *_, row in merged]


def bad_rows(rows: list[dict]) -> dict[int, str]:
    """Two rows a real capture could contain: a line cut short by a crashed writer, and a share group's
    heartbeat (KIP-932), a request coordsim does not model. Keyed by insertion index."""
    cut = json.dumps(rows[120])[:61]
    kip932 = json.dumps({"ts": rows[400]["ts"], "group_id": "orders-processing", "type": "SHARE_GROUP_HEARTBEAT",
                         "request_id": "consumer-orders-processing-9-1", "client_id": "consumer-orders-processing-9",
                         "member_epoch": 0, "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["orders"]})
    return {121: cut, 401: kip932}


def render() -> str:
    rows = build()
    lines = [json.dumps(row) for row in rows]
    for index, text in sorted(bad_rows(rows).items(), reverse=True):
        lines.insert(index, text)
    return "\n".join(lines) + "\n"


def main() -> None:
    text = render()
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} lines to {OUTPUT}")


if __name__ == "__main__":
    main()
