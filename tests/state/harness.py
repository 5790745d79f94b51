"""A one-group test context in the spirit of Kafka's GroupMetadataManagerTestContext: a mock clock whose
`sleep(ms)` fires due timers, request helpers that return a handle on the (possibly parked) response, and
accessors for every table the group writes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from state.runtime import snapshot
from state.config import CoordinatorConfig
from state.events import parse_event
from state.quiet_run import expand_rows
from state.request_rows import request_row
from state.runtime.group_runtime import GroupRuntime

DEFAULT_TOPICS = ("foo",)


def protocols(*names: str, topics=DEFAULT_TOPICS, owned=(), generation_id=-1, user_data=None):
    return [{"name": n, "topics": list(topics), "owned_partitions": [dict(topic=t, partitions=list(ps)) for t, ps in owned],
             "generation_id": generation_id, **({"user_data": user_data} if user_data else {})} for n in names]


def check_requests_rows(monkeypatch) -> list[str]:
    """Every request a synthetic client sends from now on must be the event its `requests` row
    (state/request_rows.py) parses back to; returns the list the sent requests' types are added to."""
    sent = []
    transmit = GroupRuntime.transmit

    def checked(runtime, event, sent_to):
        sent.append(event.type)
        assert parse_event(request_row(event), "synthetic", event.line, event.origin, event.run) == event
        transmit(runtime, event, sent_to)

    monkeypatch.setattr(GroupRuntime, "transmit", checked)
    return sent


@dataclass
class Handle:
    ctx: "GroupContext"
    request_id: str

    @property
    def response(self) -> dict | None:
        rows = [r for r in self.ctx.rows("responses") if r["request_id"] == self.request_id]
        assert len(rows) <= 1, f"request {self.request_id} answered {len(rows)} times"
        return rows[0] if rows else None

    @property
    def done(self) -> bool:
        return self.response is not None

    @property
    def error(self) -> str:
        assert self.response is not None, f"request {self.request_id} has no response yet"
        return self.response["error"]

    def __getattr__(self, name):
        response = self.__dict__["ctx"] and self.response
        if response is None:
            raise AssertionError(f"request {self.request_id} has no response yet")
        return response[name]


