"""Per-group figures of a run (the `metrics` table), each computed here and only here: rebalances and
their causes, the group's formation apart from the rebalances after it and their durations, and, for groups
with synthetic consumers, the unconsumed partition time and its gaps, how many partitions changed hands, and
the records processed twice or never. Also the nearest-rank percentile every summary of these figures uses.

One definition of formation and later rebalances for both protocols (docs/tables.md#metrics), on what both
have: rebalances starting (a classic group entering PreparingRebalance, a consumer group's epoch bump) and the
group being Stable. The formation runs from the group's first event until it is Stable after the formation's
rebalances: those starting before it is, and each one starting within group.initial.rebalance.delay.ms of
the formation's previous one. That window is the one a classic coordinator waits for a new group's members
(so a classic group's formation is its first Stable); a consumer group has no initial delay and bumps its
epoch at each member's join, Stable in between when the joiner reconciles at once, and the window tells
those first joins from later ones. A later rebalance lasts from its start until the group is next Stable, at
its own generation or a later one: one superseded (a classic group back to PreparingRebalance before the
assignment was stored, a consumer group's epoch bumped again before its members reconciled) runs to the
Stable that ended the one that superseded it. One that ends with the group Empty or Dead, or still
rebalancing when the run ended, has no duration.

Unconsumed partition time is the consumers' view, which is what costs users lag: a partition is unconsumed
from the moment its consumer stops processing it (it revoked it for a rebalance, lost it, crashed, closed)
until a client starts processing it again (after a SyncGroup, once its OffsetFetch is answered). Each such
interval is a gap; time before a partition's first assignment, and time after the group's last running
consumer was closed, are not counted.
(The coordinator's view, partition time in rebalance, is the report's: simulations/reports/figures.py.) A
consumer keeps up with production while it polls (or reads at coordsim.consume.records.per.second); its
position freezes when it stops. A new owner starts at the committed offset: what the previous owner had
processed beyond it is processed again (duplicates). With no committed offset it follows auto.offset.reset:
`earliest` reprocesses everything the previous owner had, `latest` skips what was produced and not yet
processed.

Failed commits are what `responses` holds: the OffsetCommit requests answered with an error, a broker's or the
client's failed connection (`failed_commit`, counted as each row is written: state/runtime/output.py); a
commit the client failed before sending anything (CommitFailedException) is no request, and is counted apart
(`unsent_commits`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping


STABLE, EMPTY, DEAD = "Stable", "Empty", "Dead"  # both protocols' group states of these names


@dataclass
class GroupMetrics:
    """The group's figures, stored with its state: told what happened in plain values (the time, the cause,
    the state's name, the positions), by the runtime as it carries out the coordinator's results and by the
    client side as its consumers start and stop, it never reads the runtime; `row` is the `metrics` row."""

    first_activity_ts: int | None = None
    formed_ts: int | None = None  # the formation's end; None while it goes on (a straggler may reopen it)
    formation_rebalance_ts: int | None = None  # when the formation's latest rebalance started
    generations: int = 0
    rebalances: int = 0
    causes: dict[str, int] = field(default_factory=dict)
    rebalances_after_formation: int = 0
    unstable_since: list[int] = field(default_factory=list)  # starts of later rebalances awaiting a Stable
    rebalance_ms: Counter = field(default_factory=Counter)  # duration -> rebalances after formation
    synthetic: bool = False
    gaps_ms: Counter = field(default_factory=Counter)  # length -> closed gaps of that length
    moved: int = 0
    duplicates: int = 0
    skipped: int = 0
    failed_commits: int = 0
    unsent_commits: int = 0
    owner: dict[tuple[str, int], str] = field(default_factory=dict)
    unconsumed_since: dict[tuple[str, int], int] = field(default_factory=dict)
    last_owner: dict[tuple[str, int], str] = field(default_factory=dict)
    last_position: dict[tuple[str, int], int] = field(default_factory=dict)

    # -- what happened, as the runtime and the client side tell it ------------------------------------------
    def activity(self, now: int) -> None:
        """An event reached the group (the formation runs from the first)."""
        if self.first_activity_ts is None:
            self.first_activity_ts = now

    def rebalance(self, now: int, cause: str, window_ms: int) -> None:
        """A rebalance starts: a classic group entering PreparingRebalance, a consumer group's epoch bump.
        `window_ms`: group.initial.rebalance.delay.ms, which tells the formation's rebalances from later ones."""
        self.rebalances += 1
        self.causes[cause] = self.causes.get(cause, 0) + 1
        # A rebalance that follows the formation's previous one by less than the window is the formation's
        # too, even once the group was Stable in between (a consumer group's first member alone): a later
        # rebalance comes at least the window after it, so none is ever taken back.
        straggler = self.formation_rebalance_ts is not None and now - self.formation_rebalance_ts < window_ms
        if self.formed_ts is None or straggler:
            self.formed_ts = None
            self.formation_rebalance_ts = now
        else:
            self.rebalances_after_formation += 1
            self.unstable_since.append(now)

    def group_state(self, now: int, state: str) -> None:
        """The group is in `state` (either protocol's state, by name) after a write or a transition."""
        if state == STABLE:
            if self.formed_ts is None:
                self.formed_ts = now
            for since in self.unstable_since:
                self.rebalance_ms[now - since] += 1
            self.unstable_since.clear()
        elif state in (EMPTY, DEAD):
            self.unstable_since.clear()

    def unsent_commit(self) -> None:
        """A client failed a commit before sending it (CommitFailedException)."""
        self.unsent_commits += 1

    # -- consumption ---------------------------------------------------------------------------------------
    def consumers(self, client_id: str, partitions) -> dict[tuple[str, int], str]:
        """Which of `partitions` another client still consumes, by that client: one not knowing it lost them
        (e.g. paused, then evicted), whose position `start_consuming` then needs."""
        owner = self.owner
        return {tp: owner[tp] for tp in map(tuple, partitions) if owner.get(tp, client_id) != client_id}

    def start_consuming(self, now: int, client_id: str, partitions, consumed: Mapping, committed: Mapping,
                        log_end: Mapping, reset_earliest: bool) -> None:
        """`client_id` starts processing `partitions` at `now`. Per partition: `consumed`, the position of the
        client `consumers` named (None if it has none); `committed`, the offset the group's log holds (None
        if none); `log_end`, the log-end offset where nothing is committed (with auto.offset.reset=latest)."""
        self.synthetic = True
        for tp in partitions:
            tp = tuple(tp)
            if self.owner.get(tp) == client_id:
                continue
            since = self.unconsumed_since.pop(tp, None)
            if since is not None:
                self._close_gap(now, since)
            previous = self.last_owner.get(tp)
            if previous is not None and previous != client_id:
                self.moved += 1
            processed = consumed[tp] if tp in consumed else self.last_position.get(tp)
            if processed is not None:
                offset = committed[tp]
                if offset is not None:
                    self.duplicates += max(0, processed - offset)
                elif reset_earliest:
                    self.duplicates += processed
                else:
                    self.skipped += max(0, log_end[tp] - processed)
            self.owner[tp] = client_id
            self.last_owner[tp] = client_id

    def stop_consuming(self, now: int, client_id: str, positions: Mapping) -> None:
        """The client stopped consuming these partitions at `now`, having processed up to `positions`."""
        for tp, position in positions.items():
            tp = tuple(tp)
            if self.owner.get(tp) != client_id:
                continue
            del self.owner[tp]
            self.unconsumed_since[tp] = now
            self.last_position[tp] = position

    def consumption_ended(self, now: int) -> None:
        """The group's last running consumer was closed on purpose: partitions nobody is meant to consume
        any more stop counting as unconsumed (a crash, by contrast, leaves them waiting for a consumer)."""
        for since in self.unconsumed_since.values():
            self._close_gap(now, since)
        self.unconsumed_since.clear()

    def _close_gap(self, now: int, since: int) -> None:
        # A handoff within the same millisecond left the partition unprocessed for no time: not a gap.
        if now > since:
            self.gaps_ms[now - since] += 1

    # -- the `metrics` row ---------------------------------------------------------------------------------
    def row(self, now: int, end_state: str | None, end_members: int) -> dict:
        """The group's `metrics` row at `now`, the group in `end_state` (None: no group) with `end_members`."""
        client_side = self.synthetic
        return {
            "end_ts": now,
            "end_state": end_state,
            "end_members": end_members,
            "generations": self.generations,
            "rebalances": self.rebalances,
            "rebalance_causes": [{"cause": c, "count": n} for c, n in sorted(self.causes.items())],
            "rebalances_after_formation": self.rebalances_after_formation,
            "time_to_stable_ms": (None if self.formed_ts is None or self.first_activity_ts is None
                                  else self.formed_ts - self.first_activity_ts),
            "rebalance_ms_p50": nearest_rank(self.rebalance_ms, 50),
            "rebalance_ms_p99": nearest_rank(self.rebalance_ms, 99),
            "rebalance_ms_max": nearest_rank(self.rebalance_ms, 100),
            "rebalance_durations": distribution(self.rebalance_ms),
            **(unconsumed_figures(self.gaps_ms, self.unconsumed_since.values(), now) if client_side
               else dict.fromkeys(UNCONSUMED_COLUMNS)),
            "partitions_moved": self.moved if client_side else None,
            "duplicate_records": self.duplicates if client_side else None,
            "skipped_records": self.skipped if client_side else None,
            "failed_commits": self.failed_commits,
            "unsent_commits": self.unsent_commits if client_side else None,
        }


