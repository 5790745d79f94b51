"""Protocol invariants of a group's output rows, computed with pandas: facts no single-table expectation can
state, each a `Check` with an example of what breaks it. The one implementation of them: `coordsim
validate` runs them on a run's tables, and the Hypothesis tests of `state/` on the rows of random histories.

- one owner per partition per generation (assignments), and an owner for each partition of a generation
  whose assignor assigns every partition (range, roundrobin, sticky);
- a generation's leader is one of its members (generations, group_metadata);
- generations only grow within a life of a group (generations, group_states, group_metadata);
- state transitions that chain (each row starts where the previous ended) and are legal in Kafka;
- Stable groups hold their stored assignment: Stable comes after a GroupMetadata record of its generation,
  and every SyncGroup answered NONE carries what the assignments table stores for its member;
- accepted commits only from the group's current generation in Stable or PreparingRebalance, or standalone
  (generation < 0) to an Empty group;
- a group's lag status is its partitions' (Burrow's rule, `tableio.lag_status.group_status`), and its `maxlag`
  partition the one with the highest current lag;
- the `metrics` table agrees with the rows it summarizes (`metrics_rows`);
- across groups (`fleet_rows`): a broker hosts only groups whose partition it leads; `coordinator_load` counts
  the rows it summarizes;
- error names from Kafka's set, inside the per-member and per-partition `results` of responses too;
- the members table replays: a member is added only when absent and removed only when present, each row's
  `member_count` is the count its replay reaches, and every `group_states` row has the count the replay
  has reached by then.

**Lives.** A group's rows are cut into lives by its `group_states` rows from nothing (`from_state` null): a
life begins when the group is created (`group_created`, generation 0) or loaded after a coordinator move
(`coordinator_load`, at its last persisted generation: Kafka persists a generation only when its leader's
assignment is stored, so a generation abandoned by the move is numbered again), or when a consumer group is
downgraded to it (`group_converted`, Stable at the group epoch its GroupMetadata record just stored), and ends
at Dead. Generations
only grow within a life. A loaded life resumes the numbering of the group it reloads, while a group deleted
(its offsets expired) and created again starts over at generation 1; so a generation's stored assignment is
named by the group, how many times it was created so far, and the generation.

**Protocols.** The rules above are a classic group's. Each invariant holds a consumer group (KIP-848) to the
consumer protocol's counterpart instead (`consumer_groups` says which rows are a consumer group's, by the
`group_type` of the group's life, and owns the rules that read its records): its group epochs grow from 1,
persisted by ConsumerGroupMetadata records; its states are the consumer group's (any live state may follow
any other); one owner per partition at a time; Stable means reconciled to the target assignment; a commit
carries a member epoch Kafka accepts. Error names and the members replay read both protocols' rows alike.

Each invariant but the fleet's is about one group at a time, so a run is checked one range of groups after
another (`Invariants.add`) and the ranges' findings add up: how many things break it, and the first example in
table order (group_id, then out_seq). The fleet's gather what they need from every range and are judged once
all are in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import pandas as pd

from simulations.validation import consumer_groups
from simulations.validation.fleet_rows import LEADERSHIP, LOAD_TOTALS, Hosting, LoadTotals
from simulations.validation.group_rows import LOAD, Finding, first, history
from simulations.validation.metrics_rows import metrics_agree
from simulations.validation.result import Check
from simulations.views.group_types import CONVERTED
from simulations.views.quiet_runs import repeat_counts
from state.consumer_group.group import ConsumerGroupState, initial_epoch
from state.errors import ERROR_CODES
from tableio.lag_status import group_status
from state.classic.group_state import VALID_PREVIOUS_STATES, GroupState

COMMITTING_STATES = (GroupState.STABLE.value, GroupState.PREPARING_REBALANCE.value)
# Per protocol: the states a group comes into existence in, by the cause of that row, and the states each
# state may be entered from.
# A classic group a consumer group was downgraded to starts Stable (ClassicGroup.fromConsumerGroup).
CLASSIC_EXISTENCE = {"group_created": (GroupState.EMPTY.value,),
                     LOAD: (GroupState.EMPTY.value, GroupState.STABLE.value),  # Stable: its record has members
                     CONVERTED: (GroupState.STABLE.value,)}
CLASSIC_MOVES = {state.value: {before.value for before in VALID_PREVIOUS_STATES[state]} for state in GroupState}
# A consumer group's state is derived after each write (ConsumerGroup.maybeUpdateGroupState): any live state
# may follow any other; Dead only on unload. A loaded group is in whatever state its records derive.
_CONSUMER_LIVE = tuple(state.value for state in ConsumerGroupState if state is not ConsumerGroupState.DEAD)
CONSUMER_EXISTENCE = {"group_created": (ConsumerGroupState.EMPTY.value,), LOAD: _CONSUMER_LIVE}
CONSUMER_MOVES = {state.value: set(_CONSUMER_LIVE) - {state.value} for state in ConsumerGroupState}


def _creations(rows: pd.DataFrame, states: pd.DataFrame) -> pd.Series:
    """For each row (by group and out_seq), how many times its group had been created by then: a
    generation's number is unique within one creation (see Lives above)."""
    created = states[states["from_state"].isna() & (states["cause"] != LOAD)][["group_id", "out_seq"]]
    created = created.astype({"out_seq": "int64"}).sort_values("out_seq")
    created = created.assign(creation=created.groupby("group_id").cumcount() + 1)
    keyed = rows[["group_id", "out_seq"]].astype({"out_seq": "int64"}).reset_index()
    merged = pd.merge_asof(keyed.sort_values("out_seq"), created, on="out_seq", by="group_id",
                           direction="backward")
    return merged.set_index("index")["creation"].reindex(rows.index).fillna(0).astype("int64")


