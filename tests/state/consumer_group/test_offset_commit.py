"""Kafka's ConsumerGroupTest offset commit and offset fetch validation cases (trunk) and
OffsetMetadataManagerTest's stale member epoch and consumer group offset fetch cases."""

from __future__ import annotations

import dataclasses

import pytest

from state.consumer_group.group import ConsumerGroup
from state.consumer_group.offset_commit import validate_offset_commit, validate_offset_fetch
from state.consumer_group.records import (
    ClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
)
from tests.state.consumer_group.coordinator_context import BAR, FOO, member

FOO_0 = [(FOO, 0)]


def group_with(*members) -> ConsumerGroup:
    group = ConsumerGroup("group-foo")
    for m in members:
        group.replay(ConsumerGroupMemberMetadata(m.member_id, m.subscription()))
        group.replay(ConsumerGroupCurrentMemberAssignment(m.member_id, m.current))
    return group


def holding_foo_0_at_7(where: str) -> ConsumerGroup:
    """A member at epoch 10 holding foo-0 since assignment epoch 7, assigned or pending revocation."""
    assigned, pending = ({FOO: {0: 7}}, {}) if where == "assigned" else ({}, {FOO: {0: 7}})
    return group_with(member("member-id", epoch=10, previous=9, assigned=assigned, pending=pending))


@pytest.mark.parametrize("transactional", [False, True])
def test_validate_offset_commit(transactional):
    # ConsumerGroupTest.testValidateOffsetCommit, testValidateTransactionalOffsetCommit
    empty = ConsumerGroup("group-foo")
    assert validate_offset_commit(empty, "", "", -1, FOO_0, transactional=transactional) == "NONE"
    assert validate_offset_commit(empty, "member-id", None, 0, FOO_0, transactional=transactional) == "UNKNOWN_MEMBER_ID"
    group = group_with(member("member-id", epoch=0, previous=-1))
    assert validate_offset_commit(group, "", "", -1, FOO_0, transactional=transactional) == "UNKNOWN_MEMBER_ID"
    assert validate_offset_commit(group, "member-id", "", 0, FOO_0, transactional=transactional) == "NONE"
    # A TxnOffsetCommit without member id, epoch and instance id is not checked.
    expected = "NONE" if transactional else "UNKNOWN_MEMBER_ID"
    assert validate_offset_commit(group, "", None, -1, FOO_0, transactional=transactional) == expected


@pytest.mark.parametrize("version, error", [(8, "UNSUPPORTED_VERSION"), (9, "NONE")])
def test_consumer_protocol_member_needs_offset_commit_v9(version, error):
    # ConsumerGroupTest.testValidateOffsetCommit (versions below 9)
    group = group_with(member("member-id", epoch=0, previous=-1))
    assert validate_offset_commit(group, "member-id", "", 0, FOO_0, api_version=version) == error
    assert validate_offset_commit(group, "member-id", "", 0, FOO_0, api_version=version, transactional=True) == "NONE"


@pytest.mark.parametrize("where", ["assigned", "pending revocation"])
def test_validate_offset_commit_with_epoch_validation(where):
    # ConsumerGroupTest.testValidateOffsetCommitWithEpochValidation
    group = holding_foo_0_at_7(where)
    assert validate_offset_commit(group, "member-id", "", 11, FOO_0) == "STALE_MEMBER_EPOCH"
    assert validate_offset_commit(group, "member-id", "", 10, FOO_0) == "NONE"
    assert validate_offset_commit(group, "member-id", "", 7, FOO_0) == "NONE"
    assert validate_offset_commit(group, "member-id", "", 6, FOO_0) == "STALE_MEMBER_EPOCH"


def test_validate_offset_commit_with_unassigned_topic_or_partition():
    # ConsumerGroupTest.testValidateOffsetCommitWithUnassignedTopicOrPartition
    group = holding_foo_0_at_7("assigned")
    assert validate_offset_commit(group, "member-id", "", 7, [(BAR, 0)]) == "STALE_MEMBER_EPOCH"
    assert validate_offset_commit(group, "member-id", "", 7, [(FOO, 2)]) == "STALE_MEMBER_EPOCH"
    # One partition failing fails the commit.
    assert validate_offset_commit(group, "member-id", "", 7, [(FOO, 0), (FOO, 2)]) == "STALE_MEMBER_EPOCH"


