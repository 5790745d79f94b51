"""A consumer group's committed offsets at the runtime (KIP-848): OffsetFetch's member epoch check
(ConsumerGroup.validateOffsetFetch, answered as a group-level error as KafkaApis does at v8+) and offset expiry
by the sweep (ConsumerGroup.offsetExpirationCondition: retention from each commit, never for a topic the group
subscribes to, OffsetMetadataManager.cleanupExpiredOffsets). Named after OffsetMetadataManagerTest's and
ConsumerGroupTest's cases (trunk)."""

from __future__ import annotations

from state.runtime.group_runtime import GroupRuntime
from tests.state.harness import GroupContext
from tests.state.consumer_group.test_manager import FOO_ID, heartbeat, join_two

BAR_ID = "ZGVmZ2hpamtsbW5vcHFycw"
FOO0, BAR0 = ("foo", 0), ("bar", 0)
RETENTION_MS, CHECK_MS = 60_000, 10_000


def consumer_group(**config) -> GroupContext:
    """Two members on "foo" (A holding foo-0 and foo-1, B foo-2 and foo-3, both at epoch 3); "bar" exists
    but nobody subscribes to it. Sessions last 10 minutes, so no heartbeat is needed to keep them."""
    ctx = GroupContext(group_consumer_assignment_interval_ms=0, offsets_retention_minutes=1,
                       offsets_retention_check_interval_ms=CHECK_MS, group_consumer_session_timeout_ms=600_000,
                       group_consumer_max_session_timeout_ms=600_000, **config)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 4, "topic_id": FOO_ID},
                                       {"topic": "bar", "partitions": 1, "topic_id": BAR_ID}])
    join_two(ctx)
    return ctx


def fetch(ctx: GroupContext, member_id=None, member_epoch=None, version=9, partitions=(FOO0,)):
    fields = {"api_version": version}
    if member_id is not None:
        fields["member_id"] = member_id
    if member_epoch is not None:
        fields["member_epoch"] = member_epoch
    parts = None if partitions is None else [{"topic": t, "partitions": [p]} for t, p in partitions]
    return ctx.send("OFFSET_FETCH", partitions=parts, **fields)


def offsets(handle) -> dict:
    return {(r["topic"], r["partition"]): r["offset"] for r in handle.results}


# -- OffsetFetch ---------------------------------------------------------------------------------------------

def test_consumer_group_offset_fetch_with_member_id_and_epoch():
    # testConsumerGroupOffsetFetchWithMemberIdAndEpoch, both fetchOffsets and fetchAllOffsets
    ctx = consumer_group()
    ctx.commit({FOO0: 10}, member_id="A", generation_id=3)
    answer = fetch(ctx, "A", 3)
    assert (answer.error, offsets(answer)) == ("NONE", {FOO0: 10})
    assert (answer.response["member_id"], answer.response["generation_id"]) == ("A", 3)
    assert offsets(fetch(ctx, "B", 3, partitions=None)) == {FOO0: 10}


def test_consumer_group_offset_fetch_from_admin_client():
    # testConsumerGroupOffsetFetchFromAdminClient: no member id and epoch -1, as the admin client (and a
    # classic consumer) sends them, whatever the version
    ctx = consumer_group()
    ctx.commit({FOO0: 10}, member_id="A", generation_id=3)
    for version in (1, 8, 9):
        answer = fetch(ctx, version=version)
        assert (answer.error, offsets(answer)) == ("NONE", {FOO0: 10})
        assert (answer.response["member_id"], answer.response["generation_id"]) == (None, None)


def test_consumer_group_offset_fetch_with_unknown_member_id():
    # testConsumerGroupOffsetFetchWithUnknownMemberId: a group-level error, the answer has no partitions
    ctx = consumer_group()
    ctx.commit({FOO0: 10}, member_id="A", generation_id=3)
    for answer in (fetch(ctx, "nobody", 3), fetch(ctx, "nobody", 3, partitions=None), fetch(ctx, "", -1)):
        assert (answer.error, answer.results) == ("UNKNOWN_MEMBER_ID", None)


def test_consumer_group_offset_fetch_with_stale_member_epoch():
    # testConsumerGroupOffsetFetchWithStaleMemberEpoch: an older epoch is stale too (no KIP-1251 leeway)
    ctx = consumer_group()
    for epoch in (2, 4):
        answer = fetch(ctx, "A", epoch)
        assert (answer.error, answer.results, answer.response["generation_id"]) == ("STALE_MEMBER_EPOCH", None, epoch)