def _one_owner(tables: dict[str, pd.DataFrame]) -> Finding:
    rows = tables["assignments"]
    rows = rows.assign(creation=_creations(rows, tables["group_states"]))
    key = ["group_id", "creation", "generation_id", "topic", "partition"]
    owners = rows.groupby(key)["member_id"].nunique()
    shared = owners[owners > 1]
    if shared.empty:
        return None
    group, _, generation, topic, partition = shared.index[0]
    members = rows[(rows[key] == shared.index[0]).all(axis=1)]["member_id"].unique()
    return len(shared), f"{group} generation {generation} {topic}-{partition}: {', '.join(members)}"


# The client assignors that give every partition of the subscribed topics an owner in every generation
# (cooperative-sticky leaves the partitions it revokes unowned for one generation, KIP-429).
ASSIGN_EVERY_PARTITION = ("range", "roundrobin", "sticky")


def _every_partition_owned(tables: dict[str, pd.DataFrame]) -> Finding:
    """Partitions 0 to the highest one assigned of each topic of a Stable generation all have an owner."""
    rows, generations = tables["assignments"], tables["generations"]
    if rows.empty:
        return None
    whole = generations[generations["protocol_name"].isin(ASSIGN_EVERY_PARTITION)
                        & generations["stable_ts"].notna()]
    key = ["group_id", "creation", "generation_id"]
    whole = whole.assign(creation=_creations(whole, tables["group_states"]))[key].drop_duplicates()
    rows = rows.assign(creation=_creations(rows, tables["group_states"])).merge(whole, on=key)
    problems = []
    for (group, _, generation, topic), partitions in rows.groupby(key + ["topic"], sort=True)["partition"]:
        missing = sorted(set(range(int(partitions.max()) + 1)) - set(partitions.astype(int)))
        if missing:
            problems.append((group, 0, f"{group} generation {generation} {topic}: partition "
                             f"{', '.join(map(str, missing))} without an owner"))
    return first(problems)


def _leader_is_member(tables: dict[str, pd.DataFrame]) -> Finding:
    problems = []
    for table in ("generations", "group_metadata"):
        for row in tables[table].itertuples(index=False):
            if pd.isna(row.leader_id) or row.leader_id == "":
                continue
            members = {member["member_id"] for member in row.members or ()}
            if row.leader_id not in members:
                problems.append((row.group_id, row.out_seq, f"{row.group_id} {table} row of generation "
                                 f"{row.generation_id}: leader {row.leader_id} is not one of its "
                                 f"{len(members)} members"))
    return first(problems)


