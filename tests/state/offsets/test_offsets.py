"""OffsetCommit / OffsetFetch and offset expiry, ported from Kafka's OffsetMetadataManagerTest
(`testGenericGroupOffsetCommit*`, `testSimpleGroupOffsetCommit*`, `testOffsetCommitWithUnknownGroup`,
`testFetchOffsets*`, `testCleanupExpiredOffsets*`), ClassicGroupTest (`testValidateOffsetCommit`,
`testOffsetExpirationCondition`, `testIsSubscribedToTopic`) and GroupCoordinatorTest
(`testCommitOffsetInCompletingRebalance*`, `testOffsetsRetentionMsIntegerOverflow`), checked against
OffsetMetadataManager.commitOffset / fetchOffsets / cleanupExpiredOffsets and
ClassicGroup.validateOffsetCommit / offsetExpirationCondition."""

from __future__ import annotations

import pytest

from state.consumer_group.topic_id import derived_topic_id
from tests.state.conftest import make_ctx

# Every classic group and offsets manager these cases build runs on both cores (tests/native/classic/shadow.py).
pytestmark = pytest.mark.usefixtures("core")

FOO0, BAR0 = ("foo", 0), ("bar", 0)


def expiry_ctx(**config):
    """Retention of one minute and a sweep every 10 s, so expiry is visible in short tests."""
    return make_ctx(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10_000, **config)


def partition_errors(handle) -> list[str]:
    return [r["error"] for r in handle.results]


def fetched(handle) -> dict:
    return {(r["topic"], r["partition"]): (r["offset"], r["leader_epoch"], r["metadata"], r["error"])
            for r in handle.results}


# -- validation order (OffsetMetadataManager.validateOffsetCommit) -------------------------------------------

@pytest.mark.parametrize("version", range(1, 10))
def test_commit_with_a_generation_to_an_unknown_group(ctx, version):
    # testOffsetCommitWithUnknownGroup: v9+ GROUP_ID_NOT_FOUND, older versions ILLEGAL_GENERATION.
    commit = ctx.commit({("bar", 0): 100}, member_id="member", generation_id=10, version=version)
    expected = "GROUP_ID_NOT_FOUND" if version >= 9 else "ILLEGAL_GENERATION"
    assert commit.error == expected and partition_errors(commit) == [expected]
    assert ctx.group is None and ctx.committed() == {}


def test_standalone_commit_to_an_unknown_group_creates_a_simple_group(ctx):
    # testSimpleGroupOffsetCommit
    commit = ctx.commit({("bar", 0): 100})
    assert commit.error == "NONE" and partition_errors(commit) == ["NONE"]
    assert ctx.state == "Empty" and ctx.group.protocol_type is None
    [row] = ctx.rows("offsets")
    assert (row["topic"], row["partition"], row["offset"], row["metadata"], row["leader_epoch"],
            row["commit_ts"], row["expire_ts"], row["generation_id"]) == ("bar", 0, 100, "", -1, 0, None, -1)


def test_a_commit_carries_the_log_end_offset_of_the_production_model(ctx):
    # Not a Kafka field: the broker's log-end offset when the commit is written, for lag (Burrow's input).
    ctx.commit({("bar", 0): 5})
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 2, "records_per_second": 10},
                                       {"topic": "bar", "partitions": 1}])
    ctx.sleep(4_500)
    ctx.commit({("foo", 1): 30, ("bar", 0): 6})
    assert [(r["topic"], r["offset"], r["log_end_offset"]) for r in ctx.rows("offsets")] == [
        ("bar", 5, None), ("foo", 30, 45), ("bar", 6, None)]  # no records_per_second for bar: no production


def test_standalone_commit_ignores_member_and_instance_ids(ctx):
    # testSimpleGroupOffsetCommitWithInstanceId / testManualCommitOffsetShouldNotValidateMemberIdAndInstanceId
    commit = ctx.commit({("bar", 0): 100}, member_id="member", instance_id="instance-id")
    assert commit.error == "NONE" and ctx.committed() == {("bar", 0): 100}


