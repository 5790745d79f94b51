"""Synthetic consumers with `group.protocol=consumer` (KIP-848): the fleet's glue between a client and the Java
new consumer's membership (`state.clients.consumer_group.Membership`), functions of the `ConsumerFleet` they are given.

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
are steady, as the classic clients' are (state/clients/elision.py). Simplified: the application's own commits
(enable.auto.commit=false) are sent as commits from the poll loop without blocking it. The membership is
plain data (its continuations and random draws included), stored with the rest of the group's state
(state/runtime/encoding.py), so these clients run on both engines.
"""

from __future__ import annotations

from state.clients.answers import Answer
from state.clients.config import CLOSE_TIMEOUT_MS
from state.clients.consumer_group import member_actions as actions
from state.clients.consumer_group.member import Membership
from state.clients.consumer_group.member_config import MemberConfig
from state.clients.consumer_group.member_state import ClientMemberState
from state.clients.consumer_group.seeded_random import SeededRandom
from state.consumer_group.messages import UNCHANGED_REBALANCE_TIMEOUT, HeartbeatRequest, HeartbeatResponse
from state.classic.consumer_protocol import TopicPartition
from state.events import PartitionList

# What a failed connection (NETWORK_EXCEPTION, state/runtime/group_runtime.py's _disconnect) is to the Java client.
DISCONNECTED = "DisconnectException"
# OffsetCommit errors after which CommitRequestManager retries a commit before revocation: those it turns
# into RetriableExceptions (a failed connection, NETWORK_EXCEPTION, is one too), but UNKNOWN_TOPIC_OR_PARTITION,
# which a deleted topic would keep failing until the deadline. STALE_MEMBER_EPOCH is retried too while the
# member has an epoch (the retry carries it).
RETRIED_BEFORE_REVOCATION = frozenset({"COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT",
                                       "COORDINATOR_LOAD_IN_PROGRESS", "UNKNOWN_TOPIC_ID", "NETWORK_EXCEPTION"})


# -- directives ---------------------------------------------------------------------------------------
def start_membership(fleet, client) -> None:
    config = client.config
    member_config = MemberConfig(
        group_id=fleet.group_id, group_instance_id=client.group_instance_id,
        group_remote_assignor=config.group_remote_assignor or None,
        max_poll_interval_ms=config.max_poll_interval_ms, retry_backoff_ms=config.retry_backoff_ms,
        retry_backoff_max_ms=config.retry_backoff_max_ms, enable_auto_commit=config.enable_auto_commit)
    # The member id and the backoff jitter are drawn from the client's incarnation: runs repeat.
    membership = Membership(member_config, SeededRandom(client.origin), fleet.now)
    client.membership = membership
    membership.subscribe(fleet.now, set(client.topics), pattern=client.topic_pattern)
    if client.coordinator is not None:
        membership.coordinator_found()  # a starting client is taken to know its coordinator (consumer.py)
    _member_poll(fleet, client)


def close_membership(fleet, client) -> None:
    if not client.closing:
        client.closing, client.closing_since = True, fleet.now
        fleet.client_timer(client, "close", fleet.now + CLOSE_TIMEOUT_MS)
        fleet.freeze(client)
        client.membership.close(fleet.now)
    _pump(fleet, client)


def fire_member_timer(fleet, client, kind: str) -> None:
    if kind == "poll":
        _member_poll(fleet, client)
    elif kind == "heartbeat":
        _pump(fleet, client)
    elif kind == "commit":
        _retry_commit(fleet, client)
        _pump(fleet, client)
    elif kind == "resume":
        if fleet.now >= max(client.paused_until, client.poll_stalled_until) and not client.closing:
            fleet.resume_consuming(client, fleet.positions(client))
        fleet.schedule_poll(client, fleet.now)
        _pump(fleet, client)
    elif kind == "close":
        fleet.closed(client)  # close()'s timeout: it returns, done or not

