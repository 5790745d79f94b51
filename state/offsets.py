"""Committed offsets: OffsetCommit and OffsetFetch, and KIP-211 expiry by the periodic sweep (Kafka 4.x
OffsetMetadataManager; a consumer group's commits are checked in state/consumer_group_handlers.py).

Expiry follows each group's offsetExpirationCondition: a classic group's offsets count from their commit
(simple group, or a Stable consumer-protocol group for topics it no longer subscribes to) or from when the
group became Empty, and nothing expires in other states; a consumer group's (KIP-848) count from their commit
in every state. Either way an offset whose topic the group subscribes to never expires, and an explicit
expire timestamp (OffsetCommit v2-v4 retention) wins over the base. An OffsetFetch naming a member of a
consumer group is checked first (ConsumerGroup.validateOffsetFetch).

The committed-offsets map is the replay of the group's OffsetCommit records (state/records.py): every
accepted partition appends a record (a row of the `offsets` table) and every expiry appends a tombstone; the
map changes only by replaying what was appended, so replaying the table gives back the map. A mixin of
`GroupRuntime`.

The sweep runs every offsets.retention.check.interval.ms (ticks aligned to multiples of the interval since
the epoch). Instead of waking every group at every tick, the runtime schedules the sweep only at the first
tick where something can expire or the group can be deleted, computed in closed form from the state; the
result is the same as sweeping at every tick because nothing changes between ticks without an event.
"""

from __future__ import annotations

from state.consumer_group.group import ConsumerGroup, ConsumerGroupState
from state.consumer_group.offset_commit import validate_offset_fetch
from state.errors import append_error_to_response_error
from state.events import OffsetCommit, OffsetFetch
from state.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from state.group_state import GroupState
from state.java_compat import java_string_length
from state.membership import MemberError, validate_member
from state.records import GroupMetadataRecord, OffsetCommitRecord


def _result(topic: str, partition: int, error: str, offset=None, leader_epoch=None, metadata=None) -> dict:
    return {"member_id": None, "group_instance_id": None, "topic": topic, "partition": partition, "error": error,
            "offset": offset, "leader_epoch": leader_epoch, "metadata": metadata}


