"""The records a group's coordinator appends to its `__consumer_offsets` partition, and the partition's content
for the group as a load replays it.

Kafka's group coordinator (4.x GroupMetadataManager and OffsetMetadataManager) turns a request into records to
append and a response. Once appended, offset records are replayed into the in-memory committed offsets: the
offsets a coordinator serves are the replay of its records, and an OffsetCommit record for a group that does
not exist creates it (a "simple" group, without protocol type or members). A classic group's handlers change
the group in memory themselves and append its GroupMetadata record for the next load only (Kafka's
CoordinatorResult with replayRecords = false). Loading the group after a coordinator move replays the
partition: the group from its last GroupMetadata value, the offsets from each partition's last value.

`GroupLog` keeps what log compaction keeps, the last value per key: replaying it gives the same state as
replaying every record in order, since each key's last record decides.
"""

from __future__ import annotations

import dataclasses

from state.consumer_group import records as cg
from state.events import Protocol
from state.classic.group import ClassicGroup, ClassicGroupMember, decode_assignment_partitions, subscription_topics
from state.classic.group_state import GroupState


# Records are values, never changed once built; not frozen=True for the same reason as state.events' classes.
@dataclasses.dataclass(slots=True, unsafe_hash=True)
class OffsetCommitRecord:
    """OffsetCommitKey(group, topic, partition) → OffsetCommitValue, or a tombstone (`value` None).

    `context` holds the `offsets` table's columns that are not part of the record (who committed it, the
    partition's log-end offset when it was written)."""

    topic: str
    partition: int
    value: dict | None
    context: dict | None = None

    @property
    def key(self) -> tuple:
        return ("offset", self.topic, self.partition)


@dataclasses.dataclass(slots=True, unsafe_hash=True)
class GroupMetadataRecord:
    """GroupMetadataKey(group) → GroupMetadataValue (protocol, generation, leader, members with their
    subscription and assignment), or a tombstone (`value` None) when the group is deleted."""

    value: dict | None

    key = ("group_metadata",)


Record = OffsetCommitRecord | GroupMetadataRecord  # a consumer group's: state.consumer_group.records


class GroupLog:
    """The group's records in its `__consumer_offsets` partition, as compaction keeps them. It outlives the
    coordinator: a broker that unloads the group drops its memory, not the partition."""

    def __init__(self) -> None:
        self.values: dict[tuple, dict] = {}

    def append(self, record: Record) -> None:
        if record.value is None:
            self.values.pop(record.key, None)  # a tombstone; compaction removes the key
        else:
            self.values[record.key] = record.value

    def group_metadata(self) -> dict | None:
        return self.values.get(GroupMetadataRecord.key)

    def offsets(self) -> dict[tuple[str, int], dict]:
        return {(key[1], key[2]): value for key, value in self.values.items() if key[0] == "offset"}

    def committed(self, topic: str, partition: int) -> dict | None:
        return self.values.get(("offset", topic, partition))

    def consumer_group_records(self) -> list[cg.ConsumerGroupRecord]:
        """A consumer group's records as compaction keeps them, each key's last value. Replaying them in any
        order gives the same group: no tombstone is kept, and each key's value is the latest."""
        return [cg.record_of(key, value) for key, value in self.values.items() if cg.is_consumer_group_key(key)]


def group_metadata_value(group: ClassicGroup, assignment: dict[str, bytes] | None,
                         protocol_type: str | None = None) -> dict:
    """The GroupMetadataValue of `group` with the given assignment per member id."""
    members = []
    for m in group.all_members():
        members.append({
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "session_timeout_ms": m.session_timeout_ms,
            "subscription": m.metadata(group.protocol_name) if group.protocol_name is not None else b"",
            "assignment": (assignment or {}).get(m.member_id, b""),
        })
    return {
        "protocol_type": group.protocol_type or "" if protocol_type is None else protocol_type,
        "generation_id": group.generation_id,
        "protocol_name": group.protocol_name,
        "leader_id": group.leader_id,
        "current_state_ts": group.current_state_ts,
        "members": members,
    }


def group_from_value(group_id: str, value: dict, now: int) -> ClassicGroup:
    """The group a load rebuilds from its last GroupMetadataValue (Kafka's replay of GroupMetadataKey): Stable
    at that generation if it has members, Empty otherwise."""
    group = ClassicGroup(group_id, now)
    group.protocol_type = value["protocol_type"] or None
    group.generation_id = value["generation_id"]
    group.protocol_name = value["protocol_name"]
    group.leader_id = value["leader_id"]
    for m in value["members"]:
        topics = subscription_topics(group.protocol_type, m["subscription"])
        member = ClassicGroupMember(
            member_id=m["member_id"], group_instance_id=m["group_instance_id"], client_id=m["client_id"],
            client_host=m["client_host"], rebalance_timeout_ms=m["rebalance_timeout_ms"],
            session_timeout_ms=m["session_timeout_ms"], protocol_type=group.protocol_type or "",
            protocols=(Protocol(group.protocol_name, m["subscription"], topics),),
            assignment=m["assignment"],
            assignment_partitions=decode_assignment_partitions(group.protocol_type, m["assignment"]),
        )
        group.add(member, None)
    group.leader_id = value["leader_id"] if value["members"] else None
    if value["members"]:
        group.state = GroupState.STABLE
    group.subscribed_topics = group.compute_subscribed_topics()
    group.current_state_ts = value["current_state_ts"] if value["current_state_ts"] >= 0 else now
    return group
