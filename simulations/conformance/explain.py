"""Every difference of a conformance run named with its cause, and the table docs/conformance.md shows: per
scenario and Kafka version, the answers compared and equal, the records compared and equal, and each
difference counted under its cause. A difference no rule explains is `unexplained`, and the command fails.

Answer differences (the `divergence` kinds of simulations/capture/compare.py) have no rule yet: the scenarios
measured so far answer every request as the real broker did. Record differences are the kinds of
offsets_topic.RECORD_KINDS; those below are causes, the others (`value`, `size`, `real_only`, `simulated_only`)
are unexplained.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from simulations.conformance.offsets_topic import RECORD_KINDS

# Record kinds that are explained: not a behaviour of the coordinator (ids and clocks each side picks), or a
# documented limit of coordsim.
EXPLAINED_RECORDS = {
    "member_ids": "member ids: each coordinator hands out its own (same size, mapped through the JoinGroup answers)",
    "timing": "timing: the real broker's clock, not the captured request's time",
    "own_hash": "not modelled: coordsim's metadata hash is not Kafka's XXH3 (docs/consumer-protocol.md)",
    "topic_id": "not modelled: a classic group's replay has no TOPIC_METADATA, coordsim derives the id from the name",
    "image_version": "not modelled: a regex resolution's metadata image version is the cluster's metadata log offset, "
                     "coordsim counts its own topic changes",
    "after_capture": "after the capture: the replay's timers run on (sessions expire) once the real cluster is stopped",
    "partition_metadata": "not modelled: Kafka 4.0's ConsumerGroupPartitionMetadata record (Kafka 4.1 stopped "
                          "writing it, KIP-1101)",
}


def answer_causes(divergences: pd.DataFrame) -> Counter:
    """Each answer difference's cause, counted (`unexplained: <kind> <api>` where no rule applies)."""
    causes = Counter()
    for row in divergences.itertuples():
        if row.divergence != "none":
            causes[f"unexplained: {row.divergence} ({row.api})"] += 1
    return causes


def record_causes(records: pd.DataFrame) -> Counter:
    causes = Counter()
    for kind in records["kind"]:
        if kind != "equal":
            causes[EXPLAINED_RECORDS.get(kind, f"unexplained: {kind} ({RECORD_KINDS[kind]})")] += 1
    return causes


def summary_row(outcome) -> dict:
    """One line of the table for one scenario's outcome (runner.Outcome)."""
    answers, records = outcome.divergences, outcome.records
    causes = answer_causes(answers) + record_causes(records)
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