def test_standalone_commit_to_a_group_that_became_empty_is_accepted(ctx):
    # testCommitOffsetsAfterGroupIsEmpty
    [member_id] = ctx.stable_group(1)
    ctx.leave(member_id)
    assert ctx.state == "Empty"
    commit = ctx.commit({FOO0: 1}, member_id=member_id, generation_id=-1, instance_id="whatever")
    assert commit.error == "NONE" and ctx.committed() == {FOO0: 1}


def test_commit_with_a_generation_to_an_empty_group_is_unknown_member(ctx):
    # testGenericGroupOffsetCommitWithUnknownMemberId
    [member_id] = ctx.stable_group(1)
    ctx.leave(member_id)
    assert ctx.commit({FOO0: 1}, member_id=member_id, generation_id=2).error == "UNKNOWN_MEMBER_ID"
    assert ctx.commit({FOO0: 1}, member_id="", generation_id=0).error == "UNKNOWN_MEMBER_ID"


def test_unknown_member_in_stable_group(ctx):
    ctx.stable_group(1)
    assert ctx.commit({FOO0: 1}, member_id="member", generation_id=1).error == "UNKNOWN_MEMBER_ID"


def test_wrong_generation_is_illegal_generation(ctx):
    # testGenericGroupOffsetCommitWithIllegalGeneration
    [member_id] = ctx.stable_group(1)
    assert ctx.commit({FOO0: 1}, member_id=member_id, generation_id=10).error == "ILLEGAL_GENERATION"


def test_member_with_negative_generation_in_non_empty_group_is_illegal_generation(ctx):
    [member_id] = ctx.stable_group(1)
    assert ctx.commit({FOO0: 1}, member_id=member_id, generation_id=-1).error == "ILLEGAL_GENERATION"


def test_unknown_instance_id_is_unknown_member(ctx):
    # testGenericGroupOffsetCommitWithUnknownInstanceId
    [member_id] = ctx.stable_group(1)
    commit = ctx.commit({FOO0: 1}, member_id=member_id, generation_id=1, instance_id="instanceid")
    assert commit.error == "UNKNOWN_MEMBER_ID"


def test_instance_mapped_to_another_member_is_fenced(ctx):
    result = ctx.static_members_join_and_rebalance()
    commit = ctx.commit({FOO0: 1}, member_id=result.follower_id, generation_id=1,
                        instance_id="leader-instance-id")
    assert commit.error == "FENCED_INSTANCE_ID"
    ok = ctx.commit({FOO0: 1}, member_id=result.leader_id, generation_id=1, instance_id="leader-instance-id")
    assert ok.error == "NONE"


def test_commit_without_member_and_generation_to_a_non_empty_group_is_unknown_member(ctx):
    # testGenericGroupOffsetCommitWithoutMemberIdAndGeneration
    ctx.join_and_complete()
    assert ctx.commit({FOO0: 1}).error == "UNKNOWN_MEMBER_ID"


def test_commit_in_completing_rebalance_is_rebalance_in_progress(ctx):
    # testGenericGroupOffsetCommitWhileInCompletingRebalanceState / testCommitOffsetInCompletingRebalance
    join = ctx.join_and_complete()
    assert ctx.state == "CompletingRebalance"
    commit = ctx.commit({FOO0: 1, BAR0: 2}, member_id=join.member_id, generation_id=1)
    assert commit.error == "REBALANCE_IN_PROGRESS"
    assert partition_errors(commit) == ["REBALANCE_IN_PROGRESS"] * 2
    assert ctx.committed() == {}


def test_member_and_generation_are_validated_before_completing_rebalance(ctx):
    # testCommitOffsetInCompletingRebalanceFromUnknownMemberId / ...FromIllegalGeneration
    join = ctx.join_and_complete()
    assert ctx.commit({FOO0: 1}, member_id="unknown", generation_id=1).error == "UNKNOWN_MEMBER_ID"
    assert ctx.commit({FOO0: 1}, member_id=join.member_id, generation_id=2).error == "ILLEGAL_GENERATION"