# -- the application thread ---------------------------------------------------------------------------
def _member_poll(fleet, client) -> None:
    membership, config, now = client.membership, client.config, fleet.now
    if not client.closing:
        membership.poll(now)
        _run_callbacks(fleet, client)
        _sync_owned(fleet, client)
        fleet.fetch_positions(client)
        if config.commits_periodically and client.owned and now >= client.next_auto_commit:
            client.next_auto_commit = now + config.commit_interval_ms
            # maybeAutoCommitAsync: skipped while the previous auto-commit is unanswered.
            if "commit" not in client.in_flight:
                _send_commit(fleet, client, "commit", None)
        due = now + config.max_poll_interval_ms // 2
        if config.commits_periodically:
            due = min(due, max(client.next_auto_commit, now + 1))
        fleet.schedule_poll(client, due)
    _pump(fleet, client)


def _callbacks_pending(client) -> list[actions.Action]:
    """The application thread's actions pending (callbacks, assignments), in the order emitted."""
    return [a for a in client.membership.pending_actions() if not isinstance(a, actions.COMMITS)]


def _run_callbacks(fleet, client) -> None:
    """Run the callbacks and assignments pending, in the order emitted; each may emit the next."""
    membership = client.membership
    while client.alive:
        pending = _callbacks_pending(client)
        if not pending:
            return
        action = pending[0]
        if isinstance(action, actions.OnPartitionsAssigned):
            _apply_assignment(fleet, client, _by_name(fleet, action.assigned))
        else:  # onPartitionsRevoked / onPartitionsLost: the partitions are no longer processed
            _give_up(fleet, client, set(_by_name(fleet, action.partitions)))
        membership.action_done(fleet.now, action)
        _take_actions(fleet, client)


def _give_up(fleet, client, partitions: set[TopicPartition]) -> None:
    fleet.release(client, partitions)
    client.owned = tuple(tp for tp in client.owned if tp not in partitions)
    client.unpositioned = tuple(tp for tp in client.unpositioned if tp not in partitions)


def _sync_owned(fleet, client) -> None:
    """Partitions the membership released without a callback to run (no rebalance listener: a fencing,
    an expired poll timer) are no longer part of consumer.assignment(): they stop being processed."""
    kept = set(_by_name(fleet, client.membership.owned_partitions))
    _give_up(fleet, client, {tp for tp in client.owned if tp not in kept})


def _apply_assignment(fleet, client, assigned: tuple[TopicPartition, ...]) -> None:
    """SubscriptionState.assignFromSubscribed: kept partitions go on from where the client is; added
    ones wait for their committed offsets (OffsetFetch, at this poll)."""
    owned = set(client.owned)
    fleet.release(client, owned - set(assigned))
    kept = {tp: p for tp, p in fleet.positions(client).items() if tp in set(assigned)}
    client.owned = assigned
    client.unpositioned = tuple(tp for tp in assigned if tp not in owned) + tuple(
        tp for tp in client.unpositioned if tp in set(assigned))
    if client.paused_until <= fleet.now and client.poll_stalled_until <= fleet.now:
        fleet.resume_consuming(client, kept)
    else:
        client.consuming, client.frozen = False, kept

# -- the background thread ----------------------------------------------------------------------------
def _pump(fleet, client) -> None:
    """After anything reached the membership: send what it has to send, run the commits it asks for (and
    during a close the callbacks too), then set the client's timers from what is left."""
    membership = client.membership
    while client.alive:
        request = membership.next_request(fleet.now) if membership.coordinator_known else None
        if request is not None:
            _send_heartbeat(fleet, client, request)
        taken = _take_actions(fleet, client)
        if client.closing and _callbacks_pending(client):
            _run_callbacks(fleet, client)
            continue
        if request is None and not taken:
            break
    if not client.alive:
        return
    _sync_owned(fleet, client)
    if not membership.coordinator_known:
        fleet.find_coordinator(client)
    if client.closing and not membership.leave_in_progress and not membership.pending_actions():
        fleet.closed(client)
        return
    if not client.closing and _callbacks_pending(client):
        fleet.schedule_poll(client, fleet.now)  # the callbacks run at the application's next poll
    deadline = membership.next_deadline(fleet.now)
    if deadline is None:
        fleet.timers.cancel(("client", client.client_id, "heartbeat"))
    else:
        fleet.client_timer(client, "heartbeat", max(deadline, fleet.now))


