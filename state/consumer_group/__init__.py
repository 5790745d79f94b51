"""KIP-848 consumer groups (`group.protocol=consumer`): the broker side in this package, the client side in
`state.clients.consumer_group`; pure and deterministic, no I/O, modelled on Kafka's group coordinator at trunk
commit d79bd502ec7f (2026-08-23, 4.5.0-SNAPSHOT); docs name where Kafka 4.0.0 behaved differently.

* `topic_id`: topic ids (Kafka's Uuid) with their Java hash and order.
* `group_spec`: the assignors' input and output, the group's subscription type, and the Java iteration
  orders the assignors depend on.
* `uniform`, `range`: the two server-side assignors, exactly as Kafka computes them; `SERVER_ASSIGNORS`
  maps the names a member may ask for (`ConsumerGroupHeartbeat.ServerAssignor`) to them.
* `reconciliation`: one member's move towards its target assignment (Kafka's CurrentAssignmentBuilder)
  and the group's record of which member epoch holds each partition.
* `messages`: the ConsumerGroupHeartbeat request and response, the only thing the broker side and the
  client side share.
* `records`: the records a consumer group's coordinator appends; `group`: the ConsumerGroup and its members
  as the replay of those records; `topics`: the topics the coordinator sees and the group metadata hash.
* `target_assignment`: the group's next target assignment and its records (TargetAssignmentBuilder).
* `heartbeat`: the broker side of ConsumerGroupHeartbeat and the session / rebalance timeouts: records,
  response and timer changes.
* `offset_commit`: the member epoch checks of an OffsetCommit to a consumer group.
* `manager`: `ConsumerGroupManager`, which answers ConsumerGroupHeartbeat, a consumer group's classic
  requests and its timers with results the runtime carries out (Kafka's GroupMetadataManager for consumer
  groups); `migration`, `downgrade`, `classic_members`: the online upgrade and downgrade with classic members.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Mapping

from state.consumer_group import range as range_assignor, uniform
from state.consumer_group.group_spec import GroupAssignment, GroupSpec
from state.consumer_group.topic_id import TopicId

Assignor = Callable[[GroupSpec, Mapping[TopicId, int]], GroupAssignment]

# In the order of `group.consumer.assignors`' default: the first is the group's default assignor.
SERVER_ASSIGNORS: dict[str, Assignor] = {
    uniform.NAME: uniform.assign,
    range_assignor.NAME: range_assignor.assign,
}
# Kafka 4.0.0's: its uniform assignor predates KAFKA-18688 (uniform.assign_homogeneous).
SERVER_ASSIGNORS_4_0: dict[str, Assignor] = SERVER_ASSIGNORS | {uniform.NAME: partial(uniform.assign, kafka_4_0=True)}
