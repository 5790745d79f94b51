"""Committed offsets: OffsetCommit and OffsetFetch, and KIP-211 expiry by the periodic sweep (Kafka 4.x
OffsetMetadataManager; a consumer group's commits are checked by state/consumer_group/offset_commit.py's
rules, a classic group's by its member's generation).

Expiry follows each group's offsetExpirationCondition: a classic group's offsets count from their commit
(simple group, or a Stable consumer-protocol group for topics it no longer subscribes to) or from when the
group became Empty, and nothing expires in other states; a consumer group's (KIP-848) count from their commit
in every state. Either way an offset whose topic the group subscribes to never expires, and an explicit
expire timestamp (OffsetCommit v2-v4 retention) wins over the base. An OffsetFetch naming a member of a
consumer group is checked first (ConsumerGroup.validateOffsetFetch).

The committed-offsets map is the replay of the group's OffsetCommit records (state/records/group_log.py): every
accepted partition appends a record (a row of the `offsets` table) and every expiry appends a tombstone; the
map changes only by replaying what was appended (`replay`), so replaying the table gives back the map.
`OffsetMetadataManager` is Kafka's manager of that name for one group: its handlers read the group and the
offsets and return a `CoordinatorResult` (state/runtime/result.py), which the runtime carries out. It
reads the group through the two group managers (the classic group or the consumer group the id names, never
both) and the cluster's topics through `image` (state/cluster_image.py: topic ids, the production model's
log-end offsets).

The sweep runs every offsets.retention.check.interval.ms (ticks aligned to multiples of the interval since
the epoch). Instead of waking every group at every tick, the runtime schedules the sweep only at the first
tick where something can expire or the group can be deleted, computed in closed form from the state; the
result is the same as sweeping at every tick because nothing changes between ticks without an event.
"""

from __future__ import annotations

from typing import Protocol

from state.cluster_image import ClusterImage
from state.config import CoordinatorConfig
from state.consumer_group.group import ConsumerGroup, ConsumerGroupState
from state.consumer_group.offset_commit import validate_offset_commit, validate_offset_fetch
from state.runtime.result import CoordinatorResult, partition_result
from state.errors import append_error_to_response_error
from state.events import OffsetCommit, OffsetFetch
from state.classic.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from state.classic.group_state import GroupState
from state.java_compat import java_string_length
from state.classic.manager import generation_member_error
from state.records.group_log import GroupLog, GroupMetadataRecord, OffsetCommitRecord


class ClassicGroups(Protocol):
    """The classic group the id names, if any (the classic group manager)."""
    group: ClassicGroup | None


class ConsumerGroups(Protocol):
    """The consumer group the id names, if any (the consumer group manager)."""
    consumer_group: ConsumerGroup | None