OFFSET_COMMIT = "OffsetCommit"


def failed_commit(api: str, error: str, results) -> bool:
    """Whether a `responses` row is of failed commit requests: an OffsetCommit whose error, or any
    partition's, is not NONE. The `failed_commits` figure, wherever it is shown, is the `repeat_count` of
    such rows summed."""
    return api == OFFSET_COMMIT and (error != "NONE" or (results is not None
                                                         and any(r["error"] != "NONE" for r in results)))


def nearest_rank(counts: Mapping[int, int], percent: int) -> int | None:
    """Nearest-rank percentile of values given as {value: occurrences}: a value that occurred, never an
    interpolation (so p99 of fewer than 100 values is their maximum); None without values."""
    rank = -(-percent * sum(counts.values()) // 100)
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen >= max(rank, 1):
            return value
    return None


UNCONSUMED_COLUMNS = ("unconsumed_partition_ms", "unconsumed_gaps", "unconsumed_gap_ms_p50", "unconsumed_gap_ms_p99",
                      "unconsumed_gap_ms_max", "unconsumed_gap_durations")


def unconsumed_figures(closed: Mapping[int, int], open_since: Iterable[int], now: int) -> dict:
    """The `metrics` columns of unconsumed partition time at `now`: the closed gaps ({length: gaps}), and the
    gaps still open (since each of `open_since`) counted up to `now`."""
    gaps = Counter(closed) + Counter(now - since for since in open_since if now > since)
    return dict(zip(UNCONSUMED_COLUMNS, (sum(ms * n for ms, n in gaps.items()), sum(gaps.values()),
                                         nearest_rank(gaps, 50), nearest_rank(gaps, 99), nearest_rank(gaps, 100),
                                         distribution(gaps))))


def distribution(counts: Mapping[int, int]) -> list[dict]:
    """The table form of {duration: occurrences}: `[{ms, count}]` sorted by duration."""
    return [{"ms": ms, "count": n} for ms, n in sorted(counts.items())]


def merged(distributions: Iterable[list[dict] | None]) -> Counter:
    """{duration: occurrences} over several rows' distributions (a set's figures from its groups' rows)."""
    total: Counter = Counter()
    for rows in distributions:
        for entry in () if rows is None else rows:
            total[entry["ms"]] += entry["count"]
    return total
