"""Per-group figures of a run (the `metrics` table): rebalances and their causes and durations, time to
Stable, and, for groups with synthetic consumers, how long partitions sat without a consuming owner, how
many changed hands, and the records processed twice or never.

Ownership here is the consumers' own view, which is what costs users time: a partition is unowned from the
moment its owner stops consuming it (it revoked it for a rebalance, lost it, crashed, closed) until a client
starts consuming it again after a SyncGroup; time before a partition's first assignment, and time after the
group's last running consumer was closed, are not counted. A
consumer keeps up with production while it polls (or reads at coordsim.consume.records.per.second); its
position freezes when it stops. A new owner starts at the committed offset: what the previous owner had processed beyond it is processed again (duplicates). With
no committed offset it follows auto.offset.reset: `earliest` reprocesses everything the previous owner had,
`latest` skips what was produced and not yet processed. A mixin of `GroupRuntime`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from state.group_state import GroupState


@dataclass
class GroupMetrics:
    first_activity_ts: int | None = None
    first_stable_ts: int | None = None
    generations: int = 0
    rebalances: int = 0
    causes: dict[str, int] = field(default_factory=dict)
    rebalance_ms: list[int] = field(default_factory=list)
    synthetic: bool = False
    unowned_ms: int = 0
    moved: int = 0
    duplicates: int = 0
    skipped: int = 0
    failed_commits: int = 0
    owner: dict[tuple[str, int], str] = field(default_factory=dict)
    unowned_since: dict[tuple[str, int], int] = field(default_factory=dict)
    last_owner: dict[tuple[str, int], str] = field(default_factory=dict)
    last_position: dict[tuple[str, int], int] = field(default_factory=dict)


def _percentile(values: list[int], q: float) -> int | None:
    """Nearest-rank percentile: a value that occurred, never an interpolation."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-int(q * 100) * len(ordered) // 100))
    return ordered[min(rank, len(ordered)) - 1]


class MetricsHandlers:
    metrics: GroupMetrics

    def note_activity(self) -> None:
        if self.metrics.first_activity_ts is None:
            self.metrics.first_activity_ts = self.now

    def record_state_change(self, previous: GroupState | None, target: GroupState, cause: str) -> None:
        self.out.state_change(self.now, previous, target, self.group, cause)
        m = self.metrics
        if target == GroupState.PREPARING_REBALANCE:
            m.rebalances += 1
            m.causes[cause] = m.causes.get(cause, 0) + 1
        elif target == GroupState.STABLE and m.first_stable_ts is None:
            m.first_stable_ts = self.now

    def record_generation(self, rebalance_start_ts: int, stable_ts: int | None) -> None:
        self.metrics.generations += 1
        if stable_ts is not None:
            self.metrics.rebalance_ms.append(stable_ts - rebalance_start_ts)

    # -- consumption ---------------------------------------------------------------------------------------
    def start_consuming(self, client_id: str, partitions, reset_earliest: bool) -> None:
        m = self.metrics
        m.synthetic = True
        for tp in partitions:
            tp = tuple(tp)
            if m.owner.get(tp) == client_id:
                continue
            since = m.unowned_since.pop(tp, None)
            if since is not None:
                m.unowned_ms += self.now - since
            previous = m.last_owner.get(tp)
            if previous is not None and previous != client_id:
                m.moved += 1
            processed = m.last_position.get(tp)
            zombie = m.owner.get(tp)
            if zombie is not None:
                # The previous owner still consumes it, not knowing it lost it (e.g. paused, then evicted).
                processed = self.position_of(zombie, tp)
            committed = self.offsets.get(tp)
            if processed is not None:
                if committed is not None:
                    m.duplicates += max(0, processed - committed["offset"])
                elif reset_earliest:
                    m.duplicates += processed
                else:
                    m.skipped += max(0, self.log_end_offset(tp) - processed)
            m.owner[tp] = client_id
            m.last_owner[tp] = client_id

    def stop_consuming(self, client_id: str, positions: dict) -> None:
        """The client stopped consuming these partitions, having processed up to `positions`."""
        m = self.metrics
        for tp, position in positions.items():
            tp = tuple(tp)
            if m.owner.get(tp) != client_id:
                continue
            del m.owner[tp]
            m.unowned_since[tp] = self.now
            m.last_position[tp] = position

    def consumption_ended(self) -> None:
        """The group's last running consumer was closed on purpose: partitions nobody is meant to consume
        any more stop counting as unowned (a crash, by contrast, leaves them waiting for a consumer)."""
        m = self.metrics
        m.unowned_ms += sum(self.now - since for since in m.unowned_since.values())
        m.unowned_since.clear()

    def metrics_row(self) -> dict:
        m = self.metrics
        group = self.group
        unowned = m.unowned_ms + sum(self.now - since for since in m.unowned_since.values())
        client_side = m.synthetic
        return {
            "end_ts": self.now,
            "end_state": group.state.value if group is not None else None,
            "end_members": len(group.members) if group is not None else 0,
            "generations": m.generations,
            "rebalances": m.rebalances,
            "rebalance_causes": [{"cause": c, "count": n} for c, n in sorted(m.causes.items())],
            "rebalance_ms_p50": _percentile(m.rebalance_ms, 0.50),
            "rebalance_ms_p99": _percentile(m.rebalance_ms, 0.99),
            "rebalance_ms_max": max(m.rebalance_ms) if m.rebalance_ms else None,
            "time_to_stable_ms": (None if m.first_stable_ts is None or m.first_activity_ts is None
                                  else m.first_stable_ts - m.first_activity_ts),
            "unowned_partition_ms": unowned if client_side else None,
            "partitions_moved": m.moved if client_side else None,
            "duplicate_records": m.duplicates if client_side else None,
            "skipped_records": m.skipped if client_side else None,
            "failed_commits": m.failed_commits if client_side else None,
        }
