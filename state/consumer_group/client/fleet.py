"""Synthetic consumers with `group.protocol=consumer` (KIP-848): the fleet's glue between a client and the Java
new consumer's membership (`state.consumer_group.client.Membership`), a mixin of `ConsumerFleet`.

The membership decides what goes on the wire and when; this module owns what a runtime around it does, as
AsyncKafkaConsumer's two threads do:
* the background thread: every heartbeat `next_request` returns goes out as a CONSUMER_GROUP_HEARTBEAT event
  through the fleet's request path (same network round trip, same `requests`/`responses` rows as the
  classic requests), and its answer comes back to `on_response` (a failed connection, NETWORK_EXCEPTION, to
  `on_request_failed` as a DisconnectException); the membership's next deadline is the client's
  ("client", id, "heartbeat") timer; FindCoordinator goes through the fleet's lookup, then
  `coordinator_found`;
* the commits the membership asks for (before a revocation, on close) go out as OffsetCommit requests
  carrying the member epoch as the generation, and are reported done with their answer's error; a commit
  before revocation that fails with an error Kafka retries goes out again, with the offsets and epoch of
  then, after retry.backoff.ms (doubling per failure, as Kafka's RequestState) once the coordinator is known,
  until its deadline (CommitRequestManager.maybeAutoCommitSyncBeforeRebalance);
* the application thread: poll() (`Membership.poll`) at the fleet's poll times, the rebalance callbacks
  and the assignment run there in the order emitted (no time of their own: the classic clients' callbacks
  take none either, beyond the commits they wait for), the assignment followed by OffsetFetch of the added
  partitions as the classic client does (carrying the member id and epoch while the member has an epoch, as
  OffsetFetch v9 does), and auto-commit every auto.commit.interval.ms. A healthy
  application polls continually; polls are simulated only when something is due, and at least every half
  max.poll.interval.ms so the membership's poll timer only expires in a poll pause.
During close() the callbacks run at once (close runs them on the application thread itself), and the client
stops once the leave is sent and nothing is pending, or after KafkaConsumer.close()'s default 30 s.

A Stable member's heartbeats that carry nothing but who it is, and the poll loop's commits, are periodic
requests (chains "heartbeat" and "commit"), written as quiet runs and elided while the member and its group
are steady, as the classic clients' are (state/periodic.py). Simplified: the application's own commits
(enable.auto.commit=false) are sent as commits from the poll loop without blocking it. The membership is
plain data (its continuations and random draws included), stored with the rest of the group's state
(state/encoding.py), so these clients run on both engines.
"""

from __future__ import annotations

from state.client_config import CLOSE_TIMEOUT_MS
from state.consumer_group.client import member_actions as actions
from state.consumer_group.client.member import Membership
from state.consumer_group.client.member_config import MemberConfig
from state.consumer_group.client.member_state import ClientMemberState
from state.consumer_group.client.seeded_random import SeededRandom
from state.consumer_group.messages import UNCHANGED_REBALANCE_TIMEOUT, HeartbeatRequest, HeartbeatResponse
from state.consumer_protocol import TopicPartition
from state.events import PartitionList
from state.output import partitions_column

# What a failed connection (NETWORK_EXCEPTION, state/runtime.py's _disconnect) is to the Java client.
DISCONNECTED = "DisconnectException"
# OffsetCommit errors after which CommitRequestManager retries a commit before revocation: those it turns
# into RetriableExceptions (a failed connection, NETWORK_EXCEPTION, is one too), but UNKNOWN_TOPIC_OR_PARTITION,
# which a deleted topic would keep failing until the deadline. STALE_MEMBER_EPOCH is retried too while the
# member has an epoch (the retry carries it).
RETRIED_BEFORE_REVOCATION = frozenset({"COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT",
                                       "COORDINATOR_LOAD_IN_PROGRESS", "UNKNOWN_TOPIC_ID", "NETWORK_EXCEPTION"})


