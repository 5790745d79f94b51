"""Parity of state/offsets/manager.py's OffsetMetadataManager and the native engine's, for a classic group's
offsets: the classic parity test's operations (tests/native/classic/test_manager_parity.py) interleaved with
OffsetCommits (by members at the right or a wrong generation, by admin tools without one, to no group, to a
group in every state, with retention times, explicit commit timestamps, metadata over
offset.metadata.max.bytes, v1 values without a topic id and Kafka 4.0's without any), OffsetFetches (all
partitions, or named ones committed or not), the retention sweep at its due time and between, and the offsets
unloaded and loaded with the group. Both managers must return the same effects field for field in order,
take the same write failures, give the same next expiry and hold the same offsets; the records each appends
are replayed into it, and the group they create or the sweep deletes is created or deleted on both classic
managers, as the runtime does.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.config import CoordinatorConfig
from state.consumer_group.topic_id import derived_topic_id
from state.events import CommitPartition, OffsetCommit, OffsetFetch, PartitionList
from state.offsets.manager import OffsetMetadataManager
from state.records.group_log import OffsetCommitRecord
from state.runtime import result as R
from tests.native import cores
from tests.native.classic import shadow
from tests.native.classic.test_manager_parity import CONFIGS, TOPICS, Driver, step

# Offsets expire within the minutes a sequence covers, and metadata is soon too large.
OFFSETS_CONFIGS = tuple(dataclasses.replace(c, offsets_retention_minutes=1, offset_metadata_max_bytes=8)
                        for c in CONFIGS) + (dataclasses.replace(CONFIGS[0], coordsim_kafka_version="4.0"),)


class Image:
    """The cluster as the offsets manager reads it: derived topic ids, a production model for `foo` only."""

    def topic_id(self, topic: str):
        return derived_topic_id(topic)

    def reported_log_end_offset(self, tp, at=None):
        return None if tp[0] != "foo" else 1_000 + (at or 0) // 7


class NoConsumerGroup:
    consumer_group = None


class OffsetsDriver(Driver):
    """The classic driver with both offsets managers beside the classic ones."""

    def __init__(self, config: CoordinatorConfig) -> None:
        super().__init__(config)
        self.image = Image()
        self.python_offsets = OffsetMetadataManager(config, self.python, NoConsumerGroup(), self.image)
        self.native_offsets = cores.native_module("offsets").OffsetMetadataManager(config)
        self.log: dict[tuple[str, int], dict] = {}  # the partition's offsets, as compaction keeps them

    def offsets_op(self, name: str, args: tuple, outcomes: list[str]) -> None:
        """Run `name` on both offsets managers; the native one is given the native classic manager (and, for a
        commit, the image) after the outcomes."""
        python_outcomes, native_outcomes = list(outcomes), list(outcomes)
        result = getattr(self.python_offsets, name)(*args, python_outcomes)
        image = (self.image,) if name == "commit_offset" else ()
        effects = getattr(self.native_offsets, name)(*args, native_outcomes, self.native, *image)
        assert shadow.normal(effects) == shadow.normal_python(result.effects), name
        assert native_outcomes == python_outcomes
        for effect in result.effects:
            self.carry_out(effect)
        self.compare()

    def compare(self) -> None:
        assert self.native_offsets.offsets() == dict(sorted(self.python_offsets.offsets.items()))
        assert self.native_offsets.version == self.python_offsets.version
        assert (self.native_offsets.next_expiry_due(self.now, self.native)
                == self.python_offsets.next_expiry_due(self.now))

    def carry_out(self, effect: tuple) -> None:
        super().carry_out(effect)
        kind = effect[0]
        if kind == R.APPEND:
            for record in effect[1]:
                if isinstance(record, OffsetCommitRecord):
                    self.replay(record)
        elif kind == R.CREATE_SIMPLE_GROUP and self.python.group is None:
            self.run("create_simple_group", self.now)
        elif kind == R.DELETE_GROUP and self.python.group is not None:
            self.run("delete", self.now, effect[1])
            self.timers.clear()

    def replay(self, record: OffsetCommitRecord) -> None:
        # An offset record for a group that does not exist creates it (a simple group), first.
        if record.value is not None and self.python.group is None:
            self.run("create_simple_group", self.now)
        self.python_offsets.replay(record)
        self.native_offsets.replay(record.topic, record.partition, record.value)
        if record.value is None:
            self.log.pop((record.topic, record.partition), None)
        else:
            self.log[(record.topic, record.partition)] = record.value

    def run(self, name: str, *args, outcomes: list[str] | None = None) -> None:
        super().run(name, *args, outcomes=outcomes)
        if name == "unload":
            self.python_offsets.unload()
            self.native_offsets.unload()
        elif name == "load":
            self.python_offsets.offsets = dict(self.log)  # GroupLog.offsets(), as OffsetMetadataManager.load
            self.python_offsets.version += 1
            self.native_offsets.load(dict(self.log))
        elif name == "replace_by_consumer_group":
            self.log.clear()  # the conversion's offsets are the consumer group's: out of this test's scope


@st.composite
def commit(draw, d: OffsetsDriver) -> OffsetCommit:
    group = d.python.group
    ids = list(group.members.keys()) if group is not None else []
    member_id = draw(st.sampled_from(ids + ["", "unknown-member"])) if ids else draw(st.sampled_from(["", "x"]))
    instance = group.members[member_id].group_instance_id if group is not None and member_id in ids else None
    current = group.generation_id if group is not None else 0
    generation = draw(st.sampled_from([current, current, -1, current + 1])) if member_id else -1
    partitions = draw(st.lists(st.tuples(st.sampled_from(TOPICS), st.integers(0, 2)), min_size=1, max_size=3))
    offsets = tuple(CommitPartition(
        topic, partition, draw(st.integers(0, 10**6)), draw(st.sampled_from([-1, 3])),
        draw(st.sampled_from([None, "", "meta", "x" * 9, "\U0001f600" * 4, "\U0001f600" * 5])),
        draw(st.sampled_from([-1, -1, d.now - 5_000]))) for topic, partition in partitions)
    return OffsetCommit(ts=d.now, group_id="group-id", type="OFFSET_COMMIT", seq=d.next_seq(),
                        request_id=f"commit-{d.seq}", client_id="c", api_version=draw(st.sampled_from([2, 8, 9])),
                        member_id=member_id, group_instance_id=instance, generation_id=generation,
                        retention_time_ms=draw(st.sampled_from([-1, -1, 30_000])), offsets=offsets)


@st.composite
def fetch(draw, d: OffsetsDriver) -> OffsetFetch:
    partitions = None
    if draw(st.booleans()):
        partitions = tuple(PartitionList(t, tuple(draw(st.lists(st.integers(0, 3), max_size=3))))
                           for t in draw(st.lists(st.sampled_from(TOPICS), unique=True, min_size=1)))
    return OffsetFetch(ts=d.now, group_id="group-id", type="OFFSET_FETCH", seq=d.next_seq(),
                       request_id=f"fetch-{d.seq}", client_id="c", api_version=8, partitions=partitions)


def offsets_step(draw, d: OffsetsDriver) -> None:
    choice = draw(st.sampled_from(["commit", "commit", "group", "group", "group", "sweep", "fetch"]))
    outcomes = draw(st.lists(st.sampled_from(("NOT_ENOUGH_REPLICAS", "MESSAGE_TOO_LARGE")), max_size=1)) if draw(
        st.integers(0, 5)) == 5 else []
    if choice == "commit":
        req = draw(commit(d))
        d.offsets_op("commit_offset", (d.now, req), outcomes)
        return
    if choice == "fetch":
        req = draw(fetch(d))
        d.offsets_op("fetch_offsets", (req,), outcomes)
        return
    if choice == "sweep":
        due = d.python_offsets.next_expiry_due(d.now)
        if due is not None and due > d.now and draw(st.booleans()):
            d.advance(due - d.now)  # the sweep's tick at its due time, as the runtime schedules it
        d.offsets_op("cleanup_expired_offsets", (d.now,), outcomes)
        return
    step(draw, d)
    d.compare()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), config=st.sampled_from(OFFSETS_CONFIGS), steps=st.integers(5, 40))
def test_the_native_offsets_manager_answers_as_the_reference(data, config, steps) -> None:
    d = OffsetsDriver(config)
    for _ in range(steps):
        offsets_step(data.draw, d)
