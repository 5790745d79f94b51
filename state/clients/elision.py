"""Periodic elision: a steady member's periodic requests cost (almost) no work and write the same quiet runs
(state/runtime/quiet_runs.py) as when they are simulated one by one.

Runs are written the same way whether the requests were simulated one by one (explicit mode,
`coordsim.periodic.elision=0`) or not at all (the default): with elision, a client in the steady state has
its heartbeat, commit and metadata-refresh timers and its session timer taken out of the timer queue;
before the group handles anything else, the elided requests are caught up in closed form (folded into their
runs, committed offsets and the member's session deadline brought up to date), and the client's explicit
state is put back whenever the next item concerns it, the group as a whole, or falls on one of its own
periodic instants. A client need not wait for a request handled step by step to open its runs: a chain
without an open run gets the run its next request would open, predicted when the client is elided (that
request as the client builds it, answered as a Stable group answers a current member's heartbeat or
commit); the run joins the open runs when the request arrives in closed form, among runs opened alike in
the order their first requests arrived. So a member is elided as soon as its SyncGroup and OffsetFetch
answers make it steady. A consumer-protocol client (KIP-848) has the same chains: its steady
ConsumerGroupHeartbeats (Stable at the group's epoch, carrying only who it is) and its poll loop's commits;
it is elided once both runs are open and its consumer group is Stable, its session follows its heartbeats
alone, and putting it back also puts its membership where those heartbeats and polls leave it
(`Membership.catch_up`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from state.clients.fleet import Phase, SyntheticConsumer
from state.consumer_group.group import ConsumerGroupState
from state.consumer_group.heartbeat import SESSION_TIMEOUT
from state.consumer_group.manager import CONSUMER_GROUP_TIMER
from state.classic.group_state import GroupState
from state.classic.manager import MemberError, validate_member
from state.offsets.production import rule_offset
from state.runtime.quiet_runs import COMMIT_CHAIN, HEARTBEAT_CHAIN, QuietRun, run_state
from state.records.group_log import OffsetCommitRecord
from state.runtime.timers import request_item


@dataclass
class Chain:
    """A periodic chain of one elided client: instants first + k * period, k >= 0."""
    first: int
    period: int
    done: int = 0      # instants whose timer already ran (in closed form)
    arrived: int = 0   # requests (sent at those instants) already folded into the run


@dataclass
class ElidedClient:
    heartbeat: Chain
    commit: Chain | None        # the poll chain, if the client's poll loop commits
    sends_commits: bool         # the poll commits (the client owns partitions)
    metadata: Chain | None      # the leader's metadata refresh
    session: object             # the member's session Timer taken out of the queue
    last_reset: tuple | None = None  # (arrival ts, timer item) of the last folded request: the session restarts
    # The chains were last folded up to `folded_to`; nothing of theirs happens from then until `quiet_until`
    # (no timer runs, no request arrives, no answer comes back), so an item in between needs no catching up.
    folded_to: int | None = None
    quiet_until: int = 0
    # Chains whose run was not open yet: the run their first request opens (by chain key, with that request's
    # sort key), predicted when the client was elided; it joins the open runs when that request arrives.
    opening: dict[str, tuple[tuple, QuietRun]] = field(default_factory=dict)

class PeriodicElision:
    """The group's elided clients, by client id. Each operation is given the group's runtime (`rt`), whose
    clock, timers, group, clients and quiet runs it reads and brings up to date."""

    def __init__(self) -> None:
        self.elided: dict[str, ElidedClient] = {}

    def open_runs(self, rt) -> tuple[list, list]:
        """The open runs as plain data, without changing them, for a live snapshot (state/runtime/snapshot.py): the
        runs in the order finish() writes them, and the runs elided clients' next requests will open, each
        after the sort key of its first request (`runs_at` reads them back). A run of an elided client's
        chain that sends carries how it grows, (chain's first instant, period, request latency, requests of
        the chain folded so far): its requests keep arriving at those instants until the client's explicit
        state is put back, which happens only at an item of the group's (its next wakeup, or an event)."""
        growth: dict[str, tuple] = {}
        openings = []
        for client_id, elided in self.elided.items():
            client = rt.fleet.clients[client_id]
            latency = client.config.request_latency_ms
            for chain, key, sends in ((elided.heartbeat, HEARTBEAT_CHAIN, True),
                                      (elided.commit, COMMIT_CHAIN, elided.sends_commits)):
                if chain is None or not sends:
                    continue
                name = f"{client.origin}/{key}"
                growth[name] = (chain.first, chain.period, latency, chain.arrived)
                if name in elided.opening:
                    sort_key, run = elided.opening[name]
                    openings.append((sort_key, run_state(run), growth[name]))
        runs = [(run_state(run), growth.get(name)) for name, run in rt.quiet.runs.items()]
        return runs, openings

    def elide_quiet_clients(self, rt, target: str | None, whole_group: bool) -> None:
        """After a step: take the periodic timers of the clients it may have brought to the steady state out
        of the queue. A step that concerned one client (its own timer, answer, directive or periodic request)
        changed nothing another client's steadiness depends on, so only that client is tried; a step that
        concerned the whole group tries them all."""
        group = rt.classic.group
        if rt.loading_until is not None or rt.write_failures:
            return
        if group is not None and group.state != GroupState.STABLE:
            return
        consumer_group = rt.consumer.consumer_group
        if group is None and (consumer_group is None or consumer_group.metadata_expired
                              or consumer_group.state != ConsumerGroupState.STABLE):
            return  # no group, or a consumer group not Stable (or whose next heartbeat refreshes its metadata)
        clients = rt.fleet.clients
        for client in clients.values() if whole_group else filter(None, (clients.get(target),)):
            # A request in flight is the usual reason not to: checked before anything costlier. A classic
            # client in a classic group, a consumer-protocol one (`membership`) in a consumer group; a classic
            # client inside a consumer group (an online migration) stays explicit.
            if (not client.in_flight and client.client_id not in self.elided and client.alive
                    and (client.phase == Phase.STABLE and group is not None if client.membership is None
                         else group is None)):
                self._try_elide(rt, client, group)

    def _try_elide(self, rt, client: SyntheticConsumer, group) -> None:
        now, cfg = rt.now, client.config
        latency = cfg.request_latency_ms + cfg.response_latency_ms
        if (client.closing or client.awaiting or client.paused_until > now or client.poll_stalled_until > now
                or client.coordinator != rt.coordinator_epoch):
            return
        membership = client.membership
        if membership is None:
            if (not client.heartbeat_enabled or client.rejoin_needed or client.generation != group.generation_id
                    or not group.has_member(client.member_id) or latency >= cfg.heartbeat_interval_ms):
                return
            interval = cfg.heartbeat_interval_ms
            identity = commit_identity = (client.member_id, client.generation, client.group_instance_id)
        else:
            interval = self._steady_member_interval(rt, client, latency)
            if interval is None:
                return
            identity = commit_identity = (membership.member_id, membership.member_epoch, client.group_instance_id)
        timers = {t.key[2]: t for t in rt.fleet.periodic_timers(client)}
        heartbeat, poll, metadata = (timers.pop(kind, None) for kind in ("heartbeat", "poll", "metadata"))
        if timers or heartbeat is None or heartbeat.deadline <= now:
            return
        origin = client.origin
        # A chain's run is open (and must take its next request as it stands), or it opens with the chain's
        # next request, predicted below once every cheaper check passed (a classic client's only: a member
        # of a consumer group waits for its first steady heartbeat and commit to open them).
        run = rt.quiet.runs.get(f"{origin}/{HEARTBEAT_CHAIN}")
        if run is not None and not self._continues(client, run, heartbeat.deadline, interval, identity):
            return
        if run is None and membership is not None:
            return
        commit = commit_run = None
        if poll is not None:
            p = poll.deadline
            period = self._poll_period(rt, client, p, interval)
            if p <= now or period is None or latency >= period:
                return
            if client.owned and cfg.commits_periodically:
                commit_run = rt.quiet.runs.get(f"{origin}/{COMMIT_CHAIN}")
                if commit_run is None:
                    if not client.consuming or client.unpositioned or membership is not None:
                        return  # its commits would not fold
                elif not (self._continues(client, commit_run, p, period, commit_identity)
                          and self._commits_fold(rt, client, commit_run)):
                    return
            commit = Chain(p, period)
        if metadata is not None:
            snapshot = client.metadata_snapshot
            current = {t: rt.cluster_topics[t] for t in snapshot if t in rt.cluster_topics} if snapshot else None
            if metadata.deadline <= now or current != snapshot:
                return
        opening: dict[str, tuple[tuple, QuietRun]] = {}
        if run is None and not self._predict(rt, client, HEARTBEAT_CHAIN, heartbeat.deadline, opening):
            return
        sends_commits = bool(client.owned) and cfg.commits_periodically
        if commit is not None and sends_commits and commit_run is None and not (
                self._predict(rt, client, COMMIT_CHAIN, commit.first, opening)
                and self._commits_fold(rt, client, opening[f"{origin}/{COMMIT_CHAIN}"][1])):
            return
        session = rt.timers.take(self._session_key(rt, client))
        if session is None:
            return
        for t in (heartbeat, poll, metadata):
            if t is not None:
                rt.fleet.timers.cancel(t.key)
        self.elided[client.client_id] = ElidedClient(
            heartbeat=Chain(heartbeat.deadline, interval), commit=commit, sends_commits=sends_commits,
            metadata=None if metadata is None else Chain(metadata.deadline, cfg.metadata_max_age_ms),
            session=session, opening=opening)

    def _steady_member_interval(self, rt, client: SyntheticConsumer, round_trip: int) -> int | None:
        """A consumer-protocol client's heartbeat interval if it is steady: its member Stable at the group's
        epoch (the group Stable: nothing to revoke or receive), nothing awaited, pending or to retry."""
        membership = client.membership
        member = rt.consumer.consumer_group.members.get(membership.member_id)
        if (member is None or member.member_epoch != membership.member_epoch or member.use_classic_protocol
                or client.member_requests or client.commit_retry is not None or client.unpositioned):
            return None
        return membership.steady_interval(rt.now, round_trip)

    def _poll_period(self, rt, client: SyntheticConsumer, p: int, heartbeat_interval: int) -> int | None:
        """The time from the poll at `p` to the next, the same from then on; None if the polls are not yet (or
        not at all) at a fixed cadence. A classic client's poll loop is a chain only while it commits."""
        cfg = client.config
        if client.membership is None:
            if p < client.next_auto_commit or not cfg.commits_periodically:
                return None
            return client.next_poll(p + cfg.commit_interval_ms) - p
        # clients.consumer_group.async_consumer._member_poll: the next poll when a commit is due, at least every half
        # max.poll.interval.ms (a member owning nothing polls on, its next auto-commit long due).
        half = cfg.max_poll_interval_ms // 2
        if not cfg.commits_periodically:
            step = half
        elif p < client.next_auto_commit or (client.owned and cfg.commit_interval_ms > half):
            return None
        else:
            step = cfg.commit_interval_ms if client.owned else 1
        period = client.next_poll(p + step) - p
        # Its poll timer never expires, nor comes before the next heartbeat is due.
        return period if period + heartbeat_interval < cfg.max_poll_interval_ms else None

    def _session_key(self, rt, client: SyntheticConsumer) -> tuple:
        if client.membership is None:
            return ("heartbeat", client.member_id)
        return (CONSUMER_GROUP_TIMER, SESSION_TIMEOUT, client.membership.member_id)

    def _session_timeout(self, rt, client: SyntheticConsumer) -> int:
        if client.membership is None:
            return rt.classic.group.member(client.member_id).session_timeout_ms
        return rt.config.group_consumer_session_timeout_ms

    def _predict(self, rt, client: SyntheticConsumer, chain: str, sent: int, opening: dict) -> bool:
        """Open the client's `chain` run in closed form (in `opening`): its first request is the one the client
        sends at `sent`, answered as a Stable group answers a current member's heartbeat or commit
        (handle_heartbeat, handle_offset_commit), the group unchanged until then. False if that request
        would not open a run."""
        event = rt.fleet.periodic_request(client, chain, sent)[0]
        try:
            validate_member(rt.classic.group, event.member_id, event.group_instance_id)
        except MemberError:
            return False
        with rt.out.deferred() as rows:
            if chain == HEARTBEAT_CHAIN:
                rt.out.response(event, event.ts, "NONE")
            else:
                results, records = rt.offset_manager.commit_records(event, event.ts)
                for record in records:
                    rt.out.offset(rt.offset_row(record, event.ts))
                rt.out.response(event, event.ts, "NONE", results=results)
        run = rt.quiet.open_run(rt.production, event, rows)
        if run is None:
            return False
        run.count = 0  # none of its requests has arrived yet
        opening[event.run] = (event.sort_key, run)
        return True

    def _commits_fold(self, rt, client: SyntheticConsumer, run: QuietRun) -> bool:
        """Every periodic commit of the client's folds into its commit run `run`: it commits its positions
        under the production rates the run's offsets rules were made from."""
        latency = client.config.request_latency_ms
        if not client.consuming:
            return False
        rate = client.config.coordsim_consume_records_per_second
        if rate and any(rate <= rt.production.get(tp.topic, (0, 0.0, 0))[1] or self._behind(rt, client, tp, rate)
                        for tp in client.owned):
            return False  # it may fall behind: its positions are not the log end's in closed form
        if [(r["topic"], r["partition"]) for r in run.offsets] != [tuple(tp) for tp in client.owned]:
            return False
        for row, rule in zip(run.offsets, run.rules):
            since, rate, base = rt.production.get(row["topic"], (0, 0.0, 0))
            if rule != ((rate, since + latency, base) if rate else (0.0, 0, base)):
                return False
        return True

    def _behind(self, rt, client: SyntheticConsumer, tp, rate: float) -> bool:
        """The client processes `tp` faster than it is produced to, but has not caught up with its log end yet
        (it was paused, or started behind): until it has, its commits are not the log end's. Compared before
        rounding, where both lines are straight, so caught up now means caught up at every later commit."""
        if tp not in client.started:
            return False
        since, position = client.started[tp]
        origin, produced, base = rt.production.get(tp.topic, (rt.now, 0.0, 0))
        return position + rate * (rt.now - since) / 1000 < base + produced * (rt.now - origin) / 1000

    @staticmethod
    def _continues(client: SyntheticConsumer, run: QuietRun | None, sent: int, period: int, identity: tuple) -> bool:
        """The client's open run would take its next periodic request, sent at `sent`, as it stands: answered to
        `identity` (member id, generation or member epoch, instance id)."""
        response = None if run is None else run.response
        return (run is not None and run.last_ts + period == sent + client.config.request_latency_ms
                and run.interval in (None, period)
                and (response["member_id"], response["generation_id"], response["group_instance_id"]) == identity)

    def catch_up(self, rt, at: int, target: str | None, whole_group: bool) -> bool:
        """Before an item at `at`: fold every elided request that arrived before `at`, and give back their
        explicit state to the clients the item concerns (`target`, or all when `whole_group`) and to those
        with a periodic instant at `at` itself. True if anything changed."""
        changed = False
        opened: list[tuple[tuple, str]] = []
        for client_id in list(self.elided):
            elided = self.elided[client_id]
            if (not whole_group and client_id != target and elided.folded_to is not None
                    and elided.folded_to <= at < elided.quiet_until):
                continue  # checked every item, so the common answer is a comparison away
            client = rt.fleet.clients[client_id]
            changed |= self._fold(rt, client, elided, at, opened)
            # `at` is one of its periodic instants if the first one at or after it is `at` itself.
            if whole_group or client_id == target or elided.quiet_until == at:
                self._restore(rt, client, elided, at)
                changed = True
        self._in_arrival_order(rt, opened)
        return changed

    def fold_elided(self, rt, at: int) -> None:
        """Fold the elided requests that arrived before `at` (the end of a run)."""
        opened: list[tuple[tuple, str]] = []
        for client_id, elided in self.elided.items():
            self._fold(rt, rt.fleet.clients[client_id], elided, at, opened)
        self._in_arrival_order(rt, opened)

    def _in_arrival_order(self, rt, opened: list[tuple[tuple, str]]) -> None:
        """Runs that opened in closed form during one catch-up (the last ones in `runs`) take their places in
        the order their first requests arrived, as handled one by one they would have: the open runs are
        written in that order at the end of the run."""
        if len(opened) > 1:
            for _, key in sorted(opened):
                rt.quiet.runs[key] = rt.quiet.runs.pop(key)

    @staticmethod
    def _count_before(chain: Chain, offset: int, at: int) -> int:
        """How many instants k have first + k * period + offset < at."""
        span = at - chain.first - offset
        return 0 if span <= 0 else -(-span // chain.period)

    def _fold(self, rt, client: SyntheticConsumer, elided: ElidedClient, at: int, opened: list) -> bool:
        latency = client.config.request_latency_ms
        changed = False
        for chain, key, sends in ((elided.heartbeat, HEARTBEAT_CHAIN, True),
                                  (elided.commit, COMMIT_CHAIN, elided.sends_commits)):
            if chain is None:
                continue
            chain.done = max(chain.done, self._count_before(chain, 0, at))
            if not sends:
                continue
            arrived = self._count_before(chain, latency, at)
            if arrived <= chain.arrived:
                continue
            changed = True
            name = f"{client.origin}/{key}"
            first = elided.opening.pop(name, None)
            if first is not None:  # its first request arrived: the run predicted for it opens
                opened.append((first[0], name))
                rt.quiet.runs[name] = first[1]
            run = rt.quiet.runs[name]
            _arrive(run, chain, arrived, latency)
            chain.arrived = arrived
            if key == HEARTBEAT_CHAIN or client.membership is None:  # a consumer member's commits keep no session
                reset = (run.last_ts, request_item(client.request_counter, _member_id(client)))
                elided.last_reset = reset if elided.last_reset is None else max(elided.last_reset, reset)
            if key == COMMIT_CHAIN:
                self._commit_in_closed_form(rt, run)
        if elided.metadata is not None:
            elided.metadata.done = self._count_before(elided.metadata, 0, at)
        elided.folded_to, elided.quiet_until = at, self._next_instant(rt, client, elided, at)
        return changed

    def _next_instant(self, rt, client: SyntheticConsumer, elided: ElidedClient, at: int) -> int:
        """The first of the client's periodic instants at or after `at`: when one of its chains' timers
        runs (first + k * period, k >= 0), its request arrives (+ request latency) or its answer comes back
        (+ the round trip). `_fold` changes nothing before it."""
        cfg = client.config
        there = cfg.request_latency_ms
        offsets = (0, there, there + cfg.response_latency_ms)
        first = None
        for chain in (elided.heartbeat, elided.commit, elided.metadata):
            if chain is None:
                continue
            for d in offsets:
                start = chain.first + d
                instant = start if at <= start else start - (start - at) // chain.period * chain.period
                if first is None or instant < first:
                    first = instant
        return first

    def _commit_in_closed_form(self, rt, run: QuietRun) -> None:
        """The run's last commit, appended and replayed; its rows are the run's own."""
        rt.appended([OffsetCommitRecord(row["topic"], row["partition"], {
            "offset": rule_offset(rule, run.last_ts), "leader_epoch": row["leader_epoch"],
            "metadata": row["metadata"], "commit_ts": run.last_ts, "expire_ts": row["expire_ts"],
            "topic_id": row["topic_id"]})
            for row, rule in zip(run.offsets, run.rules)], rows=False)

    def _restore(self, rt, client: SyntheticConsumer, elided: ElidedClient, at: int) -> None:
        """Put back the explicit state the client would have at `at` had it run step by step."""
        del self.elided[client.client_id]
        cfg = client.config
        latency, back = cfg.request_latency_ms, cfg.response_latency_ms
        session = elided.session
        if elided.last_reset is None:
            rt.timers.restore(session)
        else:
            ts, item = elided.last_reset
            rt.timers.schedule_as_of(ts, item, session.key, ts + self._session_timeout(rt, client), session.kind,
                                     *session.args)
        membership = client.membership
        awaited = None  # a consumer member's steady heartbeat still awaited
        for chain, key in ((elided.heartbeat, HEARTBEAT_CHAIN), (elided.commit, COMMIT_CHAIN)):
            if chain is None:
                continue
            kind = "heartbeat" if key == HEARTBEAT_CHAIN else "poll"
            rt.fleet.client_timer(client, kind, chain.first + chain.done * chain.period)
            sends = key == HEARTBEAT_CHAIN or elided.sends_commits
            if key == COMMIT_CHAIN and chain.done and (membership is None or sends):
                client.next_auto_commit = chain.first + (chain.done - 1) * chain.period + cfg.commit_interval_ms
            if chain.done == 0 or not sends:
                continue
            sent = chain.first + (chain.done - 1) * chain.period
            # A member's heartbeat is awaited by its membership, not in a slot of the client's.
            member_heartbeat = membership is not None and key == HEARTBEAT_CHAIN
            if member_heartbeat and sent + latency + back >= at:
                awaited = membership.steady_request()
            if chain.arrived < chain.done:  # on the wire
                if member_heartbeat:
                    event, sent_to = rt.fleet.periodic_request(client, key, sent)
                    client.member_requests[event.request_id] = awaited
                    rt.transmit(event, sent_to)
                else:
                    rt.fleet.send_periodic(client, key, sent)
            elif sent + latency + back >= at:  # answered, the answer on its way back
                run = rt.quiet.runs[f"{client.origin}/{key}"]
                row = dict(run.response, request_ts=sent + latency, response_ts=sent + latency,
                           request_id=rt.fleet.periodic_request_id(client, key, sent),
                           request_seq=client.request_counter)
                if member_heartbeat:
                    client.member_requests[row["request_id"]] = awaited
                else:
                    client.in_flight[key] = row["request_id"]
                client.awaiting += 1
                rt.fleet.timers.schedule(("deliver", client.client_id, row["request_id"]), sent + latency + back,
                                     "deliver", client.client_id, client.incarnation, row)
        if membership is not None:
            self._restore_membership(rt, client, elided, at, awaited)
        if elided.metadata is not None:
            m = elided.metadata
            rt.fleet.client_timer(client, "metadata", m.first + m.done * m.period)

    def _restore_membership(self, rt, client: SyntheticConsumer, elided: ElidedClient, at: int, awaited) -> None:
        """Where the elided heartbeats and polls leave a consumer-protocol client's membership at `at`, and
        its heartbeat timer where its background thread would have set it."""
        heartbeat, poll = elided.heartbeat, elided.commit
        round_trip = client.config.request_latency_ms + client.config.response_latency_ms
        answers = min(heartbeat.done, self._count_before(heartbeat, round_trip, at))
        client.membership.catch_up(
            sent=heartbeat.first + (heartbeat.done - 1) * heartbeat.period if heartbeat.done else None,
            answered=heartbeat.first + (answers - 1) * heartbeat.period + round_trip if answers else None,
            answers=answers, in_flight=awaited,
            polled=poll.first + (poll.done - 1) * poll.period if poll is not None and poll.done else None)
        deadline = client.membership.next_deadline(at)
        if deadline is not None:
            rt.fleet.client_timer(client, "heartbeat", max(deadline, at))

    def elided_session_deadlines(self, rt) -> list[int]:
        """Where the elided members' session timers would stand now."""
        deadlines = []
        for client_id, elided in self.elided.items():
            client = rt.fleet.clients[client_id]
            latency = client.config.request_latency_ms
            # A consumer member's commits keep no session.
            commit_resets = elided.sends_commits and client.membership is None
            last = [chain.first + (n - 1) * chain.period + latency
                    for chain, sends in ((elided.heartbeat, True), (elided.commit, commit_resets))
                    if chain is not None and sends and (n := self._count_before(chain, latency, rt.now + 1))]
            if last:
                deadlines.append(max(last) + self._session_timeout(rt, client))
            else:
                deadlines.append(elided.session.deadline)
        return deadlines


def _member_id(client: SyntheticConsumer) -> str:
    return client.member_id if client.membership is None else client.membership.member_id


def _arrive(run: QuietRun, chain: Chain, arrived: int, latency: int) -> None:
    """The first `arrived` requests of an elided chain have arrived; `chain.arrived` of them are in `run`."""
    run.count += arrived - chain.arrived
    if run.count > 1:
        run.interval = chain.period
    run.last_ts = chain.first + (arrived - 1) * chain.period + latency


def runs_at(runs: list, openings: list, at: int) -> list[QuietRun]:
    """The runs of `open_runs` as they stand at `at` (from the time they were taken until the group's next
    wakeup): grown by the requests of their chains that arrived by `at`, those the elided clients' chains
    opened by then after the others, in the order their first requests arrived (as fold_elided and
    finish() leave them)."""
    out = [_grown(state, growth, at) for state, growth in runs]
    opened = sorted(((sort_key, run) for sort_key, state, growth in openings
                     if (run := _grown(state, growth, at)).count > 0), key=lambda pair: pair[0])
    return out + [run for _, run in opened]


def _grown(state: tuple, growth: tuple | None, at: int) -> QuietRun:
    run = QuietRun(*state)
    if growth is not None:
        first, period, latency, folded = growth
        chain = Chain(first, period, arrived=folded)
        arrived = PeriodicElision._count_before(chain, latency, at + 1)
        if arrived > folded:
            _arrive(run, chain, arrived, latency)
    return run

