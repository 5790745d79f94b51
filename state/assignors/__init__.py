"""Kafka's four built-in classic-consumer assignors, as pure deterministic functions (clients/.../consumer/
*Assignor.java).

    assign(protocol_name, members, partitions_per_topic) -> {member_id: [TopicPartition, ...]}

`members` is the leader's JoinGroup response member list, in order. Internally the leader's
`subscriptions` java.util.HashMap is rebuilt from it (member id keys, inserted in list order), because
several results depend on that map's iteration order. Every member gets an entry, possibly empty. Topics
missing from `partitions_per_topic`, or with 0 partitions, are skipped silently.

Results match the Java client (3.8+) element for element, including the order within each member's list;
this was checked against Kafka's own assignor classes on thousands of random groups. Where the Java leader
would throw, AssignorError is raised.

Two deliberate limits:
* Rack-aware assignment (KIP-881) needs replica racks in topic metadata, which we do not model, so it never
  activates (Kafka also skips it without them). `MemberSubscription.rack` is carried but unused.
* The sticky assignors' `maxGeneration` is a field of the Java assignor object that is never reset, so a
  long-lived leader remembers the highest generation it has ever seen. We model a fresh assignor per call:
  the maximum over the current members only. The two differ only when the newest generation among the
  current members is older than one the same leader's assignor saw in an earlier round.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from state import consumer_protocol
from state.assignors import cooperative_sticky, range as range_assignor, roundrobin, sticky
from state.assignors.model import AssignorError, GroupAssignmentInput, MemberSubscription, TopicPartition

__all__ = [
    "ASSIGNORS",
    "AssignorError",
    "GroupAssignmentInput",
    "MemberSubscription",
    "RebalanceProtocol",
    "TopicPartition",
    "assign",
    "client_subscription",
    "client_user_data",
    "supported_protocols",
]


class RebalanceProtocol(enum.IntEnum):
    """ConsumerPartitionAssignor.RebalanceProtocol; the higher value wins when clients pick one
    (ConsumerCoordinator)."""

    EAGER = 0
    COOPERATIVE = 1


def _no_user_data(previous_assignment: Sequence[TopicPartition] | None, generation: int) -> None:
    return None


def _sticky_user_data(previous_assignment: Sequence[TopicPartition] | None, generation: int) -> bytes | None:
    # The client remembers its last assignment only once it has had one.
    if previous_assignment is None:
        return None
    return consumer_protocol.encode_sticky_user_data(previous_assignment, generation)


def _cooperative_user_data(previous_assignment: Sequence[TopicPartition] | None, generation: int) -> bytes:
    # Sent on every join, even though v2+ subscriptions make the leader read GenerationId instead.
    return consumer_protocol.encode_cooperative_user_data(generation)


@dataclass(frozen=True)
class Assignor:
    name: str
    assign: Callable[[GroupAssignmentInput], dict[str, list[TopicPartition]]]
    protocols: tuple[RebalanceProtocol, ...]
    user_data: Callable[[Sequence[TopicPartition] | None, int], bytes | None]


ASSIGNORS: dict[str, Assignor] = {
    a.name: a
    for a in (
        Assignor("range", range_assignor.assign, (RebalanceProtocol.EAGER,), _no_user_data),
        Assignor("roundrobin", roundrobin.assign, (RebalanceProtocol.EAGER,), _no_user_data),
        Assignor("sticky", sticky.assign, (RebalanceProtocol.EAGER,), _sticky_user_data),
        Assignor(
            "cooperative-sticky",
            cooperative_sticky.assign,
            (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER),
            _cooperative_user_data,
        ),
    )
}


def _lookup(protocol_name: str) -> Assignor:
    assignor = ASSIGNORS.get(protocol_name)
    if assignor is None:
        raise AssignorError(f"IllegalStateException: Coordinator selected invalid assignment protocol: {protocol_name}")
    return assignor


def assign(
    protocol_name: str,
    members: Sequence[MemberSubscription],
    partitions_per_topic: Mapping[str, int],
) -> dict[str, list[TopicPartition]]:
    """Run the named assignor as the group leader would. The result has one entry per member, in `members`
    order."""
    result = _lookup(protocol_name).assign(GroupAssignmentInput.build(members, partitions_per_topic))
    return {m.member_id: result[m.member_id] for m in members}


def supported_protocols(protocol_name: str) -> tuple[RebalanceProtocol, ...]:
    """ConsumerPartitionAssignor.supportedProtocols(), most preferred first."""
    return _lookup(protocol_name).protocols


def client_user_data(
    protocol_name: str, previous_assignment: Sequence[TopicPartition] | None, generation: int
) -> bytes | None:
    """The userData a Java client's assignor puts in its Subscription (subscriptionUserData).

    previous_assignment: the partitions of the member's last SyncGroup assignment, None before its first.
    generation: the generation of that assignment (-1 if none).
    """
    return _lookup(protocol_name).user_data(previous_assignment, generation)


def client_subscription(
    protocol_name: str,
    member_id: str,
    topics: Iterable[str],
    *,
    previous_assignment: Sequence[TopicPartition] | None = None,
    generation: int = -1,
    group_instance_id: str | None = None,
    rack: str | None = None,
    rebalance_protocol: RebalanceProtocol | None = None,
) -> MemberSubscription:
    """What the leader decodes from a well-behaved Java client's JoinGroup metadata (version 3).

    Under EAGER the client has revoked everything before joining, so it advertises no owned partitions;
    under COOPERATIVE it keeps, and advertises, the previous partitions of topics it still subscribes to.
    rebalance_protocol defaults to the assignor's preferred one.
    """
    assignor = _lookup(protocol_name)
    protocol = assignor.protocols[0] if rebalance_protocol is None else rebalance_protocol
    if protocol not in assignor.protocols:
        raise ValueError(f"{protocol_name!r} does not support the {protocol.name} rebalance protocol")
    topics = tuple(topics)
    owned: tuple[TopicPartition, ...] = ()
    if protocol is RebalanceProtocol.COOPERATIVE and previous_assignment:
        subscribed = set(topics)
        owned = tuple(TopicPartition(*tp) for tp in previous_assignment if tp[0] in subscribed)
    metadata = consumer_protocol.encode_subscription(
        consumer_protocol.Subscription(
            topics=topics,
            user_data=assignor.user_data(previous_assignment, generation),
            owned_partitions=owned,
            generation_id=generation,
            rack_id=rack,
        )
    )
    return MemberSubscription.from_metadata(member_id, metadata, group_instance_id)
