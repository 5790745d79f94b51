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

This module is the client side's half: when a client is steady, its chains' instants, and the explicit state
it gets back. What the coordinator does with the elided requests (the member's session timer, the runs they
fold into, the commits they append, the answers on their way back) is the coordinator's half,
state/runtime/periodic_answers.py, which this half asks before it elides a member and tells when requests
arrive and when the member is given back.
"""

from __future__ import annotations

from dataclasses import dataclass

from state.clients.fleet import ConsumerFleet, Phase, SyntheticConsumer
from state.runtime.periodic_answers import CLASSIC, Arrivals, PeriodicAnswers, count_before
from state.runtime.quiet_runs import COMMIT_CHAIN, HEARTBEAT_CHAIN
from state.runtime.timers import request_item


@dataclass
class Chain:
    """A periodic chain of one elided client: instants first + k * period, k >= 0."""
    first: int
    period: int
    done: int = 0      # instants whose timer already ran (in closed form)


@dataclass
class ElidedClient:
    heartbeat: Chain
    commit: Chain | None        # the poll chain, if the client's poll loop commits
    sends_commits: bool         # the poll commits (the client owns partitions)
    metadata: Chain | None      # the leader's metadata refresh
    # The chains were last folded up to `folded_to`; nothing of theirs happens from then until `quiet_until`
    # (no timer runs, no request arrives, no answer comes back), so an item in between needs no catching up.
    folded_to: int | None = None
    quiet_until: int = 0

class PeriodicElision:
    """The group's elided clients, by client id. Each operation is given the group's clients (`fleet`: their
    clock, timers and requests, and the cluster's topics and production as clients learn them) and the
    coordinator's half (`answers`, state/runtime/periodic_answers.py), never the runtime itself."""

    def __init__(self) -> None:
        self.elided: dict[str, ElidedClient] = {}

    def elide_quiet_clients(self, fleet: ConsumerFleet, answers: PeriodicAnswers, target: str | None,
                            whole_group: bool) -> None:
        """After a step: take the periodic timers of the clients it may have brought to the steady state out
        of the queue. A step that concerned one client (its own timer, answer, directive or periodic request)
        changed nothing another client's steadiness depends on, so only that client is tried; a step that
        concerned the whole group tries them all."""
        clients = fleet.clients
        if whole_group:
            candidates = clients.values()
        else:  # every step comes here: the one client's own state is the cheapest reason not to
            client = clients.get(target)
            if client is None or client.in_flight or client.client_id in self.elided or not client.alive:
                return
            candidates = (client,)
        protocol = answers.accepts()
        if protocol is None:
            return
        for client in candidates:
            # A request in flight is the usual reason not to: checked before anything costlier. A classic
            # client in a classic group, a consumer-protocol one (`membership`) in a consumer group; a classic
            # client inside a consumer group (an online migration) stays explicit.
            if client.in_flight or client.client_id in self.elided or not client.alive:
                continue
            classic = client.membership is None
            if (client.phase == Phase.STABLE and protocol == CLASSIC) if classic else protocol != CLASSIC:
                self._try_elide(fleet, answers, client, protocol)

    def _try_elide(self, fleet: ConsumerFleet, answers: PeriodicAnswers, client: SyntheticConsumer, protocol: str
                   ) -> None:
        now, cfg = fleet.now, client.config
        latency = cfg.request_latency_ms + cfg.response_latency_ms
        if client.closing or client.awaiting or client.paused_until > now or client.poll_stalled_until > now:
            return
        membership = client.membership
        if membership is None:
            if (not client.heartbeat_enabled or client.rejoin_needed
                    or not answers.is_current(protocol, client.member_id, client.generation, client.coordinator)
                    or latency >= cfg.heartbeat_interval_ms):
                return
            interval = cfg.heartbeat_interval_ms
            identity = (client.member_id, client.generation, client.group_instance_id)
        else:
            interval = self._steady_member_interval(fleet, answers, client, protocol, latency)
            if interval is None:
                return
            identity = (membership.member_id, membership.member_epoch, client.group_instance_id)
        timers = {t.key[2]: t for t in fleet.periodic_timers(client)}
        heartbeat, poll, metadata = (timers.pop(kind, None) for kind in ("heartbeat", "poll", "metadata"))
        if timers or heartbeat is None or heartbeat.deadline <= now:
            return
        origin, there = client.origin, cfg.request_latency_ms
        # A chain's run is open (and must take its next request as it stands), or it opens with the chain's
        # next request, predicted below once every cheaper check passed (a classic client's only: a member
        # of a consumer group waits for its first steady heartbeat and commit to open them).
        heartbeat_name, commit_name = f"{origin}/{HEARTBEAT_CHAIN}", f"{origin}/{COMMIT_CHAIN}"
        heartbeat_open = answers.run_takes(heartbeat_name, heartbeat.deadline + there, interval, identity)
        if heartbeat_open is False or (heartbeat_open is None and membership is not None):
            return
        commit = None
        commit_open = None  # whether the open commit run takes the next commit (None: no run open)
        if poll is not None:
            p = poll.deadline
            period = self._poll_period(client, p, interval)
            if p <= now or period is None or latency >= period:
                return
            if client.owned and cfg.commits_periodically:
                commit_open = answers.run_takes(commit_name, p + there, period, identity)
                if commit_open is None:
                    if not client.consuming or client.unpositioned or membership is not None:
                        return  # its commits would not fold
                elif not (commit_open and self._commits_fold(fleet, answers, client, commit_name, {})):
                    return
            commit = Chain(p, period)
        if metadata is not None:
            snapshot = client.metadata_snapshot
            known = fleet.image.topics
            current = {t: known[t] for t in snapshot if t in known} if snapshot else None
            if metadata.deadline <= now or current != snapshot:
                return
        opening: dict = {}
        if heartbeat_open is None and not answers.predict(
                fleet.periodic_request(client, HEARTBEAT_CHAIN, heartbeat.deadline)[0], opening):
            return
        sends_commits = bool(client.owned) and cfg.commits_periodically
        if commit is not None and sends_commits and commit_open is None and not (
                answers.predict(fleet.periodic_request(client, COMMIT_CHAIN, commit.first)[0], opening)
                and self._commits_fold(fleet, answers, client, commit_name, opening)):
            return
        # The requests the coordinator answers in closed form: every heartbeat, and the commits if the poll loop
        # sends them; a consumer member's commits keep no session.
        chains = {HEARTBEAT_CHAIN: Arrivals(heartbeat.deadline + there, interval, True)}
        if commit is not None and sends_commits:
            chains[COMMIT_CHAIN] = Arrivals(commit.first + there, commit.period, membership is None)
        member_id = client.member_id if membership is None else membership.member_id
        if not answers.start(client.client_id, protocol, member_id,
                             request_item(client.request_counter, member_id), chains, opening):
            return
        for t in (heartbeat, poll, metadata):
            if t is not None:
                fleet.timers.cancel(t.key)
        self.elided[client.client_id] = ElidedClient(
            heartbeat=Chain(heartbeat.deadline, interval), commit=commit, sends_commits=sends_commits,
            metadata=None if metadata is None else Chain(metadata.deadline, cfg.metadata_max_age_ms))

    def _steady_member_interval(self, fleet: ConsumerFleet, answers: PeriodicAnswers, client: SyntheticConsumer,
                                protocol: str, round_trip: int) -> int | None:
        """A consumer-protocol client's heartbeat interval if it is steady: its member Stable at the group's
        epoch (the group Stable: nothing to revoke or receive), nothing awaited, pending or to retry."""
        membership = client.membership
        if (client.member_requests or client.commit_retry is not None or client.unpositioned
                or not answers.is_current(protocol, membership.member_id, membership.member_epoch,
                                          client.coordinator)):
            return None
        return membership.steady_interval(fleet.now, round_trip)

    def _poll_period(self, client: SyntheticConsumer, p: int, heartbeat_interval: int) -> int | None:
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

    def _commits_fold(self, fleet: ConsumerFleet, answers: PeriodicAnswers, client: SyntheticConsumer, name: str,
                      opening: dict) -> bool:
        """Every periodic commit of the client's folds into its commit run `name` (open, or predicted in
        `opening`): it commits its positions under the production rates the run's offsets rules were made
        from."""
        latency = client.config.request_latency_ms
        if not client.consuming:
            return False
        rate = client.config.coordsim_consume_records_per_second
        production = fleet.image.production
        if rate and any(rate <= production.get(tp.topic, (0, 0.0, 0))[1] or self._behind(fleet, client, tp, rate)
                        for tp in client.owned):
            return False  # it may fall behind: its positions are not the log end's in closed form
        return answers.commit_run_follows(name, client.owned, latency, opening)

    def _behind(self, fleet: ConsumerFleet, client: SyntheticConsumer, tp, rate: float) -> bool:
        """The client processes `tp` faster than it is produced to, but has not caught up with its log end yet
        (it was paused, or started behind): until it has, its commits are not the log end's. Compared before
        rounding, where both lines are straight, so caught up now means caught up at every later commit."""
        if tp not in client.started:
            return False
        since, position = client.started[tp]
        now = fleet.now
        origin, produced, base = fleet.image.production.get(tp.topic, (now, 0.0, 0))
        return position + rate * (now - since) / 1000 < base + produced * (now - origin) / 1000

    def catch_up(self, fleet: ConsumerFleet, answers: PeriodicAnswers, at: int, target: str | None,
                 whole_group: bool) -> bool:
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
            client = fleet.clients[client_id]
            changed |= self._fold(answers, client, elided, at, opened)
            # `at` is one of its periodic instants if the first one at or after it is `at` itself.
            if whole_group or client_id == target or elided.quiet_until == at:
                self._restore(fleet, answers, client, elided, at)
                changed = True
        answers.in_arrival_order(opened)
        return changed

    def fold_elided(self, fleet: ConsumerFleet, answers: PeriodicAnswers, at: int) -> None:
        """Fold the elided requests that arrived before `at` (the end of a run)."""
        opened: list[tuple[tuple, str]] = []
        for client_id, elided in self.elided.items():
            self._fold(answers, fleet.clients[client_id], elided, at, opened)
        answers.in_arrival_order(opened)

    def _fold(self, answers: PeriodicAnswers, client: SyntheticConsumer, elided: ElidedClient, at: int,
              opened: list) -> bool:
        """Run the client's chains' timers due before `at` in closed form, and tell the coordinator's half
        which of their requests arrived by then. True if any did."""
        for chain in (elided.heartbeat, elided.commit):
            if chain is not None:
                chain.done = max(chain.done, count_before(chain.first, chain.period, at))
        changed = answers.fold(client.client_id, client.origin, at, opened)
        if elided.metadata is not None:
            elided.metadata.done = count_before(elided.metadata.first, elided.metadata.period, at)
        elided.folded_to, elided.quiet_until = at, self._next_instant(client, elided, at)
        return changed

    def _next_instant(self, client: SyntheticConsumer, elided: ElidedClient, at: int) -> int:
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

    def _restore(self, fleet: ConsumerFleet, answers: PeriodicAnswers, client: SyntheticConsumer, elided: ElidedClient,
                 at: int) -> None:
        """Put back the explicit state the client would have at `at` had it run step by step."""
        del self.elided[client.client_id]
        cfg = client.config
        latency, back = cfg.request_latency_ms, cfg.response_latency_ms
        arrived = answers.arrivals(client.client_id)  # per chain that sends, its requests that arrived
        answers.stop(client.client_id)
        membership = client.membership
        awaited = None  # a consumer member's steady heartbeat still awaited
        for chain, key in ((elided.heartbeat, HEARTBEAT_CHAIN), (elided.commit, COMMIT_CHAIN)):
            if chain is None:
                continue
            kind = "heartbeat" if key == HEARTBEAT_CHAIN else "poll"
            fleet.client_timer(client, kind, chain.first + chain.done * chain.period)
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
            if arrived[key] < chain.done:  # on the wire
                if member_heartbeat:
                    event, sent_to = fleet.periodic_request(client, key, sent)
                    client.member_requests[event.request_id] = awaited
                    fleet.host.transmit(event, sent_to)
                else:
                    fleet.send_periodic(client, key, sent)
            elif sent + latency + back >= at:  # answered, the answer on its way back
                row = answers.answer(f"{client.origin}/{key}", sent + latency,
                                     fleet.periodic_request_id(client, key, sent), client.request_counter)
                if member_heartbeat:
                    client.member_requests[row["request_id"]] = awaited
                else:
                    client.in_flight[key] = row["request_id"]
                client.awaiting += 1
                fleet.timers.schedule(("deliver", client.client_id, row["request_id"]), sent + latency + back,
                                      "deliver", client.client_id, client.incarnation, row)
        if membership is not None:
            self._restore_membership(fleet, client, elided, at, awaited)
        if elided.metadata is not None:
            m = elided.metadata
            fleet.client_timer(client, "metadata", m.first + m.done * m.period)

    def _restore_membership(self, fleet: ConsumerFleet, client: SyntheticConsumer, elided: ElidedClient, at: int,
                            awaited) -> None:
        """Where the elided heartbeats and polls leave a consumer-protocol client's membership at `at`, and
        its heartbeat timer where its background thread would have set it."""
        heartbeat, poll = elided.heartbeat, elided.commit
        round_trip = client.config.request_latency_ms + client.config.response_latency_ms
        answers = min(heartbeat.done, count_before(heartbeat.first + round_trip, heartbeat.period, at))
        client.membership.catch_up(
            sent=heartbeat.first + (heartbeat.done - 1) * heartbeat.period if heartbeat.done else None,
            answered=heartbeat.first + (answers - 1) * heartbeat.period + round_trip if answers else None,
            answers=answers, in_flight=awaited,
            polled=poll.first + (poll.done - 1) * poll.period if poll is not None and poll.done else None)
        deadline = client.membership.next_deadline(at)
        if deadline is not None:
            fleet.client_timer(client, "heartbeat", max(deadline, at))