def _take_actions(fleet, client) -> bool:
    """Send the commits just asked for; a fatal error stops the client, as it would the application."""
    taken = client.membership.take_actions()
    for action in taken:
        if isinstance(action, actions.COMMITS):
            _send_commit(fleet, client, None, action)
        elif isinstance(action, actions.ErrorEvent) and client.membership.state is ClientMemberState.FATAL:
            fleet.fatal(client, action.error)
            return True
    return bool(taken)


def _send_heartbeat(fleet, client, request: HeartbeatRequest) -> None:
    fields = heartbeat_fields(fleet, request)
    if _steady(client.membership, request):
        # The same request every heartbeat.interval.ms: a periodic one, written as a quiet run
        # (state/clients/elision.py).
        request_id = fleet.periodic_request_id(client, "heartbeat", fleet.now)
        event, sent_to = fleet.build_request(client, "heartbeat", request_id, fleet.now, "CONSUMER_GROUP_HEARTBEAT",
                                             fields)
        fleet.host.transmit(event, sent_to)
        client.member_requests[event.request_id] = request
        return
    fleet.send(client, None, "CONSUMER_GROUP_HEARTBEAT", **fields)
    client.member_requests[client.request_id(client.request_counter)] = request


def heartbeat_fields(fleet, request: HeartbeatRequest) -> dict:
    """A ConsumerGroupHeartbeat's event fields, its partitions named (the coordinator maps names to ids)."""
    owned = None if request.topic_partitions is None else tuple(
        PartitionList(_topic_name(fleet, topic_id), partitions) for topic_id, partitions in request.topic_partitions)
    return dict(member_id=request.member_id, member_epoch=request.member_epoch, instance_id=request.instance_id,
                rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
                subscribed_topic_names=request.subscribed_topic_names,
                subscribed_topic_regex=request.subscribed_topic_regex, server_assignor=request.server_assignor,
                topic_partitions=owned)


def _send_commit(fleet, client, slot: str | None, action: actions.Action | None) -> None:
    """An OffsetCommit of what the client processed, as the member it is now (the member epoch as the
    generation); `action`: the membership's commit it answers, None for an auto-commit."""
    positions = fleet.positions(client)
    if not positions:
        # CommitRequestManager: nothing consumed, no request; the commit is complete at once.
        if action is not None:
            client.membership.action_done(fleet.now, action)
        return
    client.member_id, client.generation = client.membership.member_id, client.membership.member_epoch
    if action is None:  # the poll loop's auto-commit: a periodic request, as the classic client's
        fleet.send_periodic(client, "commit", fleet.now)
        return
    fleet.send(client, slot, "OFFSET_COMMIT", **fleet.commit_fields(client, positions))
    if action is not None:
        client.member_requests[client.request_id(client.request_counter)] = action


def offset_fetch_member(client) -> dict:
    """OffsetFetch v9's member fields as CommitRequestManager fills them: the member id and epoch while the
    member has an epoch above 0 (onMemberEpochUpdated), none before its first epoch, after it left or was
    fenced, nor from a classic client (Kafka's defaults: null and -1, an admin-like fetch)."""
    membership = client.membership
    if membership is None or membership.member_epoch <= 0:
        return {}
    return {"member_id": membership.member_id, "member_epoch": membership.member_epoch}

