"""Properties of the server-side assignors on random groups: every subscribed partition is assigned exactly
once and only to a subscriber, balance within what Kafka guarantees, the same answer every time, and an
assignment fed back in as the current one comes out unchanged."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.consumer_group import SERVER_ASSIGNORS
from state.consumer_group.group_spec import GroupSpec, MemberSpec, SubscriptionType, subscription_type
from state.consumer_group.topic_id import TopicId
from tests.state.consumer_group.helpers import draw_current_targets

TOPIC_POOL = [TopicId(msb, lsb) for msb, lsb in ((1, 2), (-7, 3), (2**40, -5), (17, 17), (-2**62, 2**33))]


@st.composite
def groups(draw):
    topic_count = draw(st.integers(1, len(TOPIC_POOL)))
    counts = {t: draw(st.integers(1, 12)) for t in TOPIC_POOL[:topic_count]}
    member_ids = draw(st.lists(st.text("abcAB-0", min_size=1, max_size=4), min_size=1, max_size=7, unique=True))
    homogeneous = draw(st.booleans())
    shared = draw(st.lists(st.sampled_from(list(counts)), unique=True))
    subscriptions = {m: shared if homogeneous else draw(st.lists(st.sampled_from(list(counts)), unique=True))
                     for m in member_ids}
    current = draw_current_targets(draw, counts, member_ids)
    # Some members static, with instance ids unique in the group and ordered unlike the member ids.
    places = draw(st.permutations(range(len(member_ids))))
    static = draw(st.lists(st.booleans(), min_size=len(member_ids), max_size=len(member_ids)))
    members = {m: MemberSpec(tuple(subscriptions[m]), current[m], f"instance-{place}" if is_static else None)
               for m, place, is_static in zip(member_ids, places, static)}
    kind = subscription_type([([str(t) for t in topics], "") for topics in subscriptions.values()])
    return GroupSpec(members, kind), counts


def sizes(assignment):
    return {m: sum(map(len, topics.values())) for m, topics in assignment.items()}


def check_complete(spec, counts, assignment):
    subscribed = {t for member in spec.members.values() for t in member.subscribed_topic_ids}
    seen = []
    for member_id, topics in assignment.items():
        assert set(topics) <= set(spec.members[member_id].subscribed_topic_ids)
        seen.extend((t, p) for t, partitions in topics.items() for p in partitions)
    assert sorted(seen) == sorted((t, p) for t in subscribed for p in range(counts[t]))


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(groups(), st.sampled_from(sorted(SERVER_ASSIGNORS)))
def test_every_subscribed_partition_once_balanced_deterministic_and_stable(group_and_counts, name):
    spec, counts = group_and_counts
    assign = SERVER_ASSIGNORS[name]
    assignment = assign(spec, counts)
    check_complete(spec, counts, assignment)
    assert assign(spec, counts) == assignment

    subscribers = {t: [m for m, s in spec.members.items() if t in s.subscribed_topic_ids] for t in counts}
    size = sizes(assignment)
    if name == "range":
        # Per topic, every subscriber gets floor or ceil of its share.
        for topic_id, members in subscribers.items():
            for member_id in members:
                got = len(assignment[member_id].get(topic_id, ()))
                assert counts[topic_id] // len(members) <= got <= -(-counts[topic_id] // len(members))
    elif spec.subscription_type is SubscriptionType.HOMOGENEOUS and assignment:
        assert max(size.values()) - min(size.values()) <= 1
    else:
        # No partition can move to another subscriber of its topic holding two or more fewer partitions.
        for member_id, topics in assignment.items():
            for topic_id in topics:
                assert all(size[member_id] - size[other] <= 1 for other in subscribers[topic_id])

    fed_back = GroupSpec({m: MemberSpec(s.subscribed_topic_ids, assignment.get(m, {}), s.instance_id)
                          for m, s in spec.members.items()}, spec.subscription_type)
    assert assign(fed_back, counts) == assignment
