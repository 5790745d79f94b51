"""The cluster's topics as one group's coordinator and clients see them: the metadata image (each topic's id and
partition count, and the image's versions) and the production model (what has been produced to each topic, the
log-end offsets a partition leader reports).

Kafka's coordinator reads topics from the broker's MetadataImage, which KRaft's metadata log replays on every
broker alike, and a consumer learns them from Metadata and ListOffsets answers. Here TOPIC_METADATA input rows
change the image (`apply`), and the coordinator's managers (offsets, consumer group) and the synthetic clients
read it through this object, held by the group's runtime: values in, values out, time passed in.
"""

from __future__ import annotations

from state.consumer_group.topic_id import TopicId, derived_topic_id
from state.events import TopicMetadata
from state.offsets.production import rule_offset


class ClusterImage:
    """The topics (metadata image) and the production to them (see the module's docstring)."""

    def __init__(self) -> None:
        self.topics: dict[str, int] = {}  # topic -> partition count
        self.topic_ids: dict[str, TopicId] = {}
        self.topic_names: dict[TopicId, str] = {}  # every id a TOPIC_METADATA row gave, a deleted topic's too
        # The image's version (TOPIC_METADATA rows that changed a topic) and the last one that created a topic:
        # what refreshes a consumer group's regexes (state.consumer_group.regex).
        self.metadata_version = 0
        self.new_topics_version = -1
        self.production: dict[str, tuple[int, float, int]] = {}  # topic -> (since_ts, records/s, base offset)

    def topic_id(self, topic: str) -> TopicId:
        """A topic's id; a topic the image never had gets the id derived from its name."""
        return self.topic_ids.get(topic) or derived_topic_id(topic)

    def shrunk_topic(self, event: TopicMetadata) -> str | None:
        """Why a TOPIC_METADATA row cannot be: it gives a topic fewer partitions under the same id. Kafka never
        removes a partition (CreatePartitions only adds; the assignors index partitions by number up to the
        count), and a topic deleted and created again with fewer partitions has a new id."""
        for topic, partitions in event.topics:
            known = self.topics.get(topic)
            given = event.topic_ids.get(topic)
            same_id = not given or TopicId.from_string(given) == self.topic_id(topic)
            if known is not None and partitions < known and same_id:
                return (f"topic {topic!r} has {known} partitions and this row gives {partitions}: Kafka never "
                        "removes a topic's partitions; a topic deleted and created again has a new topic_id, "
                        "give it in the row")
        return None

    def apply(self, event: TopicMetadata, now: int) -> tuple[list[str], list[dict]]:
        """A TOPIC_METADATA row at `now` (one `shrunk_topic` accepted): the topics it changed, and the `log_end`
        rows of the production rates it sets.

        A topic's id is the row's, else the one it already has, else the one derived from its name. A row that
        changes anything is a new image version; one that creates a topic also makes the next heartbeat resolve
        the group's regexes again (Kafka's onMetadataUpdate, lastMetadataImageWithNewTopics)."""
        changed, created = [], False
        for topic, partitions in event.topics:
            given = event.topic_ids.get(topic)
            topic_id = TopicId.from_string(given) if given else self.topic_ids.get(topic) or derived_topic_id(topic)
            if self.topic_ids.get(topic) != topic_id or self.topics.get(topic) != partitions:
                changed.append(topic)
            created |= topic not in self.topics or self.topic_ids.get(topic) != topic_id
            self.topic_ids[topic] = topic_id
            self.topic_names[topic_id] = topic
        if changed:
            self.metadata_version += 1
            if created:
                self.new_topics_version = self.metadata_version
        self.topics.update(dict(event.topics))
        log_end = []
        for topic, _ in event.topics:
            rate = event.records_per_second.get(topic)
            if rate is not None:
                self.production[topic] = (now, rate, self._produced(topic, now))
                log_end.append({"ts": now, "topic": topic, "records_per_second": rate,
                                "base_offset": self.production[topic][2]})
        return changed, log_end

    def log_end_offset(self, tp, at: int) -> int:
        """Records produced to a partition by time `at`, under the current rates: each partition of a topic gets
        the topic's per-partition rate (TOPIC_METADATA records_per_second), from the moment it was declared."""
        return self._produced(tp[0], at)

    def _produced(self, topic: str, at: int) -> int:
        since, rate, base = self.production.get(topic, (at, 0.0, 0))
        return rule_offset((rate, since, base), at)

    def reported_log_end_offset(self, tp, at: int) -> int | None:
        """The log-end offset a broker would report for the partition at `at`, or None when the run has no
        production model for its topic (no TOPIC_METADATA rate, as in a replay of captured requests)."""
        return self._produced(tp[0], at) if tp[0] in self.production else None
