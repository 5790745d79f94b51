"""Regular-expression subscriptions (state.consumer_group.regex and the heartbeat's use of it): Kafka's
GroupMetadataManagerTest regex cases (trunk), ported where they need no authorizer, plus the RE2J syntax
checks (Utils.throwIfRegularExpressionIsInvalid) this simulator stands in for with Python's `re`.

Kafka runs the resolution on an executor (`context.processTasks()` in its tests); here `Context.resolve`
runs what the heartbeat asked for (`CoordinatorResult.resolve_regexes`), as the runtime does right after the
heartbeat's write."""

from __future__ import annotations

import dataclasses

import pytest

from state.consumer_group.heartbeat import on_regular_expressions_resolved
from state.consumer_group.reconciliation import CurrentAssignment, MemberState
from state.consumer_group.records import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupRegularExpression,
    ResolvedRegularExpression,
    member_tombstones,
)
from state.consumer_group.regex import (
    InvalidRegularExpression,
    compile_regex,
    resolve_regular_expressions,
)
from state.consumer_group.topic_id import TopicId
from tests.state.consumer_group.coordinator_context import (
    BAR,
    FOO,
    FOO_BAR,
    Context,
    assignment_metadata_record,
    epoch_record,
    epochs,
    member,
    target_record,
)

# The syntax checks, patterns and resolutions run on both cores (the heartbeat's use of them on the reference).
pytestmark = pytest.mark.usefixtures("core")

STABLE = MemberState.STABLE
M1, M2 = "member-id-1", "member-id-2"
FOOO = TopicId.from_string("AAAAAAAAAAAAAAAAAAAAAA")


def resolve(ctx: Context, result, version: int | None = None):
    """Run the resolution `result` asked for, as the runtime does after its write (Kafka's processTasks)."""
    assert result.resolve_regexes is not None, "no resolution was scheduled"
    version = ctx.context.metadata_version if version is None else version
    resolved = resolve_regular_expressions(result.resolve_regexes, ctx.topics.topics, version, ctx.time)
    return ctx.apply(on_regular_expressions_resolved(ctx.group, resolved, ctx.context))


def regex_member(member_id, regex, *, assigned=None, names=()):
    return dataclasses.replace(member(member_id, epoch=10, previous=10, assigned=assigned, names=names,
                                      rebalance_timeout_ms=5000), subscribed_topic_regex=regex)


def regex_group(ctx: Context, *members, resolved: dict, names):
    """Kafka's ConsumerGroupBuilder with withResolvedRegularExpression: members at epoch 10, their targets
    their assignments."""
    ctx.replay(*(ConsumerGroupRegularExpression(regex, value) for regex, value in resolved.items()))
    ctx.with_group(*members, group_epoch=10, assignment_epoch=10, names=names)


# ----------------------------------------------------------------------------------------------------------
# The syntax check (RE2J), and what a new regex costs

def test_consumer_heartbeat_regex_validation():
    # GroupMetadataManagerTest.testConsumerHeartbeatRegexValidation
    ctx = Context()
    result = ctx.heartbeat(M1, 0, rebalance_timeout_ms=5000, subscribed_topic_regex="[", topic_partitions=())
    assert result.records == () and result.response.error == "INVALID_REGULAR_EXPRESSION"
    assert result.response.error_message.startswith("SubscribedTopicRegex `[` is not a valid regular expression: ")
    result = ctx.heartbeat(M1, 0, rebalance_timeout_ms=5000, subscribed_topic_regex=".*", topic_partitions=())
    assert result.response.error == "NONE"


@pytest.mark.parametrize("regex", [
    r"(a)\1", "foo(?=bar)", "foo(?!bar)", "(?<=a)b", "(?<!a)b", "(?>ab)", "a*+", "a++", "a?+", "a{2}+",
    r"foo\Z", "[", "(", "a**", "*a", "(?#comment)a",
])
def test_constructs_re2j_refuses_are_invalid(regex):
    with pytest.raises(InvalidRegularExpression):
        compile_regex(regex)


@pytest.mark.parametrize("regex", [r"\pL+", r"\p{Greek}", r"\Qa.b\E", "[[:alpha:]]+", "(?<name>a)"])
def test_re2j_syntax_python_lacks_is_refused_with_a_clear_message(regex):
    with pytest.raises(InvalidRegularExpression, match="simulator does not evaluate"):
        compile_regex(regex)