_BEGINNINGS = {LOAD: "loaded", CONVERTED: "converted"}


def _generations_grow(tables: dict[str, pd.DataFrame], created_at: int = 0) -> Finding:
    """`created_at`: the generation a group is created at; `group_metadata`: the rows that persist one."""
    problems = []
    group = None
    for table, row in history(tables, ("generations", "group_states", "group_metadata"),
                              ("generation_id", "from_state", "cause", "ts", "tombstone")):
        if row.group_id != group:
            # the life's last generation row, highest generation of its state rows; the last persisted one
            group, latest, state_floor, persisted = row.group_id, None, None, None
        generation = None if pd.isna(row.generation_id) else int(row.generation_id)
        problem = None
        if table == "group_metadata":
            if row.tombstone:
                persisted = None
            elif persisted is not None and generation < persisted:
                problem = f"persisted generation {generation} after {persisted}"
            else:
                persisted = generation
        elif table == "group_states" and pd.isna(row.from_state):
            # A loaded group, or a group converted from the other protocol (its record written first), resumes
            # the last persisted generation.
            resumes = row.cause in (LOAD, CONVERTED) and persisted is not None
            expected = persisted if resumes else created_at
            if generation != expected:
                why = f"its last persisted generation is {expected}" if resumes else f"not {expected}"
                problem = f"{_BEGINNINGS.get(row.cause, 'created')} at generation {generation}, {why}"
            latest = state_floor = generation
        elif table == "group_states":
            if state_floor is not None and generation < state_floor:
                problem = f"went from generation {state_floor} to {generation} at {row.ts}"
            state_floor = generation if state_floor is None else max(state_floor, generation)
        else:
            if latest is not None and generation <= latest:
                problem = f"generation {generation} after {latest}"
            latest = generation
        if problem is not None:
            problems.append((row.group_id, row.out_seq, f"{row.group_id} {problem}"))
    return first(problems)


def _epochs_grow(tables: dict[str, pd.DataFrame]) -> Finding:
    """A consumer group's generations are its group epochs, persisted by its ConsumerGroupMetadata records; it
    is created at epoch 1 (Kafka 4.0's 0 is not a scenario setting)."""
    epochs = consumer_groups.group_epochs(tables["consumer_group_records"])
    return _generations_grow({**tables, "group_metadata": epochs}, created_at=initial_epoch(kafka_4_0=False))


def _transitions_chain(tables: dict[str, pd.DataFrame], existence: dict[str, tuple[str, ...]] = CLASSIC_EXISTENCE,
                       moves: dict[str, set[str]] = CLASSIC_MOVES) -> Finding:
    """`existence`: per cause of a row from nothing, the states it may enter; `moves`: per state, the states
    it may be entered from."""
    rows = tables["group_states"].sort_values(["group_id", "out_seq"])
    previous = rows.groupby("group_id")["to_state"].shift()
    problems = []
    for row, before in zip(rows.itertuples(index=False), previous):
        came_from = None if pd.isna(row.from_state) else row.from_state
        expected = None if pd.isna(before) or before == GroupState.DEAD.value else before
        if came_from != expected:
            problems.append(f"{row.group_id} at {row.ts}: from {came_from} but the group was {expected}")
        elif came_from is None and row.to_state not in existence.get(row.cause, ()):
            problems.append(f"{row.group_id} at {row.ts}: came into existence {row.to_state} ({row.cause})")
        elif came_from is not None and came_from not in moves.get(row.to_state, ()):
            problems.append(f"{row.group_id} at {row.ts}: {came_from} -> {row.to_state} is not a legal move")
    return (len(problems), problems[0]) if problems else None


def _partitions(assignment) -> set:
    return {(entry["topic"], int(p)) for entry in assignment for p in entry["partitions"]}


def _named(partitions: set) -> str:
    return ", ".join(f"{topic}-{partition}" for topic, partition in sorted(partitions)) or "nothing"


