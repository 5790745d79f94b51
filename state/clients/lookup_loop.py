"""The coordinator lookup loop in closed form: a client whose coordinator's broker is down costs no step per
request, answer and timer while FindCoordinator still names that broker, or while no broker leads the group's
partition.

Until the controller fences a failed broker, FindCoordinator names it as the group's coordinator, so a client
of the group goes round a loop (the Java client's ensureCoordinatorReady): its heartbeat or commit goes to
the dead broker, the connection fails (NETWORK_EXCEPTION), the client marks the coordinator unknown, looks
it up again after retry.backoff.ms (its heartbeat thread) or at its next poll, is told the same broker, and
tries again. The lookups reach a broker and are written (a `requests` and a `responses` row each, at the
broker `lookup_node` draws); the heartbeats and commits sent to the down broker reach none and get a
`responses` row of their failed connection only (the brokers' side of it: state/runtime/lookups.py). While the partition has no leader (no replica in sync is live),
lookups are answered COORDINATOR_NOT_AVAILABLE: the client never learns a coordinator, its heartbeat thread
looks up again every retry.backoff.ms and its poll loop after the exponential backoff, whose jitter is drawn
from the client and the time of the answer (ClientConfig.retry_backoff), so the loop computes it as well.

With coordsim.periodic.elision, a client in that loop has its heartbeat and poll timers taken out of the
queue after a step that concerns it, when it has nothing on the wire (state/clients/elision.py does the same for a
steady client's periodic requests). Its loop is then a few integers (`LookupLoop`): whether it knows the
coordinator, when its heartbeat thread and its poll loop run next, what it has on the wire and since when.
Before the group handles anything else, and at the end of each `advance_to`, every loop is run up to that
time in a tight loop that does what ConsumerFleet's handlers do in these states (`_heartbeat`, `_poll`, and
the answers of `_on_heartbeat_response`, `_on_commit_response` and `_on_find_coordinator_response` to a
failed connection and a lookup), and the requests that arrived are written in the order the coordinator
takes requests in: (ts, seq, source, line) over every client. The client's explicit state (its counters, its
timers, a request on the wire, an answer on its way back) is put back when the next item concerns it or the
whole group (a coordinator move among them), or falls on one of its own instants.

The loop's clients are independent: a lookup, or a request to the down broker, changes nothing at the
coordinator but the rows it writes, so each loop runs on its own and only the rows are merged. The
coordinator's own clock (`timers.clock`, `timers.item`) is not moved by the closed-form steps: they schedule
nothing on the coordinator's side, and the next step, at a later time, sets it.

Covered: a Stable member, its heartbeat thread running, nothing to rejoin, fetch or close, not paused, with
auto-commit or no commits of the application's own, a retry.backoff.ms of at least 1 ms and a round trip of at
least 1 ms each way (so a request never arrives, nor an answer comes back, in the millisecond it was sent).
Anything else goes step by step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from state.clients.fleet import ConsumerFleet, Phase, SyntheticConsumer
from state.runtime.lookups import LookupAnswers

FIND, HEARTBEAT, COMMIT = "find", "heartbeat", "commit"
# A client's items due in the same millisecond come in its timers' order: its own timers by kind (heartbeat,
# then poll), then its answers by request id ("<origin>/<n>" for a lookup sorts before "…/commit@" and
# "…/heartbeat@").
HEARTBEAT_TIMER, POLL_TIMER = "heartbeat timer", "poll timer"
SLOTS = (FIND, HEARTBEAT, COMMIT)
# The timers the loop takes over, and those a looping client may leave in the queue (a leader's metadata
# refresh: when it fires, the client is put back first).
LOOP_TIMERS = ("heartbeat", "poll")
LEFT_TIMERS = ("metadata",)


@dataclass
class LookupLoop:
    known: bool                 # the last lookup's answer stands (the client's `coordinator` is the group's epoch)
    heartbeat: int              # the heartbeat thread's next run
    poll: int | None            # the poll loop's next poll (None: it waits for a lookup's answer)
    next_commit: int            # the client's `next_auto_commit`
    counter: int                # the client's `request_counter`
    attempts: int               # the client's `retry_attempts`
    folded_to: int              # its instants before this are done
    quiet_until: int            # its first instant at or after `folded_to`
    flying: dict[str, tuple[int, int]] = field(default_factory=dict)  # slot -> (sent, seq) of its request
    wire: list[tuple] = field(default_factory=list)  # (arrival, seq, line, chain, sent) of requests not arrived
    answer: dict | None = None  # the `responses` row of the lookup in `flying`, once it arrived


class LookupLoops:
    """The group's clients going round the lookup loop in closed form, by client id. Each operation is given
    the group's clients (`fleet`: their clock, timers and requests) and the brokers' half (`brokers`,
    state/runtime/lookups.py: what FindCoordinator names, the rows of the requests that arrive), never the
    runtime itself."""

    def __init__(self) -> None:
        self.loops: dict[str, LookupLoop] = {}

    def elide(self, fleet: ConsumerFleet, brokers: LookupAnswers, target: str | None, whole_group: bool) -> None:
        """After a step: take over the loop of the clients it concerned that go round it with nothing on the
        wire."""
        if not brokers.loop_goes_round():
            return
        clients = fleet.clients
        for client in clients.values() if whole_group else filter(None, (clients.get(target),)):
            if not client.in_flight and not client.awaiting and client.client_id not in self.loops:
                self._try_loop(fleet, brokers, client)

    def _try_loop(self, fleet: ConsumerFleet, brokers: LookupAnswers, client: SyntheticConsumer) -> None:
        now, cfg = fleet.now, client.config
        if (not client.alive or client.closing or client.phase != Phase.STABLE or not client.heartbeat_enabled
                or client.rejoin_needed or client.kicked_out or client.unpositioned
                or client.paused_until > now or client.poll_stalled_until > now
                or client.coordinator not in (None, brokers.discoverable_coordinator)
                or cfg.request_latency_ms < 1 or cfg.response_latency_ms < 1 or cfg.retry_backoff_ms < 1
                # the application's own commits: commitSync holds its poll loop, commitAsync sends over one out
                or (cfg.commits_periodically and not cfg.enable_auto_commit)):
            return
        # Its quiet runs closed with its first request to the down broker; one still open would close inside
        # the loop.
        if brokers.has_open_runs(client.origin):
            return
        timers = {t.key[2]: t for t in fleet.periodic_timers(client)}
        heartbeat, poll = timers.get("heartbeat"), timers.get("poll")
        if heartbeat is None or any(kind not in LOOP_TIMERS + LEFT_TIMERS for kind in timers):
            return
        first = min(heartbeat.deadline, heartbeat.deadline if poll is None else poll.deadline)
        if first <= now:
            return  # it fires next: the client would be put back at once
        for t in (heartbeat, poll):
            if t is not None:
                fleet.timers.cancel(t.key)
        self.loops[client.client_id] = LookupLoop(
            known=client.coordinator is not None, heartbeat=heartbeat.deadline,
            poll=None if poll is None else poll.deadline, next_commit=client.next_auto_commit,
            counter=client.request_counter, attempts=client.retry_attempts, folded_to=now + 1, quiet_until=first)

    def catch_up(self, fleet: ConsumerFleet, brokers: LookupAnswers, at: int, target: str | None,
                 whole_group: bool) -> bool:
        """Before an item at `at`: run every loop up to `at`, and put back the clients the item concerns
        (`target`, or all when `whole_group`) and those with an instant at `at`. True if any was put back."""
        self.fold(fleet, brokers, at)
        back = [client_id for client_id, loop in self.loops.items()
                if whole_group or client_id == target or loop.quiet_until == at]
        for client_id in back:
            self._end_loop(fleet, brokers, fleet.clients[client_id], self.loops.pop(client_id))
        return bool(back)

    def fold(self, fleet: ConsumerFleet, brokers: LookupAnswers, at: int) -> None:
        """Run every loop up to `at` (its instants before `at`) and write the lookups that arrived."""
        arrived: list[tuple] = []
        for client_id, loop in self.loops.items():
            if loop.quiet_until < at:
                self._run_loop(fleet, brokers, fleet.clients[client_id], loop, at, arrived)
            loop.folded_to = max(loop.folded_to, at)
        if arrived:
            for client_id, answer in brokers.write_arrivals(arrived).items():
                self.loops[client_id].answer = answer

    def wakeup(self) -> int | None:
        """When the first looping client has something due."""
        return min((loop.quiet_until for loop in self.loops.values()), default=None)

    def _run_loop(self, fleet: ConsumerFleet, brokers: LookupAnswers, client: SyntheticConsumer, loop: LookupLoop,
                  at: int, arrived: list) -> None:
        """The client's instants before `at`, as ConsumerFleet handles them in the loop's states; the
        requests that arrived before `at` go to `arrived`."""
        cfg = client.config
        there, rtt, backoff = cfg.request_latency_ms, cfg.coordsim_network_rtt_ms, cfg.retry_backoff_ms
        commits, owned = cfg.commits_periodically, bool(client.owned)
        lines = {slot: fleet.request_line(client, None if slot == FIND else slot) for slot in SLOTS}
        wire = loop.wire
        known, heartbeat, poll, next_commit, counter, attempts = (loop.known, loop.heartbeat, loop.poll,
                                                                  loop.next_commit, loop.counter, loop.attempts)
        found = brokers.discoverable_coordinator is not None  # what every lookup is told: the down broker, or none
        # (sent, seq) of the request in each slot, or None
        find, beat, commit = (loop.flying.get(slot) for slot in SLOTS)
        while True:
            # Its timers first, the heartbeat's before the poll's; then its answers: a lookup's, a commit's, a
            # heartbeat's (strictly earlier ones only: a tie stays with what came first here).
            t, item = (poll, POLL_TIMER) if poll is not None and poll < heartbeat else (heartbeat, HEARTBEAT_TIMER)
            if find is not None and find[0] + rtt < t:
                t, item = find[0] + rtt, FIND
            if commit is not None and commit[0] + rtt < t:
                t, item = commit[0] + rtt, COMMIT
            if beat is not None and beat[0] + rtt < t:
                t, item = beat[0] + rtt, HEARTBEAT
            if t >= at:
                break
            send = None
            if item == HEARTBEAT_TIMER:
                if known:
                    send = HEARTBEAT if beat is None else None
                    heartbeat = t + cfg.heartbeat_interval_ms
                else:
                    send = FIND if find is None else None
                    heartbeat = t + backoff
            elif item == POLL_TIMER:
                poll = None
                if not known:
                    send = FIND if find is None else None
                elif commits:
                    if t >= next_commit:
                        next_commit = t + cfg.commit_interval_ms
                        # auto-commit skips while its previous commit is out
                        send = COMMIT if owned and commit is None else None
                    poll = client.next_poll(max(next_commit, t + 1))
            elif item == FIND:
                find = None
                if found:
                    known, poll = True, client.next_poll(t)
                else:
                    poll = client.next_poll(t + cfg.retry_backoff(attempts, client.jitter_seed(t)))
                    attempts += 1
            else:  # the connection to the down broker failed
                known = False
                if item == HEARTBEAT:
                    beat, heartbeat = None, t + backoff
                else:
                    commit = None
            if send is not None:
                if send == FIND:
                    counter += 1
                    find = (t, counter)
                elif send == HEARTBEAT:
                    beat = (t, counter)
                else:
                    commit = (t, counter)
                # The chain it belongs to, as the fleet names them (None: a lookup).
                wire.append((t + there, counter, lines[send], None if send == FIND else send, t))
        loop.known, loop.heartbeat, loop.poll, loop.next_commit, loop.counter, loop.attempts = (
            known, heartbeat, poll, next_commit, counter, attempts)
        loop.flying = {slot: request for slot, request in zip(SLOTS, (find, beat, commit)) if request is not None}
        done = 0
        while done < len(wire) and wire[done][0] < at:
            arrived.append(wire[done] + (client, loop))
            done += 1
        del wire[:done]
        loop.quiet_until = min([heartbeat] + ([poll] if poll is not None else [])
                               + [sent + rtt for sent, _ in loop.flying.values()] + [w[0] for w in wire[:1]])

    def _end_loop(self, fleet: ConsumerFleet, brokers: LookupAnswers, client: SyntheticConsumer, loop: LookupLoop
                  ) -> None:
        """Put back the client's explicit state as of `loop.folded_to`."""
        epoch = brokers.coordinator_epoch
        client.coordinator = epoch if loop.known else None
        client.request_counter, client.next_auto_commit, client.retry_attempts = (loop.counter, loop.next_commit,
                                                                                  loop.attempts)
        fleet.client_timer(client, "heartbeat", loop.heartbeat)
        if loop.poll is not None:
            fleet.client_timer(client, "poll", loop.poll)
        there = client.config.request_latency_ms
        for slot, (sent, seq) in loop.flying.items():
            if slot == FIND:
                event = fleet.lookup_request(client, seq, sent)
            else:
                event = fleet.periodic_request(client, slot, sent, seq)[0]
            client.in_flight[slot] = event.request_id
            if sent + there >= loop.folded_to:  # still on the wire
                fleet.host.transmit(event, None if slot == FIND else epoch)
            elif slot == FIND:
                fleet.route_response(event, dict(loop.answer, coordinator=epoch), sent + there)
            else:
                fleet.route_response(event, brokers.failed_connection(event, sent + there, epoch), sent + there)