class OffsetHandlers:
    group: ClassicGroup | None
    consumer_group: ConsumerGroup | None
    offsets: dict[tuple[str, int], dict]

    # -- OffsetCommit --------------------------------------------------------------------------------------
    def handle_offset_commit(self, req: OffsetCommit) -> None:
        # A commit without a generation to a group that does not exist creates it when its records are replayed.
        creates_group = self.group is None and req.generation_id < 0
        error = None if creates_group else self._validate_offset_commit(req)
        if error is not None:
            self.fail_offset_commit(req, error)
            return
        group = self.group
        if group is not None and group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            # Classic members keep their session alive by committing.
            self.schedule_heartbeat(group.member(req.member_id))
        results, records = self.commit_records(req, self.now)
        if not records:
            if creates_group:
                self._create_simple_group()  # in memory, as Kafka's validation does, though nothing is written
        elif self.append(records) is not None:
            # The failed append rolls back the whole operation, including a group it would have created.
            self.fail_offset_commit(req, append_error_to_response_error(self.last_write_error))
            return
        self.respond(req, "NONE", results=results)

    def commit_records(self, req: OffsetCommit, now: int) -> tuple[list[dict], list[OffsetCommitRecord]]:
        """A valid commit handled at `now`: each partition's result, and the records of those accepted."""
        expire_ts = None if req.retention_time_ms == -1 else now + req.retention_time_ms
        results, records = [], []
        context = {"generation_id": req.generation_id, "member_id": req.member_id}
        for p in req.offsets:
            if p.metadata is not None and java_string_length(p.metadata) > self.config.offset_metadata_max_bytes:
                results.append(_result(p.topic, p.partition, "OFFSET_METADATA_TOO_LARGE"))
                continue
            results.append(_result(p.topic, p.partition, "NONE"))
            value = {
                "offset": p.offset,
                "leader_epoch": p.leader_epoch,
                "metadata": "" if p.metadata is None else p.metadata,
                "commit_ts": now if p.commit_timestamp == -1 else p.commit_timestamp,
                "expire_ts": expire_ts,
                "topic_id": self._committed_topic_id(p.topic, expire_ts),
            }
            log_end = self.reported_log_end_offset((p.topic, p.partition), now)
            records.append(OffsetCommitRecord(p.topic, p.partition, value, dict(context, log_end_offset=log_end)))
        return results, records

    def _committed_topic_id(self, topic: str, expire_ts: int | None) -> str | None:
        """The topic id the commit's OffsetCommitValue holds: from Kafka 4.1 (KAFKA-19141) the coordinator
        writes the topic's id, which trunk's KafkaApis resolves for every committed topic by name (OffsetCommit
        v10 carries it), except in a v1 value (a commit with an expire timestamp), which has no field for it.
        Kafka 4.0 wrote none."""
        if expire_ts is not None or self.config.kafka_4_0:
            return None
        return str(self.topic_id(topic))

    def fail_offset_commit(self, req: OffsetCommit, error: str, **fields) -> None:
        """An error for the whole request applies to each of its partitions (`fields`: other columns)."""
        self.respond(req, error, results=[_result(p.topic, p.partition, error) for p in req.offsets], **fields)

    def _validate_offset_commit(self, req: OffsetCommit) -> str | None:
        if self.group is None:
            return "GROUP_ID_NOT_FOUND" if req.api_version >= 9 else "ILLEGAL_GENERATION"
        group = self.group
        if group.is_in(GroupState.DEAD):
            return "COORDINATOR_NOT_AVAILABLE"
        if req.generation_id < 0 and group.is_in(GroupState.EMPTY):
            return None  # admin tools and manually assigned consumers commit to an Empty group freely
        if req.generation_id >= 0 or req.member_id != "" or req.group_instance_id is not None:
            try:
                validate_member(group, req.member_id, req.group_instance_id)
            except MemberError as e:
                return e.error
            if req.generation_id != group.generation_id:
                return "ILLEGAL_GENERATION"
        elif not group.is_in(GroupState.EMPTY):
            return "UNKNOWN_MEMBER_ID"
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            return "REBALANCE_IN_PROGRESS"
        return None

    # -- OffsetFetch ---------------------------------------------------------------------------------------
    def handle_offset_fetch(self, req: OffsetFetch) -> None:
        group = self.group
        if self.consumer_group is not None:
            error = validate_offset_fetch(self.consumer_group, req.member_id, req.member_epoch)
            if error != "NONE":
                # A group-level error (only v9+ names a member): no partitions in the answer.
                self.respond(req, error)
                return
        known = (group is not None and not group.is_in(GroupState.DEAD)) or self.consumer_group is not None
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
                        results.append(_result(plist.topic, partition, "NONE", -1, -1, ""))
        self.respond(req, "NONE", results=results)

    def _fetched(self, topic: str, partition: int) -> dict:
        c = self.offsets[(topic, partition)]
        return _result(topic, partition, "NONE", c["offset"], c["leader_epoch"], c["metadata"])

    # -- expiry --------------------------------------------------------------------------------------------
    def _offsets_group(self) -> ClassicGroup | ConsumerGroup | None:
        """The group the offsets belong to: the classic group or the consumer group (never both)."""
        return self.group if self.group is not None else self.consumer_group

    def _expiration_base(self):
        """Which timestamp an offset's retention counts from (the group's offsetExpirationCondition), or None
        when nothing may expire now."""
        if self.consumer_group is not None:
            return lambda c: c["commit_ts"]  # ConsumerGroup: always from each commit, whatever its state
        group = self.group
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
        if self.consumer_group is not None:
            return self.consumer_group.state is ConsumerGroupState.EMPTY
        return self.group is not None and self.group.is_in(GroupState.EMPTY)

    def next_expiry_due(self) -> int | None:
        """Earliest time at which a sweep would change something: an offset expires, or the group is Empty
        with no offsets left and gets deleted."""
        group = self._offsets_group()
        if group is None or self.loading_until is not None:
            return None
        if not self.offsets:
            return self.now if self._deletes_when_emptied() else None
        base = self._expiration_base()
        if base is None:
            return None
        due = [self._expiry_time(base, c) for (topic, _), c in self.offsets.items() if not group.is_subscribed_to(topic)]
        return min(due) if due else None

    def sweep_expired_offsets(self) -> None:
        """Kafka's cleanupGroupMetadata for this group: its expired offsets, unless the group subscribes to
        their topic (isSubscribedToTopic), are tombstoned; an Empty group left without offsets is deleted."""
        group = self._offsets_group()
        if group is None:
            return
        expired: list[tuple[str, int]] = []
        all_expired = True
        base = self._expiration_base()
        if self.offsets:
            if base is None:
                return
            for (topic, partition), committed in sorted(self.offsets.items()):
                if not group.is_subscribed_to(topic) and self.now >= self._expiry_time(base, committed):
                    expired.append((topic, partition))
                else:
                    all_expired = False
        delete_group = all_expired and self._deletes_when_emptied()
        if not expired and not delete_group:
            return
        records = [OffsetCommitRecord(topic, partition, None) for topic, partition in expired]
        if delete_group and self.group is not None:
            records.append(GroupMetadataRecord(None))
        if self.append(records) is not None:
            return  # the sweep's records were not written; the next tick tries again
        if not delete_group:
            return
        if self.group is not None:
            self.transition(GroupState.DEAD, "group_expired")
            self.group = None
        else:
            self.delete_empty_consumer_group("group_expired")  # the group's tombstones close the append
        self.timers.cancel_all()

    # -- replay --------------------------------------------------------------------------------------------
    def replay_offset_commit(self, record: OffsetCommitRecord) -> None:
        """An appended offset record, replayed into the committed offsets (Kafka's OffsetMetadataManager.replay)."""
        if record.value is None:
            self.offsets.pop((record.topic, record.partition), None)
        else:
            if self.group is None and self.consumer_group is None:
                self._create_simple_group()
            self.offsets[(record.topic, record.partition)] = record.value
        self.offsets_version += 1

    def _create_simple_group(self) -> None:
        """Offsets committed without the membership protocol: a "simple" group, no protocol type, no members."""
        self.group = ClassicGroup(self.group_id, self.now)
        self.record_state_change(None, GroupState.EMPTY, "group_created")