@pytest.mark.parametrize("regex, topic, matches", [
    ("foo.*", "foo-1", True), ("foo", "foo-1", False),  # the whole name must match (RE2J matches())
    ("foo*", "fooo", True), ("(?i)FOO", "foo", True), (r"foo\z", "foo", True), ("[]a]+", "a]", True),
    ("(?P<x>a)b", "ab", True), (r"[\d]+", "12", True), ("a|b", "b", True),
])
def test_patterns_both_syntaxes_share(regex, topic, matches):
    assert (compile_regex(regex).fullmatch(topic) is not None) is matches


def test_resolution_matches_every_known_topic_including_internal_ones():
    # TopicRegexResolver: every topic name of the image, no internal-topic filter (only an authorizer filters).
    resolved = resolve_regular_expressions([".*", "foo.*"], {"__consumer_offsets": 0, "foo": 0, "bar": 0}, 7, 42)
    assert resolved == {".*": ResolvedRegularExpression(("__consumer_offsets", "bar", "foo"), 7, 42),
                        "foo.*": ResolvedRegularExpression(("foo",), 7, 42)}


# ----------------------------------------------------------------------------------------------------------
# Replay

def test_replay_consumer_group_regular_expression():
    # GroupMetadataManagerTest.testReplayConsumerGroupRegularExpression (+ ...Tombstone)
    ctx = Context(FOO_BAR)
    value = ResolvedRegularExpression(("abc", "abcd"), 10, 12345)
    ctx.replay(ConsumerGroupRegularExpression("abc*", value))
    assert ctx.group.resolved_regexes == {"abc*": value}
    assert ctx.group.is_subscribed_to("abcd")
    ctx.replay(ConsumerGroupRegularExpression("abc*", None))
    assert ctx.group.resolved_regexes == {} and not ctx.group.regex_topic_names


# ----------------------------------------------------------------------------------------------------------
# Joining, changing, clearing

def foo_group(ctx: Context) -> None:
    """testConsumerGroupMemberJoinsWithNewRegex's group: m1 subscribed to foo by name, holding foo 0-5."""
    ctx.with_group(dataclasses.replace(member(M1, epoch=10, previous=10, names=("foo",), rebalance_timeout_ms=5000,
                                              assigned=epochs(10, foo=range(6)))),
                   group_epoch=10, assignment_epoch=10, names=("foo",))


def test_consumer_group_member_joins_with_new_regex():
    # GroupMetadataManagerTest.testConsumerGroupMemberJoinsWithNewRegex
    ctx = Context({"foo": (FOO, 6)})
    ctx.context = dataclasses.replace(ctx.context, metadata_version=12345)
    foo_group(ctx)
    result = ctx.heartbeat(M2, 0, rebalance_timeout_ms=5000, subscribed_topic_regex="foo*", server_assignor="range",
                           topic_partitions=())
    assert (result.response.member_epoch, result.response.assignment) == (10, ())
    m2 = dataclasses.replace(member(M2, epoch=10, previous=0, names=(), rebalance_timeout_ms=5000),
                             subscribed_topic_regex="foo*")
    # A new regex bumps nothing: its resolution will.
    assert result.records == (ConsumerGroupMemberMetadata(M2, m2.subscription()),
                              ConsumerGroupCurrentMemberAssignment(M2, m2.current))
    assert result.resolve_regexes == ("foo*",)
    resolution = resolve(ctx, result)
    assert resolution.records == (
        ConsumerGroupRegularExpression("foo*", ResolvedRegularExpression(("foo",), 12345, ctx.time)),
        epoch_record(11, ctx.metadata_hash("foo")))


def test_consumer_group_member_picks_up_existing_resolved_regular_expression():
    # GroupMetadataManagerTest.testConsumerGroupMemberPicksUpExistingResolvedRegularExpression: a member
    # joining with a regex another member already resolved bumps the epoch at once, no resolution.
    ctx = Context({"foo": (FOO, 6)})
    regex_group(ctx, regex_member(M1, "foo*", assigned=epochs(10, foo=range(6))),
                resolved={"foo*": ResolvedRegularExpression(("foo",), 1, ctx.time)}, names=("foo",))
    ctx.assignor.prepare({M1: {FOO: (0, 1, 2)}, M2: {FOO: (3, 4, 5)}})
    result = ctx.heartbeat(M2, 0, rebalance_timeout_ms=5000, subscribed_topic_regex="foo*", server_assignor="range",
                           topic_partitions=())
    assert result.response.member_epoch == 11 and result.resolve_regexes is None
    assert epoch_record(11, ctx.metadata_hash("foo")) in result.records
    assert target_record(M2, foo=(3, 4, 5)) in result.records
    # The assignor saw m2 subscribed to foo through the regex.
    assert ctx.assignor.calls[-1].members[M2].subscribed_topic_ids == (FOO,)


