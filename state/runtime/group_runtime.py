"""One group's coordinator as a pure, resumable object: the single entry point both engines drive.

`offer(events)` holds events; `advance_to(t)` applies every held event and due deadline up to and including
`t` in time order (at equal times deadlines fire first, then events in (ts, seq) order); `take_output()`
returns the rows produced since the last call. With coordsim.periodic.elision, steady clients' periodic
requests and the lookup loop of clients whose coordinator's broker is down are not among those items: they are
caught up in closed form before each item (state/clients/elision.py and its coordinator's half,
state/runtime/periodic_answers.py; state/clients/lookup_loop.py).
The object encodes to bytes (`encode`/`decode`, state/runtime/encoding.py), so the Spark engine can keep it as the
group's state between micro-batches and get the same rows as one uninterrupted local run: outputs never
depend on how events were batched.

A replayed captured request (`Event.captured` set) is translated into the group's own ids right before it is
handled, and its answer teaches the translation (state/runtime/captured_ids.py): the map lives here, in the group's
state, so both engines replay a capture alike.
"""

from __future__ import annotations

import heapq
from functools import partial
from typing import Iterable

from state.runtime import encoding, snapshot
from state.runtime.captured_ids import IdMap
from state.cluster import NO_LEADER
from state.cluster_image import ClusterImage
from state.config import CoordinatorConfig
from state.clients.fleet import ConsumerFleet
from state.consumer_group.group import ConsumerGroup
from state.consumer_group.manager import CLASSIC_MEMBERSHIP_REQUESTS, CONSUMER_GROUP_TIMER, ConsumerGroupManager
from state.errors import NETWORK_EXCEPTION
from state.events import (CLIENT_DIRECTIVE_CLASSES, CoordinatorFault, EndOfRun, Event, TopicMetadata,
                          expand_repeats)
from state.classic.group import ClassicGroup
from state.classic.group_state import CLASSIC, GroupState
from state.java_compat import coordinator_partition
from state.clients.lookup_loop import LookupLoops
from state.runtime.lookups import LookupAnswers, lookup_node
from state.runtime.member_ids import MemberIds
from state.classic.manager import ClassicGroupManager
from state.metrics import GroupMetrics
from state.runtime.result import (APPEND, ASSIGNMENT, CANCEL, CANCEL_ALL, CONSUMER_GROUP_WRITTEN,
                                     CREATE_SIMPLE_GROUP, DELETE_CONSUMER_GROUP, DELETE_GROUP, DISCONNECT, GENERATION,
                                     IN_STATE, LOG_CONSUMER_GROUP, MEMBER, REBALANCE_STARTED, REPLAY_CONSUMER_GROUP,
                                     RESOLVE_REGEXES, RESPOND, SCHEDULE, SCHEDULE_IF_ABSENT, STATE,
                                     UNLOAD_CONSUMER_GROUP, CoordinatorResult)
from state.offsets.manager import OffsetMetadataManager
from state.runtime.output import Output
from state.clients.elision import PeriodicElision
from state.runtime.periodic_answers import PeriodicAnswers
from state.runtime.quiet_runs import QuietRuns
from state.records.group_log import GroupLog, OffsetCommitRecord, Record
from state.request_rows import request_row
from state.runtime.timers import FIRING, Timer, TimerQueue, request_item

# The `offsets` columns a tombstone has no value for, and those of a record written without a request.
TOMBSTONE_OFFSET = {"offset": None, "leader_epoch": None, "metadata": None, "commit_ts": None, "expire_ts": None,
                    "topic_id": None}
NO_CONTEXT = {"log_end_offset": None, "generation_id": None, "member_id": None}

# Timer kinds that belong to the group's protocol (the periodic offsets sweep is housekeeping).
SWEEP_TIMER = ("sweep",)


