"""Kafka's ConsumerGroupTest.testSubscriptionType and testUpdateSubscribedTopicNamesAndSubscriptionType:
the subscription type that picks the assignors' homogeneous or heterogeneous path. Kafka's first test
states its cases as subscription counts; here each is the group of members that produces those counts."""

from __future__ import annotations

from state.consumer_group.group_spec import subscription_type
from tests.state.consumer_group.helpers import HETEROGENEOUS, HOMOGENEOUS


def test_subscription_type():
    assert subscription_type([]) is HOMOGENEOUS
    assert subscription_type([(["foo"], "")] * 5) is HOMOGENEOUS
    assert subscription_type([(["foo"], "")] * 4 + [(["bar"], "")]) is HETEROGENEOUS
    # "foo*" used by all five members, resolved to foo (and food): nobody subscribes by name.
    assert subscription_type([([], "foo*")] * 5) is HOMOGENEOUS
    # ... plus one member also subscribing to foo, or to bar, by name.
    assert subscription_type([(["foo"], "foo*")] + [([], "foo*")] * 4) is HETEROGENEOUS
    assert subscription_type([(["bar"], "foo*")] + [([], "foo*")] * 4) is HETEROGENEOUS
    assert subscription_type([([], "foo*")] * 4 + [([], "bar*")]) is HETEROGENEOUS


def test_update_subscribed_topic_names_and_subscription_type():
    member1, member2, member3 = (["foo"], ""), (["bar", "foo"], ""), (["bar", "foo"], "")
    assert subscription_type([member1]) is HOMOGENEOUS
    assert subscription_type([member1, member2]) is HETEROGENEOUS
    assert subscription_type([member1, member2, member3]) is HETEROGENEOUS
    assert subscription_type([member2, member3]) is HOMOGENEOUS
    assert subscription_type([(["bar", "foo", "zar"], ""), member3]) is HETEROGENEOUS
