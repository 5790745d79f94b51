"""A one-group coordinator for the broker-side tests, shaped like Kafka's GroupMetadataManagerTestContext:
a mock clock starting at 1000 ms whose `sleep` fires due timers, `heartbeat` that replays the records it
returns into the group (as the coordinator runtime does after an append), fluent-ish request builders and
timer assertions; and the MockPartitionAssignor that returns a prepared target assignment."""

from __future__ import annotations

from typing import Iterable, Mapping

from state.config import CoordinatorConfig
from state.consumer_group.group import ConsumerGroup, ConsumerGroupMember
from state.consumer_group.group_spec import GroupSpec, canonical
from state.consumer_group.heartbeat import (
    REBALANCE_TIMEOUT,
    SESSION_TIMEOUT,
    CoordinatorResult,
    HeartbeatContext,
    consumer_group_heartbeat,
    on_rebalance_timeout,
    on_member_timeout,
)
from state.consumer_group.messages import HeartbeatRequest
from state.consumer_group.reconciliation import CurrentAssignment, MemberState
from state.consumer_group.records import (
    AssignmentMetadata,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    GroupEpoch,
)
from state.consumer_group.topic_id import TopicId
from state.consumer_group.topics import TopicsImage

GROUP_ID = "fooup"
CLIENT_ID = "client"
CLIENT_HOST = "localhost/127.0.0.1"
FOO = TopicId.from_string("Xq6LK8SnRkGxz7Da8ZvqLA")
BAR = TopicId.from_string("D_9cN5pJQqSV4cQ4zb3Y5Q")
# foo with 6 partitions and bar with 3, as most of Kafka's consumer group tests have them.
FOO_BAR = {"foo": (FOO, 6), "bar": (BAR, 3)}


class MockAssignor:
    """MockPartitionAssignor: whatever the group, the prepared assignment."""

    def __init__(self) -> None:
        self.prepared: dict[str, dict[TopicId, tuple[int, ...]]] = {}
        self.calls: list[GroupSpec] = []

    def prepare(self, assignment: Mapping[str, Mapping[TopicId, Iterable[int]]]) -> None:
        self.prepared = {member_id: canonical(topics) for member_id, topics in assignment.items()}

    def __call__(self, group: GroupSpec, partition_counts) -> dict:
        self.calls.append(group)
        return dict(self.prepared)


def epochs(epoch: int, **topics: Iterable[int]) -> dict[TopicId, dict[int, int]]:
    """toAssignmentWithEpochs(mkAssignment(...), epoch) with topics named foo / bar."""
    ids = {"foo": FOO, "bar": BAR}
    return {ids[name]: dict.fromkeys(ps, epoch) for name, ps in topics.items()}


def tps(**topics: Iterable[int]) -> tuple:
    """Partitions as requests and responses carry them: (topic id, partitions) in topic id order."""
    ids = {"foo": FOO, "bar": BAR}
    return tuple(sorted((ids[name], tuple(sorted(ps))) for name, ps in topics.items()))


def member(member_id: str, *, epoch: int, previous: int, state: MemberState = MemberState.STABLE,
           assigned=None, pending=None, names=("foo", "bar"), assignor: str | None = "range",
           instance_id: str | None = None, rebalance_timeout_ms: int = -1) -> ConsumerGroupMember:
    """A member as Kafka's tests build it (ConsumerGroupMember.Builder with the default client id/host)."""
    return ConsumerGroupMember(
        member_id, instance_id=instance_id, rebalance_timeout_ms=rebalance_timeout_ms, client_id=CLIENT_ID,
        client_host=CLIENT_HOST, subscribed_topic_names=frozenset(names),
        server_assignor_name=assignor,
        current=CurrentAssignment(state, epoch, previous, assigned or {}, pending or {}))


def member_records(m: ConsumerGroupMember) -> list:
    return [ConsumerGroupMemberMetadata(m.member_id, m.subscription()),
            ConsumerGroupCurrentMemberAssignment(m.member_id, m.current)]


def target_record(member_id: str, **topics: Iterable[int]) -> ConsumerGroupTargetAssignmentMember:
    return ConsumerGroupTargetAssignmentMember(member_id, tps(**topics))


def epoch_record(epoch: int, metadata_hash: int) -> ConsumerGroupMetadata:
    return ConsumerGroupMetadata(GroupEpoch(epoch, metadata_hash))


def assignment_metadata_record(epoch: int, timestamp: int) -> ConsumerGroupTargetAssignmentMetadata:
    return ConsumerGroupTargetAssignmentMetadata(AssignmentMetadata(epoch, timestamp))


