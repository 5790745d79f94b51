"""Scenario -> the directive events that drive synthetic consumers (docs/events.md, "Synthetic clients").

Each group starts with a TOPIC_METADATA row and one CLIENT_START per member; the timeline then adds
CLIENT_STOP / CLIENT_CRASH / CLIENT_PAUSE / CLIENT_START / TOPIC_METADATA rows. The consumers produce all
protocol traffic themselves, in closed loop with the coordinator, when the events are run.

Deterministic for a scenario: every random choice comes from a `random.Random` seeded with text derived from
the scenario's seed and the group (start jitter) or the action and the group (which members, how long), so
the same scenario gives the same rows, and adding a group set leaves the other sets' rows unchanged.

Naming: groups `<set>-<index>` (index zero-padded to the set's size), clients `<group>-c<k>`, static
members' `group.instance.id` `<group>-i<k>`, the same for every restart of member k.

Members are tracked through the timeline, so an action only picks members that are running and not already
taken by an earlier action of the timeline over the same time window; when too few are left, the shortfall
is reported in `Generated.notes` rather than producing directives the run would reject.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Callable

from simulations.scenarios.brokers import BrokerEvent, BrokerEventError, ClusterTimeline, PartitionLog
from simulations.scenarios.schema import (Action, BrokerAction, CoordinatorMove, Crash, Flap, GroupSet, Idle,
                                          PartitionIncrease, Pause, RollingRestart, ScaleIn, ScaleOut, Scenario,
                                          ScenarioError, merged_config)
from state.clients.config import ClientConfig
from state.config import CoordinatorConfig

# Members of one group start within this many milliseconds of each other (pods of one deployment starting).
JOIN_SPREAD_MS = 50


class _Impossible(Exception):
    """An action that cannot happen in the state the timeline has reached."""


@dataclass
class Generated:
    rows: list[dict]  # input-contract rows, sorted by (ts, group_id, seq)
    groups: dict[str, list[str]]  # group set name -> its group ids
    start_ms: int
    until_ms: int
    notes: list[str] = field(default_factory=list)
    # Each timeline action but idle: {"action": its label, "start_ts", "end_ts"}, from its first group's start
    # to its last directive's time (epoch ms), what `coordsim capacity` tells steady state from.
    actions: list[dict] = field(default_factory=list)


@dataclass
class Member:
    client_id: str
    instance_id: str | None
    config: dict  # the consumer settings it runs with: its set's, or a restart's `config:` over them
    born: int
    gone: float = math.inf  # stopped for good (scale-in, crash without restart)
    busy: list[tuple[float, float]] = field(default_factory=list)

    def running(self, t: int) -> bool:
        return self.born <= t < self.gone

    def free(self, t0: int, t1: float) -> bool:
        """Running over [t0, t1] and not taken by another action then (touching windows count as taken, so
        two actions never put directives for one member on the same millisecond)."""
        return self.running(t0) and (self.gone == math.inf or t1 < self.gone) and \
            all(b < t0 or t1 < a for a, b in self.busy)


class GroupPlan:
    """One group's members and directives, times in ms after the scenario start."""

    def __init__(self, group_set: GroupSet, group_id: str, offset: int) -> None:
        self.set = group_set
        self.group_id = group_id
        self.offset = offset
        self.members: list[Member] = []
        self.partitions = {t.name: t.partitions for t in group_set.topics}
        self.rows: list[tuple[int, int, str, dict]] = []  # (time, emission order, type, fields)

    def emit(self, t: int, etype: str, **fields) -> None:
        self.rows.append((t, len(self.rows), etype, fields))

    def add_member(self, t: int) -> None:
        k = len(self.members)
        client_id = f"{self.group_id}-c{k}"
        member = Member(client_id, f"{self.group_id}-i{k}" if self.set.static else None, self.set.config, born=t)
        self.members.append(member)
        self.start(member, t)

    def start(self, member: Member, t: int, config: dict | None = None) -> None:
        """CLIENT_START for the member; with `config` (a restart's), it comes back with those settings over its
        set's from now on (another `group.protocol` makes it the other kind of client, same ids)."""
        if config is not None:
            member.config = merged_config(self.set.config, config)
        fields = {"client_id": member.client_id}
        if member.instance_id is not None:
            fields["group_instance_id"] = member.instance_id
        if self.set.topic_pattern is not None:
            fields["topic_pattern"] = self.set.topic_pattern
        else:
            fields["topics"] = [topic.name for topic in self.set.topics]
        if member.config:
            fields["config"] = member.config
        self.emit(t, "CLIENT_START", **fields)

    def stop(self, member: Member, t: int, crash: bool) -> None:
        self.emit(t, "CLIENT_CRASH" if crash else "CLIENT_STOP", client_id=member.client_id)

    def running(self, t: int) -> list[Member]:
        return [m for m in self.members if m.running(t)]