def _stable_assignment(tables: dict[str, pd.DataFrame]) -> Finding:
    problems = []
    record = {}  # group -> its latest GroupMetadata row
    for table, row in history(tables, ("group_metadata", "group_states"),
                               ("tombstone", "generation_id", "to_state", "ts")):
        if table == "group_metadata":
            record[row.group_id] = row
        elif row.to_state == GroupState.STABLE.value:
            stored = record.get(row.group_id)
            if stored is None or stored.tombstone or stored.generation_id != row.generation_id:
                had = "no record" if stored is None or stored.tombstone else f"generation {stored.generation_id}"
                problems.append((row.group_id, row.out_seq, f"{row.group_id} Stable at generation "
                                 f"{row.generation_id} at {row.ts} with {had} stored"))
    responses = tables["responses"]
    syncs = responses[(responses["api"] == "SyncGroup") & (responses["error"] == "NONE")
                      & responses["assignment"].notna()]
    if not syncs.empty:
        rows = tables["assignments"]
        stored = {}  # (group, creation, generation, member id or group.instance.id) -> partitions
        for row, creation in zip(rows.itertuples(index=False), _creations(rows, tables["group_states"])):
            for owner in (row.member_id, row.group_instance_id):
                if not pd.isna(owner):
                    stored.setdefault((row.group_id, creation, row.generation_id, owner), set()).add(
                        (row.topic, int(row.partition)))
        for row, creation in zip(syncs.itertuples(index=False), _creations(syncs, tables["group_states"])):
            key = (row.group_id, creation, row.generation_id)
            # A restarted static member holds its partitions under a new member id: they are stored under
            # the old one, and found by its group.instance.id.
            expected = stored.get(key + (row.member_id,), stored.get(key + (row.group_instance_id,), set()))
            got = _partitions(row.assignment)
            if got != expected:
                problems.append((row.group_id, row.out_seq, f"{row.group_id} SyncGroup of {row.member_id} at "
                                 f"{row.request_ts} got {_named(got)}, generation {row.generation_id} stored "
                                 f"{_named(expected)}"))
    return first(problems)


