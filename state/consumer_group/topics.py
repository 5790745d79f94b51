"""The topics a consumer group's coordinator sees in the cluster's metadata (Kafka's CoordinatorMetadataImage,
topics only: name, id, partition count; racks are not modelled) and the group's metadata hash over the
topics its members subscribe to.

Kafka's metadata hash is XXH3-64 over each subscribed topic's id, name, partition count and partition racks
(Utils.computeTopicHash / computeGroupHash). Here it is a 64-bit BLAKE2b over the same facts (no racks): its
values differ from Kafka's, but it changes exactly when Kafka's does for rack-less topics, which is all the
coordinator uses it for (a change bumps the group epoch). As in Kafka, topics that do not exist are left
out, and a group subscribed to no existing topic has hash 0.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from state.consumer_group.topic_id import TopicId


@dataclass(frozen=True)
class TopicsImage:
    """name -> (topic id, partition count)."""

    topics: Mapping[str, tuple[TopicId, int]] = field(default_factory=dict)

    def topic_id(self, name: str) -> TopicId | None:
        topic = self.topics.get(name)
        return None if topic is None else topic[0]

    def partition_counts(self) -> dict[TopicId, int]:
        """`SubscribedTopicDescriber`: partitions per topic id."""
        return {topic_id: partitions for topic_id, partitions in self.topics.values()}

    def metadata_hash(self, subscribed_topic_names: Iterable[str]) -> int:
        """The group's metadata hash for the topic names its members subscribe to."""
        existing = sorted(name for name in set(subscribed_topic_names) if name in self.topics)
        if not existing:
            return 0
        digest = hashlib.blake2b(digest_size=8)
        for name in existing:
            topic_id, partitions = self.topics[name]
            digest.update(f"{topic_id}\0{name}\0{partitions}\0".encode())
        return int.from_bytes(digest.digest(), "big", signed=True)