def generate(scenario: Scenario) -> Generated:
    plans: dict[str, list[GroupPlan]] = {s.name: _start_groups(scenario, s) for s in scenario.group_sets}
    notes: list[str] = []
    cluster = None if scenario.cluster is None else ClusterTimeline(scenario.cluster, scenario.controller,
                                                                    scenario.seed, scenario.duration_ms)
    actions: list[dict] = []
    cursor = 0
    for action in scenario.timeline:
        at = cursor if action.at_ms is None else action.at_ms
        if at >= scenario.duration_ms:
            raise ScenarioError(f"starts at {at} ms (when the previous action ends), at or after the end of the "
                                f"run (duration: {scenario.duration_ms} ms); give it an earlier 'at' or a longer "
                                f"duration", scenario.source, action.line, action.path)
        if isinstance(action, BrokerAction):
            cluster.add(BrokerEvent(at, action.kind, action.broker, action.restart_after_ms, action.label))
            cursor = at + (action.restart_after_ms or 0)
            # The cluster has no stagger; a crash's end waits for its fence (below).
            actions.append({"action": action.label, "start_ts": scenario.start_ms + at,
                            "end_ts": scenario.start_ms + cursor})
            continue
        cursor = _apply(scenario, action, at, plans, notes)
        if not isinstance(action, Idle):
            offsets = [plan.offset for name in action.targets for plan in plans[name]]
            actions.append({"action": action.label, "start_ts": scenario.start_ms + at + min(offsets),
                            "end_ts": scenario.start_ms + cursor + max(offsets)})
    if cluster is not None:
        _name_coordinators(scenario, cluster, [plan for set_plans in plans.values() for plan in set_plans])
        _add_fences(scenario, cluster, actions)
    rows = _rows(scenario, [plan for set_plans in plans.values() for plan in set_plans])
    groups = {name: [plan.group_id for plan in set_plans] for name, set_plans in plans.items()}
    return Generated(rows, groups, scenario.start_ms, scenario.until_ms, notes, actions)


def _name_coordinators(scenario: Scenario, cluster: ClusterTimeline, plans: list["GroupPlan"]) -> None:
    """Each group's COORDINATOR_FAULT rows: the broker leading its partition and the brokers up as it starts
    (before its first row), then what the broker events do to that partition and to the brokers up."""
    delay = CoordinatorConfig.from_kafka(scenario.broker).group_initial_rebalance_delay_ms
    for plan in plans:
        topics = {t.name: t.partitions for t in plan.set.topics}
        cluster.add_group(plan.group_id, PartitionLog(plan.group_id, plan.set.members, topics, plan.set.static,
                                                      ClientConfig.from_kafka(plan.set.config), plan.offset, delay))
    try:
        changes = cluster.changes()
    except BrokerEventError as error:
        raise ScenarioError(str(error), scenario.source) from None
    for plan in plans:
        for order, (t, fields) in enumerate(cluster.rows(plan.group_id, plan.offset, changes)):
            # Rows at the group's start go before its first row (emission orders below every other).
            plan.rows.append((t, order - 1_000_000 if t == plan.offset else len(plan.rows), "COORDINATOR_FAULT",
                              fields))


def _add_fences(scenario: Scenario, cluster: ClusterTimeline, actions: list[dict]) -> None:
    """A crash's action lasts until the controller fences the broker, if that is after its return, and
    records when the controller last heard from the broker and when it fenced it (docs/scenarios.md, "Broker
    events"). The controller's own preferred-leader elections that moved partitions are actions too, from the
    imbalance check until the slowest of its loads has ended."""
    actions += [{"action": AUTOMATIC_ELECTION, "start_ts": scenario.start_ms + at,
                 "end_ts": scenario.start_ms + at + load_ms} for at, load_ms in cluster.elections]
    by_label = {a["action"]: a for a in actions}
    for fence in cluster.fences:
        action = by_label[fence.label]
        action["end_ts"] = max(action["end_ts"], scenario.start_ms + fence.fenced_ms)
        action["last_heartbeat_ts"] = scenario.start_ms + fence.last_heartbeat_ms
        action["fenced_ts"] = scenario.start_ms + fence.fenced_ms