class GroupRuntime:
    def __init__(self, group_id: str, config: CoordinatorConfig) -> None:
        self.group_id = group_id
        self.config = config
        self.coordinator_partition = coordinator_partition(group_id, config.offsets_topic_num_partitions)
        # The ids the coordinator hands out, and the group the id names, each with its manager: a classic
        # group, or a KIP-848 consumer group, never both.
        self.ids = MemberIds(group_id)
        # The cluster's topics and what is produced to them, which the managers and the clients read.
        self.image = ClusterImage()
        self.classic = ClassicGroupManager(group_id, config, self.ids)
        self.consumer = ConsumerGroupManager(group_id, config, self.ids, self.image, self.classic)
        # The group's committed offsets and the requests and sweep that change them; it reads the group from
        # the two group managers.
        self.offset_manager = OffsetMetadataManager(config, self.classic, self.consumer, self.image)
        # The coordinator's timers (sessions, rebalance and sync deadlines, the offsets sweep, the load); the
        # client side keeps its own (polls, heartbeats, answers on their way back) in the fleet, so a
        # coordinator that unloads the group drops its own and never touches the clients'.
        self.timers = TimerQueue()
        self.fleet = ConsumerFleet(group_id)
        self.fleet.host = self
        # Which coordinator hosts the group: each leadership of the group's partition is a coordinator epoch,
        # and `coordinators` holds each epoch's broker (None: a run without a cluster names no broker;
        # NO_LEADER: the partition had no live replica). A synthetic request reaching the group was sent to the
        # epoch its client knew of: an older epoch's broker answers NOT_COORDINATOR, or, when it is down
        # (`down_epochs`), the request never reaches a broker and the client's connection fails.
        self.coordinator_epoch = 0
        self.coordinators: list[int | None] = [None]
        self.down_epochs: set[int] = set()
        # The cluster's brokers that are up (a `live_brokers` fault; None: the input names none), where a
        # synthetic client's FindCoordinator goes (state.runtime.lookups.lookup_node).
        self.live_brokers: tuple[int, ...] | None = None
        self.now = -1
        # The group's figures (the `metrics` row): told what happened as the results are carried out, and by the
        # client side as its consumers start and stop.
        self.metrics = GroupMetrics()
        self.out = self._new_output(0)
        self.write_failures: list[str] = []
        self.last_write_error: str | None = None
        self.loading_until: int | None = None
        self.log = GroupLog()  # the group's records in its __consumer_offsets partition
        self.last_sweep_ts = -1
        self._held: list[tuple[tuple, Event]] = []
        self._last_key: tuple | None = None  # the sort key of the last event applied
        self.last_event_ts = -1
        # A synthetic request on the wire: request id -> the coordinator epoch it was sent to (None: a lookup).
        self.requests_sent_to: dict[str, int | None] = {}
        self.quiet = QuietRuns()
        self.elision = PeriodicElision()
        self.periodic_answers = PeriodicAnswers(self)  # the coordinator's half of the elision
        self.lookups = LookupLoops()  # the clients going round the lookup loop, in closed form
        self.lookup_answers = LookupAnswers(self)  # the brokers' half of it
        self.steps = 0          # events and deadlines applied: the work a run cost
        self._sweep_inputs_seen: tuple | None = None
        self.captured_ids: IdMap | None = None  # made by the first captured request
        self._captured_retries: list[Event] = []

    # -- driving -------------------------------------------------------------------------------------------
    def offer(self, events: Iterable[Event]) -> None:
        for event in (e for row in events for e in expand_repeats(row)):
            if event.ts < self.now or (event.ts == self.now and self._processed_past(event)):
                self.out.reject(event, f"event at ts {event.ts} arrived after group {self.group_id!r} had "
                                       f"advanced to {self.now} (later than the allowed lateness)")
                continue
            self.hold(event)

    def hold(self, event: Event) -> None:
        heapq.heappush(self._held, (event.sort_key, event))

    def _processed_past(self, event: Event) -> bool:
        # Events at exactly `now` are still in order unless an event with a larger key was already applied.
        return self._last_key is not None and event.sort_key < self._last_key

    def advance_to(self, t: int) -> None:
        """Apply held events and deadlines up to and including time t."""
        elision = self.config.coordsim_periodic_elision
        coordinator_timers, client_timers, held = self.timers, self.fleet.timers, self._held
        while True:
            # The timer due first; at equal deadlines the coordinator's fire before the clients'.
            coordinator, client = coordinator_timers.peek(), client_timers.peek()
            if client is None or (coordinator is not None and coordinator.deadline <= client.deadline):
                queue, timer = coordinator_timers, coordinator
            else:
                queue, timer = client_timers, client
            event_ts = held[0][0][0] if held else None
            if timer is not None and timer.deadline <= t and (event_ts is None or timer.deadline <= event_ts):
                concerns = _concerns_timer(timer)
                if (self.elision.elided or self.lookups.loops) and self._catch_up(timer.deadline, *concerns):
                    continue
                queue.pop_peeked()
                self._set_clock(max(self.now, timer.deadline))
                self._fire(timer)
            elif event_ts is not None and event_ts <= t:
                concerns = _concerns_event(held[0][1])
                if (self.elision.elided or self.lookups.loops) and self._catch_up(event_ts, *concerns):
                    continue
                key, event = heapq.heappop(held)
                self._set_clock(event.ts)
                self._last_key = key
                self.last_event_ts = max(self.last_event_ts, event.ts)
                self._handle(event)
            else:
                break
            self.steps += 1
            self._reschedule_sweep()
            if elision and self.fleet.clients:  # a replay of captured requests has no clients to elide
                self.elision.elide_quiet_clients(self.fleet, self.periodic_answers, *concerns)
                self.lookups.elide(self.fleet, self.lookup_answers, *concerns)
        if self.lookups.loops:  # what is due by `t` is written by now, as step by step
            self.lookups.fold(self.fleet, self.lookup_answers, t + 1)
        self.now = max(self.now, t)

    def _catch_up(self, at: int, target: str | None, whole_group: bool) -> bool:
        """Closed-form work caught up before an item at `at`; True if a queue changed (look again)."""
        periodic = bool(self.elision.elided) and self.elision.catch_up(self.fleet, self.periodic_answers, at,
                                                                         target, whole_group)
        looped = bool(self.lookups.loops) and self.lookups.catch_up(self.fleet, self.lookup_answers, at, target,
                                                                    whole_group)
        return looped or periodic

    def _set_clock(self, now: int) -> None:
        """Move to `now`: a step at a new time starts as a deadline firing; any other step handles no request
        and keeps the item of the last one (state/runtime/timers.py)."""
        if now != self.timers.clock:
            self.timers.item = FIRING
        self.now = now
        self.timers.clock = now

    def next_wakeup(self) -> int | None:
        """Earliest time something is due: a deadline or a held event (the Spark state timeout)."""
        candidates = [self.timers.next_deadline(), self.fleet.timers.next_deadline(), self.lookups.wakeup()]
        if self._held:
            candidates.append(self._held[0][0][0])
        due = [c for c in candidates if c is not None]
        return min(due) if due else None

    def max_pending_deadline(self) -> int | None:
        """Latest pending protocol deadline (the periodic offsets sweep excluded): where a finite run drains to."""
        # Clients' own deadlines (heartbeats, polls) recur for as long as they run: they set no end.
        deadlines = [t.deadline for t in self.timers.pending() if t.kind != "sweep"]
        deadlines += self.periodic_answers.session_deadlines()
        return max(deadlines) if deadlines else None

    def held_count(self) -> int:
        return len(self._held)

    def end_run_at(self, ts: int) -> None:
        """Hold an end-of-run marker for `ts`: it ends the run after every event and deadline up to `ts`."""
        marker = EndOfRun(ts=ts, group_id=self.group_id, type="END_OF_RUN", seq=2**62, source="\uffff")
        heapq.heappush(self._held, (marker.sort_key, marker))

    def finish(self) -> None:
        """End of run: open quiet runs are written, a generation still completing is written without a
        stable time, and the group's figures are written to `metrics`."""
        self.elision.fold_elided(self.fleet, self.periodic_answers, self.now + 1)
        self.lookups.fold(self.fleet, self.lookup_answers, self.now + 1)
        self.quiet.close_all(self.out)
        self.execute(self.classic.finish(self.now))
        self.consumer.flush_generation(self.out, stable_ts=None)
        self.out.metrics(self.metrics.row(self.now, *self.end_of_group))

    def live_snapshot(self) -> bytes:
        """What finish() would write if the run ended at any time from now until the next wakeup, the runtime
        unchanged (state/runtime/snapshot.py)."""
        return snapshot.take(self)

    def take_output(self) -> Output:
        out, self.out = self.out, self._new_output(self.out.next_seq)
        return out

    def _new_output(self, next_seq: int) -> Output:
        return Output(self.group_id, next_seq, self.coordinator_partition, self.coordinator_id, self.metrics)

    @property
    def group(self) -> ClassicGroup | None:
        """The classic group the id names, if any (its manager's)."""
        return self.classic.group

    @property
    def consumer_group(self) -> ConsumerGroup | None:
        """The consumer group the id names, if any (its manager's)."""
        return self.consumer.consumer_group

    @property
    def end_of_group(self) -> tuple[str | None, int]:
        """The group's state and member count, classic or consumer group (None and 0: no group), as the
        `metrics` row ends with them."""
        group = self.classic.group if self.classic.group is not None else self.consumer.consumer_group
        return (None, 0) if group is None else (group.state.value, len(group.members))

    # -- the coordinator's identity --------------------------------------------------------------------------
    def broker_of(self, epoch: int | None) -> int | None:
        """The broker of a coordinator epoch (None: no cluster, no leader, or no such epoch)."""
        broker = self.coordinators[epoch] if epoch is not None and 0 <= epoch < len(self.coordinators) else None
        return None if broker == NO_LEADER else broker

    @property
    def coordinator_id(self) -> int | None:
        return self.broker_of(self.coordinator_epoch)

    @property
    def leaderless(self) -> bool:
        return self.coordinators[self.coordinator_epoch] == NO_LEADER

    @property
    def lookup_error(self) -> str:
        """What FindCoordinator is answered with: any broker answers from its metadata, naming the partition's
        leader, loading or not, down or not (until the controller fences it); none while it has no leader."""
        return "COORDINATOR_NOT_AVAILABLE" if self.leaderless else "NONE"

    @property
    def discoverable_coordinator(self) -> int | None:
        """The coordinator epoch FindCoordinator names now; None while the partition has no leader."""
        return None if self.leaderless else self.coordinator_epoch

    # -- dispatch ------------------------------------------------------------------------------------------
    def _handle(self, event: Event) -> None:
        if event.captured is None:
            self._apply(event)
            return
        if self.captured_ids is None:
            self.captured_ids = IdMap()
        self._apply(self.captured_ids.rewrite(event))
        # A client sends its MEMBER_ID_REQUIRED round at once: before anything else reaches the group.
        while self._captured_retries:
            self._apply(self._captured_retries.pop(0))

    def _apply(self, event: Event) -> None:
        if isinstance(event, EndOfRun):
            self.finish()
            return
        if isinstance(event, CoordinatorFault):
            self._handle_fault(event)
            return
        self.metrics.activity(self.now)
        sent_to = None
        if event.origin is not None:
            sent_to = self.requests_sent_to.pop(event.request_id)
            if sent_to in self.down_epochs:
                self.close_client_runs(event.origin)
                self._disconnect(event, sent_to)
                return
            if event.run is None:
                self.close_client_runs(event.origin)
                self.out.request(request_row(event))
        if isinstance(event, TopicMetadata):
            # The cluster's topics as clients see them, and what is produced to them.
            shrunk = self.image.shrunk_topic(event)
            if shrunk:
                self.reject(event, shrunk)
                return
            changed, log_end = self.image.apply(event, self.now)
            self.consumer.topics_changed(changed)
            for row in log_end:
                self.out.log_end(row)
            return
        if event.type in CLIENT_DIRECTIVE_CLASSES:
            self.fleet.handle_client_directive(event)
            return
        self.timers.item = request_item(event.seq, getattr(event, "member_id", ""))
        handler = self._handle_request if sent_to in (None, self.coordinator_epoch) \
            else partial(self._answer_not_coordinator, sent_to=sent_to)
        if event.run is not None:
            self.quiet.handle(self.out, self.image.production, event, handler)
        else:
            handler(event)

    def _answer_not_coordinator(self, event: Event, sent_to: int) -> None:
        """The broker the request was sent to no longer leads the group's partition: it answers, as itself."""
        self.respond_generic_error(event, "NOT_COORDINATOR", coordinator_id=self.broker_of(sent_to))

    def _disconnect(self, request: Event, sent_to: int | None = None) -> None:
        """The broker a synthetic client's request went to (coordinator epoch `sent_to`; None: the current one)
        is down: no broker answers, and the client's connection fails after the return trip. Also the fate of
        a request parked at a broker that fails. The client's view is written to `responses`."""
        row = self.failed_connection(request, self.now, self.coordinator_epoch if sent_to is None else sent_to)
        self.out.emit("responses", row)
        self.fleet.route_response(request, row)

    def failed_connection(self, request: Event, at: int, sent_to: int) -> dict:
        """The `responses` row of a request to the down broker of epoch `sent_to` whose connection failed at
        `at`: its own fields, NETWORK_EXCEPTION, and no answer's. A refused connection (or one the failing
        broker drops) fails the request's future with a DisconnectException in the Java client
        (ConsumerNetworkClient.checkDisconnects, RequestFutureCompletionHandler: ClientResponse.wasDisconnected);
        no error code travels, and NETWORK_EXCEPTION is Kafka's error name for a disconnection."""
        broker = self.broker_of(sent_to)
        return self.out.response_row(request, at, NETWORK_EXCEPTION, coordinator_id=broker, node_id=broker)

    def _handle_request(self, event: Event) -> None:
        if event.type == "FIND_COORDINATOR":
            if event.origin is None:  # a captured lookup: taken as sent to the current coordinator
                self.respond(event, self.lookup_error)
            else:
                self.respond(event, self.lookup_error,
                             node_id=lookup_node(self.group_id, self.live_brokers, event.request_id))
            return
        if self.leaderless or self.coordinator_epoch in self.down_epochs:
            # Only a captured request gets here (a synthetic one went to an epoch it knew): no broker can
            # answer as the group's coordinator.
            self.respond_generic_error(event, "COORDINATOR_NOT_AVAILABLE")
            return
        if self.loading_until is not None:
            # The group's coordinator is loading it: Kafka answers COORDINATOR_LOAD_IN_PROGRESS, except that
            # a heartbeat is blindly acknowledged so members are not kicked out by the move.
            self.respond_generic_error(event, "NONE" if event.type == "HEARTBEAT" else "COORDINATOR_LOAD_IN_PROGRESS")
            return
        if self.consumer.consumer_group is not None and event.type in CLASSIC_MEMBERSHIP_REQUESTS:
            self.execute(self.consumer.classic_request(self.now, event, self.write_failures))
        else:
            _REQUEST_HANDLERS[event.type](self, event)

    def _fire(self, timer: Timer) -> None:
        kind = timer.kind
        if kind == "heartbeat":
            self.execute(self.classic.on_heartbeat_expired(self.now, *timer.args, self.write_failures))
        elif kind == "join":
            self.execute(self.classic.on_join_timeout(self.now, self.write_failures))
        elif kind == "initial_join":
            self.execute(self.classic.on_initial_join_timeout(self.now, *timer.args, self.write_failures))
        elif kind == "sync":
            self.execute(self.classic.on_sync_timeout(self.now, *timer.args, self.write_failures))
        elif kind == "sweep":
            self.last_sweep_ts = timer.deadline
            self.execute(self.offset_manager.cleanup_expired_offsets(self.now, self.write_failures))
        elif kind == "load":
            self._load_group()
        elif kind == CONSUMER_GROUP_TIMER:
            self.execute(self.consumer.on_timer(self.now, timer.args[0], timer.args[1:], self.write_failures))
        elif kind == "client":
            self.fleet.fire_client_timer(*timer.args)
        elif kind == "deliver":
            self.fleet.deliver_response(*timer.args)
        else:  # pragma: no cover - a timer kind without a handler is a bug in this module
            raise AssertionError(f"unknown timer kind {kind}")

    # -- helpers shared by the handlers --------------------------------------------------------------------
    def respond(self, request: Event, error: str, **fields) -> None:
        row = self.out.response(request, self.now, error, **fields)
        if request.origin is not None:
            if request.type == "FIND_COORDINATOR":
                row = dict(row, coordinator=self.coordinator_epoch)  # the node it names, beside the table's columns
            self.fleet.route_response(request, row)
        elif request.captured is not None:
            retry = self.captured_ids.learn(request, row)
            if retry is not None:
                self._captured_retries.append(retry)

    # -- what the client side gets from its host (state.clients.fleet.ClientHost) -------------------------------
    def transmit(self, event: Event, sent_to: int | None) -> None:
        """A synthetic client's request goes on the wire towards the coordinator `sent_to` (None: a
        FindCoordinator, to the broker `lookup_node` draws when it arrives). It is written to `requests` when it
        reaches a broker: one still on the wire when the run ends was never seen, as an input row after the end
        would not be, and one sent to a down broker never is."""
        self.requests_sent_to[event.request_id] = sent_to
        self.hold(event)

    def close_client_runs(self, origin: str) -> None:
        """The client sent something else or stopped: its runs end here."""
        self.quiet.close_client(self.out, origin)

    def reject(self, event: Event, reason: str) -> None:
        self.out.reject(event, reason)

    def committed_offset(self, tp) -> int | None:
        """The offset committed for a partition, as the group's log holds it whoever has it loaded (the run's
        figures compare a new owner's start with it; a client learns it by OffsetFetch)."""
        committed = self.log.committed(*tp)
        return None if committed is None else committed["offset"]

    def respond_generic_error(self, request: Event, error: str, **fields) -> None:
        """An error raised before any handler logic: the response carries only Kafka's default fields (and
        `fields`, other columns of the row)."""
        result = CoordinatorResult(self.write_failures)
        result.respond_error(request, error, **fields)
        self.execute(result)

    def write(self) -> str | None:
        """The outcome of one append to the group's partition: None on success, or the error Kafka's append
        failed with when a COORDINATOR_FAULT injected a failure (also kept in `last_write_error`)."""
        self.last_write_error = self.write_failures.pop(0) if self.write_failures else None
        return self.last_write_error

    def append(self, records: list[Record]) -> str | None:
        """Append `records` in one write; returns the write's error, or None once they are appended."""
        error = self.write()
        if error is None:
            self.appended(records)
        return error

    def appended(self, records: list[Record], rows: bool = True) -> None:
        """Records whose write succeeded: they join the partition's log, offset records are replayed into the
        committed offsets (a classic group's GroupMetadata is not: its handlers already changed the group),
        and each becomes a row of its table (`rows` False: a quiet run's, written as the run)."""
        for record in records:
            self.log.append(record)
            if isinstance(record, OffsetCommitRecord):
                self.replay_offset_commit(record)
                if rows:
                    self.out.offset(self.offset_row(record, self.now))
            elif rows:
                self.out.group_metadata(self.now, record.value)

    def offset_row(self, record: OffsetCommitRecord, write_ts: int) -> dict:
        """The `offsets` row of an offset record written at `write_ts`."""
        row = {"topic": record.topic, "partition": record.partition, "write_ts": write_ts}
        return dict(record.value or TOMBSTONE_OFFSET, **row, **(record.context or NO_CONTEXT))

    def execute(self, result: CoordinatorResult) -> None:
        """Carry out a manager's result, effect by effect in its order (state/runtime/result.py)."""
        for effect in result.effects:
            kind = effect[0]
            if kind == RESPOND:
                self.respond(effect[1], effect[2], **effect[3])
            elif kind == APPEND:
                self.appended(effect[1])
            elif kind == SCHEDULE:
                self.timers.schedule(effect[1], effect[2], effect[3], *effect[4])
            elif kind == CANCEL:
                self.timers.cancel(effect[1])
            elif kind == CANCEL_ALL:
                self.timers.cancel_all()
            elif kind == CREATE_SIMPLE_GROUP:
                self._create_simple_group()
            elif kind == DELETE_GROUP:
                self._delete_group(effect[1])
            elif kind == DELETE_CONSUMER_GROUP:
                self.execute(self.consumer.delete_empty(self.now, effect[1], self.log, self.out))
            elif kind == REPLAY_CONSUMER_GROUP:
                self.execute(self.consumer.replay(self.now, *effect[1:], self.log, self.out))
            elif kind == CONSUMER_GROUP_WRITTEN:
                self.consumer.written(effect[1])
            elif kind == SCHEDULE_IF_ABSENT:
                if self.timers.get(effect[1]) is None:
                    self.timers.schedule(effect[1], effect[2], effect[3], *effect[4])
            elif kind == LOG_CONSUMER_GROUP:
                self.consumer.log_records(self.now, effect[1], self.log, self.out)
            elif kind == UNLOAD_CONSUMER_GROUP:
                self.execute(self.consumer.unload(self.now, self.out, effect[1]))
            elif kind == RESOLVE_REGEXES:
                self.execute(self.consumer.resolve_regular_expressions(self.now, effect[1], self.write_failures))
            elif kind == DISCONNECT:
                self._disconnect(effect[1])
            elif kind == STATE:
                _, previous, target, cause, generation_id, leader_id, member_count = effect
                self.out.group_state(self.now, CLASSIC, None if previous is None else previous.value, target.value,
                                     generation_id, leader_id, member_count, cause)
                if target is GroupState.PREPARING_REBALANCE:
                    self.metrics.rebalance(self.now, cause, self.config.group_initial_rebalance_delay_ms)
                self.metrics.group_state(self.now, target.value)
            elif kind == MEMBER:
                self.out.member(self.now, *effect[1:])
            elif kind == GENERATION:
                self.out.generation(effect[1])
            elif kind == ASSIGNMENT:
                self.out.assignment(effect[1])
            elif kind == REBALANCE_STARTED:
                self.metrics.rebalance(self.now, effect[1], self.config.group_initial_rebalance_delay_ms)
            elif kind == IN_STATE:
                self.metrics.group_state(self.now, effect[1])
            else:  # pragma: no cover - an effect kind without an executor is a bug in this module
                raise AssertionError(f"unknown effect {kind}")

    def replay_offset_commit(self, record: OffsetCommitRecord) -> None:
        """An appended offset record, replayed: a commit for a group that does not exist creates it first (Kafka's
        OffsetMetadataManager.replay, getOrMaybeCreateClassicGroup)."""
        if record.value is not None and self.classic.group is None and self.consumer.consumer_group is None:
            self._create_simple_group()
        self.offset_manager.replay(record)

    def _create_simple_group(self) -> None:
        self.execute(self.classic.create_simple_group(self.now))

    def _delete_group(self, cause: str) -> None:
        """The group goes Dead and is deleted: a classic group's tombstone was in the append, a consumer group's
        tombstones close it."""
        if self.classic.group is not None:
            self.execute(self.classic.delete(self.now, cause))
        else:
            self.execute(self.consumer.delete_empty(self.now, cause, self.log, self.out))

    # -- coordinator faults --------------------------------------------------------------------------------
    def _handle_fault(self, fault: CoordinatorFault) -> None:
        if fault.fault == "write_failure":
            self.write_failures.extend([fault.error] * fault.count)
        elif fault.fault == "crash":
            self._crash()
        elif fault.fault == "live_brokers":
            self.live_brokers = fault.brokers
        else:
            self._move(fault.coordinator_id, fault.load_delay_ms)

    def _move(self, broker: int | None, load_delay_ms: int) -> None:
        """The group's partition gets a new leader (`broker`; None: an unnamed one; NO_LEADER: none), which
        loads the group for `load_delay_ms`. A live old leader unloads it first."""
        if broker is None and self.loading_until is not None:
            return  # an unnamed move while one is loading: the pending load stands
        if not (self.leaderless or self.coordinator_epoch in self.down_epochs):
            self._unload()  # also drops a load in progress
        self.loading_until = None
        self.coordinator_epoch += 1
        self.coordinators.append(broker)
        self.out.coordinator_id = self.coordinator_id
        if broker != NO_LEADER:
            self.loading_until = self.now + load_delay_ms
            self.timers.schedule(("load",), self.loading_until, "load")

    def _crash(self) -> None:
        """The coordinator's broker fails: the group leaves with its memory, requests parked there and every
        request sent to it until a new leader is known fail to connect. It still leads the partition for the
        controller until it is fenced (the `move` that follows), so FindCoordinator keeps naming it."""
        if self.leaderless or self.coordinator_epoch in self.down_epochs:
            return
        self._unload(crashed=True)
        self.loading_until = None
        self.down_epochs.add(self.coordinator_epoch)

    def _unload(self, crashed: bool = False) -> None:
        """The coordinator lost the group: its parked requests are answered NOT_COORDINATOR (or their
        connections fail, when its broker `crashed`), the group is Dead, and the group, its offsets and the
        coordinator's timers leave its memory (the clients' timers go on; the partition keeps the records a load
        replays)."""
        self.timers.cancel_all()
        self.offset_manager.unload()
        self.execute(self.consumer.unload(self.now, self.out))
        self.execute(self.classic.unload(self.now, crashed))

    def _load_group(self) -> None:
        """A coordinator loads the group by replaying its records: the committed offsets, then the consumer
        group or the classic group its records hold."""
        self.loading_until = None
        self.offset_manager.load(self.log)
        loaded = self.consumer.load(self.now, self.log, self.out, self.write_failures)
        if loaded is not None:
            self.execute(loaded)
            return
        self.execute(self.classic.load(self.now, self.log.group_metadata(), bool(self.offset_manager.offsets)))

    # -- sweep ---------------------------------------------------------------------------------------------
    def _sweep_inputs(self) -> tuple:
        """Everything the sweep's due time depends on, cheaply comparable: recomputing it over every
        committed offset after each step would dominate a busy group's cost."""
        group = self.classic.group
        common = (self.offset_manager.version, self.loading_until, self.last_sweep_ts)
        if group is None and self.consumer.consumer_group is not None:
            # A consumer group's offsets expire from their commits: only its subscriptions matter, and whether
            # it is Empty (then deleted once they are gone).
            cg = self.consumer.consumer_group
            return (id(cg), not cg.members, frozenset(cg.subscribed_topic_names)) + common
        if group is None:
            return (None,) + common
        return (id(group), group.state, group.protocol_type, group.subscribed_topics, group.current_state_ts) + common

    def _reschedule_sweep(self) -> None:
        inputs = self._sweep_inputs()
        if inputs == self._sweep_inputs_seen:
            return  # the sweep scheduled for these inputs still stands
        self._sweep_inputs_seen = inputs
        due = None if self.loading_until is not None else self.offset_manager.next_expiry_due(self.now)
        current = self.timers.get(SWEEP_TIMER)
        if due is None:
            self.timers.cancel(SWEEP_TIMER)
            return
        if current is not None and current.deadline <= self.now and due <= self.now:
            return  # a tick at the current time is still to fire, before any later event
        # Ticks at or before `now` already ran (deadlines fire before events at the same time).
        interval = self.config.offsets_retention_check_interval_ms
        tick = (max(due, self.now + 1) + interval - 1) // interval * interval
        if tick <= self.last_sweep_ts:
            tick = self.last_sweep_ts + interval
        if current is None or current.deadline != tick:
            self.timers.schedule(SWEEP_TIMER, tick, "sweep")

    # -- encoding ------------------------------------------------------------------------------------------
    def encode(self) -> bytes:
        """The state in its stored form (state/runtime/encoding.py); the configuration comes with `decode`."""
        if len(self.out):
            raise AssertionError("take_output() before encode(): rows would be lost")
        return encoding.dumps((self, self.out.next_seq))

    @classmethod
    def decode(cls, blob: bytes, config: CoordinatorConfig) -> "GroupRuntime":
        runtime, next_seq = encoding.loads(blob)
        runtime.out = runtime._new_output(next_seq)
        runtime._sweep_inputs_seen = None  # the sweep's inputs hold object ids, meaningless once decoded
        runtime.fleet.host = runtime.periodic_answers.runtime = runtime
        runtime.lookup_answers = LookupAnswers(runtime)
        offsets = runtime.offset_manager
        classic = runtime.classic
        offsets.classic, offsets.consumer, offsets.image = classic, runtime.consumer, runtime.image
        classic.ids, classic.now, classic.op = runtime.ids, -1, None
        consumer = runtime.consumer
        consumer.ids, consumer.image, consumer.classic, consumer.now, consumer.op = (runtime.ids, runtime.image,
                                                                                     classic, -1, None)
        runtime.reconfigure(config)
        return runtime

    def reconfigure(self, config: CoordinatorConfig) -> None:
        """The broker settings the coordinator runs with from now on (the managers' too)."""
        self.config = self.classic.config = self.consumer.config = self.offset_manager.config = config


