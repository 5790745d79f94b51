"""Every difference of a conformance run named with its cause, and the table docs/conformance.md shows: per
scenario and Kafka version, the answers compared and equal, the records compared and equal, and each
difference counted under its cause. A difference no rule explains is `unexplained`, and the command fails.

Answer differences (the `divergence` kinds of simulations/capture/compare.py) are explained by
EXPLAINED_ANSWERS, keyed by the kind and the two errors, by OVERTAKEN and by SWEPT below; every other is
unexplained. Record differences are the kinds of offsets_topic.RECORD_KINDS; those below are causes, the others
(`value`, `size`, `real_only`, `simulated_only`) are unexplained unless they follow a sweep SWEPT found.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from simulations.conformance.offsets_topic import RECORD_KINDS

# Record kinds that are explained: not a behaviour of the coordinator (ids and clocks each side picks), or a
# documented limit of coordsim.
EXPLAINED_RECORDS = {
    "timing": "timing: the real broker's clock, not the captured request's time",
    "own_hash": "not modelled: coordsim's metadata hash is not Kafka's XXH3 (docs/consumer-protocol.md)",
    "topic_id": "not modelled: a classic group's replay has no TOPIC_METADATA, coordsim derives the id from the name",
    "image_version": "not modelled: a regex resolution's metadata image version is the cluster's metadata log offset, "
                     "coordsim counts its own topic changes",
    "after_capture": "after the capture: the replay's timers run on (sessions expire) once the real cluster is stopped",
    "partition_metadata": "not modelled: Kafka 4.0's ConsumerGroupPartitionMetadata record (Kafka 4.1 stopped "
                          "writing it, KIP-1101)",
}


# (divergence, captured error, simulated error) -> cause.
EXPLAINED_ANSWERS = {
    # Between a coordinator's crash and its successor's election (simulations/conformance/failover.py), a
    # client may be told of the new leader by a broker that knows before the new leader itself does.
    ("error", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"):
        "not modelled: which broker a captured request went to (one that did not lead the group's partition yet "
        "answers NOT_COORDINATOR; coordsim, between the crash and the move, has no coordinator)",
}


OVERTAKEN = ("timing: the broker answered it before an earlier request of another client still in flight (its "
             "request threads run connections in parallel; coordsim answers in arrival order)")
MADE_UP = "timing: the assignment coordsim answered to the member's request before (follows the above)"


SWEPT = ("timing: the broker's offsets-retention sweep deleted the Empty group between the member id it handed out "
         "(MEMBER_ID_REQUIRED) and that member's JoinGroup, which it answered UNKNOWN_MEMBER_ID (the broker sweeps "
         "every offsets.retention.check.interval.ms counted from its partition's load, coordsim at whole multiples "
         "of it)")
SWEPT_FOLLOWS = ("timing: follows that sweep (the member's rejoin under a new id until it leaves; the broker's "
                 "log holds the group's deletion and re-creation, coordsim's does not, so each key's records from "
                 "the sweep on pair one off)")


def answer_causes(divergences: pd.DataFrame, group_deleted_at: list[int] = ()) -> Counter:
    """Each answer difference's cause, counted (`unexplained: <kind> <api>` where no rule applies);
    `group_deleted_at`: when the broker deleted the group (its GroupMetadata tombstones)."""
    causes = Counter()
    overtaken = _overtaken(divergences)
    swept, _ = _swept(divergences, group_deleted_at)
    for row in divergences.itertuples():
        if row.divergence == "none":
            continue
        key = (row.divergence, row.captured_error, row.simulated_error)
        cause = overtaken.get(row.Index) or EXPLAINED_ANSWERS.get(key) or swept.get(row.Index)
        causes[cause or f"unexplained: {row.divergence} ({row.api})"] += 1
    return causes


def _swept(divergences: pd.DataFrame, group_deleted_at: list[int]) -> tuple[dict[int, str], int | None]:
    """The JoinGroup the broker refused (UNKNOWN_MEMBER_ID, coordsim: NONE) with the member id it had handed
    out on that connection, a tombstone of the group falling between that answer and this one (SWEPT); the
    differing answers after it on that connection up to its LeaveGroup (SWEPT_FOLLOWS); and the sweep's time."""
    refused = divergences[(divergences["api"] == "JoinGroup") & (divergences["captured_error"] == "UNKNOWN_MEMBER_ID")
                          & (divergences["simulated_error"] == "NONE")]
    for index, row in refused.iterrows():
        before = divergences.loc[:index - 1]
        handed = before[(before["connection"] == row["connection"]) & (before["api"] == "JoinGroup")
                        & (before["captured_error"] == "MEMBER_ID_REQUIRED")
                        & (before["captured_member_id"] == row["captured_member_id"])]
        if handed.empty:
            continue
        given = handed.iloc[-1]["captured_response_ts"]
        sweeps = [t for t in group_deleted_at if given <= t <= row["captured_response_ts"]]
        if not sweeps:
            continue
        found = {index: SWEPT}
        for later, after in divergences.loc[index + 1:].iterrows():
            if after["connection"] != row["connection"]:
                continue
            if after["divergence"] != "none":
                found[later] = SWEPT_FOLLOWS
            if after["api"] == "LeaveGroup":
                break
        return found, sweeps[0]
    return {}, None