class GroupContext:
    def __init__(self, group_id: str = "group-id", start_ms: int = 0, **kafka_config) -> None:
        settings = {}
        settings.update({k.replace("_", "."): v for k, v in kafka_config.items()})
        self.config = CoordinatorConfig.from_kafka(settings)
        self.group_id = group_id
        self.time = start_ms
        self.runtime = GroupRuntime(group_id, self.config)
        self._ids = itertools.count(1)
        self.tables: dict[str, list[dict]] = {}
        self.rejected: list[dict] = []

    # -- clock ---------------------------------------------------------------------------------------------
    def sleep(self, ms: int) -> None:
        self.time += ms
        self._run()

    def _run(self) -> None:
        self.runtime.advance_to(self.time)
        self._collect()

    def finish(self) -> None:
        """End the run here, as an engine does: open quiet runs and a generation still completing are written."""
        self.runtime.finish()
        self._collect()

    def _collect(self) -> None:
        out = self.runtime.take_output()
        for name, rows in out.tables.items():
            self.tables.setdefault(name, []).extend(rows)
        self.rejected.extend(out.rejects)

    # -- requests ------------------------------------------------------------------------------------------
    def send(self, etype: str, **fields) -> Handle:
        request_id = f"r{next(self._ids)}"
        raw = {"ts": self.time, "group_id": fields.pop("group_id", self.group_id), "type": etype,
               "request_id": request_id, "client_id": fields.pop("client_id", "client"), **fields}
        event = parse_event(raw, source="test", line=int(request_id[1:]))
        self.runtime.offer([event])
        self._run()
        return Handle(self, request_id)

    def join(self, member_id: str = "", instance_id: str | None = None, protocol_type: str = "consumer",
             names=("range",), session_ms: int = 10_000, rebalance_ms: int = 10_000, version: int = 9,
             **kw) -> Handle:
        fields = dict(member_id=member_id, protocol_type=protocol_type, session_timeout_ms=session_ms,
                      rebalance_timeout_ms=rebalance_ms, api_version=version,
                      protocols=kw.pop("protocols", None) or protocols(*names, topics=kw.pop("topics", DEFAULT_TOPICS)))
        if instance_id is not None:
            fields["group_instance_id"] = instance_id
        fields.update(kw)
        return self.send("JOIN_GROUP", **fields)

    def join_new_dynamic(self, **kw) -> str:
        """The KIP-394 two-step join; returns the member id (its second JoinGroup stays parked)."""
        first = self.join(**kw)
        assert first.error == "MEMBER_ID_REQUIRED", first.response
        return first.member_id

    def sync(self, member_id: str, generation_id: int, assignments=None, instance_id=None, version=5, **kw) -> Handle:
        fields = dict(member_id=member_id, generation_id=generation_id, api_version=version,
                      assignments=[{"member_id": m, "partitions": [{"topic": t, "partitions": ps} for t, ps in parts]}
                                   for m, parts in (assignments or {}).items()])
        if instance_id is not None:
            fields["group_instance_id"] = instance_id
        fields.update(kw)
        return self.send("SYNC_GROUP", **fields)

    def heartbeat(self, member_id: str, generation_id: int, instance_id=None, **kw) -> Handle:
        fields = dict(member_id=member_id, generation_id=generation_id, **kw)
        if instance_id is not None:
            fields["group_instance_id"] = instance_id
        return self.send("HEARTBEAT", **fields)

    def leave(self, *members, version: int = 5) -> Handle:
        """members: member ids, or (member_id, instance_id) pairs."""
        identities = [{"member_id": m} if isinstance(m, str) else {"member_id": m[0], "group_instance_id": m[1]}
                      for m in members]
        return self.send("LEAVE_GROUP", members=identities, api_version=version)

    def commit(self, offsets: dict, member_id: str = "", generation_id: int = -1, instance_id=None, version=9,
               metadata=None, **kw) -> Handle:
        fields = dict(member_id=member_id, generation_id=generation_id, api_version=version,
                      offsets=[{"topic": t, "partition": p, "offset": o, **({"metadata": metadata} if metadata is not None else {})}
                               for (t, p), o in offsets.items()], **kw)
        if instance_id is not None:
            fields["group_instance_id"] = instance_id
        return self.send("OFFSET_COMMIT", **fields)

    def fetch(self, partitions: dict | None = None) -> Handle:
        parts = None if partitions is None else [{"topic": t, "partitions": ps} for t, ps in partitions.items()]
        return self.send("OFFSET_FETCH", partitions=parts)

    def fault(self, **kw) -> None:
        self.send("COORDINATOR_FAULT", **kw)

    # -- higher-level helpers ------------------------------------------------------------------------------
    def stable_group(self, n: int = 1, **join_kw) -> list[str]:
        """Bring n dynamic members to Stable (the first is the leader); returns their member ids."""
        ids = [self.join_new_dynamic(**join_kw) for _ in range(n)]
        joins = [self.join(member_id=m, **join_kw) for m in ids]
        while self.state == "PreparingRebalance":
            self.sleep(max(1, self.config.group_initial_rebalance_delay_ms))
        generation = self.group.generation_id
        leader = self.group.leader_id
        assert all(j.done for j in joins), "join phase did not complete"
        for m in ids:
            if m != leader:
                self.sync(m, generation)
        self.sync(leader, generation, assignments={leader: [("foo", [0])]})
        assert self.state == "Stable"
        return ids

    # -- Kafka-test style scenario builders (GroupMetadataManagerTestContext equivalents) ---------------------
    def join_and_complete(self, **join_kw) -> Handle:
        """joinClassicGroupAndCompleteJoin: one member's (two-step, for a v4+ dynamic member) join, then the
        initial rebalance delay elapses. Returns the completed JoinGroup handle."""
        version = join_kw.get("version", 9)
        if join_kw.get("member_id", "") == "" and join_kw.get("instance_id") is None and version >= 4:
            join_kw["member_id"] = self.join_new_dynamic(**join_kw)
        handle = self.join(**join_kw)
        self.sleep(self.config.group_initial_rebalance_delay_ms)
        assert handle.done and handle.error == "NONE", handle.response
        return handle

    def dynamic_leader_stable(self, rebalance_ms: int = 10_000, session_ms: int = 5_000, **join_kw) -> Handle:
        """joinClassicGroupAsDynamicMemberAndCompleteRebalance: one dynamic member joins (two-step), the join
        completes at generation 1 and its leader SyncGroup makes the group Stable."""
        join = self.join_and_complete(rebalance_ms=rebalance_ms, session_ms=session_ms, **join_kw)
        assert join.generation_id == 1 and self.state == "CompletingRebalance"
        sync = self.sync(join.member_id, 1)
        assert sync.error == "NONE" and self.state == "Stable"
        return join

    def static_members_join_and_rebalance(self, leader_instance: str = "leader-instance-id",
                                          follower_instance: str = "follower-instance-id",
                                          rebalance_ms: int = 10_000, session_ms: int = 5_000,
                                          names=("range", "roundrobin")) -> "RebalanceResult":
        """staticMembersJoinAndRebalance: two static members join a new group, the (extended) initial delay
        elapses, the leader syncs an assignment (leader foo-0, follower foo-1), then the follower syncs."""
        kw = dict(names=names, rebalance_ms=rebalance_ms, session_ms=session_ms)
        leader = self.join(instance_id=leader_instance, **kw)
        follower = self.join(instance_id=follower_instance, **kw)
        delay = self.config.group_initial_rebalance_delay_ms
        self.sleep(delay)
        if not leader.done:
            self.sleep(max(1, min(delay, rebalance_ms - delay)))
        assert leader.error == "NONE" and follower.error == "NONE"
        assert leader.generation_id == 1 and self.state == "CompletingRebalance"
        leader_id, follower_id = leader.member_id, follower.member_id
        assert leader.leader_id == leader_id
        leader_sync = self.sync(leader_id, 1, instance_id=leader_instance,
                                assignments={leader_id: [("foo", [0])], follower_id: [("foo", [1])]})
        assert leader_sync.error == "NONE" and self.state == "Stable"
        follower_sync = self.sync(follower_id, 1, instance_id=follower_instance)
        assert follower_sync.error == "NONE"
        return RebalanceResult(1, leader_id, leader_sync.assignment, follower_id, follower_sync.assignment)

    def join_with_n_members(self, n: int, rebalance_ms: int, session_ms: int) -> list[Handle]:
        """joinWithNMembers: n two-step dynamic joins into a new group; returns the completed second joins
        (the first one belongs to the leader). The group ends CompletingRebalance at generation 1."""
        ids = [self.join_new_dynamic(rebalance_ms=rebalance_ms, session_ms=session_ms) for _ in range(n)]
        joins = [self.join(member_id=m, rebalance_ms=rebalance_ms, session_ms=session_ms) for m in ids]
        while not all(j.done for j in joins):
            self.sleep(self.timer_deadline("join") - self.time)
        assert self.state == "CompletingRebalance" and all(j.error == "NONE" for j in joins)
        return sorted(joins, key=lambda j: j.member_id != j.leader_id)

    def setup_group_with_pending_member(self) -> "PendingMemberGroup":
        """setupGroupWithPendingMember: a Stable two-member group whose leader rejoined (PreparingRebalance),
        with a MEMBER_ID_REQUIRED member (session 2500) pending and the follower rejoined."""
        kw = dict(rebalance_ms=10_000, session_ms=5_000)
        leader = self.join_and_complete(**kw)
        leader_id = leader.member_id
        assert self.sync(leader_id, leader.generation_id).error == "NONE"
        follower = self.join(version=3, **kw)
        rejoin = self.join(member_id=leader_id, version=3, **kw)
        assert follower.done and rejoin.done and self.state == "CompletingRebalance"
        generation = rejoin.generation_id
        assert self.sync(leader_id, generation).error == "NONE" and self.state == "Stable"
        leader_rejoin = self.join(member_id=leader_id, version=3, **kw)
        assert not leader_rejoin.done and self.state == "PreparingRebalance"
        pending = self.join(version=4, rebalance_ms=10_000, session_ms=2_500)
        assert pending.error == "MEMBER_ID_REQUIRED"
        follower_rejoin = self.join(member_id=follower.member_id, version=3, **kw)
        assert not follower_rejoin.done and self.state == "PreparingRebalance"
        return PendingMemberGroup(leader_id, follower.member_id, pending.member_id, leader_rejoin, follower_rejoin)

    # -- inspection ----------------------------------------------------------------------------------------
    def committed(self) -> dict:
        """The runtime's committed offsets: (topic, partition) -> offset."""
        return {tp: c["offset"] for tp, c in self.runtime.offset_manager.offsets.items()}

    def timer_deadline(self, *key) -> int | None:
        timer = self.runtime.timers.get(tuple(key))
        return None if timer is None else timer.deadline

    @property
    def member_ids(self) -> list[str]:
        """Member ids in the coordinator's member-map iteration order."""
        return [] if self.group is None else list(self.group.members.keys())

    @property
    def group(self):
        return self.runtime.group

    @property
    def state(self) -> str | None:
        return None if self.runtime.group is None else self.runtime.group.state.value

    def rows(self, table: str) -> list[dict]:
        """The table so far, one row per request: quiet runs (written or still open) expanded."""
        rows = self.tables.get(table, [])
        if table in ("requests", "responses", "offsets"):
            rows = expand_rows(table, rows + snapshot.rows_at(self.runtime.live_snapshot(),
                                                              self.runtime.now).tables[table])
        return rows

    def written(self, table: str) -> list[dict]:
        """The table as written so far (quiet runs as one row each)."""
        return self.tables.get(table, [])

    def responses(self, api: str | None = None) -> list[dict]:
        return [r for r in self.rows("responses") if api is None or r["api"] == api]

    def transitions(self) -> list[tuple[str | None, str, str]]:
        return [(r["from_state"], r["to_state"], r["cause"]) for r in self.rows("group_states")]

    def heartbeat_deadline(self, member_id: str) -> int | None:
        timer = self.runtime.timers.get(("heartbeat", member_id))
        return None if timer is None else timer.deadline


@dataclass
class RebalanceResult:
    generation_id: int
    leader_id: str
    leader_assignment: list
    follower_id: str
    follower_assignment: list


@dataclass
class PendingMemberGroup:
    leader_id: str
    follower_id: str
    pending_member_id: str
    leader_join: Handle = field(repr=False)
    follower_join: Handle = field(repr=False)
