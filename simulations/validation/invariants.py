"""Protocol invariants of a run, computed with pandas over its tables: facts no single-table expectation
can state, each a `Check` with an example of what breaks it.

- one owner per partition per generation (assignments);
- generations strictly increasing per group, in the order they were written (generations);
- state transitions that chain (each row starts where the previous ended) and are legal in Kafka;
- accepted commits only from the group's current generation, or standalone (generation -1): a commit's
  generation is compared with the group's generation in its latest `group_states` row before it (out_seq);
- error names from Kafka's set, inside the per-member and per-partition `results` of responses too.

Each invariant is about one group at a time, so a run is checked one range of groups after another
(`Invariants.add`) and the ranges' findings add up: how many things break it, and the first example in
table order (group_id, then out_seq).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from simulations.validation.result import Check
from simulations.views.quiet_runs import repeat_counts
from state.errors import ERROR_CODES
from state.group_state import VALID_PREVIOUS_STATES, GroupState

STANDALONE = -1

# What a rule finds: (how many things break the invariant, an example), or None.
Finding = tuple[int, str] | None


def _one_owner(tables: dict[str, pd.DataFrame]) -> Finding:
    rows = tables["assignments"]
    key = ["group_id", "generation_id", "topic", "partition"]
    owners = rows.groupby(key)["member_id"].nunique()
    shared = owners[owners > 1]
    if shared.empty:
        return None
    group, generation, topic, partition = shared.index[0]
    members = rows[(rows[key] == shared.index[0]).all(axis=1)]["member_id"].unique()
    return len(shared), f"{group} generation {generation} {topic}-{partition}: {', '.join(members)}"


def _generations_increase(tables: dict[str, pd.DataFrame]) -> Finding:
    rows = tables["generations"].sort_values(["group_id", "out_seq"])
    previous = rows.groupby("group_id")["generation_id"].shift()
    bad = rows[previous.notna() & (rows["generation_id"] <= previous)]
    if bad.empty:
        return None
    row = bad.iloc[0]
    return len(bad), f"{row.group_id} generation {row.generation_id} after {int(previous[bad.index[0]])}"


def _transitions_chain(tables: dict[str, pd.DataFrame]) -> Finding:
    rows = tables["group_states"].sort_values(["group_id", "out_seq"])
    previous = rows.groupby("group_id")["to_state"].shift()
    problems = []
    for row, before in zip(rows.itertuples(index=False), previous):
        came_from = None if pd.isna(row.from_state) else row.from_state
        expected = None if pd.isna(before) or before == GroupState.DEAD.value else before
        if came_from != expected:
            problems.append(f"{row.group_id} at {row.ts}: from {came_from} but the group was {expected}")
        elif came_from is not None and GroupState(came_from) not in VALID_PREVIOUS_STATES[GroupState(row.to_state)]:
            problems.append(f"{row.group_id} at {row.ts}: {came_from} -> {row.to_state} is not a legal move")
    return (len(problems), problems[0]) if problems else None


def _commits_current_generation(tables: dict[str, pd.DataFrame]) -> Finding:
    commits = tables["offsets"]
    commits = commits[commits["offset"].notna() & (commits["generation_id"] != STANDALONE)]
    states = tables["group_states"][["group_id", "out_seq", "ts", "generation_id"]].rename(
        columns={"generation_id": "group_generation"})
    runs = repeat_counts(commits) > 1
    # The group's generation when the commit was written: its latest state row before the commit. A quiet
    # run of commits (all of one generation) is written when it ends: it is placed at its first commit.
    merged = pd.merge_asof(commits[~runs].astype({"out_seq": "int64"}).sort_values("out_seq"),
                           states.drop(columns="ts").astype({"out_seq": "int64"}).sort_values("out_seq"),
                           on="out_seq", by="group_id", direction="backward")
    if runs.any():
        first_commits = commits[runs].assign(ts=commits["write_ts"]).astype({"ts": "int64"}).sort_values("ts")
        merged_runs = pd.merge_asof(first_commits,
                                    states.drop(columns="out_seq").astype({"ts": "int64"}).sort_values("ts"),
                                    on="ts", by="group_id", direction="backward")
        merged = pd.concat([merged, merged_runs.drop(columns="ts")])
    bad = merged[merged["group_generation"].isna() | (merged["generation_id"] != merged["group_generation"])]
    if bad.empty:
        return None
    row = bad.sort_values(["group_id", "out_seq"], kind="stable").iloc[0]
    current = "no generation" if pd.isna(row.group_generation) else f"generation {row.group_generation}"
    return (len(bad), f"{row.group_id} {row.topic}-{row.partition} offset {row.offset} with generation "
                      f"{row.generation_id} while the group was at {current}")


def _result_errors(tables: dict[str, pd.DataFrame]) -> Finding:
    known = set(ERROR_CODES)
    unknown = [(row.group_id, row.api, entry["error"])
               for row in tables["responses"].itertuples(index=False) if isinstance(row.results, list)
               for entry in row.results if entry.get("error") is not None and entry["error"] not in known]
    if not unknown:
        return None
    group, api, error = unknown[0]
    return len(unknown), f"{error!r} in a {api} response of {group}"


Rule = Callable[[dict[str, pd.DataFrame]], Finding]
# (name, tables it needs, rule, what its count counts).
INVARIANTS: list[tuple[str, tuple[str, ...], Rule, str]] = [
    ("one owner per partition per generation", ("assignments",), _one_owner, "partitions with several owners"),
    ("generations strictly increasing per group", ("generations",), _generations_increase,
     "generations not above the one before"),
    ("state transitions chain and are legal", ("group_states",), _transitions_chain, "bad transitions"),
    ("accepted commits only from the current generation or standalone", ("offsets", "group_states"),
     _commits_current_generation, "commits from another generation"),
    ("error names in results are Kafka's", ("responses",), _result_errors,
     "results with an error Kafka does not have"),
]


@dataclass
class _Tally:
    count: int = 0
    example: str | None = None
    # Why the rule could not run, from the first range where it could not.
    unchecked: str | None = None


@dataclass
class Invariants:
    """The invariants over a run's ranges of groups: `add` each range's tables, then `checks`."""
    tallies: dict[str, _Tally] = field(default_factory=lambda: {name: _Tally() for name, *_ in INVARIANTS})

    def add(self, tables: dict[str, pd.DataFrame]) -> None:
        for name, needs, rule, _ in INVARIANTS:
            tally = self.tallies[name]
            missing = [table for table in needs if table not in tables]
            if missing:
                tally.unchecked = tally.unchecked or f"cannot check: no readable {', '.join(missing)} table"
                continue
            if tables[needs[0]].empty:
                continue  # nothing to check in this range (whatever its columns: the suites check those)
            try:
                found = rule(tables)
            except (KeyError, TypeError, ValueError, AttributeError) as error:
                # A table too broken for the rule (a column missing or of another type): the suites say what.
                tally.unchecked = tally.unchecked or f"cannot check: {type(error).__name__}: {error}"
                continue
            if found is not None:
                tally.count += found[0]
                tally.example = tally.example or found[1]

    def checks(self) -> list[Check]:
        checks = []
        for name, _, _, counted in INVARIANTS:
            tally = self.tallies[name]
            if tally.unchecked is not None:
                checks.append(Check("invariant", name, False, tally.unchecked))
            elif tally.count:
                checks.append(Check("invariant", name, False, f"{tally.count} {counted}, e.g. {tally.example}"))
            else:
                checks.append(Check("invariant", name, True, ""))
        return checks