def test_consumer_group_member_joins_with_updated_regex():
    # GroupMetadataManagerTest.testConsumerGroupMemberJoinsWithUpdatedRegex: m1 changes "foo*" (never
    # resolved; its own alone) to "foo*|bar*": the old one is tombstoned, no bump before the new one resolves.
    ctx = Context(FOO_BAR)
    ctx.context = dataclasses.replace(ctx.context, metadata_version=12345)
    regex_group(ctx, regex_member(M1, "foo*", assigned=epochs(10, foo=range(6))), resolved={}, names=())
    result = ctx.heartbeat(M1, 10, rebalance_timeout_ms=5000, subscribed_topic_regex="foo*|bar*",
                           server_assignor="range", topic_partitions=())
    # The subscription changed: the member is reconciled against it (foo* never resolved: nothing is kept).
    updated = dataclasses.replace(regex_member(M1, "foo*|bar*"), current=CurrentAssignment(STABLE, 10, 10))
    assert result.records == (ConsumerGroupMemberMetadata(M1, updated.subscription()),
                              ConsumerGroupRegularExpression("foo*", None),
                              ConsumerGroupCurrentMemberAssignment(M1, updated.current))
    assert result.resolve_regexes == ("foo*|bar*",)
    assert resolve(ctx, result).records == (
        ConsumerGroupRegularExpression("foo*|bar*", ResolvedRegularExpression(("bar", "foo"), 12345, ctx.time)),
        epoch_record(11, ctx.metadata_hash("foo", "bar")))
    ctx.assignor.prepare({M1: {FOO: range(6), BAR: range(3)}})
    result = ctx.heartbeat(M1, 10, rebalance_timeout_ms=5000, subscribed_topic_regex="foo*|bar*",
                           server_assignor="range", topic_partitions=())
    assert result.response.member_epoch == 11
    assert result.response.assignment == tuple(sorted(((FOO, tuple(range(6))), (BAR, (0, 1, 2)))))
    assert result.records == (
        target_record(M1, foo=range(6), bar=range(3)), assignment_metadata_record(11, ctx.time),
        ConsumerGroupCurrentMemberAssignment(M1, CurrentAssignment(STABLE, 11, 10, epochs(11, foo=range(6),
                                                                                          bar=range(3)))))


def test_consumer_group_member_joins_with_regex_and_updates_it_before_resolution_completed():
    # GroupMetadataManagerTest.testConsumerGroupMemberJoinsWithRegexAndUpdatesItBeforeResolutionCompleted:
    # a resolution of a regex nobody subscribes with any more writes nothing for it.
    ctx = Context({"foo": (FOO, 6)})
    foo_group(ctx)
    first = ctx.heartbeat(M2, 0, rebalance_timeout_ms=5000, subscribed_topic_regex="foo*", topic_partitions=())
    ctx.heartbeat(M2, 10, subscribed_topic_regex="bar*")
    assert ctx.group.subscribed_regexes == {"bar*": 1}
    resolution = resolve(ctx, first)
    assert resolution.records == ()


def test_consumer_group_member_join_refreshes_expired_regexes():
    # GroupMetadataManagerTest.testConsumerGroupMemberJoinRefreshesExpiredRegexes: a topic created since the
    # last resolution refreshes every regex, but not within 10 s of the last one.
    ctx = Context({"foo": (FOO, 6), "bar": (BAR, 3)})
    ctx.time = 0
    regex_group(ctx, regex_member(M1, "foo*", assigned=epochs(10, foo=range(6))),
                regex_member(M2, "bar*", assigned=epochs(10, bar=range(3))),
                resolved={"foo*": ResolvedRegularExpression(("foo",), 0, 0),
                          "bar*": ResolvedRegularExpression(("bar",), 0, 0)}, names=("foo", "bar"))
    ctx.topics = dataclasses.replace(ctx.topics, topics={**ctx.topics.topics, "fooo": (FOOO, 1)})
    ctx.context = dataclasses.replace(ctx.context, topics=ctx.topics, metadata_version=2, new_topics_version=2)
    assert ctx.heartbeat(M1, 10).resolve_regexes is None  # within the 10 s batch interval
    ctx.time += 11000
    result = ctx.heartbeat(M1, 10)
    assert result.resolve_regexes == ("bar*", "foo*")
    resolution = resolve(ctx, result)
    assert set(resolution.records[:2]) == {
        ConsumerGroupRegularExpression("foo*", ResolvedRegularExpression(("foo", "fooo"), 2, ctx.time)),
        ConsumerGroupRegularExpression("bar*", ResolvedRegularExpression(("bar",), 2, ctx.time))}
    assert resolution.records[2] == epoch_record(11, ctx.metadata_hash("foo", "bar", "fooo"))