# How `actions.json` names the controller's automatic preferred-leader election (no timeline action).
AUTOMATIC_ELECTION = "preferred-leader election (the controller's imbalance check)"


def group_ids(group_set: GroupSet) -> list[str]:
    """The set's group ids, SET-0 ... SET-(N-1), zero-padded to one width so they sort in order."""
    width = len(str(group_set.groups - 1))
    return [f"{group_set.name}-{index:0{width}d}" for index in range(group_set.groups)]


def _start_groups(scenario: Scenario, group_set: GroupSet) -> list[GroupPlan]:
    plans = []
    for group_id in group_ids(group_set):
        rng = random.Random(f"{scenario.seed}/{group_id}/start")
        plan = GroupPlan(group_set, group_id, rng.randrange(group_set.stagger_ms) if group_set.stagger_ms else 0)
        plan.emit(plan.offset, "TOPIC_METADATA", topics=[
            {"topic": t.name, "partitions": t.partitions, "records_per_second": t.records_per_second}
            for t in group_set.topics])
        for _ in range(group_set.members):
            plan.add_member(plan.offset + rng.randrange(JOIN_SPREAD_MS))
        plans.append(plan)
    return plans


def _apply(scenario: Scenario, action: Action, at: int, plans: dict[str, list[GroupPlan]], notes: list[str]) -> int:
    """Add the action's directives to the groups it targets; returns when it ends (scenario time)."""
    if isinstance(action, Idle):
        return at + action.duration_ms
    seed = action.seed if action.seed is not None else f"{scenario.seed}/{action.path}"
    apply = APPLY[type(action)]
    end, wanted, missing, short_groups = at, 0, 0, 0
    for name in action.targets:
        set_plans = plans[name]
        chosen = action.groups.of(len(set_plans))
        if chosen < len(set_plans):
            picked = random.Random(f"{seed}/{name}/groups").sample(range(len(set_plans)), chosen)
            set_plans = [set_plans[i] for i in sorted(picked)]
        for plan in set_plans:
            t = at + plan.offset
            try:
                want, done, last = apply(action, plan, t, random.Random(f"{seed}/{plan.group_id}"))
            except _Impossible as error:
                raise ScenarioError(str(error), scenario.source, action.line, action.path) from None
            end = max(end, last - plan.offset)
            wanted += want
            missing += want - done
            short_groups += done < want
    if missing:
        notes.append(f"{action.label}: {missing} of {wanted} member changes skipped in {short_groups} group(s): "
                     f"too few members running and not busy with an earlier action at that time")
    return end


# Each applier returns (members wanted, members changed, when its last change happens).

