"""A one-group test context in the spirit of Kafka's GroupMetadataManagerTestContext: a mock clock whose
`sleep(ms)` fires due timers, request helpers that return a handle on the (possibly parked) response, and
accessors for every table the group writes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from state.config import CoordinatorConfig
from state.events import parse_event
from state.runtime import GroupRuntime

DEFAULT_TOPICS = ("foo",)


def protocols(*names: str, topics=DEFAULT_TOPICS, owned=(), generation_id=-1, user_data=None):
    return [{"name": n, "topics": list(topics), "owned_partitions": [dict(topic=t, partitions=list(ps)) for t, ps in owned],
             "generation_id": generation_id, **({"user_data": user_data} if user_data else {})} for n in names]


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

    # -- inspection ----------------------------------------------------------------------------------------
    @property
    def group(self):
        return self.runtime.group

    @property
    def state(self) -> str | None:
        return None if self.runtime.group is None else self.runtime.group.state.value

    def rows(self, table: str) -> list[dict]:
        return self.tables.get(table, [])

    def responses(self, api: str | None = None) -> list[dict]:
        return [r for r in self.rows("responses") if api is None or r["api"] == api]

    def transitions(self) -> list[tuple[str | None, str, str]]:
        return [(r["from_state"], r["to_state"], r["cause"]) for r in self.rows("group_states")]

    def heartbeat_deadline(self, member_id: str) -> int | None:
        timer = self.runtime.timers.get(("heartbeat", member_id))
        return None if timer is None else timer.deadline
