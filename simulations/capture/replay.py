"""Replay of captured requests: open loop, in captured time order, through the same `GroupRuntime` the local
engine drives, with the ids the captured broker handed out translated into the simulator's.

The simulator names members its own way (`client_id-UUID`, state/runtime.py) and numbers generations from
1, so a captured SyncGroup that says "member 0x7f..., generation 2" means nothing to it as captured. `IdMap`
learns the translation from the responses as the simulator produces them: each JoinGroup's captured answer
(member id, generation) is paired with the simulator's answer to the same request (`request_id`), and later
requests are rewritten before the coordinator sees them: member ids (also inside SyncGroup assignments and
LeaveGroup identities) and generations. A member id is looked up first under the client's identity (its
`group_instance_id`, else its client id and connection), then on its own: brokers may reuse ids (librdkafka's
mock hands out memory addresses), while a client that reconnects keeps its id.

Two rules keep a replay going where Kafka's protocol and the capture part ways:
- a JoinGroup carrying a captured member id the simulator never handed out (the capture began mid-session,
  or the simulator's answer is still pending) joins as a new member (`member_id: ""`), as that client would
  have to after UNKNOWN_MEMBER_ID;
- when the simulator asks a new member for the MEMBER_ID_REQUIRED round (KIP-394) and the captured broker did
  not, the driver sends the second JoinGroup at once, as every client does; it carries the original
  `request_id` plus RETRY_SUFFIX. Without it the member would never join, since the capture has no such
  request.
Everything else is answered on its merits: a request that no longer makes sense after a divergence gets
whatever error the coordinator gives it, and the divergence report (compare.py) shows it.

The driver uses only GroupRuntime's public steps: before each event it advances to the event's time (timers
due then fire first, as in the local engine) and reads the responses they produced, then rewrites and offers
the event. The run ends exactly as `run_local` ends, so without captured responses the tables are its tables.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable

from simulations.capture.captured import CapturedInput, captured_records
from simulations.engines.local import RunResult, events_by_group
from state.config import CoordinatorConfig
from state.events import Event, Heartbeat, JoinGroup, LeaveGroup, OffsetCommit, SyncGroup
from state.runtime import GroupRuntime

RETRY_SUFFIX = "+member-id-retry"


class IdMap:
    """One group's translation of captured member ids and generations into the simulator's."""

    def __init__(self, captured: dict[str, dict]) -> None:
        self.captured = captured
        self._by_identity: dict[tuple, str] = {}  # (identity, captured member id) -> simulated member id
        self._latest: dict[str, str] = {}  # captured member id -> simulated, most recently learned
        self._generations: dict[tuple[str, int], int] = {}  # (simulated member id, captured gen) -> simulated
        self._group_generations: dict[int, int] = {}  # captured gen -> simulated, most recently learned

    def identity(self, event: Event) -> tuple:
        instance = getattr(event, "group_instance_id", None)
        if instance is not None:
            return ("instance", instance)
        captured = self.captured.get(original_request_id(event.request_id)) or {}
        return ("client", event.client_id, captured.get("connection"))

    def learn(self, event: Event, response: dict) -> str | None:
        """Take in the simulator's response to `event`. Returns the member id to retry a JoinGroup with
        when the simulator asked for a MEMBER_ID_REQUIRED round the captured broker skipped."""
        if response["api"] != "JoinGroup":
            return None
        captured = self.captured.get(original_request_id(event.request_id))
        error = response["error"]
        # Only a member id handed out counts: error answers echo other ids (FENCED_INSTANCE_ID names the old one).
        if captured is None or error not in ("NONE", "MEMBER_ID_REQUIRED") or not response["member_id"]:
            return None
        if captured["member_id"]:
            self._by_identity[(self.identity(event), captured["member_id"])] = response["member_id"]
            self._latest[captured["member_id"]] = response["member_id"]
        if error == "MEMBER_ID_REQUIRED":
            retried = event.request_id != original_request_id(event.request_id)
            return None if retried or captured["error"] == "MEMBER_ID_REQUIRED" else response["member_id"]
        if captured["error"] == "NONE" and captured["generation_id"] is not None:
            self._generations[(response["member_id"], captured["generation_id"])] = response["generation_id"]
            self._group_generations[captured["generation_id"]] = response["generation_id"]
        return None

    def member(self, captured_id: str, identity: tuple | None = None) -> str | None:
        """The simulator's id for a captured member id; None when it was never learned."""
        if not captured_id:
            return captured_id
        found = self._by_identity.get((identity, captured_id)) if identity is not None else None
        return found if found is not None else self._latest.get(captured_id)

    def generation(self, member_id: str, captured_generation: int) -> int:
        if captured_generation < 0:
            return captured_generation
        found = self._generations.get((member_id, captured_generation))
        if found is None:
            found = self._group_generations.get(captured_generation, captured_generation)
        return found

    def rewrite(self, event: Event) -> Event:
        """The event with the simulator's ids. Events without a captured response (our own JSONL traces, made
        against this coordinator) already carry its ids and pass unchanged."""
        if original_request_id(event.request_id) not in self.captured:
            return event
        identity = self.identity(event)
        own = getattr(event, "member_id", "")
        mapped = self.member(own, identity)
        if isinstance(event, JoinGroup):
            return dataclasses.replace(event, member_id="" if mapped is None else mapped)
        member_id = own if mapped is None else mapped
        if isinstance(event, SyncGroup):
            assignments = tuple(dataclasses.replace(a, member_id=self.member(a.member_id) or a.member_id)
                                for a in event.assignments)
            return dataclasses.replace(event, member_id=member_id, assignments=assignments,
                                       generation_id=self.generation(member_id, event.generation_id))
        if isinstance(event, (Heartbeat, OffsetCommit)):
            return dataclasses.replace(event, member_id=member_id,
                                       generation_id=self.generation(member_id, event.generation_id))
        if isinstance(event, LeaveGroup):
            members = tuple(dataclasses.replace(m, member_id=self.member(m.member_id, identity) or m.member_id)
                            for m in event.members)
            return dataclasses.replace(event, members=members)
        return event


