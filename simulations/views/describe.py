"""`coordsim describe`: a group at a simulated time, printed as `kafka-consumer-groups.sh --describe` prints it.

Facts carried over from Kafka's ConsumerGroupCommand (tools module, Kafka 3.7+ / 4.x):
- three modes: `--offsets` (the default), `--members`, `--state`, with the tool's headers, column order and
  left-aligned columns (minimum widths, widened to the longest value; Java pads by UTF-16 length);
- "-" for every unknown value: CURRENT-OFFSET for an assigned partition without a committed offset, LAG
  then too, and LOG-END-OFFSET and LAG for a topic the run does not model production of (a replay of
  captured requests; the tool prints "-" for a partition whose end offset it cannot get). Where the run
  models production (TOPIC_METADATA `records_per_second`, the `log_end_offsets` table), LOG-END-OFFSET is the
  partition's log-end offset at TS and LAG = LOG-END-OFFSET - CURRENT-OFFSET, as the tool computes it;
- `--offsets` lists the partitions of members that own some (members with the most partitions first), then
  every partition with a committed offset and no owner, with CONSUMER-ID, HOST and CLIENT-ID "-". Only a
  Stable classic group has owners: DescribeGroups sends no assignments in other states (a KIP-848 consumer
  group's members hold partitions in every state, as ConsumerGroupDescribe answers). A member's partitions come
  in the tool's own order: sorted by partition number, then collected into a java.util.HashMap, whose
  iteration order (TopicPartition.hashCode buckets) is what the tool prints;
- `--members` shows GROUP-INSTANCE-ID only when some member has one, and ends each row with a space;
- `--state` pads GROUP to the coordinator column's width. The coordinator is a broker (`host:port  (id)`) in
  Kafka; a simulation has no brokers, so it is shown as the group's `__consumer_offsets` partition in
  TopicPartition notation with the partition number as its id: `__consumer_offsets-31  (31)`;
- a group that does not exist (not yet created, or Dead) prints "Error: Consumer group 'G' does not
  exist." on stdout; an Empty group gets "Consumer group 'G' has no active members." and a rebalancing one
  (PreparingRebalance, CompletingRebalance; a consumer group Assigning or Reconciling) "Warning: Consumer
  group 'G' is rebalancing." on stderr, before the table;
- a group whose coordinator is not available (from an unload to the next load: its broker failed, or its
  `__consumer_offsets` partition moved) cannot be described: the admin client finds no coordinator that
  answers for it, and the tool prints what its `run` prints for any failure, "Error: Executing consumer group
  command failed due to " and the exception, CoordinatorNotAvailableException with the message of
  Errors.COORDINATOR_NOT_AVAILABLE, on stdout, and exits 0. The stack trace the tool prints after it on
  stderr is left out. (Kafka 3.x and 4.x's admin client retries such errors until the tool's `--timeout`,
  then reports a TimeoutException naming its call; this names the error behind it.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

from simulations.views.history import ASSIGNING, COMPLETING, EMPTY, PREPARING, RECONCILING, GroupAt, Member, group_at
from simulations.views.run_tables import RunError, RunTables, load_run
from state.java_compat import JavaHashMap, java_string_length, topic_partition_hash_code

MODES = ("offsets", "members", "state")
MISSING = "-"
OFFSETS_TOPIC = "__consumer_offsets"
# What ConsumerGroupCommand.run prints for a failed describe: its prefix, then the exception as Java's
# ExecutionException.getMessage gives it (the cause's class and message; Errors.COORDINATOR_NOT_AVAILABLE).
COMMAND_FAILED = "Executing consumer group command failed due to "
COORDINATOR_NOT_AVAILABLE = ("org.apache.kafka.common.errors.CoordinatorNotAvailableException: "
                             "The coordinator is not available.")


@dataclass(frozen=True)
class Described:
    """What the tool prints: `out` goes to stdout, `err` to stderr."""

    out: str
    err: str = ""


class UnknownGroup(RunError):
    """The group never appears in the run."""


def require_group(run: RunTables, group: str) -> None:
    """UnknownGroup, naming the run's groups, unless `group` appears in `run`."""
    known = run.groups
    if group not in known:
        listed = ", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
        raise UnknownGroup(f"group {group!r} is not in this run (groups: {listed or 'none'})")


