"""An assignment as the client tracks it (AbstractMembershipManager.LocalAssignment): partitions by topic id
with a local epoch bumped whenever a new target arrives, so that the same partitions received again after
a different target still count as new, get reconciled and get acknowledged again. NONE (local epoch -1):
not in a group, or nothing reconciled yet."""

from __future__ import annotations

from dataclasses import dataclass

from state.clients.consumer_group.member_actions import Partition
from state.consumer_group.messages import TopicPartitions

NONE_EPOCH = -1


@dataclass(frozen=True, slots=True)
class LocalAssignment:
    local_epoch: int
    partitions: frozenset[Partition]

    def is_none(self) -> bool:
        return self.local_epoch == NONE_EPOCH

    def update_with(self, partitions: frozenset[Partition]) -> "LocalAssignment":
        """The target after receiving `partitions`: itself if they are what it already holds."""
        if not self.is_none() and partitions == self.partitions:
            return self
        return LocalAssignment(self.local_epoch + 1, partitions)

    def topic_partitions(self) -> TopicPartitions:
        """As a heartbeat carries them: topics in id order, partitions ascending."""
        by_topic: dict = {}
        for topic_id, partition in sorted(self.partitions):
            by_topic.setdefault(topic_id, []).append(partition)
        return tuple((topic_id, tuple(ps)) for topic_id, ps in by_topic.items())


NONE = LocalAssignment(NONE_EPOCH, frozenset())


def partitions_of(topic_partitions: TopicPartitions) -> frozenset[Partition]:
    """A response's assignment as (topic id, partition) pairs."""
    return frozenset((topic_id, p) for topic_id, ps in topic_partitions for p in ps)
