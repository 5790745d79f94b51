"""Kafka's ConsumerGroupTest cases on the group's current partition epochs (trunk): which member epoch holds
each partition, the input of reconciliation's "still owned by another member" check."""

from __future__ import annotations

import pytest

from state.consumer_group.reconciliation import (
    CurrentAssignment,
    CurrentPartitionEpochs,
    MemberState,
    PartitionEpochConflict,
)
from tests.state.consumer_group.helpers import TOPIC_1 as FOO, TOPIC_2 as BAR, TOPIC_3 as ZAR


def holding(epoch, assigned=None, pending=None):
    """A member at `epoch`; the assignment epochs of its partitions do not matter here."""
    def with_epochs(partitions):
        return {t: dict.fromkeys(ps, 5) for t, ps in (partitions or {}).items()}
    return CurrentAssignment(MemberState.STABLE, epoch, epoch - 1, with_epochs(assigned), with_epochs(pending))


def held(epochs, topic_id, partitions):
    return [epochs(topic_id, p) for p in partitions]


def test_updating_member_updates_partition_epoch():
    epochs = CurrentPartitionEpochs()
    first = holding(10, {FOO: [1, 2, 3]}, {BAR: [4, 5, 6]})
    epochs.update_member(None, first)
    assert held(epochs, FOO, [1, 2, 3]) == held(epochs, BAR, [4, 5, 6]) == [10] * 3
    assert held(epochs, ZAR, [7, 8, 9]) == [-1] * 3
    second = holding(11, {BAR: [1, 2, 3]}, {ZAR: [4, 5, 6]})
    epochs.update_member(first, second)
    assert held(epochs, BAR, [1, 2, 3]) == held(epochs, ZAR, [4, 5, 6]) == [11] * 3
    assert held(epochs, FOO, [7, 8, 9]) == [-1] * 3


def test_updating_member_updates_partition_epoch_when_partition_is_reassigned_before_being_revoked():
    epochs = CurrentPartitionEpochs()
    revoking = holding(10, pending={FOO: [1]})
    epochs.update_member(None, revoking)
    assert epochs(FOO, 1) == 10
    epochs.update_member(revoking, holding(11, {FOO: [1]}))
    assert epochs(FOO, 1) == 11


def test_updating_member_updates_partition_epoch_when_partition_is_not_released():
    epochs = CurrentPartitionEpochs()
    epochs.update_member(None, holding(10, {FOO: [1]}))
    epochs.update_member(None, holding(11, {FOO: [1]}))  # a later epoch may take it over
    with pytest.raises(PartitionEpochConflict):
        epochs.update_member(None, holding(10, {FOO: [1]}))


def test_remove_partition_epochs():
    epochs = CurrentPartitionEpochs()
    epochs.remove({FOO: [1]}, 5)  # nothing held: nothing to do
    epochs.update_member(None, holding(10, {FOO: [1]}))
    epochs.remove({FOO: [1]}, 7)  # held at another epoch: left alone
    assert epochs(FOO, 1) == 10


def test_add_partition_epochs():
    epochs = CurrentPartitionEpochs()
    epochs.add({FOO: [1]}, 10)
    epochs.add({FOO: [1]}, 11)
    assert epochs(FOO, 1) == 11
    with pytest.raises(PartitionEpochConflict):
        epochs.add({FOO: [1]}, 10)


def test_deleting_member_removes_partition_epoch():
    epochs = CurrentPartitionEpochs()
    member = holding(10, {FOO: [1, 2, 3]}, {BAR: [4, 5, 6]})
    epochs.update_member(None, member)
    assert held(epochs, FOO, [1, 2, 3]) == held(epochs, BAR, [4, 5, 6]) == [10] * 3
    epochs.update_member(member, None)
    assert held(epochs, FOO, [1, 2, 3]) == held(epochs, BAR, [4, 5, 6]) == [-1] * 3