def describe(run_dir: str | os.PathLike | RunTables, group: str, at: int | None = None,
             mode: str = "offsets") -> Described:
    """The group `group` at simulated time `at` (epoch ms, default the end of the run) in `mode`."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    run = run_dir if isinstance(run_dir, RunTables) else load_run(run_dir)
    require_group(run, group)
    view = group_at(run, group, run.end_ts if at is None else at)
    if view.coordinator_unavailable:  # the describe call failed: no mode prints anything of the group
        return Described(f"\nError: {COMMAND_FAILED}{COORDINATOR_NOT_AVAILABLE}\n")
    return {"offsets": _offsets, "members": _members, "state": _state}[mode](view)


def _pad(value: str, width: int) -> str:
    return value + " " * max(0, width - java_string_length(value))


def _width(minimum: int, values: Iterable[str]) -> int:
    return max([minimum, *(java_string_length(v) for v in values)])


def _status(view: GroupAt) -> tuple[str, str]:
    """The tool's notes on the group's state: (stdout, stderr)."""
    if not view.exists:
        return f"\nError: Consumer group '{view.group_id}' does not exist.\n", ""
    if view.state == EMPTY:
        return "", f"\nConsumer group '{view.group_id}' has no active members.\n"
    if view.state in (PREPARING, COMPLETING, ASSIGNING, RECONCILING):
        return "", f"\nWarning: Consumer group '{view.group_id}' is rebalancing.\n"
    return "", ""


def tool_order(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """The order the tool prints a set of partitions in: a HashSet of them, stably sorted by partition
    number, then collected into a HashMap (Collectors.toMap) and iterated."""
    partitions = list(partitions)
    as_set: JavaHashMap = JavaHashMap(_tp_hash, capacity=_hash_set_capacity(len(partitions)))
    for tp in partitions:
        as_set[tp] = None
    collected: JavaHashMap = JavaHashMap(_tp_hash)
    for tp in sorted(as_set.keys(), key=lambda tp: tp[1]):
        collected[tp] = None
    return collected.keys()


def _tp_hash(tp: tuple[str, int]) -> int:
    return topic_partition_hash_code(*tp)


def _hash_set_capacity(size: int) -> int:
    # new HashSet<>(collection): a table for max(size / .75 + 1, 16) entries, rounded up to a power of two.
    wanted, capacity = max(int(size / 0.75) + 1, 16), 1
    while capacity < wanted:
        capacity *= 2
    return capacity


def _offsets(view: GroupAt) -> Described:
    rows = []
    owners = [m for m in view.members if m.partitions]  # a classic group has partitions only while Stable
    for member in sorted(owners, key=lambda m: -len(m.partitions)):
        owner = (member.member_id, member.client_host or MISSING, member.client_id or MISSING)
        rows += [_offset_row(view, tp, owner) for tp in tool_order(member.partitions)]
    owned = {tp for m in owners for tp in m.partitions}
    unowned = [tp for tp in view.offsets if tp not in owned]
    rows += [_offset_row(view, tp, (MISSING, MISSING, MISSING)) for tp in tool_order(unowned)]
    out, err = _status(view)
    if not view.exists or not rows:
        return Described(out, err)
    group_w = _width(15, (r[0] for r in rows))
    topic_w = _width(15, (r[1] for r in rows))
    consumer_w = _width(15, (r[6] for r in rows))
    host_w = _width(15, (r[7] for r in rows))
    widths = (group_w, topic_w, 10, 15, 15, 15, consumer_w, host_w)
    header = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
              "CLIENT-ID")
    lines = [_line(header, widths)] + [_line(row, widths) for row in rows]
    return Described(out + "".join("\n" + line for line in lines) + "\n", err)


def _offset_row(view: GroupAt, tp: tuple[str, int], owner: tuple[str, str, str]) -> tuple[str, ...]:
    current = view.offsets.get(tp)
    log_end = view.log_end_offset(tp[0])
    lag = None if current is None or log_end is None else log_end - current
    return (view.group_id, tp[0], str(tp[1]), *(MISSING if v is None else str(v) for v in (current, log_end, lag)),
            *owner)


def _line(values: tuple[str, ...], widths: tuple[int, ...]) -> str:
    """Every column padded to its width but the last, as the tool's printf format does."""
    return " ".join(_pad(v, w) for v, w in zip(values, widths)) + " " + values[-1]


def _members(view: GroupAt) -> Described:
    members = view.members
    out, err = _status(view)
    shown = view.exists and bool(members)
    with_instance = shown and any(m.group_instance_id for m in members)
    cells = [_member_cells(view, m, with_instance) for m in members]
    header = ("GROUP", "CONSUMER-ID") + (("GROUP-INSTANCE-ID",) if with_instance else ()) + (
        "HOST", "CLIENT-ID", "#PARTITIONS")
    minimums = (15, 15) + ((17,) if with_instance else ()) + (15, 15, 15)
    # The tool widens the columns only for a group it describes; the header is printed either way.
    widths = [_width(m, (c[i] for c in cells) if shown else ()) for i, m in enumerate(minimums)]
    lines = ["".join(_pad(v, w) + " " for v, w in zip(row, widths)) for row in [header, *cells]]
    return Described(out + "\n" + "\n".join(lines) + "\n", err)


def _member_cells(view: GroupAt, member: Member, with_instance: bool) -> tuple[str, ...]:
    instance = (member.group_instance_id or "",) if with_instance else ()
    return (view.group_id, member.member_id, *instance, member.client_host or MISSING,
            member.client_id or MISSING, str(len(member.partitions)))


def coordinator_label(partition: int | None, broker: int | None = None) -> str:
    """kafka-consumer-groups.sh's `host:port  (id)`: the group's partition stands in for the host, and the id
    is the broker leading it, or the partition in a run without brokers."""
    if partition is None:
        return MISSING
    return f"{OFFSETS_TOPIC}-{partition}  ({partition if broker is None else broker})"


def _state(view: GroupAt) -> Described:
    out, err = _status(view)
    if not view.exists:
        return Described(out, err)
    coordinator = coordinator_label(view.coordinator_partition, view.coordinator_id)
    widths = (max(25, java_string_length(coordinator)), 25, 20, 15)
    strategy = view.protocol_name or ""  # a classic group reports its protocol only while Stable
    header = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
    row = (view.group_id, coordinator, strategy, view.state, str(len(view.members)))
    return Described(out + "\n" + _line(header, widths) + "\n" + _line(row, widths) + "\n", err)