def _commits_current_generation(tables: dict[str, pd.DataFrame]) -> Finding:
    commits = tables["offsets"]
    commits = commits[commits["offset"].notna()]
    if commits.empty:
        return None
    states = tables["group_states"][["group_id", "out_seq", "ts", "to_state", "generation_id"]].rename(
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
    standalone = merged["generation_id"] < 0
    # Kafka accepts a commit without a generation only from outside an Empty group, and a member's commit
    # only in Stable, or in PreparingRebalance before the next generation exists.
    ok = ((standalone & (merged["to_state"] == GroupState.EMPTY.value))
          | (~standalone & merged["to_state"].isin(COMMITTING_STATES)
             & (merged["generation_id"] == merged["group_generation"])))
    bad = merged[~ok.fillna(False).astype(bool)]
    if bad.empty:
        return None
    row = bad.sort_values(["group_id", "out_seq"], kind="stable").iloc[0]
    current = ("did not exist" if pd.isna(row.to_state)
               else f"was {row.to_state} at generation {row.group_generation}")
    return (len(bad), f"{row.group_id} {row.topic}-{row.partition} offset {row.offset} with generation "
                      f"{row.generation_id} while the group {current}")


def _result_errors(tables: dict[str, pd.DataFrame]) -> Finding:
    known = set(ERROR_CODES)
    unknown = [(row.group_id, row.api, entry["error"])
               for row in tables["responses"].itertuples(index=False) if isinstance(row.results, list)
               for entry in row.results if entry.get("error") is not None and entry["error"] not in known]
    if not unknown:
        return None
    group, api, error = unknown[0]
    return len(unknown), f"{error!r} in a {api} response of {group}"


def _members_replay(tables: dict[str, pd.DataFrame]) -> Finding:
    problems, group, present = [], None, set()
    for table, row in history(tables, ("members", "group_states"), ("member_id", "change", "member_count", "ts")):
        if row.group_id != group:
            group, present = row.group_id, set()
        problem = None
        if table == "members":
            if row.change == "added" and row.member_id in present:
                problem = f"{row.member_id} added at {row.ts} while a member"
            elif row.change == "removed" and row.member_id not in present:
                problem = f"{row.member_id} removed at {row.ts} while not a member"
            (present.add if row.change == "added" else present.discard)(row.member_id)
        if problem is None and row.member_count != len(present):
            problem = f"{table} row at {row.ts} counts {row.member_count} members, the members table {len(present)}"
        if problem is not None:
            problems.append((row.group_id, row.out_seq, f"{row.group_id} {problem}"))
    return first(problems)


def _lag_status_agrees(tables: dict[str, pd.DataFrame]) -> Finding:
    problems = []
    for group, rows in tables["lag_status"].groupby("group_id", sort=True):
        rows = rows.sort_values(["topic", "partition"], kind="stable")
        rated = [s for s in rows["status"] if not pd.isna(s)]
        expected = group_status(rated) if rated else None
        stated = set(rows["group_status"].map(lambda s: None if pd.isna(s) else s))
        if stated != {expected}:
            problems.append((group, 0, f"{group} group status {', '.join(map(str, sorted(stated, key=str)))}, "
                             f"its partitions give {expected}"))
            continue
        lags = rows[rows["current_lag"].notna()]
        flagged = rows[rows["maxlag"].fillna(False).astype(bool)]
        top = None if lags.empty else lags.loc[lags["current_lag"].astype("int64").idxmax()]
        if len(flagged) != (0 if top is None else 1) or (top is not None and (
                flagged["topic"].iloc[0], flagged["partition"].iloc[0]) != (top["topic"], top["partition"])):
            where = ", ".join(f"{r.topic}-{r.partition}" for r in flagged.itertuples()) or "no partition"
            best = "none" if top is None else f"{top['topic']}-{top['partition']}"
            problems.append((group, 0, f"{group} maxlag on {where}, the highest current lag is {best}"))
    return first(problems)


Rule = Callable[[dict[str, pd.DataFrame]], Finding]


def _nothing(tables: dict[str, pd.DataFrame]) -> Finding:
    """A consumer group's side of a classic-only invariant: it has no leader, and its assignments follow its
    members one by one (`consumer_groups.one_owner` holds it to one owner at a time)."""
    return None
# (name, tables it reads, its rule for classic groups, its rule for consumer groups, what its count counts).
# An invariant without a consumer-group rule reads every group's rows with one rule.
INVARIANTS: list[tuple[str, tuple[str, ...], Rule, Rule | None, str]] = [
    ("one owner per partition per generation", ("assignments", "group_states", "consumer_group_records"),
     _one_owner, consumer_groups.one_owner, "partitions with several owners"),
    ("every partition of a generation has an owner", ("assignments", "generations", "group_states"),
     _every_partition_owned, _nothing, "partitions without an owner"),
    ("a generation's leader is one of its members", ("generations", "group_metadata"), _leader_is_member,
     _nothing, "generations whose leader is not a member"),
    ("generations only grow within a life of a group",
     ("generations", "group_states", "group_metadata", "consumer_group_records"),
     _generations_grow, _epochs_grow, "generations out of order in their life"),
    ("state transitions chain and are legal", ("group_states", "consumer_group_records"), _transitions_chain,
     partial(_transitions_chain, existence=CONSUMER_EXISTENCE, moves=CONSUMER_MOVES), "bad transitions"),
    ("Stable groups hold their stored assignment",
     ("group_states", "group_metadata", "responses", "assignments", "consumer_group_records"),
     _stable_assignment, consumer_groups.stable_at_target,
     "Stable states or SyncGroup answers without their stored assignment"),
    ("accepted commits only from the current generation or standalone to an Empty group",
     ("offsets", "group_states", "assignments", "consumer_group_records"), _commits_current_generation,
     consumer_groups.commits_member_epoch, "commits from another generation, member epoch or state"),
    ("a group's lag status is its partitions'", ("lag_status",), _lag_status_agrees, None,
     "groups whose lag status or maxlag disagrees with their partitions"),
    ("metrics agree with the rows they summarize", ("metrics", "generations", "group_states", "members",
                                                   "responses"),
     metrics_agree, None, "groups whose figures disagree with their rows"),
    ("error names in results are Kafka's", ("responses",), _result_errors, None,
     "results with an error Kafka does not have"),
    ("member counts agree with the members table", ("members", "group_states"), _members_replay, None,
     "member rows or state rows that disagree with the members table"),
]


# What a table too broken for a rule raises (a column missing or of another type): the suites say what.
_BROKEN = (KeyError, TypeError, ValueError, AttributeError)


@dataclass
class _Tally:
    count: int = 0
    example: str | None = None
    # Why the rule could not run, from the first range where it could not.
    unchecked: str | None = None


# Invariants across groups (`fleet_rows`): (name, tables it reads, its accumulator, what its count counts).
FLEET_INVARIANTS: list[tuple[str, tuple[str, ...], type, str]] = [
    (LEADERSHIP, ("group_states",), Hosting, "groups hosted by a broker not leading their partition"),
    (LOAD_TOTALS, ("coordinator_load", "responses", "offsets", "group_metadata", "consumer_group_records"),
     LoadTotals, "figures whose total disagrees with the rows"),
]


@dataclass
class Invariants:
    """The invariants over a run's ranges of groups: `add` each range's tables, then `checks`."""
    tallies: dict[str, _Tally] = field(default_factory=lambda: {name: _Tally() for name, *_ in INVARIANTS})
    fleet: dict[str, object] = field(default_factory=lambda: {name: kind() for name, _, kind, _ in FLEET_INVARIANTS})
    fleet_unchecked: dict[str, str] = field(default_factory=dict)

    def add(self, tables: dict[str, pd.DataFrame]) -> None:
        protocols = None  # (classic rows, consumer rows), split once the first rule needs it
        for name, needs, rule, consumer_rule, _ in INVARIANTS:
            tally = self.tallies[name]
            missing = [table for table in needs if table not in tables]
            if missing:
                tally.unchecked = tally.unchecked or f"cannot check: no readable {', '.join(missing)} table"
                continue
            if all(tables[table].empty for table in needs):
                continue  # nothing to check in this range (whatever its columns: the suites check those)
            try:
                if consumer_rule is None:
                    found = [rule(tables)]
                else:
                    protocols = protocols or consumer_groups.split_protocols(tables)
                    found = [check(rows) for check, rows in zip((rule, consumer_rule), protocols)
                             if not all(rows[table].empty for table in needs)]
            except _BROKEN as error:
                # A table too broken for the rule (a column missing or of another type): the suites say what.
                tally.unchecked = tally.unchecked or f"cannot check: {type(error).__name__}: {error}"
                continue
            for finding in found:
                if finding is not None:
                    tally.count += finding[0]
                    tally.example = tally.example or finding[1]
        for name, needs, _, _ in FLEET_INVARIANTS:
            missing = [table for table in needs if table not in tables]
            if missing:
                self.fleet_unchecked.setdefault(name, f"cannot check: no readable {', '.join(missing)} table")
                continue
            try:
                self.fleet[name].add(tables)
            except _BROKEN as error:
                self.fleet_unchecked.setdefault(name, f"cannot check: {type(error).__name__}: {error}")

    def checks(self) -> list[Check]:
        checks = []
        for name, *_, counted in INVARIANTS:
            checks.append(self._check(name, self.tallies[name].unchecked, self.tallies[name].count,
                                      self.tallies[name].example, counted))
        for name, _, _, counted in FLEET_INVARIANTS:
            unchecked = self.fleet_unchecked.get(name)
            found = None if unchecked else self.fleet[name].finding()
            checks.append(self._check(name, unchecked, found[0] if found else 0, found and found[1], counted))
        return checks

    @staticmethod
    def _check(name: str, unchecked: str | None, count: int, example: str | None, counted: str) -> Check:
        if unchecked is not None:
            return Check("invariant", name, False, unchecked)
        if count:
            return Check("invariant", name, False, f"{count} {counted}, e.g. {example}")
        return Check("invariant", name, True, "")
