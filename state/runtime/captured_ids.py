"""Replayed captures: the translation of the ids a captured broker handed out into the group's own.

The simulator names members its own way (`client_id-UUID`, state/runtime/group_runtime.py) and numbers generations from
1, so a captured SyncGroup that says "member 0x7f..., generation 2" means nothing to it as captured. A
replayed request carries the captured broker's answer (`Event.captured`); `IdMap.learn` pairs each captured
JoinGroup answer (member id, generation) with the group's own answer to the same request, whenever that
answer is given (a parked JoinGroup is answered when its rebalance completes), and `IdMap.rewrite` translates
later requests right before the group handles them: member ids (also inside SyncGroup assignments and
LeaveGroup identities) and generations. A member id is looked up first under the client's identity (its
`group_instance_id`, else its client id and connection), then on its own: brokers may reuse ids (librdkafka's
mock hands out memory addresses), while a client that reconnects keeps its id.

A KIP-848 consumer echoes the member epoch of the broker's last ConsumerGroupHeartbeat answer, so each
answer pairs a captured member epoch with the group's, as a JoinGroup answer pairs generations: later
heartbeats, OffsetCommits (v9 carries the member epoch) and OffsetFetches (v9) of that member carry the
group's epoch. -1 and -2 (leaves) are sent as they are, and so is 0 (a join), but for one case: a broker that
answered a member with epoch 0 (librdkafka's mock does, to a join it has no assignment for yet; Kafka never
does) is echoed with 0 too, which is then that member's mapped epoch until the captured broker answers it
with an error (after which its client joins again, at 0). The member id needs no mapping from v1 on (the
client generates it, KIP-1082); a v0 join's handed-out id is mapped like a JoinGroup's.

Two rules keep a replay going where Kafka's protocol and the capture part ways:
- a JoinGroup carrying a captured member id the group never handed out (the capture began mid-session, or the
  group's answer is still pending) joins as a new member (`member_id: ""`), as that client would have to after
  UNKNOWN_MEMBER_ID;
- when the group asks a new member for the MEMBER_ID_REQUIRED round (KIP-394) and the captured broker did not,
  `learn` returns the second JoinGroup, which every client sends at once: the request with the handed-out id
  and `request_id` + RETRY_SUFFIX. The runtime handles it right after the first; without it the member would
  never join, since the capture has no such request.
Everything else is answered on its merits. The map is plain data, part of the runtime's encoded state.
"""

from __future__ import annotations

import dataclasses

from state.events import (ConsumerGroupHeartbeat, Event, Heartbeat, JoinGroup, LeaveGroup, OffsetCommit,
                          OffsetFetch, SyncGroup)

# The APIs whose NONE answers hand out a member id and a generation (member epoch) to map.
_HANDING_OUT = ("JoinGroup", "ConsumerGroupHeartbeat")

RETRY_SUFFIX = "+member-id-retry"


class IdMap:
    """One group's translation of captured member ids and generations into its own."""

    def __init__(self) -> None:
        self._by_identity: dict[tuple, str] = {}  # (identity, captured member id) -> own member id
        self._latest: dict[str, str] = {}  # captured member id -> own, most recently learned
        self._generations: dict[tuple[str, int], int] = {}  # (own member id, captured gen) -> own gen
        self._group_generations: dict[int, int] = {}  # captured gen -> own, most recently learned

    @staticmethod
    def identity(event: Event) -> tuple:
        instance = getattr(event, "group_instance_id", None)
        if instance is not None:
            return ("instance", instance)
        return ("client", event.client_id, event.captured.connection)

    def learn(self, event: Event, response: dict) -> JoinGroup | None:
        """Take in the group's response to the captured request `event` (as handled, i.e. rewritten). Returns
        the JoinGroup to send next when the group asked for a MEMBER_ID_REQUIRED round the captured broker
        skipped."""
        if response["api"] not in _HANDING_OUT:
            return None
        captured = event.captured
        if response["api"] == "ConsumerGroupHeartbeat":
            self._learn_epoch(response["member_id"], captured, response)
        error = response["error"]
        # Only a member id handed out counts: error answers echo other ids (FENCED_INSTANCE_ID names the old one).
        if error not in ("NONE", "MEMBER_ID_REQUIRED") or not response["member_id"]:
            return None
        if captured.member_id:
            self._by_identity[(self.identity(event), captured.member_id)] = response["member_id"]
            self._latest[captured.member_id] = response["member_id"]
        if error == "MEMBER_ID_REQUIRED":
            if is_retry(event.request_id) or captured.error == "MEMBER_ID_REQUIRED":
                return None
            return dataclasses.replace(event, member_id=response["member_id"],
                                       request_id=(event.request_id or "") + RETRY_SUFFIX)
        if response["api"] == "JoinGroup" and captured.error == "NONE" and captured.generation_id is not None:
            self._generations[(response["member_id"], captured.generation_id)] = response["generation_id"]
            self._group_generations[captured.generation_id] = response["generation_id"]
        return None

    def _learn_epoch(self, member_id: str, captured, response: dict) -> None:
        """A ConsumerGroupHeartbeat answer pair (`member_id`: the group's id for the member)."""
        if captured.error not in (None, "NONE"):
            self._generations.pop((member_id, 0), None)  # the client joins again: its next 0 is a join
            return
        epoch, own = captured.generation_id, response["generation_id"]
        if captured.error is None or response["error"] != "NONE" or epoch is None or epoch < 0 or own < 1:
            return
        self._generations[(member_id, epoch)] = own
        if epoch > 0:  # a 0 is only ever that member's echo
            self._group_generations[epoch] = own

    def member(self, captured_id: str, identity: tuple | None = None) -> str | None:
        """The group's id for a captured member id; None when it was never learned."""
        if not captured_id:
            return captured_id
        found = self._by_identity.get((identity, captured_id)) if identity is not None else None
        return found if found is not None else self._latest.get(captured_id)

    def generation(self, member_id: str, captured_generation: int) -> int:
        """The group's generation (member epoch) for one a captured broker handed `member_id` (the group's id)."""
        if captured_generation < 0:
            return captured_generation
        found = self._generations.get((member_id, captured_generation))
        if found is None:
            found = self._group_generations.get(captured_generation, captured_generation)
        return found

    def rewrite(self, event: Event) -> Event:
        """The captured request `event` with the group's ids."""
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
        if isinstance(event, ConsumerGroupHeartbeat):
            return dataclasses.replace(event, member_id=member_id,
                                       member_epoch=self.generation(member_id, event.member_epoch))
        if isinstance(event, OffsetFetch) and event.member_id is not None:
            return dataclasses.replace(event, member_id=member_id,
                                       member_epoch=self.generation(member_id, event.member_epoch))
        return event


def is_retry(request_id: str | None) -> bool:
    """Whether a response's request is the MEMBER_ID_REQUIRED round a replay added."""
    return bool(request_id) and request_id.endswith(RETRY_SUFFIX)