def test_consumer_group_offset_commit_with_stale_member_epoch():
    # OffsetMetadataManagerTest.testConsumerGroupOffsetCommitWithStaleMemberEpoch
    group = group_with(member("member", epoch=10, previous=9))
    assert validate_offset_commit(group, "member", None, 9, FOO_0) == "STALE_MEMBER_EPOCH"
    assert validate_offset_commit(group, "member", None, 11, FOO_0) == "STALE_MEMBER_EPOCH"


def test_kafka_4_0_accepts_only_the_current_member_epoch():
    # Kafka 4.0.0's ConsumerGroup.validateOffsetCommit (KIP-1251 is 4.3)
    group = holding_foo_0_at_7("assigned")
    assert validate_offset_commit(group, "member-id", "", 7, FOO_0, kafka_4_0=True) == "STALE_MEMBER_EPOCH"
    assert validate_offset_commit(group, "member-id", "", 10, FOO_0, kafka_4_0=True) == "NONE"


# -- OffsetFetch ---------------------------------------------------------------------------------------------

def test_validate_offset_fetch():
    # ConsumerGroupTest.testValidateOffsetFetch (a member absent at an older committed offset is not modelled:
    # the group is read as of its last write)
    empty = ConsumerGroup("group-foo")
    assert validate_offset_fetch(empty, None, -1) == "NONE"  # the admin client: no member id, epoch -1
    assert validate_offset_fetch(empty, "member-id", 0) == "UNKNOWN_MEMBER_ID"
    group = group_with(member("member-id", epoch=0, previous=-1))
    assert validate_offset_fetch(group, "member-id", 10) == "STALE_MEMBER_EPOCH"
    assert validate_offset_fetch(group, "member-id", 0) == "NONE"


def test_consumer_group_offset_fetch_with_member_id_and_epoch():
    # OffsetMetadataManagerTest.testConsumerGroupOffsetFetchWithMemberIdAndEpoch
    group = group_with(member("member", epoch=0, previous=-1))
    assert validate_offset_fetch(group, "member", 0) == "NONE"


def test_consumer_group_offset_fetch_from_admin_client():
    # OffsetMetadataManagerTest.testConsumerGroupOffsetFetchFromAdminClient
    group = group_with(member("member", epoch=0, previous=-1))
    assert validate_offset_fetch(group, None, -1) == "NONE"


def test_consumer_group_offset_fetch_with_unknown_member_id():
    # OffsetMetadataManagerTest.testConsumerGroupOffsetFetchWithUnknownMemberId
    group = ConsumerGroup("group")
    assert validate_offset_fetch(group, "member", 0) == "UNKNOWN_MEMBER_ID"
    # Only a null member id with a negative epoch is an admin's fetch: "" or an epoch alone names no member.
    assert validate_offset_fetch(group_with(member("member", epoch=0, previous=-1)), "", -1) == "UNKNOWN_MEMBER_ID"
    assert validate_offset_fetch(group_with(member("member", epoch=0, previous=-1)), None, 0) == "UNKNOWN_MEMBER_ID"


def test_consumer_group_offset_fetch_with_stale_member_epoch():
    # OffsetMetadataManagerTest.testConsumerGroupOffsetFetchWithStaleMemberEpoch: any other epoch, older or
    # newer, is stale (KIP-1251's older epochs are for commits only)
    group = group_with(member("member", epoch=10, previous=9, assigned={FOO: {0: 7}}))
    assert validate_offset_fetch(group, "member", 9) == "STALE_MEMBER_EPOCH"
    assert validate_offset_fetch(group, "member", 11) == "STALE_MEMBER_EPOCH"
    assert validate_offset_fetch(group, "member", 10) == "NONE"


def test_consumer_group_offset_fetch_with_illegal_generation_id():
    # OffsetMetadataManagerTest.testConsumerGroupOffsetFetchWithIllegalGenerationId: a member using the classic
    # protocol gets ILLEGAL_GENERATION
    classic = dataclasses.replace(member("member", epoch=0, previous=-1),
                                  classic_member_metadata=ClassicMemberMetadata(45_000, ()))
    group = group_with(classic)
    assert validate_offset_fetch(group, "member", 10) == "ILLEGAL_GENERATION"
    assert validate_offset_fetch(group, "member", 0) == "NONE"
