"""The member epoch checks of an OffsetCommit or TxnOffsetCommit to a consumer group (Kafka's
ConsumerGroup.validateOffsetCommit, trunk): who may commit, at which member epoch, for which partitions;
and of an OffsetFetch (ConsumerGroup.validateOffsetFetch).

A member commits at its current member epoch, or at an older one for partitions it has held since that
epoch or before (KIP-1251, 4.3+): each partition it commits must be assigned to it or pending revocation,
granted at an assignment epoch no later than the request's. A partition that fails fails the whole request.
Kafka 4.0 (`kafka_4_0`) accepted only the current member epoch.

A member using the classic protocol commits with its member epoch as the generation id, at any OffsetCommit
version, and is answered ILLEGAL_GENERATION where a consumer-protocol member gets STALE_MEMBER_EPOCH.

An OffsetFetch without a member (member id null and a negative epoch: the admin client, a classic consumer,
a version below 9) is always accepted. Otherwise the member must exist and the epoch be its current one
exactly (no KIP-1251 leeway): UNKNOWN_MEMBER_ID, else STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for a member
using the classic protocol).
"""

from __future__ import annotations

from typing import Iterable

from state.consumer_group.group import ConsumerGroup
from state.consumer_group.topic_id import TopicId

# OffsetCommit v9 (KIP-848) is the first a consumer-protocol member may commit with.
MIN_CONSUMER_PROTOCOL_OFFSET_COMMIT_VERSION = 9
UNKNOWN_GENERATION_ID = -1


def validate_offset_commit(group: ConsumerGroup, member_id: str, instance_id: str | None, member_epoch: int,
                           partitions: Iterable[tuple[TopicId, int]], *, transactional: bool = False,
                           api_version: int = MIN_CONSUMER_PROTOCOL_OFFSET_COMMIT_VERSION,
                           kafka_4_0: bool = False) -> str:
    """The error the commit of `partitions` (topic id, partition) gets, "NONE" if it is accepted."""
    if member_epoch < 0 and not group.members:
        return "NONE"  # the admin client, or a consumer without group management, committing to an empty group
    if transactional and member_epoch == UNKNOWN_GENERATION_ID and member_id == "" and instance_id is None:
        return "NONE"  # a TxnOffsetCommit without the optional group fields
    member = group.members.get(member_id)
    if member is None:
        return "UNKNOWN_MEMBER_ID"
    if not transactional and not member.use_classic_protocol and api_version < MIN_CONSUMER_PROTOCOL_OFFSET_COMMIT_VERSION:
        return "UNSUPPORTED_VERSION"
    if member_epoch == member.member_epoch:
        return "NONE"
    stale = "ILLEGAL_GENERATION" if member.use_classic_protocol else "STALE_MEMBER_EPOCH"
    if member_epoch > member.member_epoch or kafka_4_0:
        return stale
    current = member.current
    for topic_id, partition in partitions:
        assignment_epoch = current.assigned_partitions.get(topic_id, {}).get(partition)
        if assignment_epoch is None:
            assignment_epoch = current.partitions_pending_revocation.get(topic_id, {}).get(partition)
        if assignment_epoch is None or member_epoch < assignment_epoch:
            return stale
    return "NONE"


def validate_offset_fetch(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> str:
    """The error an OffsetFetch naming `member_id` at `member_epoch` gets, "NONE" if it is accepted."""
    if member_id is None and member_epoch < 0:
        return "NONE"
    member = group.members.get(member_id)
    if member is None:
        return "UNKNOWN_MEMBER_ID"
    if member_epoch != member.member_epoch:
        return "ILLEGAL_GENERATION" if member.use_classic_protocol else "STALE_MEMBER_EPOCH"
    return "NONE"