def test_commit_in_preparing_rebalance_with_the_current_generation_is_accepted(ctx):
    leader = ctx.dynamic_leader_stable(session_ms=5000)
    ctx.join(version=3)
    assert ctx.state == "PreparingRebalance"
    ctx.sleep(1000)
    commit = ctx.commit({FOO0: 1}, member_id=leader.member_id, generation_id=1)
    assert commit.error == "NONE" and ctx.committed() == {FOO0: 1}
    assert ctx.heartbeat_deadline(leader.member_id) == ctx.time + 5000


def test_commit_maintains_the_session(ctx):
    # testGenericGroupOffsetCommitMaintainsSession
    leader = ctx.dynamic_leader_stable(session_ms=5000)
    ctx.sleep(2500)
    assert ctx.commit({FOO0: 1}, member_id=leader.member_id, generation_id=1).error == "NONE"
    ctx.sleep(2500)
    assert ctx.member_ids == [leader.member_id]
    ctx.sleep(2500)
    assert ctx.member_ids == []


# -- per-partition handling and stored values (OffsetMetadataManager.commitOffset) ---------------------------

@pytest.mark.parametrize("metadata,error", [
    ("a" * 4096, "NONE"),
    ("a" * 4097, "OFFSET_METADATA_TOO_LARGE"),
    ("\u00e9" * 4096, "NONE"),                       # 2 UTF-8 bytes, 1 UTF-16 unit each
    ("\U0001F600" * 2048, "NONE"),                   # 4 UTF-8 bytes, 2 UTF-16 units each
    ("\U0001F600" * 2048 + "a", "OFFSET_METADATA_TOO_LARGE"),
])
def test_metadata_size_is_counted_in_utf16_code_units(ctx, metadata, error):
    commit = ctx.commit({FOO0: 1}, metadata=metadata)
    assert partition_errors(commit) == [error]
    assert (FOO0 in ctx.committed()) == (error == "NONE")


def test_too_large_metadata_fails_only_its_partition(ctx):
    commit = ctx.send("OFFSET_COMMIT", api_version=9, offsets=[
        {"topic": "foo", "partition": 0, "offset": 1, "metadata": "x" * 4097},
        {"topic": "foo", "partition": 1, "offset": 2, "metadata": "ok"}])
    assert commit.error == "NONE" and partition_errors(commit) == ["OFFSET_METADATA_TOO_LARGE", "NONE"]
    assert ctx.committed() == {("foo", 1): 2}


def test_commit_with_only_too_large_metadata_writes_nothing(ctx):
    ctx.commit({FOO0: 1}, metadata="x" * 4097)
    assert ctx.rows("offsets") == []


def test_stored_values_default_metadata_and_leader_epoch(ctx):
    ctx.sleep(1234)
    ctx.send("OFFSET_COMMIT", api_version=9, offsets=[
        {"topic": "foo", "partition": 0, "offset": 5},
        {"topic": "foo", "partition": 1, "offset": 6, "leader_epoch": 3, "metadata": "m"}])
    fetch = ctx.fetch({"foo": [0, 1]})
    assert fetched(fetch) == {("foo", 0): (5, -1, "", "NONE"), ("foo", 1): (6, 3, "m", "NONE")}
    assert [r["commit_ts"] for r in ctx.rows("offsets")] == [1234, 1234]


def test_v1_commit_uses_the_explicit_commit_timestamp(ctx):
    ctx.sleep(1000)
    ctx.send("OFFSET_COMMIT", api_version=1, offsets=[{"topic": "foo", "partition": 0, "offset": 5,
                                                       "commit_timestamp": 500}])
    assert ctx.rows("offsets")[-1]["commit_ts"] == 500