def test_member_fields_are_read_from_version_9_only():
    # OffsetFetchRequest.json: MemberId and MemberEpoch are v9+ fields; below, Kafka's defaults (null, -1).
    ctx = consumer_group()
    assert fetch(ctx, "nobody", 7, version=8).error == "NONE"
    assert fetch(ctx, "nobody", 7, version=9).error == "UNKNOWN_MEMBER_ID"


def test_classic_group_offset_fetch_ignores_the_member_fields():
    # ClassicGroup.validateOffsetFetch only refuses a Dead group (GroupIdNotFoundException: no offsets).
    ctx = GroupContext()
    [member_id] = ctx.stable_group(1)
    ctx.commit({FOO0: 4}, member_id=member_id, generation_id=1)
    answer = fetch(ctx, "nobody", 42)
    assert (answer.error, offsets(answer)) == ("NONE", {FOO0: 4})


# -- expiry --------------------------------------------------------------------------------------------------

def test_cleanup_expired_offsets():
    # testCleanupExpiredOffsets with a consumer group: an unsubscribed topic's offset expires retention after its
    # commit (at the first sweep from then), a subscribed topic's never, and once nobody subscribes to it, it
    # expires at the next sweep, counted from its commit.
    ctx = consumer_group()
    ctx.sleep(1_000 - ctx.time)
    ctx.commit({FOO0: 10, BAR0: 20}, member_id="A", generation_id=3)   # bar: A's current epoch, so accepted
    ctx.sleep(5_000)
    ctx.commit({("foo", 1): 11}, member_id="A", generation_id=3)       # t = 6000
    ctx.sleep(70_000 - 1 - ctx.time)                                   # due at 61000; the tick is 70000
    assert ctx.committed() == {FOO0: 10, ("foo", 1): 11, BAR0: 20}
    ctx.sleep(1)
    assert ctx.committed() == {FOO0: 10, ("foo", 1): 11}
    assert [(r["topic"], r["partition"], r["offset"], r["write_ts"]) for r in ctx.rows("offsets")][-1] == ("bar", 0, None, 70_000)
    ctx.sleep(200_000)
    assert ctx.committed() == {FOO0: 10, ("foo", 1): 11} and ctx.runtime.consumer_group.state.value == "Stable"
    # Both members leave: nobody subscribes to foo any more; both offsets are long past their retention.
    ctx.sleep(275_000 - ctx.time)
    heartbeat(ctx, "A", -1)
    heartbeat(ctx, "B", -1)
    ctx.sleep(279_999 - ctx.time)
    assert ctx.committed() == {FOO0: 10, ("foo", 1): 11}
    ctx.sleep(1)
    assert ctx.committed() == {}


def test_offset_expiration_condition():
    # ConsumerGroupTest.testOffsetExpirationCondition: the base timestamp is the commit's, also in an Empty group
    # (a classic group counts from when it became Empty: foo-2 would go at 70000 with foo-0).
    ctx = consumer_group()
    ctx.sleep(500 - ctx.time)
    ctx.commit({FOO0: 10}, member_id="A", generation_id=3)             # due at 60500
    ctx.sleep(1_000 - ctx.time)
    heartbeat(ctx, "A", -1)
    heartbeat(ctx, "B", -1)
    assert ctx.runtime.consumer_group.state.value == "Empty"
    ctx.sleep(25_000 - ctx.time)
    ctx.commit({("foo", 2): 12})                         # an admin's commit to the Empty group: due at 85000
    ctx.sleep(45_000 - ctx.time)
    ctx.commit({("foo", 1): 11}, version=3, retention_time_ms=5_000)   # explicit expire timestamp 50000
    ctx.sleep(50_000 - ctx.time)
    assert ctx.committed() == {FOO0: 10, ("foo", 2): 12}
    ctx.sleep(70_000 - ctx.time)
    assert ctx.committed() == {("foo", 2): 12}
    ctx.sleep(89_999 - ctx.time)
    assert ctx.committed() == {("foo", 2): 12} and ctx.runtime.consumer_group is not None
    ctx.sleep(1)
    assert ctx.committed() == {}
    # The sweep that expired the last offset deleted the Empty group too.
    assert ctx.runtime.consumer_group is None and ctx.runtime.group is None