_REQUEST_HANDLERS = {
    "JOIN_GROUP": lambda runtime, req: runtime.execute(
        runtime.classic.join_group(runtime.now, req, runtime.write_failures,
                                   runtime.consumer.consumer_group is not None)),
    "SYNC_GROUP": lambda runtime, req: runtime.execute(runtime.classic.sync_group(runtime.now, req,
                                                                                  runtime.write_failures)),
    "HEARTBEAT": lambda runtime, req: runtime.execute(runtime.classic.heartbeat(runtime.now, req,
                                                                                runtime.write_failures)),
    "LEAVE_GROUP": lambda runtime, req: runtime.execute(runtime.classic.leave_group(runtime.now, req,
                                                                                    runtime.write_failures)),
    "OFFSET_COMMIT": lambda runtime, req: runtime.execute(
        runtime.offset_manager.commit_offset(runtime.now, req, runtime.write_failures)),
    "OFFSET_FETCH": lambda runtime, req: runtime.execute(
        runtime.offset_manager.fetch_offsets(req, runtime.write_failures)),
    "CONSUMER_GROUP_HEARTBEAT": lambda runtime, req: runtime.execute(
        runtime.consumer.heartbeat(runtime.now, req, runtime.write_failures)),
}


def _concerns_timer(timer: Timer) -> tuple[str | None, bool]:
    """Whom a due timer concerns: one client (its own timers and answers) or the whole group."""
    if timer.kind in ("client", "deliver"):
        return timer.args[0], False
    return None, True


def _concerns_event(event: Event) -> tuple[str | None, bool]:
    # A client's directive, its periodic request or other commit (which touch only its own member and the
    # offsets it commits) and its lookup (answered from metadata) concern that client alone; so does a dynamic
    # member's first JoinGroup (KIP-394: answered MEMBER_ID_REQUIRED, or refused, the group's members
    # unchanged). Anything else can change what every member's next request gets.
    if event.type in CLIENT_DIRECTIVE_CLASSES and not isinstance(event, TopicMetadata):
        return event.client_id, False
    if isinstance(event, CoordinatorFault) and event.fault == "live_brokers":
        return None, False  # it changes only where later lookups go: the loops are run up to it first
    if event.origin is not None and (event.run is not None or event.type in ("OFFSET_COMMIT", "FIND_COORDINATOR")
                                     or _asks_member_id(event)):
        return event.client_id, False
    return None, True


def _asks_member_id(event: Event) -> bool:
    """A JoinGroup that a group answers with a member id to come back with rather than admitting it."""
    return (event.type == "JOIN_GROUP" and event.member_id == "" and event.group_instance_id is None
            and event.api_version >= 4)