@pytest.mark.parametrize("version", [2, 3, 4])
def test_retention_time_of_v2_to_v4_sets_an_expire_timestamp(ctx, version):
    # testGenericGroupOffsetCommitWithRetentionTime
    ctx.sleep(1000)
    ctx.commit({FOO0: 1}, version=version, retention_time_ms=1234)
    assert ctx.rows("offsets")[-1]["expire_ts"] == 1000 + 1234


@pytest.mark.parametrize("version", [1, 5, 9])
def test_retention_time_is_ignored_outside_v2_to_v4(ctx, version):
    ctx.commit({FOO0: 1}, version=version, retention_time_ms=1234)
    assert ctx.rows("offsets")[-1]["expire_ts"] is None


def test_retention_time_minus_one_means_no_expire_timestamp(ctx):
    ctx.commit({FOO0: 1}, version=3, retention_time_ms=-1)
    assert ctx.rows("offsets")[-1]["expire_ts"] is None


def test_last_commit_wins(ctx):
    ctx.commit({FOO0: 1})
    ctx.commit({FOO0: 7}, metadata="later")
    assert fetched(ctx.fetch({"foo": [0]})) == {FOO0: (7, -1, "later", "NONE")}


def test_accepted_commit_rows_carry_generation_and_member(ctx):
    [member_id] = ctx.stable_group(1)
    ctx.commit({FOO0: 3}, member_id=member_id, generation_id=1)
    row = ctx.rows("offsets")[-1]
    assert (row["generation_id"], row["member_id"], row["write_ts"]) == (1, member_id, ctx.time)


def test_new_offset_commit_record_carries_the_topic_id(ctx):
    # GroupCoordinatorRecordHelpersTest.testNewOffsetCommitRecord (trunk, KAFKA-19141): the value holds the
    # committed topic's id, the one the cluster gave it (TOPIC_METADATA) or coordsim's for a topic never declared.
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 1, "topic_id": "MKXx1fIkQy2J9jXHhK8m1w"}])
    ctx.commit({FOO0: 1, BAR0: 2})
    assert [(r["topic"], r["topic_id"]) for r in ctx.rows("offsets")] == [
        ("foo", "MKXx1fIkQy2J9jXHhK8m1w"), ("bar", str(derived_topic_id("bar")))]


def test_new_offset_commit_record_with_expire_timestamp_has_no_topic_id(ctx):
    # testNewOffsetCommitRecordWithExpireTimestamp: a v1 value has no TopicId field.
    ctx.commit({FOO0: 1}, version=3, retention_time_ms=1234)
    assert ctx.rows("offsets")[-1]["topic_id"] is None


def test_kafka_4_0_offset_commit_record_has_no_topic_id():
    ctx = make_ctx(coordsim_kafka_version="4.0")
    ctx.commit({FOO0: 1})
    assert ctx.rows("offsets")[-1]["topic_id"] is None


@pytest.mark.parametrize("version,field,value,column,kafka_value", [
    (9, "commit_timestamp", 5, "commit_ts", 1000),   # v2+ has no CommitTimestamp: the broker's clock is used
    (5, "leader_epoch", 7, "leader_epoch", -1),      # v0-5 have no CommittedLeaderEpoch
])
def test_partition_fields_outside_their_versions_are_not_seen(ctx, version, field, value, column, kafka_value):
    # OffsetCommitRequest.json: CommitTimestamp exists only in v1, CommittedLeaderEpoch from v6.
    ctx.sleep(1000)
    ctx.send("OFFSET_COMMIT", api_version=version,
             offsets=[{"topic": "foo", "partition": 0, "offset": 3, field: value}])
    assert ctx.rows("offsets")[-1][column] == kafka_value


def test_v0_commit_has_no_generation(ctx):
    # GenerationIdOrMemberEpoch and MemberId exist from v1: a v0 commit is a standalone (-1) commit.
    commit = ctx.commit({FOO0: 1}, member_id="member", generation_id=10, version=0)
    assert commit.error == "NONE" and ctx.committed() == {FOO0: 1}


