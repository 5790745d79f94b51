"""The coordinator's half of periodic elision: a steady member's heartbeats and commits answered in closed form.

The client side (state/clients/elision.py) decides when a client is steady and keeps its chains' instants; it
asks this side whether the group will answer the member's periodic requests as it answered the last ones
(`accepts`, `is_current`, `run_takes`, `commit_run_follows`, `predict`), and hands over its chains' arrival
times when it elides the member (`start`). From then on this side owns what the coordinator does with those
requests: the member's session timer is out of the queue, the requests that arrived are folded into their
quiet runs (state/runtime/quiet_runs.py) with the commits appended in closed form (`fold`), and when the
client is given back its explicit state the session timer restarts at the last request that reset it and the
answers on their way back are the runs' (`stop`, `answer`). The client's half is given this object, never the
runtime: this half holds the group's runtime (`runtime`), of which it reads and changes the coordinator's side
only: the group, its timers, its log and its quiet runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from state.classic.group_state import GroupState
from state.classic.manager import MemberError, validate_member
from state.consumer_group.group import ConsumerGroupState
from state.consumer_group.heartbeat import SESSION_TIMEOUT
from state.consumer_group.manager import CONSUMER_GROUP_TIMER
from state.offsets.production import rule_offset
from state.records.group_log import OffsetCommitRecord
from state.runtime.quiet_runs import COMMIT_CHAIN, QuietRun, run_state
from state.runtime.timers import Timer

CLASSIC, CONSUMER = "classic", "consumer"


@dataclass
class Arrivals:
    """When a chain's requests arrive: first + k * period, k >= 0."""
    first: int
    period: int
    resets_session: bool  # a consumer member's commits keep no session
    arrived: int = 0      # requests already folded into the run


@dataclass
class AnsweredMember:
    """A member whose periodic requests are answered in closed form."""
    protocol: str                    # CLASSIC or CONSUMER: which group it is a member of
    member_id: str
    item: tuple                      # the timer item its requests carry (state/runtime/timers.py request_item)
    session: Timer                   # its session timer, taken out of the queue
    chains: dict[str, Arrivals]      # by chain key, the chains whose requests are sent
    last_reset: tuple | None = None  # (arrival ts, timer item) of the last folded request that reset the session
    # Chains whose run was not open yet: the run their first request opens (with that request's sort key),
    # predicted when the member was taken; it joins the open runs when that request arrives.
    opening: dict[str, tuple[tuple, QuietRun]] = field(default_factory=dict)