def original_request_id(request_id: str | None) -> str | None:
    return request_id.removesuffix(RETRY_SUFFIX) if request_id else request_id


class _GroupReplay:
    def __init__(self, group_id: str, config: CoordinatorConfig, captured: dict[str, dict],
                 result: RunResult) -> None:
        self.runtime = GroupRuntime(group_id, config)
        self.ids = IdMap(captured)
        self.result = result
        self.offered: dict[str | None, Event] = {}

    def run(self, events: list[Event]) -> None:
        for event in events:
            self.runtime.advance_to(event.ts)
            self.collect()
            self.offer(self.ids.rewrite(event))

    def offer(self, event: Event) -> None:
        self.offered[event.request_id] = event
        self.runtime.offer([event])
        self.runtime.advance_to(event.ts)
        self.collect()

    def collect(self) -> None:
        output = self.runtime.take_output()
        for name, rows in output.tables.items():
            self.result.tables[name].extend(rows)
        self.result.tables["rejects"].extend(output.rejects)
        for response in output.tables["responses"]:
            event = self.offered.pop(response["request_id"], None)
            if event is None:
                continue
            retry_with = self.ids.learn(event, response)
            if retry_with is not None:
                self.offer(dataclasses.replace(event, member_id=retry_with,
                                               request_id=event.request_id + RETRY_SUFFIX))


def replay_captured(events: Iterable[Event], captured_responses: CapturedInput, config: CoordinatorConfig,
                    until: int | None = None, progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Replay `events` (as `read_events` returns them) with the member-id mapping learned against
    `captured_responses` (a captured-responses file, its DataFrame, or its rows). Returns the same tables
    and counts as `run_local`; without matching captured responses the tables are equal to its."""
    captured = {row["request_id"]: row for row in captured_records(captured_responses)}
    result = RunResult()
    by_group = events_by_group(events, until, result)
    replays = {group_id: _GroupReplay(group_id, config, captured, result) for group_id in by_group}
    for group_id, replay in replays.items():
        replay.run(sorted(by_group[group_id], key=lambda e: e.sort_key))
    result.groups = len(replays)

    # The end of the run, as run_local decides it.
    if until is not None:
        final = until
    elif replays:
        final = max(e.ts for group in by_group.values() for e in group)
        for replay in replays.values():
            replay.runtime.advance_to(final)
            replay.collect()
        pending = [d for r in replays.values() if (d := r.runtime.max_pending_deadline()) is not None]
        final = max([final, *pending])
    else:
        final = None
    for done, replay in enumerate(replays.values(), start=1):
        replay.runtime.advance_to(final)
        replay.collect()
        replay.runtime.finish()
        replay.collect()
        if progress is not None:
            progress(done, len(replays))
    result.end_at(final)
    return result