# -- OffsetFetch (OffsetMetadataManager.fetchOffsets, fetchAllOffsets) ---------------------------------------

def test_fetch_of_uncommitted_partitions_returns_minus_one(ctx):
    # testFetchOffsetForUnknownPartition
    ctx.commit({FOO0: 1})
    fetch = ctx.fetch({"foo": [0, 1], "bar": [0]})
    assert fetch.error == "NONE"
    assert fetched(fetch) == {FOO0: (1, -1, "", "NONE"), ("foo", 1): (-1, -1, "", "NONE"),
                              BAR0: (-1, -1, "", "NONE")}


def test_fetch_for_an_unknown_group(ctx):
    # testFetchOffsetsWithUnknownGroup / testFetchAllOffsetsWithUnknownGroup
    assert fetched(ctx.fetch({"foo": [0]})) == {FOO0: (-1, -1, "", "NONE")}
    assert ctx.fetch(None).results == []
    assert ctx.group is None


def test_fetch_all_returns_every_committed_partition(ctx):
    # testFetchAllOffsets
    ctx.commit({FOO0: 1, ("foo", 1): 2, BAR0: 3})
    assert fetched(ctx.fetch(None)) == {FOO0: (1, -1, "", "NONE"), ("foo", 1): (2, -1, "", "NONE"),
                                        BAR0: (3, -1, "", "NONE")}


def test_fetch_is_allowed_while_rebalancing(ctx):
    [member_id] = ctx.stable_group(1)
    ctx.commit({FOO0: 4}, member_id=member_id, generation_id=1)
    ctx.join(member_id=member_id)  # the leader rejoins: CompletingRebalance at generation 2
    assert ctx.state == "CompletingRebalance"
    assert fetched(ctx.fetch({"foo": [0]})) == {FOO0: (4, -1, "", "NONE")}
    ctx.join(version=3)
    assert ctx.state == "PreparingRebalance"
    assert fetched(ctx.fetch({"foo": [0]})) == {FOO0: (4, -1, "", "NONE")}


# -- expiry (OffsetMetadataManager.cleanupExpiredOffsets) ----------------------------------------------------

def test_simple_group_offsets_expire_retention_after_their_commit():
    ctx = expiry_ctx()
    ctx.commit({FOO0: 1})
    ctx.sleep(25_000)
    ctx.commit({BAR0: 2})
    ctx.sleep(60_000 - 25_000 - 1)
    assert ctx.committed() == {FOO0: 1, BAR0: 2}
    ctx.sleep(1)  # t = 60000: a sweep tick, foo-0 is exactly one retention old
    assert ctx.committed() == {BAR0: 2}
    ctx.sleep(30_000)  # bar-0 is due at 85000, swept at 90000
    assert ctx.committed() == {} and ctx.group is None


def test_sweep_runs_every_check_interval():
    # A due offset goes at the first sweep tick at or after its expiry, not before.
    ctx = expiry_ctx()
    ctx.sleep(1000)
    ctx.commit({FOO0: 1})  # due at 61000
    ctx.sleep(69_999 - ctx.time)
    assert ctx.committed() == {FOO0: 1}
    ctx.sleep(1)
    assert ctx.committed() == {}


def test_default_check_interval_is_ten_minutes():
    ctx = make_ctx(offsets_retention_minutes=1)
    ctx.commit({FOO0: 1})
    ctx.sleep(599_999)
    assert ctx.committed() == {FOO0: 1}
    ctx.sleep(1)
    assert ctx.committed() == {}