def test_regexes_are_refreshed_after_the_refresh_interval():
    # maybeUpdateRegularExpressions 3.3: the last resolution older than group.consumer.regex.refresh.interval.ms.
    ctx = Context({"foo": (FOO, 6)}, group_consumer_regex_refresh_interval_ms=60_000)
    regex_group(ctx, regex_member(M1, "foo*", assigned=epochs(10, foo=range(6))),
                resolved={"foo*": ResolvedRegularExpression(("foo",), 0, 1000)}, names=("foo",))
    ctx.time = 1000 + 60_000
    assert ctx.heartbeat(M1, 10).resolve_regexes is None
    ctx.time += 1
    result = ctx.heartbeat(M1, 10)
    assert result.resolve_regexes == ("foo*",)
    # Same topics, same hash: the record is rewritten with the new time, no bump.
    assert resolve(ctx, result).records == (
        ConsumerGroupRegularExpression("foo*", ResolvedRegularExpression(("foo",), 0, ctx.time)),)


def test_consumer_group_member_clears_regex():
    # GroupMetadataManagerTest.testConsumerGroupMemberClearsRegex
    ctx = Context({"foo": (FOO, 6)})
    regex_group(ctx, regex_member(M1, "foo*", assigned=epochs(10, foo=range(6))),
                resolved={"foo*": ResolvedRegularExpression(("foo",), 0, 0)}, names=("foo",))
    ctx.assignor.prepare({M1: {}})
    result = ctx.heartbeat(M1, 10, rebalance_timeout_ms=5000, subscribed_topic_regex="", server_assignor="range",
                           topic_partitions=())
    assert (result.response.member_epoch, result.response.assignment) == (11, ())
    cleared = dataclasses.replace(regex_member(M1, ""), current=CurrentAssignment(STABLE, 11, 10))
    assert result.records == (
        ConsumerGroupMemberMetadata(M1, cleared.subscription()),
        ConsumerGroupRegularExpression("foo*", None),
        epoch_record(11, 0),
        target_record(M1),
        assignment_metadata_record(11, ctx.time),
        ConsumerGroupCurrentMemberAssignment(M1, cleared.current))


def test_resolved_regular_expressions_removed_when_members_leave_or_fenced():
    # GroupMetadataManagerTest.testResolvedRegularExpressionsRemovedWhenMembersLeaveOrFenced
    ctx = Context(FOO_BAR)
    regex_group(ctx, regex_member(M1, "foo*", assigned=epochs(10, foo=range(6))),
                regex_member(M2, "bar*", assigned=epochs(10, bar=range(3))),
                resolved={"foo*": ResolvedRegularExpression(("foo",), 0, 0),
                          "bar*": ResolvedRegularExpression(("bar",), 0, 0)}, names=("foo", "bar"))
    ctx.heartbeat(M2, 10)  # arms m2's session
    result = ctx.heartbeat(M1, -1)
    assert result.records == (*member_tombstones(M1), ConsumerGroupRegularExpression("foo*", None),
                              epoch_record(11, ctx.metadata_hash("bar")))
    fired = ctx.sleep(45000 + 1)
    assert fired[-1].records == (*member_tombstones(M2), ConsumerGroupRegularExpression("bar*", None),
                                 epoch_record(12, 0), assignment_metadata_record(12, 0))
    assert ctx.group.resolved_regexes == {} and ctx.group.subscribed_regexes == {}


def test_group_tombstones_carry_the_resolved_regexes():
    # ConsumerGroup.createGroupTombstoneRecords: after the members, before the partition metadata and epoch.
    from state.consumer_group.downgrade import Downgrade, convert_to_classic_group
    from state.consumer_group.records import ConsumerGroupPartitionMetadata
    ctx = Context({"foo": (FOO, 6)})
    ctx.replay(ConsumerGroupRegularExpression("foo*", ResolvedRegularExpression(("foo",), 0, 0)),
               epoch_record(3, 0))
    records, _ = convert_to_classic_group(ctx.group, Downgrade(), ctx.topics, ctx.time)
    assert records[-3:-1] == [ConsumerGroupRegularExpression("foo*", None), ConsumerGroupPartitionMetadata()]
