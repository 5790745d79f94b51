"""The client side of KIP-848 consumer groups: one consumer's membership as the Java client's new consumer
(AsyncKafkaConsumer, trunk) runs it, as a pure state machine that talks to the coordinator only through
`state.consumer_group.messages` and asks its runtime to run the application-side steps (commits,
rebalance callbacks) as actions.

* `member`: `Membership`, the surface a runtime drives (subscribe, poll, close, next request and deadline,
  responses and failures, actions done).
* `membership_manager`: the membership states' transitions, reconciliation (commit, revoke, assign,
  acknowledge), fencing, leaving; `member_state`: the states and their allowed transitions.
* `heartbeat_manager`: when a heartbeat goes out, which fields it carries (full or partial), the poll timer
  and the reaction to every error; `heartbeat_timing`: the heartbeat timer and the exponential backoff.
* `local_assignment`: the assignment the member holds, with its local epoch.
* `member_actions`: the application-side steps the runtime runs and reports done.
* `seeded_random`: the member id's and the jitter's random draws, with a stored form.
* `member_config`: the client settings of the consumer protocol and the ones the Java client refuses with it.
* `fleet`: `ConsumerGroupClients`, the synthetic fleet's glue between its clients and their memberships.
"""
