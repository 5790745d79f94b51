"""Assignor timing grid, after Kafka's ClientSideAssignorBenchmark (jmh-benchmarks/.../assignor).

Grid: members x partitions per member x topics, equal ("homogeneous") or unequal ("heterogeneous")
subscriptions, and full (nobody owns anything) or incremental (a stable group of members-1, each reporting
its assignment the way a real client does, plus one new member) assignment. Topics get
members * partitions_per_member // topics partitions each. Unequal subscriptions split members and topics
into five buckets, each bucket's members subscribing to its own slice of topics; the new member of an
incremental run copies the subscription of the member before it, as Kafka's benchmark does.

Only the assign() call is timed; inputs are built beforehand and garbage is collected before each run.
Each cell reports the median and the best of --repeat runs (on a shared machine the best is the closer
estimate of uncontended time).

    python benchmarks/assignors.py --quick
    python benchmarks/assignors.py --assignors range,roundrobin --members 10000 --ratios 10
    python benchmarks/assignors.py --quick --core native    # the native engine's assignors (docs/native.md)
"""

from __future__ import annotations

import argparse
import gc
import itertools
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from state.assignors import ASSIGNORS, MemberSubscription, assign, client_subscription  # noqa: E402

BUCKETS = 5
FULL_GRID = {
    "members": [100, 500, 1000, 5000, 10000],
    "ratios": [5, 10, 50],
    "topics": [10, 100, 1000],
}
QUICK_GRID = {"members": [100, 1000], "ratios": [10], "topics": [10, 100]}


@dataclass(frozen=True)
class Cell:
    assignor: str
    kind: str  # full | incremental
    subscription: str  # equal | unequal
    members: int
    ratio: int
    topics: int

    @property
    def partitions_per_topic(self) -> int:
        return self.members * self.ratio // self.topics


def subscriptions(cell: Cell, n_members: int) -> list[tuple[str, tuple[str, ...]]]:
    topics = [f"topic{i}" for i in range(cell.topics)]
    if cell.subscription == "equal":
        return [(f"member{i}", tuple(topics)) for i in range(n_members)]
    buckets = min(BUCKETS, n_members)
    topics_per_bucket = math.ceil(cell.topics / buckets)
    members_per_bucket = math.ceil(n_members / buckets)
    out = []
    for b in range(buckets):
        bucket_topics = tuple(topics[b * topics_per_bucket:(b + 1) * topics_per_bucket])
        for i in range(b * members_per_bucket, min((b + 1) * members_per_bucket, n_members)):
            out.append((f"member{i}", bucket_topics))
    return out


def build_input(cell: Cell) -> tuple[list[MemberSubscription], dict[str, int]]:
    counts = {f"topic{i}": cell.partitions_per_topic for i in range(cell.topics)}
    if cell.kind == "full":
        return [MemberSubscription(m, t) for m, t in subscriptions(cell, cell.members)], counts
    stable = subscriptions(cell, cell.members - 1)
    first = assign(cell.assignor, [MemberSubscription(m, t) for m, t in stable], counts)
    members = [
        client_subscription(cell.assignor, m, t, previous_assignment=first[m], generation=1) for m, t in stable
    ]
    members.append(client_subscription(cell.assignor, "newMember", stable[-1][1]))
    return members, counts


def core_assign(core: str):
    """The assign() of the Python reference or of the native engine, which must be built (bash scripts/setup)."""
    if core == "python":
        return assign
    import coordsim_native.assignors

    return coordsim_native.assignors.assign


def time_cell(cell: Cell, repeat: int, assign_fn=assign) -> tuple[float, float]:
    """(median, best) seconds of `repeat` timed assign() calls."""
    members, counts = build_input(cell)
    runs = []
    for _ in range(repeat):
        gc.collect()  # so that no run pays for the garbage of the one before
        start = time.perf_counter()
        assign_fn(cell.assignor, members, counts)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), min(runs)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    strs = lambda s: s.split(",")  # noqa: E731
    parser.add_argument("--quick", action="store_true", help="small grid: members 100,1000; ratio 10; topics 10,100")
    parser.add_argument("--assignors", type=strs, default=list(ASSIGNORS))
    parser.add_argument("--members", type=ints)
    parser.add_argument("--ratios", type=ints, help="partitions per member")
    parser.add_argument("--topics", type=ints)
    parser.add_argument("--subscriptions", type=strs, default=["equal", "unequal"])
    parser.add_argument("--kinds", type=strs, default=["full", "incremental"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--core", choices=("python", "native"), default="python",
                        help="time the Python reference's assignors (default) or the native engine's")
    args = parser.parse_args(argv)
    grid = QUICK_GRID if args.quick else FULL_GRID
    members = args.members or grid["members"]
    ratios = args.ratios or grid["ratios"]
    topics = args.topics or grid["topics"]

    header = ("assignor", "kind", "subscriptions", "members", "partitions/member", "topics", "partitions",
              "median ms", "best ms")
    text_row = "{:<19} {:<12} {:<13} {:>8} {:>17} {:>6} {:>10} {:>10} {:>10}"
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
    else:
        print(text_row.format(*header))
    for name, kind, sub, m, r, t in itertools.product(args.assignors, args.kinds, args.subscriptions, members, ratios, topics):
        cell = Cell(name, kind, sub, m, r, t)
        if cell.partitions_per_topic == 0 or (sub == "unequal" and t < BUCKETS):
            continue
        median, best = time_cell(cell, args.repeat, core_assign(args.core))
        row = (name, kind, sub, m, r, t, cell.partitions_per_topic * t, f"{median * 1000:.1f}", f"{best * 1000:.1f}")
        if args.markdown:
            print("| " + " | ".join(str(x) for x in row) + " |", flush=True)
        else:
            print(text_row.format(*row), flush=True)


if __name__ == "__main__":
    main()
