"""Quiet runs and their elision: a steady member's periodic requests cost one row and (almost) no work.

A quiet run is a chain of one client's periodic requests (heartbeats, or its poll loop's commits) that all succeed the
same way at a fixed interval: error NONE, the same member and generation, and for commits every partition
accepted with offsets that follow the consumption model. The run is written once, when it closes, as one
`requests` row, one `responses` row and (commits) one `offsets` row per partition, each carrying
`repeat_count` and `repeat_interval_ms`; commit runs carry the offsets rule (`records_per_second`,
`rate_origin_ts`). A run closes when the next request of its chain does not fit, when the client sends
anything else (JoinGroup, SyncGroup, LeaveGroup, a commit before a rejoin or a close), when the client stops,
and at the end of the run. An input row with `repeat_count` replays as the run it describes. How a run's rows
read back (its requests' times, offsets and ids) is `state.quiet_run`'s.

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
(`Membership.catch_up`). A mixin of `GroupRuntime`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from state.consumer import Phase, SyntheticConsumer
from state.consumer_group.group import ConsumerGroupState
from state.consumer_group.heartbeat import SESSION_TIMEOUT
from state.consumer_group_handlers import CONSUMER_GROUP_TIMER
from state.group_state import GroupState
from state.membership import MemberError, validate_member
from state.production import rule_offset
from state.records import OffsetCommitRecord
from state.timers import request_item

HEARTBEAT_CHAIN = "heartbeat"
COMMIT_CHAIN = "commit"
HEARTBEATS = ("HEARTBEAT", "CONSUMER_GROUP_HEARTBEAT")
# Request types whose input rows may stand for a run (`repeat_count`, docs/events.md "Repeated requests").
# Response fields that differ from one request of a run to the next; everything else must be equal.
VARYING_RESPONSE = ("request_ts", "response_ts", "request_id", "request_seq", "out_seq")
VARYING_OFFSET = ("offset", "log_end_offset", "commit_ts", "write_ts", "out_seq")


@dataclass
class QuietRun:
    raw: dict | None               # the first request as an input row (synthetic clients' chains)
    response: dict                 # the first response row
    offsets: list[dict]            # the first commit's `offsets` rows
    rules: list[tuple]             # per offsets row: (records/s, rate origin ts, base) of offset = rule(ts)
    log_end_rules: list[tuple | None]  # per offsets row: the same for its log_end_offset (None: not modelled)
    last_ts: int
    count: int = 1
    interval: int | None = None


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


class PeriodicHandlers:
    # -- quiet runs (both modes) ---------------------------------------------------------------------------
    def handle_periodic(self, event, raw: dict | None, handler) -> None:
        """Handle a request of a periodic chain: fold it into its open run, or close that run and start a
        new one, or write it as an ordinary request when it is not quiet."""
        with self.out.deferred() as rows:
            handler(event)
        run = self.runs.get(event.run)
        if run is not None and self._fits(run, event, rows):
            run.count += 1
            run.interval = event.ts - run.last_ts
            run.last_ts = event.ts
            return
        if run is not None:
            self.close_run(event.run)
        opened = self._open_run(event, raw, rows)
        if opened is None:
            if raw is not None:
                self.out.request(raw)
            for table, row in rows:
                self.out.emit(table, row)
            return
        self.runs[event.run] = opened

    def _open_run(self, event, raw: dict | None, rows) -> QuietRun | None:
        """The run a request answered with `rows` opens, or None if it is not quiet."""
        rules = self._quiet_rules(event, rows)
        if rules is None:
            return None
        offsets = [row for _, row in rows[:-1]]
        return QuietRun(raw=raw, response=rows[-1][1], offsets=offsets, rules=rules,
                        log_end_rules=[self._log_end_rule(row) for row in offsets], last_ts=event.ts)

    def _quiet_rules(self, event, rows) -> list[tuple] | None:
        """None if the request is not quiet; else the offsets rule of each of its `offsets` rows."""
        table, response = rows[-1] if rows else (None, None)
        if table != "responses" or response["error"] != "NONE":
            return None
        if event.type in HEARTBEATS:
            return [] if len(rows) == 1 else None
        offsets = [row for t, row in rows[:-1] if t == "offsets"]
        if (len(offsets) != len(rows) - 1 or len(offsets) != len(event.offsets)
                or any(r["error"] != "NONE" for r in response["results"])
                or any(row["commit_ts"] != event.ts for row in offsets)):
            return None
        rules = [self._commit_rule(event, p, row) for p, row in zip(event.offsets, offsets)]
        # A run's log-end offsets grow at its offsets' rate (`records_per_second`): a commit whose offset does
        # not follow production (a client that stopped consuming) is written on its own.
        if any((log_end := self._log_end_rule(row)) is not None and log_end[0] != rule[0]
               for row, rule in zip(offsets, rules)):
            return None
        return rules

    def _commit_rule(self, event, partition, row) -> tuple:
        offset, ts = row["offset"], event.ts
        if partition.records_per_second:  # an input row's own rule
            rate, origin = partition.records_per_second, partition.rate_origin_ts
            return (rate, origin, offset - rule_offset((rate, origin, 0), ts))
        if event.origin is not None:
            since, rate, base = self.production.get(row["topic"], (0, 0.0, 0))
            sent = int(event.request_id.rpartition("@")[2])
            rule = (rate, since + ts - sent, base)
            if rate and rule_offset(rule, ts) == offset:
                return rule
        return (0.0, 0, offset)

    def _log_end_rule(self, row: dict) -> tuple | None:
        """The production model behind a commit's `log_end_offset` (GroupRuntime.log_end_offset)."""
        if row["log_end_offset"] is None:
            return None
        since, rate, base = self.production[row["topic"]]
        return (rate, since, base)

    def _fits(self, run: QuietRun, event, rows) -> bool:
        if event.ts <= run.last_ts or (run.interval is not None and event.ts - run.last_ts != run.interval):
            return False
        if len(rows) != len(run.offsets) + 1 or rows[-1][0] != "responses":
            return False
        if not _equal_except(rows[-1][1], run.response, VARYING_RESPONSE):
            return False
        for (table, row), first, rule, log_end in zip(rows, run.offsets, run.rules, run.log_end_rules):
            if (table != "offsets" or not _equal_except(row, first, VARYING_OFFSET)
                    or row["offset"] != rule_offset(rule, event.ts) or row["commit_ts"] != event.ts
                    or row["write_ts"] != event.ts
                    or row["log_end_offset"] != (None if log_end is None else rule_offset(log_end, event.ts))):
                return False
        return True

    def close_run(self, key: str) -> None:
        write_run(self.out, self.runs.pop(key))

    def open_runs(self) -> tuple[list, list]:
        """The open runs as plain data, without changing them, for a live snapshot (state/snapshot.py): the
        runs in the order finish() writes them, and the runs elided clients' next requests will open, each
        after the sort key of its first request (`runs_at` reads them back). A run of an elided client's
        chain that sends carries how it grows, (chain's first instant, period, request latency, requests of
        the chain folded so far): its requests keep arriving at those instants until the client's explicit
        state is put back, which happens only at an item of the group's (its next wakeup, or an event)."""
        growth: dict[str, tuple] = {}
        openings = []
        for client_id, elided in self.elided.items():
            client = self.fleet.clients[client_id]
            latency = client.config.request_latency_ms
            for chain, key, sends in ((elided.heartbeat, HEARTBEAT_CHAIN, True),
                                      (elided.commit, COMMIT_CHAIN, elided.sends_commits)):
                if chain is None or not sends:
                    continue
                name = f"{client.origin}/{key}"
                growth[name] = (chain.first, chain.period, latency, chain.arrived)
                if name in elided.opening:
                    sort_key, run = elided.opening[name]
                    openings.append((sort_key, _run_state(run), growth[name]))
        runs = [(_run_state(run), growth.get(name)) for name, run in self.runs.items()]
        return runs, openings

    def has_open_run(self, origin: str) -> bool:
        return any(f"{origin}/{chain}" in self.runs for chain in (HEARTBEAT_CHAIN, COMMIT_CHAIN))

    def close_client_runs(self, origin: str) -> None:
        """The client sent something else or stopped: its runs end here."""
        for chain in (HEARTBEAT_CHAIN, COMMIT_CHAIN):
            if f"{origin}/{chain}" in self.runs:
                self.close_run(f"{origin}/{chain}")

    def close_all_runs(self) -> None:
        for key in list(self.runs):
            self.close_run(key)

    # -- elision -------------------------------------------------------------------------------------------
    def elide_quiet_clients(self, target: str | None, whole_group: bool) -> None:
        """After a step: take the periodic timers of the clients it may have brought to the steady state out
        of the queue. A step that concerned one client (its own timer, answer, directive or periodic request)
        changed nothing another client's steadiness depends on, so only that client is tried; a step that
        concerned the whole group tries them all."""
        group = self.group
        if self.loading_until is not None or self.write_failures:
            return
        if group is not None and group.state != GroupState.STABLE:
            return
        consumer_group = self.consumer_group
        if group is None and (consumer_group is None or consumer_group.metadata_expired
                              or consumer_group.state != ConsumerGroupState.STABLE):
            return  # no group, or a consumer group not Stable (or whose next heartbeat refreshes its metadata)
        clients = self.fleet.clients
        for client in clients.values() if whole_group else filter(None, (clients.get(target),)):
            # A request in flight is the usual reason not to: checked before anything costlier. A classic
            # client in a classic group, a consumer-protocol one (`membership`) in a consumer group; a classic
            # client inside a consumer group (an online migration) stays explicit.
            if (not client.in_flight and client.client_id not in self.elided and client.alive
                    and (client.phase == Phase.STABLE and group is not None if client.membership is None
                         else group is None)):
                self._try_elide(client, group)

    def _try_elide(self, client: SyntheticConsumer, group) -> None:
        now, cfg = self.now, client.config
        latency = cfg.request_latency_ms + cfg.response_latency_ms
        if (client.closing or client.awaiting or client.paused_until > now or client.poll_stalled_until > now
                or client.coordinator != self.coordinator_epoch):
            return
        membership = client.membership
        if membership is None:
            if (not client.heartbeat_enabled or client.rejoin_needed or client.generation != group.generation_id
                    or not group.has_member(client.member_id) or latency >= cfg.heartbeat_interval_ms):
                return
            interval = cfg.heartbeat_interval_ms
            identity = commit_identity = (client.member_id, client.generation, client.group_instance_id)
        else:
            interval = self._steady_member_interval(client, latency)
            if interval is None:
                return
            identity = commit_identity = (membership.member_id, membership.member_epoch, client.group_instance_id)
        timers = {t.key[2]: t for t in self._client_timers(client)}
        heartbeat, poll, metadata = (timers.pop(kind, None) for kind in ("heartbeat", "poll", "metadata"))
        if timers or heartbeat is None or heartbeat.deadline <= now:
            return
        origin = client.origin
        # A chain's run is open (and must take its next request as it stands), or it opens with the chain's
        # next request, predicted below once every cheaper check passed (a classic client's only: a member
        # of a consumer group waits for its first steady heartbeat and commit to open them).
        run = self.runs.get(f"{origin}/{HEARTBEAT_CHAIN}")
        if run is not None and not self._continues(client, run, heartbeat.deadline, interval, identity):
            return
        if run is None and membership is not None:
            return
        commit = commit_run = None
        if poll is not None:
            p = poll.deadline
            period = self._poll_period(client, p, interval)
            if p <= now or period is None or latency >= period:
                return
            if client.owned and cfg.commits_periodically:
                commit_run = self.runs.get(f"{origin}/{COMMIT_CHAIN}")
                if commit_run is None:
                    if not client.consuming or client.unpositioned or membership is not None:
                        return  # its commits would not fold
                elif not (self._continues(client, commit_run, p, period, commit_identity)
                          and self._commits_fold(client, commit_run)):
                    return
            commit = Chain(p, period)
        if metadata is not None:
            snapshot = client.metadata_snapshot
            current = {t: self.cluster_topics[t] for t in snapshot if t in self.cluster_topics} if snapshot else None
            if metadata.deadline <= now or current != snapshot:
                return
        opening: dict[str, tuple[tuple, QuietRun]] = {}
        if run is None and not self._predict(client, HEARTBEAT_CHAIN, heartbeat.deadline, opening):
            return
        sends_commits = bool(client.owned) and cfg.commits_periodically
        if commit is not None and sends_commits and commit_run is None and not (
                self._predict(client, COMMIT_CHAIN, commit.first, opening)
                and self._commits_fold(client, opening[f"{origin}/{COMMIT_CHAIN}"][1])):
            return
        session = self.timers.take(self._session_key(client))
        if session is None:
            return
        for t in (heartbeat, poll, metadata):
            if t is not None:
                self.fleet.timers.cancel(t.key)
        self.elided[client.client_id] = ElidedClient(
            heartbeat=Chain(heartbeat.deadline, interval), commit=commit, sends_commits=sends_commits,
            metadata=None if metadata is None else Chain(metadata.deadline, cfg.metadata_max_age_ms),
            session=session, opening=opening)

    def _steady_member_interval(self, client: SyntheticConsumer, round_trip: int) -> int | None:
        """A consumer-protocol client's heartbeat interval if it is steady: its member Stable at the group's
        epoch (the group Stable: nothing to revoke or receive), nothing awaited, pending or to retry."""
        membership = client.membership
        member = self.consumer_group.members.get(membership.member_id)
        if (member is None or member.member_epoch != membership.member_epoch or member.use_classic_protocol
                or client.member_requests or client.commit_retry is not None or client.unpositioned):
            return None
        return membership.steady_interval(self.now, round_trip)

    def _poll_period(self, client: SyntheticConsumer, p: int, heartbeat_interval: int) -> int | None:
        """The time from the poll at `p` to the next, the same from then on; None if the polls are not yet (or
        not at all) at a fixed cadence. A classic client's poll loop is a chain only while it commits."""
        cfg = client.config
        if client.membership is None:
            if p < client.next_auto_commit or not cfg.commits_periodically:
                return None
            return client.next_poll(p + cfg.commit_interval_ms) - p
        # consumer_group.client.fleet._member_poll: the next poll when a commit is due, at least every half
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

    def _session_key(self, client: SyntheticConsumer) -> tuple:
        if client.membership is None:
            return ("heartbeat", client.member_id)
        return (CONSUMER_GROUP_TIMER, SESSION_TIMEOUT, client.membership.member_id)

    def _session_timeout(self, client: SyntheticConsumer) -> int:
        if client.membership is None:
            return self.group.member(client.member_id).session_timeout_ms
        return self.config.group_consumer_session_timeout_ms

    def _predict(self, client: SyntheticConsumer, chain: str, sent: int, opening: dict) -> bool:
        """Open the client's `chain` run in closed form (in `opening`): its first request is the one the client
        sends at `sent`, answered as a Stable group answers a current member's heartbeat or commit
        (handle_heartbeat, handle_offset_commit), the group unchanged until then. False if that request
        would not open a run."""
        event, raw, _ = self.fleet.periodic_request(client, chain, sent)
        try:
            validate_member(self.group, event.member_id, event.group_instance_id)
        except MemberError:
            return False
        with self.out.deferred() as rows:
            if chain == HEARTBEAT_CHAIN:
                self.out.response(event, event.ts, "NONE")
            else:
                results, records = self.commit_records(event, event.ts)
                for record in records:
                    self.out.offset(self.offset_row(record, event.ts))
                self.out.response(event, event.ts, "NONE", results=results)
        run = self._open_run(event, raw, rows)
        if run is None:
            return False
        run.count = 0  # none of its requests has arrived yet
        opening[event.run] = (event.sort_key, run)
        return True

    def _commits_fold(self, client: SyntheticConsumer, run: QuietRun) -> bool:
        """Every periodic commit of the client's folds into its commit run `run`: it commits its positions
        under the production rates the run's offsets rules were made from."""
        latency = client.config.request_latency_ms
        if not client.consuming:
            return False
        rate = client.config.coordsim_consume_records_per_second
        if rate and any(rate <= self.production.get(tp.topic, (0, 0.0, 0))[1] or self._behind(client, tp, rate)
                        for tp in client.owned):
            return False  # it may fall behind: its positions are not the log end's in closed form
        if [(r["topic"], r["partition"]) for r in run.offsets] != [tuple(tp) for tp in client.owned]:
            return False
        for row, rule in zip(run.offsets, run.rules):
            since, rate, base = self.production.get(row["topic"], (0, 0.0, 0))
            if rule != ((rate, since + latency, base) if rate else (0.0, 0, base)):
                return False
        return True

    def _behind(self, client: SyntheticConsumer, tp, rate: float) -> bool:
        """The client processes `tp` faster than it is produced to, but has not caught up with its log end yet
        (it was paused, or started behind): until it has, its commits are not the log end's. Compared before
        rounding, where both lines are straight, so caught up now means caught up at every later commit."""
        if tp not in client.started:
            return False
        since, position = client.started[tp]
        origin, produced, base = self.production.get(tp.topic, (self.now, 0.0, 0))
        return position + rate * (self.now - since) / 1000 < base + produced * (self.now - origin) / 1000

    @staticmethod
    def _continues(client: SyntheticConsumer, run: QuietRun | None, sent: int, period: int, identity: tuple) -> bool:
        """The client's open run would take its next periodic request, sent at `sent`, as it stands: answered to
        `identity` (member id, generation or member epoch, instance id)."""
        response = None if run is None else run.response
        return (run is not None and run.last_ts + period == sent + client.config.request_latency_ms
                and run.interval in (None, period)
                and (response["member_id"], response["generation_id"], response["group_instance_id"]) == identity)

    def _client_timers(self, client: SyntheticConsumer) -> list:
        return [t for kind in ("heartbeat", "poll", "metadata", "poll_timeout", "resume", "assigned", "commit", "close")
                if (t := self.fleet.timers.get(("client", client.client_id, kind))) is not None]

    def catch_up(self, at: int, target: str | None, whole_group: bool) -> bool:
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
            client = self.fleet.clients[client_id]
            changed |= self._fold(client, elided, at, opened)
            # `at` is one of its periodic instants if the first one at or after it is `at` itself.
            if whole_group or client_id == target or elided.quiet_until == at:
                self._restore(client, elided, at)
                changed = True
        self._in_arrival_order(opened)
        return changed

    def fold_elided(self, at: int) -> None:
        """Fold the elided requests that arrived before `at` (the end of a run)."""
        opened: list[tuple[tuple, str]] = []
        for client_id, elided in self.elided.items():
            self._fold(self.fleet.clients[client_id], elided, at, opened)
        self._in_arrival_order(opened)

    def _in_arrival_order(self, opened: list[tuple[tuple, str]]) -> None:
        """Runs that opened in closed form during one catch-up (the last ones in `runs`) take their places in
        the order their first requests arrived, as handled one by one they would have: the open runs are
        written in that order at the end of the run."""
        if len(opened) > 1:
            for _, key in sorted(opened):
                self.runs[key] = self.runs.pop(key)

    @staticmethod
    def _count_before(chain: Chain, offset: int, at: int) -> int:
        """How many instants k have first + k * period + offset < at."""
        span = at - chain.first - offset
        return 0 if span <= 0 else -(-span // chain.period)

    def _fold(self, client: SyntheticConsumer, elided: ElidedClient, at: int, opened: list) -> bool:
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
                self.runs[name] = first[1]
            run = self.runs[name]
            _arrive(run, chain, arrived, latency)
            chain.arrived = arrived
            if key == HEARTBEAT_CHAIN or client.membership is None:  # a consumer member's commits keep no session
                reset = (run.last_ts, request_item(client.request_counter, _member_id(client)))
                elided.last_reset = reset if elided.last_reset is None else max(elided.last_reset, reset)
            if key == COMMIT_CHAIN:
                self._commit_in_closed_form(run)
        if elided.metadata is not None:
            elided.metadata.done = self._count_before(elided.metadata, 0, at)
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

    def _commit_in_closed_form(self, run: QuietRun) -> None:
        """The run's last commit, appended and replayed; its rows are the run's own."""
        self.appended([OffsetCommitRecord(row["topic"], row["partition"], {
            "offset": rule_offset(rule, run.last_ts), "leader_epoch": row["leader_epoch"],
            "metadata": row["metadata"], "commit_ts": run.last_ts, "expire_ts": row["expire_ts"],
            "topic_id": row["topic_id"]})
            for row, rule in zip(run.offsets, run.rules)], rows=False)

    def _restore(self, client: SyntheticConsumer, elided: ElidedClient, at: int) -> None:
        """Put back the explicit state the client would have at `at` had it run step by step."""
        del self.elided[client.client_id]
        cfg = client.config
        latency, back = cfg.request_latency_ms, cfg.response_latency_ms
        session = elided.session
        if elided.last_reset is None:
            self.timers.restore(session)
        else:
            ts, item = elided.last_reset
            self.timers.schedule_as_of(ts, item, session.key, ts + self._session_timeout(client), session.kind,
                                       *session.args)
        membership = client.membership
        awaited = None  # a consumer member's steady heartbeat still awaited
        for chain, key in ((elided.heartbeat, HEARTBEAT_CHAIN), (elided.commit, COMMIT_CHAIN)):
            if chain is None:
                continue
            kind = "heartbeat" if key == HEARTBEAT_CHAIN else "poll"
            self.fleet.client_timer(client, kind, chain.first + chain.done * chain.period)
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
                    event, raw, sent_to = self.fleet.periodic_request(client, key, sent)
                    client.member_requests[event.request_id] = awaited
                    self.transmit(event, raw, sent_to)
                else:
                    self.fleet.send_periodic(client, key, sent)
            elif sent + latency + back >= at:  # answered, the answer on its way back
                run = self.runs[f"{client.origin}/{key}"]
                row = dict(run.response, request_ts=sent + latency, response_ts=sent + latency,
                           request_id=self.fleet.periodic_request_id(client, key, sent), request_seq=client.request_counter)
                if member_heartbeat:
                    client.member_requests[row["request_id"]] = awaited
                else:
                    client.in_flight[key] = row["request_id"]
                client.awaiting += 1
                self.fleet.timers.schedule(("deliver", client.client_id, row["request_id"]), sent + latency + back,
                                     "deliver", client.client_id, client.incarnation, row)
        if membership is not None:
            self._restore_membership(client, elided, at, awaited)
        if elided.metadata is not None:
            m = elided.metadata
            self.fleet.client_timer(client, "metadata", m.first + m.done * m.period)

    def _restore_membership(self, client: SyntheticConsumer, elided: ElidedClient, at: int, awaited) -> None:
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
            self.fleet.client_timer(client, "heartbeat", max(deadline, at))

    def elided_session_deadlines(self) -> list[int]:
        """Where the elided members' session timers would stand now."""
        deadlines = []
        for client_id, elided in self.elided.items():
            client = self.fleet.clients[client_id]
            latency = client.config.request_latency_ms
            # A consumer member's commits keep no session.
            commit_resets = elided.sends_commits and client.membership is None
            last = [chain.first + (n - 1) * chain.period + latency
                    for chain, sends in ((elided.heartbeat, True), (elided.commit, commit_resets))
                    if chain is not None and sends and (n := self._count_before(chain, latency, self.now + 1))]
            if last:
                deadlines.append(max(last) + self._session_timeout(client))
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


def _run_state(run: QuietRun) -> tuple:
    """A run as plain data (QuietRun's fields, in order)."""
    return (run.raw, run.response, run.offsets, run.rules, run.log_end_rules, run.last_ts, run.count, run.interval)


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
        arrived = PeriodicHandlers._count_before(chain, latency, at + 1)
        if arrived > folded:
            _arrive(run, chain, arrived, latency)
    return run


def write_run(out, run: QuietRun) -> None:
    """A run's rows, written as it closes: its request (a synthetic client's), responses and offsets."""
    if run.raw is not None:
        out.request(*_run_request(run))
    for table, row in _run_rows(run):
        out.emit(table, row)


def _run_request(run: QuietRun) -> tuple[dict, int, int | None]:
    """The run's `requests` row as (raw, repeat count, interval): one row standing for the run."""
    return _run_raw(run), run.count, run.interval


def _run_raw(run: QuietRun) -> dict:
    """The run's `requests` row: the first request, with the repeat and each partition's offsets rule."""
    raw = dict(run.raw)
    if run.count > 1:
        raw.update(repeat_count=run.count, repeat_interval_ms=run.interval)
        if "offsets" in raw:
            raw["offsets"] = [dict(p, records_per_second=rule[0], rate_origin_ts=rule[1]) if rule[0] else p
                              for p, rule in zip(raw["offsets"], run.rules)]
    return raw


def _run_rows(run: QuietRun) -> list[tuple[str, dict]]:
    repeat = {"repeat_count": run.count, "repeat_interval_ms": run.interval}
    rows = []
    for row, rule, log_end in zip(run.offsets, run.rules, run.log_end_rules):
        rated = run.count > 1 and rule[0]
        log_end_rated = run.count > 1 and log_end is not None and log_end[0]
        rows.append(("offsets", dict(row, **repeat, records_per_second=rule[0] if rated else None,
                                     rate_origin_ts=rule[1] if rated else None,
                                     log_end_origin_ts=log_end[1] if log_end_rated else None)))
    rows.append(("responses", dict(run.response, **repeat)))
    return rows


def _equal_except(row: dict, first: dict, keys: tuple) -> bool:
    """Whether two rows are equal but for the columns `keys`."""
    row, first = dict(row), dict(first)  # copied whole and trimmed: cheaper than filtering every column
    for key in keys:
        row.pop(key, None)
        first.pop(key, None)
    return row == first
