"""Synthetic consumers: the client side of the classic protocol, as Kafka's Java consumer behaves
(AbstractCoordinator, ConsumerCoordinator and the heartbeat thread), simulated inside the group state next to
the coordinator so request -> response -> reaction runs without leaving the group.

`ConsumerFleet` holds the group's clients and their own timers. It knows the coordinator only through the
requests it puts on the wire (typed events) and the answers delivered back to it (typed answers parsed from
the responses that reach it, state/clients/answers.py); everything else it needs from outside
(the clock, the cluster's topics and production, the run's figures, the wire itself) comes from its host,
the group runtime, through the small surface `ClientHost` names.

A client's requests are built as the events their input-contract rows parse to (`parse_event` would
accept every one; the row is what `requests` records) and answered by the same coordinator code as captured
requests; they reach the coordinator after half the configured round trip and their answers come back after
the other half. Heartbeats and the poll loop's commits are periodic requests: written as
quiet runs, and computed in closed form while the client is steady (state/clients/elision.py). Client deadlines
live in the fleet's own timer queue under ("client", client_id, kind) and ("deliver", client_id, request id)
keys.

Modelled: the join loop (MEMBER_ID_REQUIRED retry, leader assignment with the selected assignor over the
member subscriptions, follower SyncGroup), the heartbeat thread (every heartbeat.interval.ms while completing
or stable), reactions to every error as the Java client reacts, eager and cooperative rebalancing (the
follow-up rejoin after a cooperative revocation), auto-commit every auto.commit.interval.ms and before a
rejoin, or without it the application's own commits (commitSync or commitAsync from its poll loop; commitSync
in onPartitionsRevoked: before an eager rejoin, after a cooperative SyncGroup for the revoked partitions, on
close), graceful close (commit, then LeaveGroup unless static), crash, process and poll pauses with the
max.poll.interval.ms proactive leave, restarts with the same group.instance.id, subscription changes, and a
leader noticing partition-count changes at its metadata refresh.

A client started with group.protocol=consumer shares the fleet's timers, requests, consumption and
directives, but its membership is KIP-848's: state/clients/consumer_group/async_consumer.py runs it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from operator import attrgetter
from enum import Enum
from typing import Protocol

from state import assignors
from state.classic import consumer_protocol
from state.assignors import AssignorError, MemberSubscription, RebalanceProtocol, TopicPartition
from state.clients.answers import (FindCoordinatorAnswer, HeartbeatAnswer, JoinGroupAnswer, JoinMember,
                                   OffsetCommitAnswer, OffsetFetchAnswer, SyncGroupAnswer, parse_answer)
from state.clients.config import CLOSE_TIMEOUT_MS, ClientConfig
from state.clients.consumer_group import async_consumer as member_clients
from state.clients.consumer_group.member import Membership
from state.cluster_image import ClusterImage
from state.events import (EVENT_CLASSES, NEWEST_API_VERSION, ClientCrash, ClientPause, ClientStart, ClientStop,
                          CommitPartition, Event, LeaveIdentity, MemberAssignment, Subscribe, group_partitions,
                          member_assignment, subscription_protocol)
from state.metrics import GroupMetrics
from state.offsets.production import rule_offset
from state.runtime.timers import TimerQueue

# JoinGroup errors after which the Java client rejoins at once; other retriable ones wait retry.backoff.ms.
REJOIN_AT_ONCE = ("MEMBER_ID_REQUIRED", "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS")
RETRIABLE = ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT",
             "UNKNOWN_TOPIC_OR_PARTITION", "NOT_ENOUGH_REPLICAS", "NETWORK_EXCEPTION")
# Errors after which the Java client marks the coordinator unknown (markCoordinatorUnknown) and looks it up
# again with FindCoordinator before its next request to it. NETWORK_EXCEPTION stands for a failed connection
# to the coordinator (a DisconnectException: the broker is down), which no broker answers.
COORDINATOR_UNKNOWN = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "NETWORK_EXCEPTION")
# A request that had to go out while the client knew no coordinator: no broker takes it as its coordinator.
NO_COORDINATOR = -1
# The `source` of the clients' requests: with (ts, seq, line) it places them among the group's events.
SYNTHETIC = "synthetic"


class Phase(str, Enum):
    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"    # JoinGroup in flight
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # SyncGroup in flight
    STABLE = "STABLE"


@dataclass
class SyntheticConsumer:
    client_id: str
    incarnation: int
    group_instance_id: str | None
    config: ClientConfig
    topics: tuple[str, ...]
    started_ts: int
    alive: bool = True
    fatal_error: str | None = None
    phase: Phase = Phase.UNJOINED
    member_id: str = ""
    generation: int = -1
    protocol: str | None = None
    owned: tuple[TopicPartition, ...] = ()
    unpositioned: tuple[TopicPartition, ...] = ()  # owned, their committed offsets not fetched yet
    # The last assignment received and its generation: StickyAssignor's userData remembers them.
    last_assignment: tuple[TopicPartition, ...] | None = None
    last_assignment_generation: int = -1
    rejoin_needed: bool = True
    closing: bool = False
    closing_since: int = -1
    index: int = 0  # the client's place among the group's clients (first start order): breaks request ties
    # The coordinator the client sends its group requests to, as its last FindCoordinator answer named it
    # (GroupRuntime.coordinator_epoch); None once an error made it mark the coordinator unknown.
    coordinator: int | None = 0
    retry_attempts: int = 0  # retriable JoinGroup failures in a row: the exponential backoff's attempt count
    in_flight: dict[str, str] = field(default_factory=dict)  # slot ("join", "heartbeat", "commit", "find", "fetch") -> request id
    request_counter: int = 0  # requests other than periodic heartbeats and auto-commits
    awaiting: int = 0  # answers on their way back
    heartbeat_enabled: bool = False
    paused_until: int = -1        # process pause: nothing runs
    poll_stalled_until: int = -1  # poll pause: the heartbeat thread still runs
    next_auto_commit: int = 0  # when the poll loop's next commit (auto or the application's own) is due
    # The heartbeat thread left the group (poll timeout) while the application still held partitions: its
    # commit of the batch in hand fails locally (CommitFailedException) when its poll loop resumes.
    kicked_out: bool = False
    metadata_snapshot: dict[str, int] | None = None  # leader: partition counts its assignment was made with
    # group.protocol=consumer: the broker-side pattern subscribed to instead of `topics` (then empty).
    topic_pattern: str | None = None
    # group.protocol=consumer: the membership the client runs instead of the classic join loop
    # (state/clients/consumer_group/async_consumer.py), and its requests in flight that the membership waits for
    # (request id -> the heartbeat, or the commit action).
    membership: Membership | None = None
    member_requests: dict = field(default_factory=dict)
    # A commit before revocation that failed with a retriable error: (the membership's commit action, its
    # error, when its backoff ends), and the failures in a row so far (the backoff's attempt count).
    commit_retry: tuple | None = None
    commit_retries: int = 0
    # Consumption: a consuming client keeps up with production (or, with coordsim.consume.records.per.second,
    # reads at that rate from where it started: `started`, (ts, position) per partition); a stopped one stays
    # where it stopped (`frozen`).
    consuming: bool = False
    frozen: dict[TopicPartition, int] = field(default_factory=dict)
    started: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)

    # The process: its requests' origin and the prefix of their ids. Read on every request, so built once.
    origin: str = field(init=False)

    def __post_init__(self) -> None:
        self.origin = f"{self.client_id}#{self.incarnation}"

    def request_id(self, seq: int) -> str:
        """The id of its request number `seq` (any but a periodic one)."""
        return f"{self.origin}/{seq}"

    def jitter_seed(self, at: int) -> str:
        """What the jitter of a retry backoff starting at `at` is drawn from: the client and the time."""
        return f"{self.origin}/{at}"

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        return _rebalance_protocol(tuple(self.config.partition_assignment_strategy))

    def next_poll(self, t: int) -> int:
        """The first poll() at or after t: polls come every coordsim.poll.interval.ms, after any stall."""
        t = max(t, self.poll_stalled_until, self.paused_until)
        interval = self.config.coordsim_poll_interval_ms
        return self.started_ts + -(-(t - self.started_ts) // interval) * interval


class ClientHost(Protocol):
    """What the client side gets from the group runtime that hosts it, and nothing more."""

    now: int
    discoverable_coordinator: int | None  # what a starting client's first lookup finds (None: no coordinator)
    # The cluster's topics, as a client learns them from any broker's Metadata and ListOffsets answers: their
    # ids (a client names the partitions it still owns of a deleted topic by the name they had, the Java
    # client's assignedTopicNamesCache), partition counts and log-end offsets.
    image: ClusterImage
    metrics: GroupMetrics  # the run's figures, told when clients start and stop consuming (state/metrics.py)

    def committed_offset(self, tp) -> int | None: ...
    def transmit(self, event: Event, sent_to: int | None) -> None: ...
    def reject(self, event: Event, reason: str) -> None: ...
    def close_client_runs(self, origin: str) -> None: ...


class ConsumerFleet:
    """The group's synthetic consumers and their timers."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.clients: dict[str, SyntheticConsumer] = {}
        self.timers = TimerQueue()
        self.host: ClientHost | None = None  # attached by the runtime; not part of the stored state

    # The host's clock. Read on every client step: a property over a C getter costs no Python frame.
    now = property(attrgetter("host.now"))
    image = property(attrgetter("host.image"))

    # ======================================================================================================
    # Directives
    # ======================================================================================================
    def handle_client_directive(self, event: Event) -> None:
        client = self.clients.get(event.client_id)
        if isinstance(event, ClientStart):
            if client is not None and client.alive:
                self.host.reject(event, f"client {event.client_id!r} is already running")
                return
            incarnation = 0 if client is None else client.incarnation + 1
            index = len(self.clients) if client is None else client.index
            # A starting client is taken to know its coordinator already: its first FindCoordinator is not
            # simulated, only the lookups that errors cause.
            client = SyntheticConsumer(event.client_id, incarnation, event.group_instance_id, event.config,
                                       event.topics, started_ts=self.now, index=index,
                                       coordinator=self.host.discoverable_coordinator,
                                       next_auto_commit=self.now + event.config.commit_interval_ms,
                                       topic_pattern=event.topic_pattern)
            self.clients[event.client_id] = client
            if event.config.group_protocol == "consumer":
                member_clients.start_membership(self, client)
            else:
                self.schedule_poll(client, self.now)
            return
        if client is None or not client.alive:
            self.host.reject(event, f"client {event.client_id!r} is not running")
            return
        if isinstance(event, ClientCrash):
            self._stop_client(client)
        elif isinstance(event, ClientStop):
            self._close(client)
        elif isinstance(event, ClientPause):
            until = self.now + event.duration_ms
            self.freeze(client)
            if event.scope == "process":
                client.paused_until = max(client.paused_until, until)
            else:
                client.poll_stalled_until = max(client.poll_stalled_until, until)
                if client.membership is None:
                    # The heartbeat thread notices a stalled poll loop once max.poll.interval.ms has passed
                    # (a membership keeps its own poll timer).
                    self.client_timer(client, "poll_timeout", self.now + client.config.max_poll_interval_ms)
            self.client_timer(client, "resume", until)
        elif isinstance(event, Subscribe):
            if client.membership is not None:
                client.topics, client.topic_pattern = event.topics, event.topic_pattern
                client.membership.subscribe(self.now, set(event.topics), pattern=event.topic_pattern)
                self.schedule_poll(client, self.now)
            elif event.topic_pattern is not None:
                # ClassicKafkaConsumer.subscribe(SubscriptionPattern) throws UnsupportedOperationException.
                self.host.reject(event, f"client {event.client_id!r} uses group.protocol=classic: a topic_pattern "
                                        "(subscribe(SubscriptionPattern)) needs group.protocol=consumer")
            elif set(event.topics) != set(client.topics):
                client.topics = event.topics
                client.rejoin_needed = True
                self.schedule_poll(client, self.now)

    def _stop_client(self, client: SyntheticConsumer) -> None:
        self.host.close_client_runs(client.origin)
        self.freeze(client)
        self.release(client, client.owned)
        client.alive = False
        for key in [t.key for t in self.timers.pending() if t.key[:2] == ("client", client.client_id)]:
            self.timers.cancel(key)

    def _close(self, client: SyntheticConsumer) -> None:
        if client.membership is not None:
            member_clients.close_membership(self, client)
            return
        if not client.closing:
            client.closing, client.closing_since = True, self.now
        self.freeze(client)
        if client.coordinator is None:
            self.find_coordinator(client)  # close() commits and leaves once the coordinator is found again
            return
        positions = self._commits_before_leaving(client)
        if positions:
            # auto-commit on close, or onLeavePrepare revoking every partition: the close continues when the
            # commit is answered
            self._commit(client, positions)
        else:
            self._leave_and_stop(client)

    def _commits_before_leaving(self, client: SyntheticConsumer) -> dict[TopicPartition, int]:
        """What a closing Stable member commits before it leaves (auto-commit, or onPartitionsRevoked):
        allConsumed(), the partitions with a position; none (and no request: commitSync of nothing sends
        nothing) while their committed offsets are still being fetched."""
        if client.phase != Phase.STABLE or not client.config.commits_on_revoke:
            return {}
        return self.positions(client)

    def _leave_and_stop(self, client: SyntheticConsumer) -> None:
        if (client.group_instance_id is None and client.member_id and client.config.internal_leave_group_on_close):
            self._leave(client, "the consumer is being closed")
        self.closed(client)

    def closed(self, client: SyntheticConsumer) -> None:
        self._stop_client(client)
        if not any(c.alive for c in self.clients.values()):
            self.host.metrics.consumption_ended(self.now)

    # ======================================================================================================
    # Consumption
    # ======================================================================================================
    def positions(self, client: SyntheticConsumer, at: int | None = None) -> dict[TopicPartition, int]:
        """How far the client has processed each partition it owns (now, or at an earlier time `at` with the
        same production rates)."""
        owned = client.owned
        if client.unpositioned:
            owned = tuple(tp for tp in owned if tp not in client.unpositioned)
        image, now = self.image, self.now
        if not client.consuming:
            return {tp: client.frozen.get(tp, image.log_end_offset(tp, now)) for tp in owned}
        t = now if at is None else at
        rate = client.config.coordsim_consume_records_per_second
        if not rate:
            return {tp: image.log_end_offset(tp, t) for tp in owned}
        positions = {}
        for tp in owned:
            log_end = image.log_end_offset(tp, t)
            since, position = client.started.get(tp, (t, log_end))
            positions[tp] = min(log_end, rule_offset((rate, since, position), t))
        return positions

    def resume_consuming(self, client: SyntheticConsumer, positions: dict[TopicPartition, int]) -> None:
        """The client (re)starts processing its partitions from `positions`."""
        client.consuming, client.frozen = True, {}
        client.started = {tp: (self.now, position) for tp, position in positions.items()}

    def fetch_positions(self, client: SyntheticConsumer) -> None:
        """updateFetchPositions: newly assigned partitions get their committed offsets with one OffsetFetch
        (requireStable, as the Java client asks); until it is answered they are neither processed nor
        committed."""
        if not client.unpositioned or "fetch" in client.in_flight:
            return
        if client.coordinator is None:
            self.find_coordinator(client)  # the lookup's answer runs the poll loop, which fetches again
            return
        partitions = group_partitions(client.unpositioned)
        member = member_clients.offset_fetch_member(client)
        self.send(client, "fetch", "OFFSET_FETCH", partitions=partitions, require_stable=True, **member)

    def on_offset_fetch_response(self, client: SyntheticConsumer, r: OffsetFetchAnswer) -> None:
        if r.error != "NONE":
            self.note_coordinator_error(client, r.error)
            backoff = client.config.retry_backoff(client.retry_attempts, client.jitter_seed(self.now))
            client.retry_attempts += 1
            self.schedule_poll(client, self.now + backoff)  # the poll loop fetches again
            return
        fetched = r.offsets
        positioned = [tp for tp in client.unpositioned if tp in fetched]
        if not positioned:
            return
        client.unpositioned = tuple(tp for tp in client.unpositioned if tp not in fetched)
        self._started(client, positioned)
        if client.config.coordsim_consume_records_per_second:
            # Read from the committed offset, else from where auto.offset.reset says.
            reset = lambda tp: (0 if client.config.auto_offset_reset == "earliest"
                                else self.image.log_end_offset(tp, self.now))
            positions = {tp: fetched[tp] if fetched[tp] >= 0 else reset(tp) for tp in positioned}
        else:
            positions = {tp: self.image.log_end_offset(tp, self.now) for tp in positioned}
        if client.consuming:
            client.started.update((tp, (self.now, position)) for tp, position in positions.items())
        else:
            client.frozen.update(positions)

    def _started(self, client: SyntheticConsumer, partitions: list[TopicPartition]) -> None:
        """Tell the run's figures the client starts processing `partitions`, with what they compare its start
        with: the position of a client still consuming one (state/metrics.py), the offset committed, and,
        where none is and auto.offset.reset is latest, the log end."""
        figures, earliest = self.host.metrics, client.config.auto_offset_reset == "earliest"
        consumed = {tp: self.position_of(other, tp) for tp, other in figures.consumers(client.client_id,
                                                                                     partitions).items()}
        committed = {tp: self.host.committed_offset(tp) for tp in partitions}
        log_end = {} if earliest else {tp: self.image.log_end_offset(tp, self.now) for tp in partitions
                                       if committed[tp] is None}
        figures.start_consuming(self.now, client.client_id, partitions, consumed, committed, log_end, earliest)

    def freeze(self, client: SyntheticConsumer) -> None:
        if client.consuming:
            client.frozen = self.positions(client)
            client.consuming = False

    def release(self, client: SyntheticConsumer, partitions) -> None:
        positions = self.positions(client)
        self.host.metrics.stop_consuming(self.now, client.client_id,
                                         {tp: positions[tp] for tp in partitions if tp in positions})

    def position_of(self, client_id: str, tp) -> int | None:
        client = self.clients.get(client_id)
        if client is None:
            return None
        return self.positions(client).get(TopicPartition(*tp))

    # ======================================================================================================
    # Timers
    # ======================================================================================================
    def client_timer(self, client: SyntheticConsumer, kind: str, at: int, *args) -> None:
        self.timers.schedule(("client", client.client_id, kind), at, "client", client.client_id,
                             client.incarnation, kind, *args)

    def periodic_timers(self, client: SyntheticConsumer) -> list:
        """The client's own timers that are set (what a closed form takes out of the queue, or must not find)."""
        return [t for kind in ("heartbeat", "poll", "metadata", "poll_timeout", "resume", "assigned", "commit", "close")
                if (t := self.timers.get(("client", client.client_id, kind))) is not None]

    def schedule_poll(self, client: SyntheticConsumer, at: int) -> None:
        self.client_timer(client, "poll", client.next_poll(at))

    def fire_client_timer(self, client_id: str, incarnation: int, kind: str, *args) -> None:
        client = self.clients.get(client_id)
        if client is None or client.incarnation != incarnation or not client.alive:
            return
        if client.paused_until > self.now and kind != "resume":
            # A paused process runs nothing; whatever was due happens when it resumes.
            self.client_timer(client, kind, client.paused_until, *args)
            return
        if client.membership is not None:
            member_clients.fire_member_timer(self, client, kind)
            return
        if kind == "poll":
            self._poll(client)
        elif kind == "heartbeat":
            self._heartbeat(client)
        elif kind == "poll_timeout":
            self._poll_timeout(client)
        elif kind == "resume":
            if self.now >= max(client.paused_until, client.poll_stalled_until):
                if client.phase == Phase.STABLE and not client.closing:
                    self.resume_consuming(client, self.positions(client))
                else:
                    client.consuming, client.frozen = False, {}
            self.schedule_poll(client, self.now)
            if client.heartbeat_enabled:
                self._heartbeat(client)
        elif kind == "close":
            self._close(client)
        elif kind == "assigned":
            self._send_leader_sync(client, *args)
        elif kind == "metadata":
            self._refresh_metadata(client)

    def deliver_response(self, client_id: str, incarnation: int, response: dict) -> None:
        client = self.clients.get(client_id)
        if client is None or client.incarnation != incarnation or not client.alive:
            return
        if client.paused_until > self.now:
            self.timers.schedule(("deliver", client_id, response["request_id"]), client.paused_until, "deliver",
                                 client_id, incarnation, response)
            return
        answer = parse_answer(response)
        client.awaiting -= 1
        for slot, request_id in list(client.in_flight.items()):
            if request_id == answer.request_id:
                del client.in_flight[slot]
        if client.membership is not None:
            member_clients.on_member_response(self, client, answer)
            return
        handler = _RESPONSE_HANDLERS.get(answer.api)
        if handler is not None:
            handler(self, client, answer)

    def route_response(self, request: Event, row: dict, answered_at: int | None = None) -> None:
        """A synthetic client's request was answered (now, or at `answered_at` when closed-form work puts an
        answer back on its way): the answer reaches it after the return trip."""
        client_id, _, incarnation = request.origin.rpartition("#")
        client = self.clients.get(client_id)
        latency = 0 if client is None else client.config.response_latency_ms
        if client is not None and client.incarnation == int(incarnation):
            client.awaiting += 1
        at = self.now if answered_at is None else answered_at
        self.timers.schedule(("deliver", client_id, row["request_id"]), at + latency, "deliver", client_id,
                             int(incarnation), row)

    # ======================================================================================================
    # Requests
    # ======================================================================================================
    # A request's place among requests reaching the coordinator at the same time: (seq, line) with seq the
    # client's count of non-periodic requests and line (client index, incarnation, chain). Neither counts
    # periodic requests, so eliding them changes no other request's place.
    CHAIN_RANK = {"heartbeat": 0, "commit": 1, None: 2}

    def request_line(self, client: SyntheticConsumer, chain: str | None) -> int:
        return (client.index << 40) | (client.incarnation << 2) | self.CHAIN_RANK[chain]

    def periodic_request_id(self, client: SyntheticConsumer, chain: str, sent: int) -> str:
        return f"{client.origin}/{chain}@{sent}"

    @staticmethod
    def is_periodic_request(client: SyntheticConsumer, chain: str, request_id: str) -> bool:
        """Whether `request_id` is one of `periodic_request_id`'s for `client` and `chain`."""
        return request_id.startswith(f"{client.origin}/{chain}@")

    def send(self, client: SyntheticConsumer, slot: str | None, etype: str, **fields) -> None:
        """Send a request other than a periodic one, of the event's `fields` (besides those every request
        carries)."""
        client.request_counter += 1
        event, sent_to = self.build_request(client, None, client.request_id(client.request_counter), self.now,
                                            etype, fields)
        if slot is not None:
            client.in_flight[slot] = event.request_id
        self.host.transmit(event, sent_to)

    def send_periodic(self, client: SyntheticConsumer, chain: str, sent: int) -> None:
        """The heartbeat or auto-commit the client sends at `sent` (now, or earlier when elided requests
        are put back on the wire)."""
        event, sent_to = self.periodic_request(client, chain, sent)
        client.in_flight[chain] = event.request_id
        self.host.transmit(event, sent_to)

    def periodic_request(self, client: SyntheticConsumer, chain: str, sent: int,
                         seq: int | None = None) -> tuple[Event, int | None]:
        """The heartbeat or auto-commit the client would send at `sent`, as it stands (`seq`: its count of
        other requests then, if not the current one): its event and the coordinator it goes to."""
        request_id = self.periodic_request_id(client, chain, sent)
        if chain == "commit":
            return self.build_request(client, chain, request_id, sent, "OFFSET_COMMIT",
                                      self.commit_fields(client, self.positions(client, sent)), seq)
        if client.membership is not None:  # a steady member's ConsumerGroupHeartbeat (consumer_group/async_consumer.py)
            return self.build_request(client, chain, request_id, sent, "CONSUMER_GROUP_HEARTBEAT",
                                      member_clients.heartbeat_fields(self, client.membership.steady_request()), seq)
        return self.build_request(client, chain, request_id, sent, "HEARTBEAT", dict(
            member_id=client.member_id, generation_id=client.generation, group_instance_id=client.group_instance_id),
            seq)

    def lookup_request(self, client: SyntheticConsumer, seq: int, sent: int) -> Event:
        """The FindCoordinator the client sent at `sent` as its request number `seq`."""
        return self.build_request(client, None, client.request_id(seq), sent, "FIND_COORDINATOR", {}, seq)[0]

    @staticmethod
    def commit_fields(client: SyntheticConsumer, positions: dict[TopicPartition, int]) -> dict:
        """An OffsetCommit of `positions`: its event's fields."""
        return dict(member_id=client.member_id, generation_id=client.generation,
                    group_instance_id=client.group_instance_id, offsets=tuple(
                        CommitPartition(tp[0], tp[1], offset, -1, None, -1) for tp, offset in positions.items()))

    def build_request(self, client: SyntheticConsumer, chain: str | None, request_id: str, sent: int, etype: str,
                      fields: dict, seq: int | None = None) -> tuple[Event, int | None]:
        # FindCoordinator goes to a broker of the client's choosing (state.runtime.lookups.lookup_node);
        # anything else to the coordinator the client knows.
        sent_to = None if etype == "FIND_COORDINATOR" else NO_COORDINATOR if client.coordinator is None \
            else client.coordinator
        ts, origin = sent + client.config.request_latency_ms, client.origin
        seq = client.request_counter if seq is None else seq
        # The clients are trusted: the event is built as `parse_event` would read its row
        # (state/request_rows.py), without validating it.
        event = EVENT_CLASSES[etype](ts=ts, group_id=self.group_id, type=etype, seq=seq, source=SYNTHETIC,
                                     line=self.request_line(client, chain), request_id=request_id,
                                     client_id=client.client_id, api_version=NEWEST_API_VERSION[etype],
                                     origin=origin, run=None if chain is None else f"{origin}/{chain}", **fields)
        return event, sent_to

    def _leave(self, client: SyntheticConsumer, reason: str) -> None:
        self.send(client, None, "LEAVE_GROUP", members=(LeaveIdentity(client.member_id, None, reason),))

    def _join(self, client: SyntheticConsumer) -> None:
        """onJoinPrepare then JoinGroup, as poll() does when a rejoin is needed."""
        if client.generation == -1 or client.member_id == "" or client.rebalance_protocol == RebalanceProtocol.EAGER:
            # Eager revokes everything; after a reset the partitions are lost. Either way none are kept.
            self.freeze(client)
            self.release(client, client.owned)
            client.owned, client.unpositioned = (), ()
        else:
            subscribed = set(client.topics)
            self.release(client, [tp for tp in client.owned if tp.topic not in subscribed])
            client.owned = tuple(tp for tp in client.owned if tp.topic in subscribed)
            client.unpositioned = tuple(tp for tp in client.unpositioned if tp.topic in subscribed)
        client.phase = Phase.PREPARING_REBALANCE
        client.heartbeat_enabled = False
        self.timers.cancel(("client", client.client_id, "heartbeat"))
        owned = group_partitions(client.owned)
        protocols = tuple(subscription_protocol(
            name, tuple(client.topics), owned, client.generation,
            assignors.client_user_data(name, client.last_assignment, client.last_assignment_generation))
            for name in client.config.partition_assignment_strategy)
        self.send(client, "join", "JOIN_GROUP", member_id=client.member_id, group_instance_id=client.group_instance_id,
                  protocol_type=consumer_protocol.PROTOCOL_TYPE, protocols=protocols,
                  session_timeout_ms=client.config.session_timeout_ms,
                  rebalance_timeout_ms=client.config.max_poll_interval_ms, reason="rebalance")

    def find_coordinator(self, client: SyntheticConsumer) -> None:
        """lookupCoordinator: one FindCoordinator at a time; its answer lets whatever waited for it go on."""
        if "find" not in client.in_flight:
            self.send(client, "find", "FIND_COORDINATOR")

    def _heartbeat(self, client: SyntheticConsumer) -> None:
        if not client.heartbeat_enabled or client.phase not in (Phase.COMPLETING_REBALANCE, Phase.STABLE):
            return
        if client.coordinator is None:
            # The heartbeat thread looks the coordinator up and waits retry.backoff.ms before trying again.
            self.find_coordinator(client)
            self.client_timer(client, "heartbeat", self.now + client.config.retry_backoff_ms)
            return
        if "heartbeat" not in client.in_flight:
            self.send_periodic(client, "heartbeat", self.now)
        self.client_timer(client, "heartbeat", self.now + client.config.heartbeat_interval_ms)

    def _commit(self, client: SyntheticConsumer, positions: dict[TopicPartition, int]) -> None:
        """A commit the client waits for before going on (before a rejoin, a close, or after a cooperative
        revocation); one already in flight is waited for instead."""
        if "commit" in client.in_flight:
            return
        if client.coordinator is None:
            self.find_coordinator(client)  # the poll loop or the close takes the commit up again once found
            return
        self.send(client, "commit", "OFFSET_COMMIT", **self.commit_fields(client, positions))

    # ======================================================================================================
    # The application's poll loop
    # ======================================================================================================
    def _poll(self, client: SyntheticConsumer) -> None:
        if client.closing:
            return
        config = client.config
        if client.kicked_out:
            # The late commit of the batch that outlasted max.poll.interval.ms: the client is no longer part
            # of an active group, so the commit is refused before any request (CommitFailedException).
            client.kicked_out = False
            self.host.metrics.unsent_commit()
        if client.coordinator is None:
            # ensureCoordinatorReady: the loop's group work (rejoin, commits) waits for the lookup's answer.
            self.find_coordinator(client)
            return
        self.fetch_positions(client)
        if client.rejoin_needed and "join" not in client.in_flight:
            if client.rebalance_protocol == RebalanceProtocol.EAGER:
                self.freeze(client)  # poll() blocks in the rejoin: nothing more is processed
            revoking = self._committed_before_join(client)
            if client.phase == Phase.STABLE and revoking:
                # onJoinPrepare commits synchronously first; the join goes out once the commit is answered.
                # It commits allConsumed(): a partition whose committed offset is still being fetched has no
                # position, and an empty commit sends nothing (ConsumerCoordinator.commitOffsetsSync).
                positions = self.positions(client)
                offsets = {tp: positions[tp] for tp in revoking if tp in positions}
                if offsets:
                    self._commit(client, offsets)
                    return
            self._join(client)
        elif client.phase == Phase.STABLE and config.commits_periodically and self.now >= client.next_auto_commit:
            if config.commit_blocks_poll and "commit" in client.in_flight:
                return  # still inside commitSync: its answer resumes the loop
            client.next_auto_commit = self.now + config.commit_interval_ms
            # commitAsync does not wait for the previous commit's answer; auto-commit skips while one is out.
            if client.owned and ("commit" not in client.in_flight or not config.enable_auto_commit):
                self.send_periodic(client, "commit", self.now)
        if client.phase == Phase.STABLE and config.commits_periodically:
            self.schedule_poll(client, max(client.next_auto_commit, self.now + 1))

    @staticmethod
    def _committed_before_join(client: SyntheticConsumer) -> tuple[TopicPartition, ...]:
        """The partitions whose offsets are committed in onJoinPrepare: every owned one for auto-commit; for
        an application committing on revocation, those revoked before the JoinGroup (eager: all; cooperative:
        the ones of topics no longer subscribed)."""
        config = client.config
        if config.enable_auto_commit or (config.commits_on_revoke
                                         and client.rebalance_protocol == RebalanceProtocol.EAGER):
            return client.owned
        if config.commits_on_revoke:
            subscribed = set(client.topics)
            return tuple(tp for tp in client.owned if tp.topic not in subscribed)
        return ()

    def _poll_timeout(self, client: SyntheticConsumer) -> None:
        if client.poll_stalled_until <= self.now:
            return  # poll() was called again in time
        # The heartbeat thread gives up the membership: a dynamic member leaves, a static one goes silent;
        # either way its partitions are given up (onLeavePrepare).
        client.kicked_out = bool(client.owned) and not client.config.enable_auto_commit \
            and client.config.commits_periodically
        self.release(client, client.owned)
        client.owned, client.unpositioned = (), ()
        if client.group_instance_id is None and client.member_id and client.coordinator is not None:
            self._leave(client, "consumer poll timeout has expired.")
        self._reset_generation(client, reset_member_id=True)
        client.rejoin_needed = True
        self.schedule_poll(client, client.poll_stalled_until)

    def _reset_generation(self, client: SyntheticConsumer, reset_member_id: bool) -> None:
        client.generation = -1
        client.protocol = None
        if reset_member_id:
            client.member_id = ""
        client.phase = Phase.UNJOINED
        client.heartbeat_enabled = False
        self.timers.cancel(("client", client.client_id, "heartbeat"))

    def _request_rejoin(self, client: SyntheticConsumer) -> None:
        client.rejoin_needed = True
        self.schedule_poll(client, self.now)

    # ======================================================================================================
    # Reactions
    # ======================================================================================================
    def fatal(self, client: SyntheticConsumer, error: str) -> None:
        client.fatal_error = error
        self._stop_client(client)

    def _retry_join(self, client: SyntheticConsumer, error: str) -> None:
        if error in REJOIN_AT_ONCE:
            self._join(client)
        elif error in RETRIABLE:
            client.phase = Phase.UNJOINED
            backoff = client.config.retry_backoff(client.retry_attempts, client.jitter_seed(self.now))
            client.retry_attempts += 1
            self.schedule_poll(client, self.now + backoff)
        else:
            self.fatal(client, error)

    def _on_find_coordinator_response(self, client: SyntheticConsumer, r: FindCoordinatorAnswer) -> None:
        if r.error != "NONE":
            # ensureCoordinatorReady sleeps retry.backoff.ms (growing) and looks up again, a close until its
            # timeout: then it gives up committing and leaving.
            backoff = client.config.retry_backoff(client.retry_attempts, client.jitter_seed(self.now))
            client.retry_attempts += 1
            if not client.closing:
                self.schedule_poll(client, self.now + backoff)
            elif self.now + backoff < client.closing_since + CLOSE_TIMEOUT_MS:
                self.client_timer(client, "close", self.now + backoff)
            else:
                self.closed(client)
            return
        client.coordinator = r.coordinator
        if client.closing:
            self._close(client)
        else:
            self.schedule_poll(client, self.now)

    def note_coordinator_error(self, client: SyntheticConsumer, error: str) -> None:
        if error in COORDINATOR_UNKNOWN:
            client.coordinator = None

    def _on_join_response(self, client: SyntheticConsumer, r: JoinGroupAnswer) -> None:
        error = r.error
        self.note_coordinator_error(client, error)
        if error == "NONE":
            client.retry_attempts = 0
            client.member_id, client.generation, client.protocol = r.member_id, r.generation_id, r.protocol_name
            client.phase = Phase.COMPLETING_REBALANCE
            client.heartbeat_enabled = True
            self.client_timer(client, "heartbeat", self.now + client.config.heartbeat_interval_ms)
            if r.leader_id == r.member_id and not r.skip_assignment:
                self._lead(client, r.members)
            else:
                self._send_sync(client, ())
            return
        if error == "MEMBER_ID_REQUIRED":
            client.member_id = r.member_id
        elif error == "UNKNOWN_MEMBER_ID":
            client.member_id, client.generation = "", -1
        elif error in ("FENCED_INSTANCE_ID", "INCONSISTENT_GROUP_PROTOCOL", "INVALID_SESSION_TIMEOUT",
                       "INVALID_GROUP_ID", "GROUP_MAX_SIZE_REACHED"):
            self.fatal(client, error)
            return
        self._retry_join(client, error)

    def _send_sync(self, client: SyntheticConsumer, assignments: tuple[MemberAssignment, ...]) -> None:
        self.send(client, "join", "SYNC_GROUP", member_id=client.member_id, group_instance_id=client.group_instance_id,
                  generation_id=client.generation, protocol_type=consumer_protocol.PROTOCOL_TYPE,
                  protocol_name=client.protocol, assignments=assignments)

    def _lead(self, client: SyntheticConsumer, members: tuple[JoinMember, ...]) -> None:
        subscriptions = []
        for m in members:
            sub = consumer_protocol.decode_subscription(m.metadata)
            subscriptions.append(MemberSubscription(
                member_id=m.member_id, topics=sub.topics, group_instance_id=m.group_instance_id,
                owned_partitions=sub.owned_partitions, generation_id=sub.generation_id, user_data=sub.user_data))
        topics = {t for s in subscriptions for t in s.topics}
        known = self.image.topics
        snapshot = {t: known[t] for t in sorted(topics) if t in known}
        try:
            plan = assignors.assign(client.protocol, subscriptions, snapshot)
        except AssignorError:
            self.fatal(client, "ASSIGNOR_FAILURE")
            return
        client.metadata_snapshot = snapshot
        assignments = tuple(member_assignment(member_id, group_partitions(tps)) for member_id, tps in plan.items())
        delay = client.config.coordsim_assignment_time_ms
        if delay:
            self.client_timer(client, "assigned", self.now + delay, client.generation, assignments)
        else:
            self._send_leader_sync(client, client.generation, assignments)
        self.client_timer(client, "metadata", self.now + client.config.metadata_max_age_ms)

    def _send_leader_sync(self, client: SyntheticConsumer, generation: int,
                          assignments: tuple[MemberAssignment, ...]) -> None:
        if client.phase == Phase.COMPLETING_REBALANCE and client.generation == generation:
            self._send_sync(client, assignments)

    def _on_sync_response(self, client: SyntheticConsumer, r: SyncGroupAnswer) -> None:
        error = r.error
        self.note_coordinator_error(client, error)
        if error == "NONE":
            assigned = r.assignment
            owned = set(client.owned)
            revoked = owned - set(assigned)
            revoked_positions = {tp: p for tp, p in self.positions(client).items() if tp in revoked}
            self.release(client, revoked)
            # Partitions kept through the rebalance (cooperative) go on from where the client is; new ones have
            # no position until their committed offsets are fetched.
            kept = {tp: p for tp, p in self.positions(client).items() if tp in set(assigned)}
            client.phase = Phase.STABLE
            client.rejoin_needed = False
            client.owned = assigned
            client.unpositioned = tuple(tp for tp in assigned if tp not in owned)
            if client.paused_until <= self.now and client.poll_stalled_until <= self.now:
                self.resume_consuming(client, kept)
            else:
                client.consuming, client.frozen = False, kept
            self.fetch_positions(client)
            client.last_assignment, client.last_assignment_generation = assigned, client.generation
            client.next_auto_commit = self.now + client.config.commit_interval_ms
            subscribed = set(client.topics)
            cooperative_revocation = revoked and client.rebalance_protocol == RebalanceProtocol.COOPERATIVE
            if (cooperative_revocation and client.config.commits_on_revoke and not client.config.enable_auto_commit
                    and revoked_positions):
                # onPartitionsRevoked commits the revoked partitions synchronously; the follow-up rejoin goes
                # out once that commit is answered.
                client.rejoin_needed = True
                self._commit(client, revoked_positions)
            elif cooperative_revocation or any(tp.topic not in subscribed for tp in assigned):
                self._request_rejoin(client)  # the cooperative follow-up rebalance, or a stale assignment
            elif client.config.commits_periodically:
                self.schedule_poll(client, client.next_auto_commit)
            return
        if error == "UNKNOWN_MEMBER_ID":
            client.member_id, client.generation = "", -1
        elif error == "ILLEGAL_GENERATION":
            client.generation = -1
        elif error == "FENCED_INSTANCE_ID":
            self.fatal(client, error)
            return
        client.rejoin_needed = True
        self._retry_join(client, error)

    def _on_heartbeat_response(self, client: SyntheticConsumer, r: HeartbeatAnswer) -> None:
        error = r.error
        if error in COORDINATOR_UNKNOWN:
            # Heartbeat.failHeartbeat: the thread tries again after retry.backoff.ms, looking the coordinator up.
            self.note_coordinator_error(client, error)
            if client.heartbeat_enabled:
                self.client_timer(client, "heartbeat", self.now + client.config.retry_backoff_ms)
            return
        if r.sent_generation != client.generation:
            return  # an answer about a generation the client already left behind
        if error == "REBALANCE_IN_PROGRESS":
            if client.phase == Phase.STABLE and not client.rejoin_needed:
                self._request_rejoin(client)
        elif error == "ILLEGAL_GENERATION":
            self._reset_generation(client, reset_member_id=False)
            self._request_rejoin(client)
        elif error == "UNKNOWN_MEMBER_ID":
            self._reset_generation(client, reset_member_id=True)
            self._request_rejoin(client)
        elif error == "FENCED_INSTANCE_ID":
            self.fatal(client, error)

    def _on_commit_response(self, client: SyntheticConsumer, r: OffsetCommitAnswer) -> None:
        errors = set(r.partition_errors) | {r.error}
        errors.discard("NONE")
        for error in errors:
            self.note_coordinator_error(client, error)
        if "REBALANCE_IN_PROGRESS" in errors:
            client.rejoin_needed = True
        if "UNKNOWN_MEMBER_ID" in errors or "ILLEGAL_GENERATION" in errors:
            if r.sent_generation == client.generation:
                self._reset_generation(client, reset_member_id="UNKNOWN_MEMBER_ID" in errors)
                client.rejoin_needed = True
        if "FENCED_INSTANCE_ID" in errors and r.sent_generation == client.generation:
            self.fatal(client, "FENCED_INSTANCE_ID")
            return
        # The poll loop's own commit was answered while a close or a rejoin waited for it: the close's commit,
        # or onJoinPrepare (its commit, or the JoinGroup), comes next. Any other commit was the one they sent.
        loop_commit = client.phase == Phase.STABLE and self.is_periodic_request(client, "commit", r.request_id)
        if client.closing:
            positions = self._commits_before_leaving(client) if loop_commit else None
            if positions:
                self._commit(client, positions)
            else:
                self._leave_and_stop(client)
        elif client.rejoin_needed and "join" not in client.in_flight:
            if loop_commit:
                self._poll(client)
            else:
                self._join(client)
        elif (client.config.commit_blocks_poll and client.phase == Phase.STABLE
              and self.timers.get(("client", client.client_id, "poll")) is None):
            self.schedule_poll(client, max(client.next_auto_commit, self.now))  # commitSync returns

    def _refresh_metadata(self, client: SyntheticConsumer) -> None:
        snapshot = client.metadata_snapshot
        if snapshot is not None and client.phase == Phase.STABLE:
            known = self.image.topics
            current = {t: known[t] for t in snapshot if t in known}
            if current != snapshot:
                # Only the leader compares metadata with what it assigned: it rejoins to reassign.
                self._request_rejoin(client)
                return
        self.client_timer(client, "metadata", self.now + client.config.metadata_max_age_ms)


_RESPONSE_HANDLERS = {
    "JoinGroup": ConsumerFleet._on_join_response,
    "SyncGroup": ConsumerFleet._on_sync_response,
    "Heartbeat": ConsumerFleet._on_heartbeat_response,
    "OffsetCommit": ConsumerFleet._on_commit_response,
    "FindCoordinator": ConsumerFleet._on_find_coordinator_response,
    "OffsetFetch": ConsumerFleet.on_offset_fetch_response,
}


@functools.lru_cache(maxsize=64)
def _rebalance_protocol(strategies: tuple[str, ...]) -> RebalanceProtocol:
    """The rebalance protocol of a client's assignors: the most advanced one they all support (what
    ConsumerCoordinator picks)."""
    common = set.intersection(*(set(assignors.supported_protocols(n)) for n in strategies))
    return max(common)