def test_is_subscribed_to_topic_follows_the_members_subscriptions():
    # ConsumerGroupTest.testIsSubscribedToTopic at the runtime: subscribing to a topic stops its offsets from
    # expiring; unsubscribing lets them expire at the next sweep.
    ctx = consumer_group()
    ctx.sleep(1_000 - ctx.time)
    ctx.commit({BAR0: 20}, member_id="B", generation_id=3)
    ctx.sleep(30_000 - ctx.time)
    b = heartbeat(ctx, "B", 3, subscribed_topic_names=["foo", "bar"])
    ctx.sleep(100_000 - ctx.time)
    assert ctx.committed() == {BAR0: 20}
    heartbeat(ctx, "B", b.generation_id, subscribed_topic_names=["foo"])
    ctx.sleep(109_999 - ctx.time)
    assert ctx.committed() == {BAR0: 20}
    ctx.sleep(1)
    assert ctx.committed() == {}


def test_the_sweep_survives_encoding():
    ctx = consumer_group()
    ctx.sleep(1_000 - ctx.time)
    ctx.commit({BAR0: 20}, member_id="B", generation_id=3)
    ctx.runtime.take_output()
    decoded = GroupRuntime.decode(ctx.runtime.encode(), ctx.config)
    assert decoded.offset_manager.offsets == ctx.runtime.offset_manager.offsets and decoded.offset_manager.next_expiry_due(decoded.now) == 61_000
    assert decoded.timers.pending() == ctx.runtime.timers.pending()


# -- deletion ------------------------------------------------------------------------------------------------

def test_cleanup_group_metadata_for_consumer_group():
    # GroupCoordinatorShardTest.testCleanupGroupMetadataForConsumerGroup with GroupMetadataManagerTest's
    # testConsumerGroupDelete: once every offset of the Empty group expired, one append carries their tombstones
    # and the group's (target assignment metadata, subscription metadata, group epoch); the group goes Dead.
    ctx = consumer_group()
    ctx.sleep(1_000 - ctx.time)
    ctx.commit({FOO0: 10}, member_id="A", generation_id=3)
    heartbeat(ctx, "A", -1)
    heartbeat(ctx, "B", -1)
    ctx.sleep(69_999 - ctx.time)                        # the offset is due at 61000; the tick is 70000
    assert ctx.runtime.consumer_group.state.value == "Empty" and ctx.committed() == {FOO0: 10}
    before = len(ctx.tables["consumer_group_records"])
    ctx.sleep(1)
    assert ctx.runtime.consumer_group is None and ctx.committed() == {}
    assert [(r["topic"], r["offset"], r["write_ts"]) for r in ctx.rows("offsets")][-1] == ("foo", None, 70_000)
    deleted = ctx.tables["consumer_group_records"][before:]
    assert [(r["record_type"], r["value"], r["write_ts"]) for r in deleted] == [
        ("ConsumerGroupTargetAssignmentMetadata", None, 70_000), ("ConsumerGroupPartitionMetadata", None, 70_000),
        ("ConsumerGroupMetadata", None, 70_000)]
    dead = ctx.rows("group_states")[-1]
    assert (dead["to_state"], dead["cause"], dead["ts"], dead["group_type"]) == ("Dead", "group_expired", 70_000,
                                                                                 "consumer")
    # A new member starts a new group, as the first one did.
    assert heartbeat(ctx, "C", 0).generation_id == 2


def test_an_empty_consumer_group_without_offsets_is_deleted_at_the_next_sweep():
    # OffsetMetadataManager.cleanupExpiredOffsets: a group with no offsets has "all offsets expired".
    ctx = consumer_group()
    ctx.sleep(12_345 - ctx.time)
    heartbeat(ctx, "A", -1)
    heartbeat(ctx, "B", -1)
    ctx.sleep(19_999 - ctx.time)
    assert ctx.runtime.consumer_group is not None
    ctx.sleep(1)
    assert ctx.runtime.consumer_group is None and ctx.rows("group_states")[-1]["cause"] == "group_expired"


def test_a_failed_sweep_write_deletes_nothing_and_the_next_tick_tries_again():
    ctx = consumer_group()
    heartbeat(ctx, "A", -1)
    heartbeat(ctx, "B", -1)
    ctx.sleep(9_999 - ctx.time)
    ctx.fault(fault="write_failure", count=1)
    ctx.sleep(10_000 - ctx.time)
    assert ctx.runtime.consumer_group is not None and ctx.runtime.consumer_group.state.value == "Empty"
    ctx.sleep(10_000)
    assert ctx.runtime.consumer_group is None