# -- answers ------------------------------------------------------------------------------------------
def on_member_response(fleet, client, r: Answer) -> None:
    membership, error = client.membership, r.error
    fleet.note_coordinator_error(client, error)
    request = client.member_requests.pop(r.request_id, None)
    if r.api == "ConsumerGroupHeartbeat":
        if error == "NETWORK_EXCEPTION":
            membership.on_request_failed(fleet.now, request, DISCONNECTED)
        else:
            assignment = r.assignment
            membership.on_response(fleet.now, request, HeartbeatResponse(
                error=error, member_id=r.member_id, member_epoch=r.member_epoch,
                heartbeat_interval_ms=r.heartbeat_interval_ms,
                assignment=None if assignment is None else tuple(sorted(
                    (fleet.image.topic_id(p.topic), tuple(sorted(p.partitions))) for p in assignment))))
            if assignment is not None:
                fleet.schedule_poll(client, fleet.now)  # a new target: reconciliation starts at a poll
    elif r.api == "OffsetCommit":
        errors = sorted((set(r.partition_errors) | {error}) - {"NONE"})
        if request is not None:
            _commit_answered(fleet, client, request, errors)
    elif r.api == "FindCoordinator":
        if error != "NONE":
            backoff = client.config.retry_backoff(client.retry_attempts, client.jitter_seed(fleet.now))
            client.retry_attempts += 1
            fleet.client_timer(client, "heartbeat", fleet.now + backoff)  # the next pass looks up again
            return
        client.retry_attempts = 0
        client.coordinator = r.coordinator
        membership.coordinator_found()
        if client.commit_retry is not None:
            _retry_commit(fleet, client)
    elif r.api == "OffsetFetch":
        fleet.on_offset_fetch_response(client, r)
    _pump(fleet, client)


def _commit_answered(fleet, client, action: actions.Action, errors: list[str]) -> None:
    """The membership's commit was answered: done, unless it is a commit before revocation that failed
    with errors Kafka retries before its deadline; then it waits for its backoff."""
    retried = RETRIED_BEFORE_REVOCATION | ({"STALE_MEMBER_EPOCH"} if client.membership.member_epoch > 0 else set())
    if (isinstance(action, actions.CommitBeforeRebalance) and errors and set(errors) <= retried
            and fleet.now < action.deadline_ms):
        backoff = client.config.retry_backoff(client.commit_retries, client.jitter_seed(fleet.now))
        client.commit_retries += 1
        client.commit_retry = (action, errors[0], fleet.now + backoff)
        fleet.client_timer(client, "commit", min(fleet.now + backoff, action.deadline_ms))
        return
    client.commit_retries = 0
    client.membership.action_done(fleet.now, action, errors[0] if errors else None)


def _retry_commit(fleet, client) -> None:
    """A commit before revocation waiting to be retried: given up at its deadline (Kafka's TimeoutException,
    which the reconciliation goes on after), sent again once its backoff is over and the coordinator known
    (looked up first if a commit's error lost it)."""
    action, error, due = client.commit_retry
    if fleet.now >= action.deadline_ms:
        client.commit_retry, client.commit_retries = None, 0
        client.membership.action_done(fleet.now, action, error)
    elif fleet.now >= due and client.coordinator is None:
        # Sent once FindCoordinator answers; looked up again after retry.backoff.ms if it fails.
        fleet.find_coordinator(client)
        fleet.client_timer(client, "commit", min(fleet.now + client.config.retry_backoff_ms, action.deadline_ms))
    elif fleet.now >= due:
        client.commit_retry = None
        fleet.timers.cancel(("client", client.client_id, "commit"))
        _send_commit(fleet, client, None, action)

# -- topic ids ----------------------------------------------------------------------------------------
def _topic_name(fleet, topic_id) -> str:
    return fleet.image.topic_names[topic_id]


def _by_name(fleet, partitions) -> tuple[TopicPartition, ...]:
    return tuple(sorted(TopicPartition(_topic_name(fleet, topic_id), p) for topic_id, p in partitions))


def _steady(membership: Membership, request: HeartbeatRequest) -> bool:
    """A Stable member's heartbeat that carries nothing but who it is (the Java client sends only what changed):
    the same request every heartbeat.interval.ms while nothing changes."""
    return (membership.state is ClientMemberState.STABLE and request.member_epoch > 0 and request.rack_id is None
            and request.rebalance_timeout_ms == UNCHANGED_REBALANCE_TIMEOUT and request.subscribed_topic_names is None
            and request.subscribed_topic_regex is None and request.server_assignor is None
            and request.topic_partitions is None)