def _rolling_restart(action: RollingRestart, plan: GroupPlan, t: int, rng: random.Random) -> tuple[int, int, int]:
    chosen = plan.running(t)
    chosen = chosen[:action.members.of(len(chosen))]
    done, last = 0, t
    for member in chosen:
        stop = t + (done // action.batch) * (action.downtime_ms + action.gap_ms) + _jitter(rng, action.jitter_ms)
        back = stop + action.downtime_ms
        if member.free(stop, back):
            member.busy.append((stop, back))
            plan.stop(member, stop, action.crash)
            plan.start(member, back, action.config)
            done, last = done + 1, back
    return len(chosen), done, last


def _random_members(action: Action, plan: GroupPlan, t: int, rng: random.Random,
                    window: Callable[[random.Random], float], change: Callable[[Member, float], None]
                    ) -> tuple[int, int, int]:
    """`members` of the running ones, chosen at random; each is taken if it is free for its window (drawn
    per member), then `change(member, window_end)` emits its directives."""
    candidates = plan.running(t)
    rng.shuffle(candidates)
    want, done, last = action.members.of(len(candidates)), 0, t
    for member in candidates:
        if done == want:
            break
        end = t + window(rng)
        if member.free(t, end):
            member.busy.append((t, end))
            change(member, end)
            done += 1
            if end != math.inf:
                last = max(last, int(end))
    return want, done, last


def _crash(action: Crash, plan: GroupPlan, t: int, rng: random.Random) -> tuple[int, int, int]:
    def change(member: Member, back: float) -> None:
        plan.stop(member, t, crash=True)
        if back == math.inf:
            member.gone = t
        else:
            plan.start(member, int(back), action.config)

    restart = action.restart_after
    return _random_members(action, plan, t, rng, lambda r: math.inf if restart is None else restart.draw(r), change)


def _pause(action: Pause, plan: GroupPlan, t: int, rng: random.Random) -> tuple[int, int, int]:
    def change(member: Member, until: float) -> None:
        plan.emit(t, "CLIENT_PAUSE", client_id=member.client_id, duration_ms=int(until) - t, scope=action.scope)

    return _random_members(action, plan, t, rng, action.duration.draw, change)


def _flap(action: Flap, plan: GroupPlan, t: int, rng: random.Random) -> tuple[int, int, int]:
    period = action.down_ms + action.up_ms
    stops: list[int] = []

    def window(rng: random.Random) -> int:
        """Draws this member's stop times; its last restart ends the window."""
        stops[:] = [cycle * period + _jitter(rng, action.jitter_ms) for cycle in range(action.cycles)]
        return stops[-1] + action.down_ms

    def change(member: Member, last_start: float) -> None:
        for stop in stops:
            plan.stop(member, t + stop, action.crash)
            plan.start(member, t + stop + action.down_ms)

    return _random_members(action, plan, t, rng, window, change)


def _scale_out(action: ScaleOut, plan: GroupPlan, t: int, rng: random.Random) -> tuple[int, int, int]:
    count = action.members.of(len(plan.running(t)))
    for _ in range(count):
        plan.add_member(t)
    return count, count, t


def _scale_in(action: ScaleIn, plan: GroupPlan, t: int, rng: random.Random) -> tuple[int, int, int]:
    running = plan.running(t)
    want, done = action.members.of(len(running)), 0
    for member in reversed(running):  # the newest members go first, as a StatefulSet scales down
        if done == want:
            break
        if member.free(t, t):
            plan.stop(member, t, crash=False)
            member.gone = t
            done += 1
    return want, done, t


def _partition_increase(action: PartitionIncrease, plan: GroupPlan, t: int, rng: random.Random
                        ) -> tuple[int, int, int]:
    current = plan.partitions[action.topic]
    if action.partitions <= current:
        raise _Impossible(f"partitions: topic {action.topic!r} of group {plan.group_id} has {current} partitions "
                          f"by then, and Kafka can only increase a partition count")
    plan.partitions[action.topic] = action.partitions
    plan.emit(t, "TOPIC_METADATA", topics=[{"topic": action.topic, "partitions": action.partitions}])
    return 0, 0, t


def _coordinator_move(action: CoordinatorMove, plan: GroupPlan, t: int, rng: random.Random) -> tuple[int, int, int]:
    plan.emit(t, "COORDINATOR_FAULT", fault="move", load_delay_ms=action.load_ms)
    return 0, 0, t + action.load_ms


def _jitter(rng: random.Random, jitter_ms: int) -> int:
    return rng.randrange(jitter_ms) if jitter_ms else 0


APPLY: dict[type, Callable[[Action, GroupPlan, int, random.Random], tuple[int, int, int]]] = {
    RollingRestart: _rolling_restart,
    Crash: _crash,
    Pause: _pause,
    Flap: _flap,
    ScaleOut: _scale_out,
    ScaleIn: _scale_in,
    PartitionIncrease: _partition_increase,
    CoordinatorMove: _coordinator_move,
}


def _rows(scenario: Scenario, plans: list[GroupPlan]) -> list[dict]:
    """Every group's directives in (ts, group_id, emission) order, each with its group's next `seq`."""
    ordered = sorted((t, plan.group_id, order, etype, fields) for plan in plans for t, order, etype, fields in plan.rows)
    seqs: dict[str, int] = {}
    rows = []
    for t, group_id, _, etype, fields in ordered:
        seqs[group_id] = seqs.get(group_id, 0) + 1
        rows.append({"ts": scenario.start_ms + t, "group_id": group_id, "type": etype, "seq": seqs[group_id], **fields})
    return rows


def to_jsonl(rows: list[dict]) -> str:
    """The rows as the text of a JSONL events file: one compact JSON object per line."""
    return "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows)
