"""Parity of state/consumer_group/migration.py (a classic group's online upgrade to a consumer group) and the
native engine's. The classic groups are those tests/native/classic/test_manager_parity.py's generated
operations build on both cores' classic managers (members joining with consumer subscriptions or opaque
metadata, leaders syncing decoded or opaque assignments, static members, rebalances in every state); after
each operation the group is upgraded on both, under each migration policy and group.consumer.max.size, over a
topics image missing one of the members' topics: both refuse it with the same error and message, or give the
same records, the same session timers and a group equal to the reference's (shadow.py's `snapshot`).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.config import CoordinatorConfig
from state.consumer_group.heartbeat import HeartbeatError
from state.consumer_group.migration import convert_to_consumer_group, validate_online_upgrade
from state.consumer_group.topic_id import TopicId
from state.consumer_group.topics import TopicsImage
from tests.native import cores
from tests.native.classic.test_manager_parity import CONFIGS, Driver, step
from tests.native.consumer_group.shadow import snapshot
from tests.native.consumer_group.test_heartbeat_parity import native_record, record

PARITY = settings(max_examples=60, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
IMAGES = ({"foo": (TopicId(1, 2), 3), "bar": (TopicId(-5, 7), 2)}, {"foo": (TopicId(1, 2), 3)})


def python_upgrade(classic, image, now, config):
    try:
        validate_online_upgrade(classic, config)
        group, result = convert_to_consumer_group(classic, TopicsImage(image), now, config)
    except HeartbeatError as error:
        return ("refused", error.error, str(error))
    timers = [(t.key[0], t.key[1], t.deadline, t.kind, list(t.args), t.if_absent) for t in result.timers]
    return ("converted", [record(r) for r in result.records], timers, snapshot(group))


def native_upgrade(module, classic, image, now, config):
    out = module.upgrade(classic, {n: (tuple(t), c) for n, (t, c) in image.items()}, now, config)
    if out[0] == "refused":
        return out
    _, records, timers, group = out
    return ("converted", [native_record(r) for r in records], [tuple(t) for t in timers], group.snapshot())


@PARITY
@given(data=st.data(), config=st.sampled_from(CONFIGS), steps=st.integers(3, 25),
       policy=st.sampled_from(["bidirectional", "upgrade", "downgrade", "disabled"]),
       max_size=st.sampled_from([2, 100]), image=st.sampled_from(IMAGES))
def test_classic_groups_upgrade_as_the_reference(data, config, steps, policy, max_size, image) -> None:
    module = cores.native_module("consumer_group")
    d = Driver(config)
    upgrade_config = CoordinatorConfig(group_consumer_migration_policy=policy, group_consumer_max_size=max_size)
    for _ in range(steps):
        step(data.draw, d)
        if d.python.group is None or not d.python.group.members:
            continue
        expected = python_upgrade(d.python.group, image, d.now, upgrade_config)
        assert native_upgrade(module, d.native, image, d.now, upgrade_config) == expected