def test_empty_group_offsets_expire_retention_after_the_group_became_empty():
    # KIP-211: the base is currentStateTimestamp, not the commit timestamp.
    ctx = expiry_ctx()
    [member_id] = ctx.stable_group(1)
    ctx.commit({FOO0: 1, BAR0: 2}, member_id=member_id, generation_id=1)   # t = 3000
    ctx.sleep(9000)
    ctx.leave(member_id)                                                  # Empty at t = 12000
    assert ctx.state == "Empty"
    ctx.sleep(40_000)
    ctx.commit({("baz", 0): 3})                                           # a later commit, same base
    ctx.sleep(79_999 - ctx.time)
    assert set(ctx.committed()) == {FOO0, BAR0, ("baz", 0)}               # due 72000, next tick 80000
    ctx.sleep(1)
    assert ctx.committed() == {}


def test_group_is_deleted_when_its_last_offset_expires():
    ctx = expiry_ctx()
    [member_id] = ctx.stable_group(1)
    ctx.commit({FOO0: 1}, member_id=member_id, generation_id=1)
    ctx.leave(member_id)                                                  # Empty at t = 3000
    ctx.sleep(70_000 - ctx.time)
    assert ctx.committed() == {} and ctx.group is None
    tombstone = ctx.rows("offsets")[-1]
    assert (tombstone["topic"], tombstone["partition"], tombstone["offset"], tombstone["write_ts"]) == \
        ("foo", 0, None, 70_000)
    assert ctx.rows("group_metadata")[-1]["tombstone"] is True
    assert ctx.transitions()[-1][:2] == ("Empty", "Dead")


def test_empty_group_without_offsets_is_deleted_at_the_next_sweep():
    ctx = expiry_ctx()
    [member_id] = ctx.stable_group(1)
    ctx.leave(member_id)
    ctx.sleep(9_999 - ctx.time)
    assert ctx.state == "Empty"
    ctx.sleep(1)
    assert ctx.group is None and ctx.rows("group_metadata")[-1]["tombstone"] is True


def test_stable_consumer_group_expires_only_unsubscribed_topics():
    ctx = expiry_ctx(group_max_session_timeout_ms=600_000)
    [member_id] = ctx.stable_group(1, session_ms=600_000)                 # subscribed to "foo"
    ctx.commit({FOO0: 1, BAR0: 2}, member_id=member_id, generation_id=1)  # t = 3000
    ctx.sleep(70_000 - ctx.time)
    assert ctx.committed() == {FOO0: 1}
    ctx.sleep(200_000)
    assert ctx.committed() == {FOO0: 1} and ctx.state == "Stable"


def test_stable_group_ignores_an_explicit_expire_timestamp_of_a_subscribed_topic():
    ctx = expiry_ctx(group_max_session_timeout_ms=600_000)
    [member_id] = ctx.stable_group(1, session_ms=600_000)
    ctx.commit({FOO0: 1, BAR0: 2}, member_id=member_id, generation_id=1, version=3, retention_time_ms=1000)
    ctx.sleep(10_000 - ctx.time)                                          # expire_ts 4000 < tick 10000
    assert ctx.committed() == {FOO0: 1}


def rebalancing_group(state: str):
    """A two-member consumer group that committed an unsubscribed topic (bar-0, due at 66000) while Stable
    and is kept in `state` well beyond that: long rebalance timeouts and heartbeats keep it there."""
    ctx = expiry_ctx(group_max_session_timeout_ms=600_000)
    kw = dict(session_ms=30_000, rebalance_ms=300_000)
    a = ctx.join(version=3, **kw)
    b = ctx.join(version=3, **kw)
    ctx.sleep(3000)
    ctx.sleep(3000)
    leader, follower = (a, b) if a.leader_id == a.member_id else (b, a)
    ctx.sync(leader.member_id, 1)
    ctx.sync(follower.member_id, 1)
    ctx.commit({BAR0: 2, FOO0: 1}, member_id=leader.member_id, generation_id=1)
    if state == "PreparingRebalance":
        ctx.join(member_id=follower.member_id, topics=("foo", "baz"), version=3, **kw)
    else:
        ctx.join(member_id=leader.member_id, version=3, **kw)
        ctx.join(member_id=follower.member_id, version=3, **kw)
    assert ctx.state == state
    return ctx, leader.member_id, follower.member_id