class OffsetMetadataManager:
    """The committed offsets of one group and the requests and sweep that change them."""

    def __init__(self, config: CoordinatorConfig, classic: ClassicGroups, consumer: ConsumerGroups,
                 image: ClusterImage) -> None:
        self.config = config
        # The group the offsets belong to: a classic group or a consumer group (never both), or none.
        self.classic, self.consumer = classic, consumer
        self.image = image
        self.offsets: dict[tuple[str, int], dict] = {}
        # Bumped whenever the map changes: the runtime reschedules the sweep only when something it reads moved.
        self.version = 0

    # -- OffsetCommit --------------------------------------------------------------------------------------
    def commit_offset(self, now: int, req: OffsetCommit, outcomes: list[str]) -> CoordinatorResult:
        result = CoordinatorResult(outcomes)
        if self.consumer.consumer_group is not None:
            return self._commit_to_consumer_group(result, now, req)
        group = self.classic.group
        # A commit without a generation to a group that does not exist creates it when its records are replayed.
        creates_group = group is None and req.generation_id < 0
        error = None if creates_group else self._validate_offset_commit(req)
        if error is not None:
            result.respond_error(req, error)
            return result
        if group is not None and group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            # Classic members keep their session alive by committing (OffsetMetadataManager.commitOffset
            # reschedules the member's heartbeat).
            member = group.member(req.member_id)
            result.schedule(("heartbeat", member.member_id), now + member.session_timeout_ms, "heartbeat",
                            member.member_id)
        return self._write_commit(result, req, now, creates_group)

    def _commit_to_consumer_group(self, result: CoordinatorResult, now: int, req: OffsetCommit) -> CoordinatorResult:
        """An OffsetCommit to a consumer group: the commit's generation_id is the member epoch (OffsetCommit
        v9+), checked by ConsumerGroup.validateOffsetCommit; the offsets are then written as for a classic
        group. Commits do not keep a consumer member's session alive: only its heartbeats do."""
        partitions = [(self.image.topic_id(p.topic), p.partition) for p in req.offsets]
        error = validate_offset_commit(self.consumer.consumer_group, req.member_id, req.group_instance_id,
                                       req.generation_id, partitions, api_version=req.api_version,
                                       kafka_4_0=self.config.kafka_4_0)
        if error != "NONE":
            result.respond_error(req, error)
            return result
        return self._write_commit(result, req, now)

    def _write_commit(self, result: CoordinatorResult, req: OffsetCommit, now: int,
                      creates_group: bool = False) -> CoordinatorResult:
        """A valid commit's records appended and its answer, into `result`."""
        results, records = self.commit_records(req, now)
        if not records:
            if creates_group:
                result.create_simple_group()  # in memory, as Kafka's validation does, though nothing is written
        else:
            error = result.append(records)
            if error is not None:
                # The failed append rolls back the whole operation, including a group it would have created.
                result.respond_error(req, append_error_to_response_error(error))
                return result
        result.respond(req, "NONE", results=results)
        return result

    def commit_records(self, req: OffsetCommit, now: int) -> tuple[list[dict], list[OffsetCommitRecord]]:
        """A valid commit handled at `now`: each partition's result, and the records of those accepted."""
        expire_ts = None if req.retention_time_ms == -1 else now + req.retention_time_ms
        results, records = [], []
        context = {"generation_id": req.generation_id, "member_id": req.member_id}
        for p in req.offsets:
            if p.metadata is not None and java_string_length(p.metadata) > self.config.offset_metadata_max_bytes:
                results.append(partition_result(p.topic, p.partition, "OFFSET_METADATA_TOO_LARGE"))
                continue
            results.append(partition_result(p.topic, p.partition, "NONE"))
            value = {
                "offset": p.offset,
                "leader_epoch": p.leader_epoch,
                "metadata": "" if p.metadata is None else p.metadata,
                "commit_ts": now if p.commit_timestamp == -1 else p.commit_timestamp,
                "expire_ts": expire_ts,
                "topic_id": self._committed_topic_id(p.topic, expire_ts),
            }
            log_end = self.image.reported_log_end_offset((p.topic, p.partition), now)
            records.append(OffsetCommitRecord(p.topic, p.partition, value, dict(context, log_end_offset=log_end)))
        return results, records

    def _committed_topic_id(self, topic: str, expire_ts: int | None) -> str | None:
        """The topic id the commit's OffsetCommitValue holds: from Kafka 4.1 (KAFKA-19141) the coordinator
        writes the topic's id, which trunk's KafkaApis resolves for every committed topic by name (OffsetCommit
        v10 carries it), except in a v1 value (a commit with an expire timestamp), which has no field for it.
        Kafka 4.0 wrote none."""
        if expire_ts is not None or self.config.kafka_4_0:
            return None
        return str(self.image.topic_id(topic))

    def _validate_offset_commit(self, req: OffsetCommit) -> str | None:
        group = self.classic.group
        if group is None:
            return "GROUP_ID_NOT_FOUND" if req.api_version >= 9 else "ILLEGAL_GENERATION"
        if group.is_in(GroupState.DEAD):
            return "COORDINATOR_NOT_AVAILABLE"
        if req.generation_id < 0 and group.is_in(GroupState.EMPTY):
            return None  # admin tools and manually assigned consumers commit to an Empty group freely
        if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
            error = generation_member_error(group, req.member_id, req.group_instance_id, req.generation_id)
            if error is not None:
                return error
        elif not group.is_in(GroupState.EMPTY):
            return "UNKNOWN_MEMBER_ID"
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            return "REBALANCE_IN_PROGRESS"
        return None

    # -- OffsetFetch ---------------------------------------------------------------------------------------
    def fetch_offsets(self, req: OffsetFetch, outcomes: list[str]) -> CoordinatorResult:
        result = CoordinatorResult(outcomes)
        group, consumer_group = self.classic.group, self.consumer.consumer_group
        if consumer_group is not None:
            error = validate_offset_fetch(consumer_group, req.member_id, req.member_epoch)
            if error != "NONE":
                # A group-level error (only v9+ names a member): no partitions in the answer.
                result.respond(req, error)
                return result
        known = (group is not None and not group.is_in(GroupState.DEAD)) or consumer_group is not None
        results = []
        if req.partitions is None:
            if known:
                for (topic, partition) in sorted(self.offsets):
                    results.append(self._fetched(topic, partition))
        else:
            for plist in req.partitions:
                for partition in plist.partitions:
                    if known and (plist.topic, partition) in self.offsets:
                        results.append(self._fetched(plist.topic, partition))
                    else:
                        results.append(partition_result(plist.topic, partition, "NONE", -1, -1, ""))
        result.respond(req, "NONE", results=results)
        return result

    def _fetched(self, topic: str, partition: int) -> dict:
        c = self.offsets[(topic, partition)]
        return partition_result(topic, partition, "NONE", c["offset"], c["leader_epoch"], c["metadata"])

    # -- expiry --------------------------------------------------------------------------------------------
    def _offsets_group(self) -> ClassicGroup | ConsumerGroup | None:
        group = self.classic.group
        return group if group is not None else self.consumer.consumer_group

    def _expiration_base(self):
        """Which timestamp an offset's retention counts from (the group's offsetExpirationCondition), or None
        when nothing may expire now."""
        if self.consumer.consumer_group is not None:
            return lambda c: c["commit_ts"]  # ConsumerGroup: always from each commit, whatever its state
        group = self.classic.group
        if group is None or group.is_in(GroupState.DEAD):
            return None
        if group.protocol_type is None:
            return lambda c: c["commit_ts"]  # simple group: from each commit
        if group.is_in(GroupState.EMPTY):
            return lambda c: group.current_state_ts  # from the moment the group became Empty
        if (group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.subscribed_topics is not None
                and group.is_in(GroupState.STABLE)):
            return lambda c: c["commit_ts"]  # only topics the group no longer subscribes to
        return None

    def _expiry_time(self, base, committed: dict) -> int:
        if committed["expire_ts"] is not None:
            return committed["expire_ts"]
        return base(committed) + self.config.offsets_retention_ms

    def _deletes_when_emptied(self) -> bool:
        """Whether a sweep that leaves no offsets deletes the group (maybeDeleteGroup): an Empty group, classic
        or consumer."""
        consumer_group, group = self.consumer.consumer_group, self.classic.group
        if consumer_group is not None:
            return consumer_group.state is ConsumerGroupState.EMPTY
        return group is not None and group.is_in(GroupState.EMPTY)

    def next_expiry_due(self, now: int) -> int | None:
        """Earliest time at which a sweep would change something: an offset expires, or the group is Empty
        with no offsets left and gets deleted."""
        group = self._offsets_group()
        if group is None:
            return None
        if not self.offsets:
            return now if self._deletes_when_emptied() else None
        base = self._expiration_base()
        if base is None:
            return None
        due = [self._expiry_time(base, c) for (topic, _), c in self.offsets.items() if not group.is_subscribed_to(topic)]
        return min(due) if due else None

    def cleanup_expired_offsets(self, now: int, outcomes: list[str]) -> CoordinatorResult:
        """Kafka's cleanupGroupMetadata for this group: its expired offsets, unless the group subscribes to
        their topic (isSubscribedToTopic), are tombstoned; an Empty group left without offsets is deleted."""
        result = CoordinatorResult(outcomes)
        group = self._offsets_group()
        if group is None:
            return result
        expired: list[tuple[str, int]] = []
        all_expired = True
        base = self._expiration_base()
        if self.offsets:
            if base is None:
                return result
            for (topic, partition), committed in sorted(self.offsets.items()):
                if not group.is_subscribed_to(topic) and now >= self._expiry_time(base, committed):
                    expired.append((topic, partition))
                else:
                    all_expired = False
        delete_group = all_expired and self._deletes_when_emptied()
        if not expired and not delete_group:
            return result
        records = [OffsetCommitRecord(topic, partition, None) for topic, partition in expired]
        if delete_group and self.classic.group is not None:
            records.append(GroupMetadataRecord(None))
        if result.append(records) is not None:
            return result  # the sweep's records were not written; the next tick tries again
        if delete_group:
            result.delete_group("group_expired")
            result.cancel_all()
        return result

    # -- replay, load, unload ------------------------------------------------------------------------------
    def replay(self, record: OffsetCommitRecord) -> None:
        """An appended offset record, replayed into the committed offsets (Kafka's OffsetMetadataManager.replay;
        the group it creates, if none exists, is the runtime's to create first)."""
        if record.value is None:
            self.offsets.pop((record.topic, record.partition), None)
        else:
            self.offsets[(record.topic, record.partition)] = record.value
        self.version += 1

    def load(self, log: GroupLog) -> None:
        """A coordinator loading the group's partition: each partition's last offset record."""
        self.offsets = log.offsets()
        self.version += 1

    def unload(self) -> None:
        self.offsets = {}
        self.version += 1