class ConsumerGroupClients:
    """The consumer-protocol clients' part of `ConsumerFleet`."""

    # -- directives ---------------------------------------------------------------------------------------
    def start_membership(self, client) -> None:
        config = client.config
        member_config = MemberConfig(
            group_id=self.group_id, group_instance_id=client.group_instance_id,
            group_remote_assignor=config.group_remote_assignor or None,
            max_poll_interval_ms=config.max_poll_interval_ms, retry_backoff_ms=config.retry_backoff_ms,
            retry_backoff_max_ms=config.retry_backoff_max_ms, enable_auto_commit=config.enable_auto_commit)
        # The member id and the backoff jitter are drawn from the client's incarnation: runs repeat.
        membership = Membership(member_config, SeededRandom(client.origin), self.now)
        client.membership = membership
        membership.subscribe(self.now, set(client.topics), pattern=client.topic_pattern)
        if client.coordinator is not None:
            membership.coordinator_found()  # a starting client is taken to know its coordinator (consumer.py)
        self._member_poll(client)

    def close_membership(self, client) -> None:
        if not client.closing:
            client.closing, client.closing_since = True, self.now
            self.client_timer(client, "close", self.now + CLOSE_TIMEOUT_MS)
            self._freeze(client)
            client.membership.close(self.now)
        self._pump(client)

    def fire_member_timer(self, client, kind: str) -> None:
        if kind == "poll":
            self._member_poll(client)
        elif kind == "heartbeat":
            self._pump(client)
        elif kind == "commit":
            self._retry_commit(client)
            self._pump(client)
        elif kind == "resume":
            if self.now >= max(client.paused_until, client.poll_stalled_until) and not client.closing:
                self._start_consuming(client, self.positions(client))
            self._schedule_poll(client, self.now)
            self._pump(client)
        elif kind == "close":
            self._closed(client)  # close()'s timeout: it returns, done or not

    # -- the application thread ---------------------------------------------------------------------------
    def _member_poll(self, client) -> None:
        membership, config, now = client.membership, client.config, self.now
        if not client.closing:
            membership.poll(now)
            self._run_callbacks(client)
            self._sync_owned(client)
            self._fetch_positions(client)
            if config.commits_periodically and client.owned and now >= client.next_auto_commit:
                client.next_auto_commit = now + config.commit_interval_ms
                # maybeAutoCommitAsync: skipped while the previous auto-commit is unanswered.
                if "commit" not in client.in_flight:
                    self._send_commit(client, "commit", None)
            due = now + config.max_poll_interval_ms // 2
            if config.commits_periodically:
                due = min(due, max(client.next_auto_commit, now + 1))
            self._schedule_poll(client, due)
        self._pump(client)

    @staticmethod
    def _callbacks_pending(client) -> list[actions.Action]:
        """The application thread's actions pending (callbacks, assignments), in the order emitted."""
        return [a for a in client.membership.pending_actions() if not isinstance(a, actions.COMMITS)]

    def _run_callbacks(self, client) -> None:
        """Run the callbacks and assignments pending, in the order emitted; each may emit the next."""
        membership = client.membership
        while client.alive:
            pending = self._callbacks_pending(client)
            if not pending:
                return
            action = pending[0]
            if isinstance(action, actions.OnPartitionsAssigned):
                self._apply_assignment(client, self._by_name(action.assigned))
            else:  # onPartitionsRevoked / onPartitionsLost: the partitions are no longer processed
                self._give_up(client, set(self._by_name(action.partitions)))
            membership.action_done(self.now, action)
            self._take_actions(client)

    def _give_up(self, client, partitions: set[TopicPartition]) -> None:
        self._release(client, partitions)
        client.owned = tuple(tp for tp in client.owned if tp not in partitions)
        client.unpositioned = tuple(tp for tp in client.unpositioned if tp not in partitions)

    def _sync_owned(self, client) -> None:
        """Partitions the membership released without a callback to run (no rebalance listener: a fencing,
        an expired poll timer) are no longer part of consumer.assignment(): they stop being processed."""
        kept = set(self._by_name(client.membership.owned_partitions))
        self._give_up(client, {tp for tp in client.owned if tp not in kept})

    def _apply_assignment(self, client, assigned: tuple[TopicPartition, ...]) -> None:
        """SubscriptionState.assignFromSubscribed: kept partitions go on from where the client is; added
        ones wait for their committed offsets (OffsetFetch, at this poll)."""
        owned = set(client.owned)
        self._release(client, owned - set(assigned))
        kept = {tp: p for tp, p in self.positions(client).items() if tp in set(assigned)}
        client.owned = assigned
        client.unpositioned = tuple(tp for tp in assigned if tp not in owned) + tuple(
            tp for tp in client.unpositioned if tp in set(assigned))
        if client.paused_until <= self.now and client.poll_stalled_until <= self.now:
            self._start_consuming(client, kept)
        else:
            client.consuming, client.frozen = False, kept

    # -- the background thread ----------------------------------------------------------------------------
    def _pump(self, client) -> None:
        """After anything reached the membership: send what it has to send, run the commits it asks for (and
        during a close the callbacks too), then set the client's timers from what is left."""
        membership = client.membership
        while client.alive:
            request = membership.next_request(self.now) if membership.coordinator_known else None
            if request is not None:
                self._send_heartbeat(client, request)
            taken = self._take_actions(client)
            if client.closing and self._callbacks_pending(client):
                self._run_callbacks(client)
                continue
            if request is None and not taken:
                break
        if not client.alive:
            return
        self._sync_owned(client)
        if not membership.coordinator_known:
            self._find_coordinator(client)
        if client.closing and not membership.leave_in_progress and not membership.pending_actions():
            self._closed(client)
            return
        if not client.closing and self._callbacks_pending(client):
            self._schedule_poll(client, self.now)  # the callbacks run at the application's next poll
        deadline = membership.next_deadline(self.now)
        if deadline is None:
            self.timers.cancel(("client", client.client_id, "heartbeat"))
        else:
            self.client_timer(client, "heartbeat", max(deadline, self.now))

    def _take_actions(self, client) -> bool:
        """Send the commits just asked for; a fatal error stops the client, as it would the application."""
        taken = client.membership.take_actions()
        for action in taken:
            if isinstance(action, actions.COMMITS):
                self._send_commit(client, None, action)
            elif isinstance(action, actions.ErrorEvent) and client.membership.state is ClientMemberState.FATAL:
                self._fatal(client, action.error)
                return True
        return bool(taken)

    def _send_heartbeat(self, client, request: HeartbeatRequest) -> None:
        fields, typed = self.heartbeat_fields(request)
        if _steady(client.membership, request):
            # The same request every heartbeat.interval.ms: a periodic one, written as a quiet run
            # (state/periodic.py).
            event, raw, sent_to = self._request(client, "heartbeat", self.periodic_request_id(client, "heartbeat", self.now),
                                                self.now, "CONSUMER_GROUP_HEARTBEAT", fields, typed)
            self.host.transmit(event, raw, sent_to)
            client.member_requests[event.request_id] = request
            return
        self._send(client, None, "CONSUMER_GROUP_HEARTBEAT", fields, **typed)
        client.member_requests[client.request_id(client.request_counter)] = request

    def heartbeat_fields(self, request: HeartbeatRequest) -> tuple[dict, dict]:
        """A ConsumerGroupHeartbeat's row columns and its event's fields."""
        owned = None if request.topic_partitions is None else tuple(
            PartitionList(self._topic_name(topic_id), partitions) for topic_id, partitions in request.topic_partitions)
        typed = dict(member_id=request.member_id, member_epoch=request.member_epoch, instance_id=request.instance_id,
                     rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
                     subscribed_topic_names=request.subscribed_topic_names,
                     subscribed_topic_regex=request.subscribed_topic_regex, server_assignor=request.server_assignor,
                     topic_partitions=owned)
        fields = {k: v for k, v in typed.items() if v is not None and k != "topic_partitions"}
        if "subscribed_topic_names" in fields:
            fields["subscribed_topic_names"] = list(fields["subscribed_topic_names"])
        if owned is not None:
            fields["topic_partitions"] = partitions_column(owned)
        return fields, typed

    def _send_commit(self, client, slot: str | None, action: actions.Action | None) -> None:
        """An OffsetCommit of what the client processed, as the member it is now (the member epoch as the
        generation); `action`: the membership's commit it answers, None for an auto-commit."""
        positions = self.positions(client)
        if not positions:
            # CommitRequestManager: nothing consumed, no request; the commit is complete at once.
            if action is not None:
                client.membership.action_done(self.now, action)
            return
        client.member_id, client.generation = client.membership.member_id, client.membership.member_epoch
        if action is None:  # the poll loop's auto-commit: a periodic request, as the classic client's
            self.send_periodic(client, "commit", self.now)
            return
        fields, typed = self._commit_fields(client, positions)
        self._send(client, slot, "OFFSET_COMMIT", fields, **typed)
        if action is not None:
            client.member_requests[client.request_id(client.request_counter)] = action

    @staticmethod
    def offset_fetch_member(client) -> dict:
        """OffsetFetch v9's member fields as CommitRequestManager fills them: the member id and epoch while the
        member has an epoch above 0 (onMemberEpochUpdated), none before its first epoch, after it left or was
        fenced, nor from a classic client (Kafka's defaults: null and -1, an admin-like fetch)."""
        membership = client.membership
        if membership is None or membership.member_epoch <= 0:
            return {}
        return {"member_id": membership.member_id, "member_epoch": membership.member_epoch}

    # -- answers ------------------------------------------------------------------------------------------
    def on_member_response(self, client, r: dict) -> None:
        membership, error = client.membership, r["error"]
        self._note_coordinator_error(client, error)
        request = client.member_requests.pop(r["request_id"], None)
        if r["api"] == "ConsumerGroupHeartbeat":
            if error == "NETWORK_EXCEPTION":
                membership.on_request_failed(self.now, request, DISCONNECTED)
            else:
                assignment = r["assignment"]
                membership.on_response(self.now, request, HeartbeatResponse(
                    error=error, member_id=r["member_id"], member_epoch=r["generation_id"] or 0,
                    heartbeat_interval_ms=r["heartbeat_interval_ms"] or 0,
                    assignment=None if assignment is None else tuple(sorted(
                        (self.host.topic_id(p["topic"]), tuple(sorted(p["partitions"]))) for p in assignment))))
                if assignment is not None:
                    self._schedule_poll(client, self.now)  # a new target: reconciliation starts at a poll
        elif r["api"] == "OffsetCommit":
            errors = sorted(({res["error"] for res in r["results"] or ()} | {error}) - {"NONE"})
            if request is not None:
                self._commit_answered(client, request, errors)
        elif r["api"] == "FindCoordinator":
            if error != "NONE":
                backoff = client.config.retry_backoff(client.retry_attempts, client.jitter_seed(self.now))
                client.retry_attempts += 1
                self.client_timer(client, "heartbeat", self.now + backoff)  # the next pass looks up again
                return
            client.retry_attempts = 0
            client.coordinator = r["coordinator"]
            membership.coordinator_found()
            if client.commit_retry is not None:
                self._retry_commit(client)
        elif r["api"] == "OffsetFetch":
            self._on_offset_fetch_response(client, r)
        self._pump(client)

    def _commit_answered(self, client, action: actions.Action, errors: list[str]) -> None:
        """The membership's commit was answered: done, unless it is a commit before revocation that failed
        with errors Kafka retries before its deadline; then it waits for its backoff."""
        retried = RETRIED_BEFORE_REVOCATION | ({"STALE_MEMBER_EPOCH"} if client.membership.member_epoch > 0 else set())
        if (isinstance(action, actions.CommitBeforeRebalance) and errors and set(errors) <= retried
                and self.now < action.deadline_ms):
            backoff = client.config.retry_backoff(client.commit_retries, client.jitter_seed(self.now))
            client.commit_retries += 1
            client.commit_retry = (action, errors[0], self.now + backoff)
            self.client_timer(client, "commit", min(self.now + backoff, action.deadline_ms))
            return
        client.commit_retries = 0
        client.membership.action_done(self.now, action, errors[0] if errors else None)

    def _retry_commit(self, client) -> None:
        """A commit before revocation waiting to be retried: given up at its deadline (Kafka's TimeoutException,
        which the reconciliation goes on after), sent again once its backoff is over and the coordinator known
        (looked up first if a commit's error lost it)."""
        action, error, due = client.commit_retry
        if self.now >= action.deadline_ms:
            client.commit_retry, client.commit_retries = None, 0
            client.membership.action_done(self.now, action, error)
        elif self.now >= due and client.coordinator is None:
            # Sent once FindCoordinator answers; looked up again after retry.backoff.ms if it fails.
            self._find_coordinator(client)
            self.client_timer(client, "commit", min(self.now + client.config.retry_backoff_ms, action.deadline_ms))
        elif self.now >= due:
            client.commit_retry = None
            self.timers.cancel(("client", client.client_id, "commit"))
            self._send_commit(client, None, action)

    # -- topic ids ----------------------------------------------------------------------------------------
    def _topic_name(self, topic_id) -> str:
        return next(name for name, tid in self.host.topic_ids.items() if tid == topic_id)

    def _by_name(self, partitions) -> tuple[TopicPartition, ...]:
        return tuple(sorted(TopicPartition(self._topic_name(topic_id), p) for topic_id, p in partitions))


def _steady(membership: Membership, request: HeartbeatRequest) -> bool:
    """A Stable member's heartbeat that carries nothing but who it is (the Java client sends only what changed):
    the same request every heartbeat.interval.ms while nothing changes."""
    return (membership.state is ClientMemberState.STABLE and request.member_epoch > 0 and request.rack_id is None
            and request.rebalance_timeout_ms == UNCHANGED_REBALANCE_TIMEOUT and request.subscribed_topic_names is None
            and request.subscribed_topic_regex is None and request.server_assignor is None
            and request.topic_partitions is None)