def keep_alive(ctx, until: int, *members: str) -> None:
    generation = ctx.group.generation_id
    while ctx.time < until:
        ctx.sleep(min(20_000, until - ctx.time))
        for member in members:
            ctx.heartbeat(member, generation)


@pytest.mark.parametrize("state", ["PreparingRebalance", "CompletingRebalance"])
def test_nothing_expires_while_the_group_is_rebalancing(state):
    ctx, leader, follower = rebalancing_group(state)
    keep_alive(ctx, 100_000, leader, follower)
    assert ctx.state == state and ctx.committed() == {BAR0: 2, FOO0: 1}


def test_unsubscribed_offsets_expire_at_the_first_sweep_after_the_group_is_stable_again():
    ctx, leader, follower = rebalancing_group("CompletingRebalance")
    keep_alive(ctx, 94_000, leader, follower)
    ctx.sync(leader, 2)
    ctx.sync(follower, 2)
    assert ctx.state == "Stable" and ctx.committed() == {BAR0: 2, FOO0: 1}
    ctx.sleep(99_999 - ctx.time)
    assert BAR0 in ctx.committed()
    ctx.sleep(1)
    assert ctx.committed() == {FOO0: 1}


def test_offsets_retention_is_computed_as_a_long():
    # testOffsetsRetentionMsIntegerOverflow: Integer.MAX_VALUE minutes must not wrap to a negative value.
    ctx = make_ctx(offsets_retention_minutes=2**31 - 1, offsets_retention_check_interval_ms=1000)
    assert ctx.config.offsets_retention_ms == (2**31 - 1) * 60_000
    ctx.commit({FOO0: 1})
    ctx.sleep(10_000)
    assert ctx.committed() == {FOO0: 1}


def test_empty_group_id_is_allowed_for_commit_and_fetch():
    # "For backwards compatibility, we support offset commits for the empty groupId."
    ctx = make_ctx(group_id="")
    assert ctx.commit({FOO0: 1}).error == "NONE"
    assert fetched(ctx.fetch({"foo": [0]})) == {FOO0: (1, -1, "", "NONE")}


def test_new_member_commit_during_the_initial_rebalance_is_accepted_and_rearms_its_session():
    # Generation 0 is current until the first join completes; the commit re-arms the member's session
    # timeout in place of the 5-minute new-member timeout.
    ctx = make_ctx(group_initial_rebalance_delay_ms=600_000)
    member_id = ctx.join_new_dynamic(session_ms=5000)
    ctx.join(member_id=member_id, session_ms=5000)
    assert ctx.commit({FOO0: 1}, member_id=member_id, generation_id=0).error == "NONE"
    assert ctx.heartbeat_deadline(member_id) == ctx.time + 5000


def test_subscribed_topics_are_recomputed_at_every_generation():
    # initNextGeneration recomputes subscribedTopics from the selected protocol's subscriptions.
    ctx = expiry_ctx(group_max_session_timeout_ms=600_000)
    [member_id] = ctx.stable_group(1, session_ms=600_000)                 # subscribed to foo
    ctx.commit({FOO0: 1, BAR0: 2}, member_id=member_id, generation_id=1)  # t = 3000
    rejoin = ctx.join(member_id=member_id, topics=("bar",), session_ms=600_000)
    assert rejoin.generation_id == 2 and ctx.group.subscribed_topics == {"bar"}
    ctx.sync(member_id, 2)
    ctx.sleep(70_000 - ctx.time)
    assert ctx.committed() == {BAR0: 2}


@pytest.mark.parametrize("generation", [1, -1])
def test_commit_with_only_an_instance_id_is_fenced(ctx, generation):
    # Any instance id sends the request through validateMember: "" is not the instance's member id.
    ctx.static_members_join_and_rebalance()
    commit = ctx.commit({FOO0: 1}, member_id="", generation_id=generation, instance_id="leader-instance-id")
    assert commit.error == "FENCED_INSTANCE_ID"