def count_before(first: int, period: int, at: int) -> int:
    """How many instants first + k * period (k >= 0) come before `at`."""
    span = at - first
    return 0 if span <= 0 else -(-span // period)


class PeriodicAnswers:
    """The members answered in closed form, by client id (the elided clients, in the order they were elided)."""

    def __init__(self, runtime) -> None:
        self.members: dict[str, AnsweredMember] = {}
        self.runtime = runtime  # the group's runtime, whose coordinator side this half reads and changes

    # -- whether the group answers a member's periodic requests in closed form ------------------------------
    def accepts(self) -> str | None:
        """CLASSIC or CONSUMER if the group answers its members' periodic requests alike from now on: nothing
        loading or failing to write, a classic group Stable, or a consumer group Stable whose next heartbeat
        does not refresh its metadata; else None."""
        rt = self.runtime
        if rt.loading_until is not None or rt.write_failures:
            return None
        group = rt.classic.group
        if group is not None:
            return CLASSIC if group.state == GroupState.STABLE else None
        consumer_group = rt.consumer.consumer_group
        if consumer_group is None or consumer_group.metadata_expired or consumer_group.state != ConsumerGroupState.STABLE:
            return None
        return CONSUMER

    def is_current(self, protocol: str, member_id: str, generation: int, sent_to: int) -> bool:
        """The member's requests, sent to coordinator epoch `sent_to`, reach the group's coordinator, and it is in
        the group at `generation` (a classic generation, or a consumer member's epoch)."""
        rt = self.runtime
        if sent_to != rt.coordinator_epoch:
            return False
        if protocol == CLASSIC:
            group = rt.classic.group
            return generation == group.generation_id and group.has_member(member_id)
        member = rt.consumer.consumer_group.members.get(member_id)
        return member is not None and member.member_epoch == generation and not member.use_classic_protocol

    def run_takes(self, name: str, arrival: int, period: int, identity: tuple) -> bool | None:
        """Whether the open run `name` takes the chain's next request, arriving at `arrival` `period` after the
        last: answered to `identity` (member id, generation or member epoch, instance id). None: no run open."""
        rt = self.runtime
        run = rt.quiet.runs.get(name)
        if run is None:
            return None
        response = run.response
        return (run.last_ts + period == arrival and run.interval in (None, period)
                and (response["member_id"], response["generation_id"], response["group_instance_id"]) == identity)

    def commit_run_follows(self, name: str, owned: tuple, latency: int, opening: dict) -> bool:
        """Every commit of `owned` (the positions of a client consuming at the log end) folds into the commit run
        `name`, open or predicted (in `opening`): its offsets rules are production's, as of a commit arriving
        `latency` after it was sent."""
        rt = self.runtime
        run = rt.quiet.runs[name] if name in rt.quiet.runs else opening[name][1]
        if [(r["topic"], r["partition"]) for r in run.offsets] != [tuple(tp) for tp in owned]:
            return False
        for row, rule in zip(run.offsets, run.rules):
            since, rate, base = rt.image.production.get(row["topic"], (0, 0.0, 0))
            if rule != ((rate, since + latency, base) if rate else (0.0, 0, base)):
                return False
        return True

    def predict(self, event, opening: dict) -> bool:
        """Predict the run `event` (a periodic request not sent yet) opens, into `opening`: answered as a Stable
        group answers a current member's heartbeat or commit (handle_heartbeat, handle_offset_commit), the group
        unchanged until then. False if it would not open a run."""
        rt = self.runtime
        try:
            validate_member(rt.classic.group, event.member_id, event.group_instance_id)
        except MemberError:
            return False
        with rt.out.deferred() as rows:
            if event.type == "HEARTBEAT":
                rt.out.response(event, event.ts, "NONE")
            else:
                results, records = rt.offset_manager.commit_records(event, event.ts)
                for record in records:
                    rt.out.offset(rt.offset_row(record, event.ts))
                rt.out.response(event, event.ts, "NONE", results=results)
        run = rt.quiet.open_run(rt.image.production, event, rows)
        if run is None:
            return False
        run.count = 0  # none of its requests has arrived yet
        opening[event.run] = (event.sort_key, run)
        return True

    # -- a member answered in closed form -----------------------------------------------------------------
    def start(self, client_id: str, protocol: str, member_id: str, item: tuple,
              chains: dict[str, Arrivals], opening: dict) -> bool:
        """Take the member's session timer out of the queue and answer `chains` in closed form from now on, the
        runs `predict` put in `opening` opening as their first requests arrive; False (nothing changed) if it
        has no session timer."""
        rt = self.runtime
        session = rt.timers.take(_session_key(protocol, member_id))
        if session is None:
            return False
        self.members[client_id] = AnsweredMember(protocol, member_id, item, session, chains, opening=opening)
        return True

    def fold(self, client_id: str, origin: str, at: int, opened: list) -> bool:
        """Fold the member's requests that arrived before `at` into their runs (the commits appended); a run
        that opens is added to `opened` with its first request's sort key. True if any arrived."""
        rt = self.runtime
        member = self.members[client_id]
        changed = False
        for key, chain in member.chains.items():
            arrived = count_before(chain.first, chain.period, at)
            if arrived <= chain.arrived:
                continue
            changed = True
            name = f"{origin}/{key}"
            first = member.opening.pop(name, None)
            if first is not None:  # its first request arrived: the run predicted for it opens
                opened.append((first[0], name))
                rt.quiet.runs[name] = first[1]
            run = rt.quiet.runs[name]
            _arrive(run, chain, arrived)
            chain.arrived = arrived
            if chain.resets_session:
                reset = (run.last_ts, member.item)
                member.last_reset = reset if member.last_reset is None else max(member.last_reset, reset)
            if key == COMMIT_CHAIN:
                _commit_in_closed_form(rt, run)
        return changed

    def arrivals(self, client_id: str) -> dict[str, int]:
        """Per chain of the member's, how many of its requests arrived (were folded)."""
        return {key: chain.arrived for key, chain in self.members[client_id].chains.items()}

    def in_arrival_order(self, opened: list[tuple[tuple, str]]) -> None:
        """Runs that opened in closed form during one catch-up (the last ones in `runs`) take their places in
        the order their first requests arrived, as handled one by one they would have: the open runs are
        written in that order at the end of the run."""
        rt = self.runtime
        if len(opened) > 1:
            for _, key in sorted(opened):
                rt.quiet.runs[key] = rt.quiet.runs.pop(key)

    def answer(self, name: str, arrival: int, request_id: str, seq: int) -> dict:
        """The answer to the run `name`'s request `request_id` that arrived at `arrival`: the run's."""
        rt = self.runtime
        return dict(rt.quiet.runs[name].response, request_ts=arrival, response_ts=arrival, request_id=request_id,
                    request_seq=seq)

    def stop(self, client_id: str) -> None:
        """The member's requests are answered one by one again: its session timer restarts at the last folded
        request that reset it (or comes back as it was)."""
        rt = self.runtime
        member = self.members.pop(client_id)
        session = member.session
        if member.last_reset is None:
            rt.timers.restore(session)
        else:
            ts, item = member.last_reset
            rt.timers.schedule_as_of(ts, item, session.key, ts + _session_timeout(rt, member), session.kind,
                                     *session.args)

    # -- what the runtime and its snapshots read -------------------------------------------------------------
    def session_deadlines(self) -> list[int]:
        """Where the members' session timers would stand now."""
        rt = self.runtime
        deadlines = []
        for member in self.members.values():
            last = [chain.first + (n - 1) * chain.period for chain in member.chains.values()
                    if chain.resets_session and (n := count_before(chain.first, chain.period, rt.now + 1))]
            deadlines.append(max(last) + _session_timeout(rt, member) if last else member.session.deadline)
        return deadlines

    def open_runs(self, origins: dict[str, str]) -> tuple[list, list]:
        """The open runs as plain data, without changing them, for a live snapshot (state/runtime/snapshot.py):
        the runs in the order finish() writes them, and the runs the members' next requests will open, each
        after the sort key of its first request (`runs_at` reads them back). A run of a member's chain carries
        how it grows, (first arrival, period, requests folded so far): its requests keep arriving at those
        instants until the client's explicit state is put back, which happens only at an item of the group's
        (its next wakeup, or an event). `origins`: each member's client origin, by client id."""
        rt = self.runtime
        growth: dict[str, tuple] = {}
        openings = []
        for client_id, member in self.members.items():
            for key, chain in member.chains.items():
                name = f"{origins[client_id]}/{key}"
                growth[name] = (chain.first, chain.period, chain.arrived)
                if name in member.opening:
                    sort_key, run = member.opening[name]
                    openings.append((sort_key, run_state(run), growth[name]))
        runs = [(run_state(run), growth.get(name)) for name, run in rt.quiet.runs.items()]
        return runs, openings


def _session_key(protocol: str, member_id: str) -> tuple:
    return ("heartbeat", member_id) if protocol == CLASSIC else (CONSUMER_GROUP_TIMER, SESSION_TIMEOUT, member_id)


def _session_timeout(rt, member: AnsweredMember) -> int:
    if member.protocol == CLASSIC:
        return rt.classic.group.member(member.member_id).session_timeout_ms
    return rt.config.group_consumer_session_timeout_ms


def _commit_in_closed_form(rt, run: QuietRun) -> None:
    """The run's last commit, appended and replayed; its rows are the run's own."""
    rt.appended([OffsetCommitRecord(row["topic"], row["partition"], {
        "offset": rule_offset(rule, run.last_ts), "leader_epoch": row["leader_epoch"],
        "metadata": row["metadata"], "commit_ts": run.last_ts, "expire_ts": row["expire_ts"],
        "topic_id": row["topic_id"]})
        for row, rule in zip(run.offsets, run.rules)], rows=False)


def _arrive(run: QuietRun, chain: Arrivals, arrived: int) -> None:
    """The first `arrived` requests of a chain have arrived; `chain.arrived` of them are in `run`."""
    run.count += arrived - chain.arrived
    if run.count > 1:
        run.interval = chain.period
    run.last_ts = chain.first + (arrived - 1) * chain.period


def runs_at(runs: list, openings: list, at: int) -> list[QuietRun]:
    """The runs of `open_runs` as they stand at `at` (from the time they were taken until the group's next
    wakeup): grown by the requests of their chains that arrived by `at`, those the members' chains opened by
    then after the others, in the order their first requests arrived (as fold and finish() leave them)."""
    out = [_grown(state, growth, at) for state, growth in runs]
    opened = sorted(((sort_key, run) for sort_key, state, growth in openings
                     if (run := _grown(state, growth, at)).count > 0), key=lambda pair: pair[0])
    return out + [run for _, run in opened]


def _grown(state: tuple, growth: tuple | None, at: int) -> QuietRun:
    run = QuietRun(*state)
    if growth is not None:
        first, period, folded = growth
        chain = Arrivals(first, period, True, arrived=folded)
        arrived = count_before(first, period, at + 1)
        if arrived > folded:
            _arrive(run, chain, arrived)
    return run