def _overtaken(divergences: pd.DataFrame) -> dict[int, str]:
    """Assignment differences of requests the real broker answered before an earlier request of another
    connection that was still in flight (OVERTAKEN), and the member's next differing answer of that API when it
    carries what coordsim had answered to the overtaking request (MADE_UP)."""
    found: dict[int, str] = {}
    rows = divergences[divergences["captured_response_ts"].notna()]
    for index, row in divergences[divergences["divergence"] == "assignment"].iterrows():
        if index in found or pd.isna(row["captured_response_ts"]):
            continue
        earlier = rows[(rows["connection"] != row["connection"]) & (rows["request_ts"] <= row["request_ts"])
                       & (rows["captured_response_ts"] > row["captured_response_ts"])]
        if earlier.empty:
            continue
        found[index] = OVERTAKEN
        later = divergences.loc[index + 1:]
        later = later[(later["connection"] == row["connection"]) & (later["api"] == row["api"])
                      & (later["divergence"] != "none")]
        if not later.empty and later.iloc[0]["captured_assignment"] == row["simulated_assignment"]:
            found[later.index[0]] = MADE_UP
    return found


def record_causes(records: pd.DataFrame, swept_at: int | None = None) -> Counter:
    """Each record difference's cause, counted; `swept_at`: the sweep SWEPT found, whose records from then
    on (either side's write time) follow it."""
    causes = Counter()
    for kind, real_ts, simulated_ts in zip(records["kind"], records["real_ts"], records["simulated_ts"]):
        if kind == "equal":
            continue
        cause = EXPLAINED_RECORDS.get(kind)
        written = real_ts if pd.notna(real_ts) else simulated_ts
        if cause is None and swept_at is not None and pd.notna(written) and written >= swept_at:
            cause = SWEPT_FOLLOWS
        causes[cause or f"unexplained: {kind} ({RECORD_KINDS[kind]})"] += 1
    return causes


def summary_row(outcome) -> dict:
    """One line of the table for one scenario's outcome (runner.Outcome)."""
    answers, records = outcome.divergences, outcome.records
    _, swept_at = _swept(answers, outcome.group_deleted_at)
    causes = answer_causes(answers, outcome.group_deleted_at) + record_causes(records, swept_at)
    rejects = Counter(r["reason"].split(":", 1)[0] for r in outcome.rejects)
    return {
        "scenario": outcome.scenario.name, "kafka": outcome.version,
        "answers": len(answers), "answers_equal": int((answers["divergence"] == "none").sum()),
        "records": len(records), "records_equal": int((records["kind"] == "equal").sum()),
        "records_sized": int((records["real_size"].notna() & records["simulated_size"].notna()).sum()),
        "records_same_size": int((records["real_size"] == records["simulated_size"]).sum()),
        "causes": dict(causes), "rejects": dict(rejects),
        "unexplained": sum(n for cause, n in causes.items() if cause.startswith("unexplained")),
    }


def render(rows: list[dict]) -> str:
    """The table as Markdown, as docs/conformance.md holds it."""
    lines = ["| scenario | Kafka | answers equal | records equal | records of the same size | differences and their causes |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        causes = "; ".join(f"{cause} ×{n}" for cause, n in sorted(row["causes"].items())) or "none"
        if row["rejects"]:
            causes += "; capture import rejects: " + ", ".join(f"{k} ×{n}" for k, n in sorted(row["rejects"].items()))
        lines.append(f"| {row['scenario']} | {row['kafka']} | {row['answers_equal']} of {row['answers']} | "
                     f"{row['records_equal']} of {row['records']} | {row['records_same_size']} of {row['records_sized']} "
                     f"| {causes} |")
    return "\n".join(lines)
