"""Parity of state/offsets/manager.py's OffsetMetadataManager and the native engine's for a consumer group's
offsets: consumer groups built by Hypothesis-generated heartbeats on both cores
(tests/native/consumer_group/test_heartbeat_parity.py's steps), with OffsetCommits by their members (at their
epoch, their previous one, an older one, a later one, by unknown members and admin tools, at v8 and v9, of
partitions they hold and of others), OffsetFetches at member epochs and without, and the retention sweep
(which keeps the offsets of topics the group subscribes to and deletes an Empty group left without offsets)
interleaved. Both offsets managers must return the same effects field for field in order, hold the same
offsets and give the same next expiry; the records each appends are replayed into it, as the runtime does.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.config import CoordinatorConfig
from state.consumer_group import heartbeat as hb
from state.consumer_group.topic_id import derived_topic_id
from state.consumer_group.topics import TopicsImage
from state.events import CommitPartition, OffsetCommit, OffsetFetch
from state.offsets.manager import OffsetMetadataManager
from state.records.group_log import OffsetCommitRecord
from state.runtime import result as R
from tests.native import cores
from tests.native.classic import shadow
from tests.native.consumer_group.test_heartbeat_parity import GROUP, TOPICS, Both, heartbeats, request_of

PARITY = settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
CONFIG = CoordinatorConfig(offsets_retention_minutes=1, group_consumer_assignment_interval_ms=0)


class Image:
    """The consumer groups' topics (and one they do not know) with a production model for `foo` only."""

    def topic_id(self, topic: str):
        return TOPICS[topic][0] if topic in TOPICS else derived_topic_id(topic)

    def reported_log_end_offset(self, tp, at=None):
        return None if tp[0] != "foo" else 1_000 + (at or 0) // 7


class NoClassicGroup:
    group = None


class Offsets:
    """Both offsets managers beside a `Both` of consumer groups."""

    def __init__(self, both: Both) -> None:
        self.both, self.image = both, Image()
        self.python = OffsetMetadataManager(CONFIG, NoClassicGroup(), self, self.image)
        self.native = cores.native_module("offsets").OffsetMetadataManager(CONFIG)
        self.classic = cores.native_module("classic").ClassicGroupManager(GROUP, CONFIG)  # holds no group

    @property
    def consumer_group(self):
        """ConsumerGroups: the reference's group, as the consumer group manager holds it."""
        return self.both.python

    def run(self, name: str, *args) -> None:
        python_outcomes, native_outcomes = [], []
        result = getattr(self.python, name)(*args, python_outcomes)
        image = (self.image,) if name == "commit_offset" else ()
        effects = getattr(self.native, name)(*args, native_outcomes, self.classic, *image, consumer=self.both.native)
        assert shadow.normal(effects) == shadow.normal_python(result.effects), name
        for effect in result.effects:
            if effect[0] == R.APPEND:
                for record in effect[1]:
                    if isinstance(record, OffsetCommitRecord):
                        self.python.replay(record)
                        self.native.replay(record.topic, record.partition, record.value)
            elif effect[0] == R.DELETE_GROUP:  # the Empty consumer group goes with its last offsets
                self.both.python = self.both.native = None
        self.compare(args[0] if isinstance(args[0], int) else 0)

    def compare(self, now: int) -> None:
        assert self.native.offsets() == dict(sorted(self.python.offsets.items()))
        assert self.native.version == self.python.version
        assert (self.native.next_expiry_due(now, self.classic, consumer=self.both.native)
                == self.python.next_expiry_due(now))


def commit(step: dict, both: Both, now: int, seq: int) -> OffsetCommit:
    group = both.python
    ids = sorted(group.members) if group is not None else []
    member_id = (ids + ["unknown", ""])[step["member"] % (len(ids) + 2)]
    member = group.members.get(member_id) if group is not None else None
    current = -1 if member is None else member.member_epoch
    previous = -1 if member is None else member.previous_member_epoch
    epoch = {"current": current, "previous": previous, "older": current - 1, "later": current + 1,
             "none": -1}[step["epoch"]]
    held = [] if member is None else [(t, p) for t, ps in member.assigned_partitions.items() for p in ps]
    names = {topic_id: name for name, (topic_id, _) in TOPICS.items()}
    partitions = [(names[t], p) for t, p in held][:2] + step["extra"]
    offsets = tuple(CommitPartition(topic, partition, 100 + seq, -1, None, -1) for topic, partition in partitions)
    return OffsetCommit(ts=now, group_id=GROUP, type="OFFSET_COMMIT", seq=seq, request_id=f"commit-{seq}",
                        client_id="c", api_version=step["api_version"], member_id=member_id,
                        generation_id=epoch, retention_time_ms=step["retention"], offsets=offsets)


commits = st.fixed_dictionaries({
    "member": st.integers(0, 6), "epoch": st.sampled_from(["current", "current", "previous", "older", "later",
                                                           "none"]),
    "extra": st.lists(st.tuples(st.sampled_from(["foo", "bar", "other"]), st.integers(0, 3)), max_size=2),
    "api_version": st.sampled_from([8, 9, 9]), "retention": st.sampled_from([-1, -1, 30_000]),
})
steps = st.one_of(
    st.tuples(st.just("heartbeat"), heartbeats), st.tuples(st.just("heartbeat"), heartbeats),
    st.tuples(st.just("commit"), commits), st.tuples(st.just("commit"), commits),
    st.tuples(st.just("fetch"), st.tuples(st.integers(0, 6), st.booleans())),
    st.tuples(st.just("sweep"), st.booleans()), st.tuples(st.just("advance"), st.integers(1, 70_000)),
)


@PARITY
@given(steps=st.lists(steps, min_size=3, max_size=25))
def test_a_consumer_groups_offsets_answer_as_the_reference(steps) -> None:
    both = Both(CONFIG, False)
    offsets = Offsets(both)
    context = hb.HeartbeatContext.from_config(CONFIG, TopicsImage(TOPICS))
    now = 1_000
    for seq, (kind, arg) in enumerate(steps):
        if kind == "advance":
            now += arg
        elif kind == "heartbeat":
            request = dataclasses.replace(request_of(arg, both.python), member_id=arg["member"])
            python, _ = both.held()
            both.apply(hb.consumer_group_heartbeat(python, request, now, context))
        elif kind == "commit":
            offsets.run("commit_offset", now, commit(arg, both, now, seq))
        elif kind == "fetch":
            index, as_member = arg
            ids = sorted(both.python.members) if both.python is not None else []
            member_id = (ids + ["unknown"])[index % (len(ids) + 1)] if as_member else None
            member = both.python.members.get(member_id) if both.python is not None and member_id else None
            fetch = OffsetFetch(ts=now, group_id=GROUP, type="OFFSET_FETCH", seq=seq, request_id=f"fetch-{seq}",
                                client_id="c", api_version=9, member_id=member_id,
                                member_epoch=-1 if member is None else member.member_epoch - index % 2)
            offsets.run("fetch_offsets", fetch)
        else:
            due = offsets.python.next_expiry_due(now)
            if arg and due is not None and due > now:
                now = due
            offsets.run("cleanup_expired_offsets", now)