class Context:
    def __init__(self, topics: Mapping[str, tuple[TopicId, int]] | None = None, assignors=None,
                 kafka_4_0: bool = False, **config) -> None:
        """`assignors`: name -> assignor, the first the default; by default a MockAssignor named "range"
        (`self.assignor`), as Kafka's test context has it."""
        assignors = assignors or {"range": MockAssignor()}
        self.assignor = next(iter(assignors.values()))
        self.topics = TopicsImage(dict(topics or {}))
        self.config = CoordinatorConfig(**config)
        self.context = HeartbeatContext(self.config, self.topics, assignors, kafka_4_0)
        self.kafka_4_0 = kafka_4_0
        self.group: ConsumerGroup | None = None
        self.time = 1000
        self.timers: dict[tuple, tuple[int, str, tuple]] = {}
        self.log: list = []  # every record replayed, in order

    def metadata_hash(self, *names: str) -> int:
        return self.topics.metadata_hash(names)

    def replay(self, *records) -> None:
        for record in records:
            if self.group is None:
                self.group = ConsumerGroup(GROUP_ID, self.kafka_4_0)
            self.group.replay(record)
            self.log.append(record)

    def with_group(self, *members: ConsumerGroupMember, group_epoch: int, assignment_epoch: int,
                   targets: Mapping[str, Mapping[str, Iterable[int]]] | None = None, names=("foo", "bar")) -> None:
        """Kafka's ConsumerGroupBuilder: members, the group epoch with the hash of `names`, each member's
        target (its assigned partitions unless given) and the target assignment metadata at time 0."""
        records = []
        for m in members:
            records.append(ConsumerGroupMemberMetadata(m.member_id, m.subscription()))
        records.append(epoch_record(group_epoch, self.metadata_hash(*names)))
        for m in members:
            if targets is not None:
                records.append(target_record(m.member_id, **targets[m.member_id]))
            else:
                records.append(ConsumerGroupTargetAssignmentMember(
                    m.member_id, tuple(sorted((t, tuple(sorted(ps))) for t, ps in m.assigned_partitions.items()))))
        records.append(assignment_metadata_record(assignment_epoch, 0))
        records += [ConsumerGroupCurrentMemberAssignment(m.member_id, m.current) for m in members]
        self.replay(*records)

    def apply(self, result: CoordinatorResult) -> CoordinatorResult:
        self.replay(*result.records)
        for change in result.timers:
            if change.deadline is None:
                self.timers.pop(change.key, None)
            elif change.if_absent and change.key in self.timers:
                continue
            else:
                self.timers[change.key] = (change.deadline, change.kind, change.args)
        if result.metadata_refreshed:
            self.group.metadata_expired = False
        return result

    def heartbeat(self, member_id: str = "", member_epoch: int = 0, **fields) -> CoordinatorResult:
        fields.setdefault("group_id", GROUP_ID)
        request = HeartbeatRequest(member_id=member_id, member_epoch=member_epoch, **fields)
        return self.apply(consumer_group_heartbeat(self.group, request, self.time, self.context, CLIENT_ID,
                                                   CLIENT_HOST, generated_member_id="generated-member-id"))

    def join(self, member_id: str, names=("foo", "bar"), rebalance_timeout_ms: int = 5000, **fields) -> CoordinatorResult:
        return self.heartbeat(member_id, 0, rebalance_timeout_ms=rebalance_timeout_ms,
                              subscribed_topic_names=tuple(names), topic_partitions=(), **fields)

    def fire(self, key: tuple) -> CoordinatorResult:
        """Run the timer `key` now, whether or not it is due (a captured timer in Kafka's tests)."""
        _, kind, args = self.timers.pop(key)
        if kind == "on_rebalance_timeout":
            return self.apply(on_rebalance_timeout(self.group, *args, self.context))
        return self.apply(on_member_timeout(self.group, *args, self.context))

    def sleep(self, ms: int) -> list[CoordinatorResult]:
        """Advance the clock, running the timers that come due, earliest first."""
        self.time += ms
        fired = []
        while due := sorted((deadline, key) for key, (deadline, _, _) in self.timers.items() if deadline <= self.time):
            fired.append(self.fire(due[0][1]))
        return fired

    def session_deadline(self, member_id: str) -> int | None:
        timer = self.timers.get((SESSION_TIMEOUT, member_id))
        return None if timer is None else timer[0]

    def rebalance_timer(self, member_id: str) -> tuple[int, str, tuple] | None:
        return self.timers.get((REBALANCE_TIMEOUT, member_id))

    def assert_session_timeout(self, member_id: str, timeout_ms: int) -> None:
        assert self.session_deadline(member_id) == self.time + timeout_ms

    def assert_rebalance_timeout(self, member_id: str, timeout_ms: int) -> None:
        timer = self.rebalance_timer(member_id)
        assert timer is not None and timer[0] == self.time + timeout_ms
