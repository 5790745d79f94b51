"""The divergence report: per captured request, what the captured broker answered next to what the simulated
coordinator answered, classified by the first way they differ; plus the final committed offsets of both.

Comparisons never need the member-id mapping: each row compares one client's own view (its error, the
generation it was handed, whether it was the leader, how many members the leader saw, the partitions it was
assigned), which is the same view whatever the ids are called. Generations are compared as a shift: brokers
may number from elsewhere (librdkafka's mock starts at 2), so a generation only diverges when the difference
between captured and simulated numbers changes within the group, i.e. when one coordinator went through a
rebalance the other did not. The shift itself is in the summary. A ConsumerGroupHeartbeat's member epoch is
compared the same way (its own shift per group, over the epochs a member holds; a leave's -1 or -2 must be
equal), and the partitions it was given (none when the answer carried no assignment) like a SyncGroup's.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tableio.captured import CapturedInput, captured_records
from tableio.parquet import PART_FILE, output_errors
from state.captured_ids import RETRY_SUFFIX
from state.quiet_run import expand_rows

# First matching kind wins; the order puts what a client would notice first.
KINDS = (
    ("not_replayed", "the simulator never answered (still parked when the run ended, or not replayed)"),
    ("not_captured", "the capture has no (decodable) response to compare with"),
    ("error", "different error"),
    ("leader", "the client is leader in one and follower in the other"),
    ("members", "the leader was handed a different number of members"),
    ("generation", "the generation shift changed: one coordinator rebalanced where the other did not"),
    ("assignment", "different partitions assigned"),
    ("results", "a per-partition (OffsetCommit, OffsetFetch) or per-member (LeaveGroup) error differs"),
    ("offsets", "OffsetFetch returned different committed offsets"),
    ("member_id_round", "the simulator needed a MEMBER_ID_REQUIRED round the captured broker skipped"),
    ("none", "same answer"),
)

DIVERGENCE_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("group_id", pa.string()),
    ("request_id", pa.string()),
    ("seq", pa.int64()),
    ("api", pa.string()),
    ("api_version", pa.int32()),
    ("client_id", pa.string()),
    ("connection", pa.string()),
    ("request_ts", pa.int64()),
    ("captured_response_ts", pa.int64()),
    ("simulated_response_ts", pa.int64()),
    ("captured_member_id", pa.string()),
    ("simulated_member_id", pa.string()),
    ("captured_error", pa.string()),
    ("simulated_error", pa.string()),
    ("captured_generation", pa.int32()),
    ("simulated_generation", pa.int32()),
    ("captured_leader", pa.bool_()),
    ("simulated_leader", pa.bool_()),
    ("captured_members", pa.int32()),
    ("simulated_members", pa.int32()),
    ("captured_assignment", pa.string()),
    ("simulated_assignment", pa.string()),
    ("divergence", pa.string()),
    ("details", pa.string()),
]
DIVERGENCES_TABLE = "divergences"
_SCHEMA = pa.schema(DIVERGENCE_COLUMNS)
_COMPARED_APIS = ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch",
                  "ConsumerGroupHeartbeat")
# The APIs whose NONE answers hand out a generation (member epoch) and partitions.
_HANDING_OUT_GENERATIONS = ("JoinGroup", "ConsumerGroupHeartbeat")
_HANDING_OUT_PARTITIONS = ("SyncGroup", "ConsumerGroupHeartbeat")


def compare_captured(tables: dict[str, list[dict]], captured_responses: CapturedInput):
    """One row per captured request of the APIs the simulator answers (FindCoordinator has no counterpart),
    in capture order. `tables` are a run's tables (`RunResult.tables`, or rows read back from a run)."""
    import pandas as pd

    simulated: dict[str, list[dict]] = defaultdict(list)
    for row in expand_rows("responses", sorted(tables["responses"], key=lambda r: (r["group_id"], r["out_seq"]))):
        if row["request_id"] is not None:
            simulated[row["request_id"]].append(row)
    captured = sorted((c for c in captured_records(captured_responses) if c["api"] in _COMPARED_APIS),
                      key=lambda c: (c["seq"] if c["seq"] is not None else 0))
    baseline: dict[tuple[str, str], int] = {}  # (group, API) -> the first shift of its generations
    rows = [_compare(c, simulated, baseline) for c in captured]
    table = pa.Table.from_pylist(rows, schema=_SCHEMA)
    nullable = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    return table.to_pandas(types_mapper=nullable.get)


def _compare(c: dict, simulated: dict[str, list[dict]], baseline: dict[tuple[str, str], int]) -> dict:
    rid = c["request_id"]
    answers = simulated.get(rid, [])
    retried = simulated.get(rid + RETRY_SUFFIX, [])
    s = (retried or answers or [None])[-1]
    row = {
        "group_id": c["group_id"], "request_id": rid, "seq": c["seq"], "api": c["api"],
        "api_version": c["api_version"], "client_id": c["client_id"], "connection": c["connection"],
        "request_ts": c["request_ts"], "captured_response_ts": c["response_ts"],
        "captured_member_id": c["member_id"], "captured_error": c["error"],
        "captured_generation": c["generation_id"],
    }
    if c["api"] == "JoinGroup" and c["error"] == "NONE":
        row.update(captured_leader=c["leader_id"] == c["member_id"], captured_members=_leader_view(c))
    if c["api"] in _HANDING_OUT_PARTITIONS and c["error"] == "NONE":
        row["captured_assignment"] = _partitions_text(c["assignment"])
    if s is not None:
        row.update(simulated_response_ts=s["response_ts"], simulated_member_id=s["member_id"],
                   simulated_error=s["error"], simulated_generation=s["generation_id"])
        if s["api"] == "JoinGroup" and s["error"] == "NONE":
            row.update(simulated_leader=s["leader_id"] == s["member_id"], simulated_members=_leader_view(s))
        if s["api"] in _HANDING_OUT_PARTITIONS and s["error"] == "NONE":
            row["simulated_assignment"] = _partitions_text(s["assignment"])
    found = _differences(c, s, bool(retried), baseline)
    row["divergence"] = next((kind for kind, _ in KINDS if kind in found), "none")
    row["details"] = "; ".join(found.values())
    return row


def _differences(c: dict, s: dict | None, retried: bool, baseline: dict[tuple[str, str], int]) -> dict[str, str]:
    found: dict[str, str] = {}
    if s is None:
        found["not_replayed"] = "no simulated response"
        return found
    if c["error"] is None:
        found["not_captured"] = "no captured response"
    elif c["error"] != s["error"]:
        found["error"] = f"error {c['error']} (captured) vs {s['error']} (simulated)"
    both_ok = c["error"] == s["error"] == "NONE"
    if c["api"] == "JoinGroup" and both_ok:
        if (c["leader_id"] == c["member_id"]) != (s["leader_id"] == s["member_id"]):
            found["leader"] = "leader in " + ("the capture only" if c["leader_id"] == c["member_id"] else "the simulation only")
        if c["leader_id"] == c["member_id"] and s["leader_id"] == s["member_id"] and _leader_view(c) != _leader_view(s):
            found["members"] = f"{_leader_view(c)} members (captured) vs {_leader_view(s)} (simulated)"
    if c["api"] in _HANDING_OUT_GENERATIONS and both_ok:
        _compare_generations(c, s, baseline, found)
    if (c["api"] in _HANDING_OUT_PARTITIONS and both_ok
            and _partitions_text(c["assignment"]) != _partitions_text(s["assignment"])):
        found["assignment"] = f"{_assigned(c['assignment'])} (captured) vs {_assigned(s['assignment'])} (simulated)"
    if c["results"] is not None and s["results"] is not None and c["error"] == s["error"]:
        _compare_results(c, s, found)
    if retried:
        found["member_id_round"] = "extra MEMBER_ID_REQUIRED round in the simulation"
    return found


def _compare_generations(c: dict, s: dict, baseline: dict, found: dict[str, str]) -> None:
    """A JoinGroup's generation, or a ConsumerGroupHeartbeat's member epoch, as a shift from the group's first
    (member epochs have a baseline of their own); a member epoch below 1 (a leave's) is compared as it is."""
    captured, simulated = c["generation_id"], s["generation_id"]
    if c["api"] == "ConsumerGroupHeartbeat" and min(captured, simulated) < 1:
        if captured != simulated:
            found["generation"] = f"member epoch {captured} (captured) vs {simulated} (simulated)"
        return
    shift = captured - simulated
    expected = baseline.setdefault((c["group_id"], c["api"]), shift)
    if shift != expected:
        what = "generation" if c["api"] == "JoinGroup" else "member epoch"
        found["generation"] = (f"{what} {captured} (captured) vs {simulated} (simulated), "
                               f"shift {shift:+d} where the group started at {expected:+d}")


def _compare_results(c: dict, s: dict, found: dict[str, str]) -> None:
    def by_item(results, value):
        return {(r["topic"], r["partition"], r["member_id"], r["group_instance_id"]): value(r) for r in results}

    # LeaveGroup results name members by id, which differ by construction; compare their errors in order.
    if c["api"] == "LeaveGroup":
        captured_errors, simulated_errors = ([r["error"] for r in rs] for rs in (c["results"], s["results"]))
    else:
        captured_errors, simulated_errors = (by_item(rs, lambda r: r["error"]) for rs in (c["results"], s["results"]))
    if captured_errors != simulated_errors:
        found["results"] = f"per-item errors {_brief(captured_errors)} (captured) vs {_brief(simulated_errors)} (simulated)"
    if c["api"] == "OffsetFetch":
        captured_offsets, simulated_offsets = (by_item(rs, lambda r: r["offset"]) for rs in (c["results"], s["results"]))
        if captured_offsets != simulated_offsets:
            differing = sorted(k for k in captured_offsets.keys() | simulated_offsets.keys()
                               if captured_offsets.get(k) != simulated_offsets.get(k))
            found["offsets"] = "; ".join(f"{t}-{p}: {captured_offsets.get((t, p, m, i))} (captured) vs "
                                         f"{simulated_offsets.get((t, p, m, i))} (simulated)"
                                         for t, p, m, i in differing[:5])


def _brief(errors) -> str:
    values = errors.values() if isinstance(errors, dict) else errors
    return ", ".join(f"{name}×{n}" for name, n in sorted(Counter(values).items())) or "none"


def _leader_view(response: dict) -> int | None:
    """How many members the leader was handed; None for followers (who get an empty list)."""
    if response["leader_id"] != response["member_id"]:
        return None
    return len(response["members"] or [])


def _assigned(partitions) -> str:
    return "no assignment" if partitions is None else f"assigned [{_partitions_text(partitions)}]"


def _partitions_text(partitions) -> str | None:
    if partitions is None:
        return None
    return ",".join(f"{t}-{p}" for t, p in sorted((e["topic"], p) for e in partitions for p in e["partitions"]))


# ---------------------------------------------------------------------------------------------- offsets

def final_offsets(tables: dict[str, list[dict]], captured_responses: CapturedInput):
    """Each partition's committed offset at the end of the capture and of the run, with the request that
    committed it on each side. Where `same_last_commit` holds (the last commit the captured broker accepted
    is the last one the simulator accepted), the two offsets must be equal."""
    import pandas as pd

    captured: dict[tuple, tuple[int, str]] = {}
    for c in sorted(captured_records(captured_responses), key=lambda c: c["seq"] or 0):
        if c["api"] == "OffsetCommit":
            for r in c["results"] or ():
                if r["error"] == "NONE":
                    captured[(c["group_id"], r["topic"], r["partition"])] = (r["offset"], c["request_id"])
    simulated_request: dict[tuple, str] = {}
    # Quiet runs (docs/tables.md) are written when they end: commits are taken in time order.
    for row in sorted(expand_rows("responses", tables["responses"]),
                      key=lambda r: (r["group_id"], r["request_ts"], r["out_seq"])):
        if row["api"] == "OffsetCommit":
            for r in row["results"] or ():
                if r["error"] == "NONE":
                    simulated_request[(row["group_id"], r["topic"], r["partition"])] = row["request_id"]
    simulated: dict[tuple, int | None] = {}
    for r in sorted(expand_rows("offsets", tables["offsets"]),
                    key=lambda r: (r["group_id"], r["write_ts"], r["out_seq"])):
        simulated[(r["group_id"], r["topic"], r["partition"])] = r["offset"]  # None: a tombstone
    rows = []
    for key in sorted(captured.keys() | simulated.keys()):
        captured_offset, captured_request = captured.get(key, (None, None))
        rows.append({"group_id": key[0], "topic": key[1], "partition": key[2],
                     "captured_offset": captured_offset, "simulated_offset": simulated.get(key),
                     "captured_request_id": captured_request, "simulated_request_id": simulated_request.get(key),
                     "same_last_commit": captured_request is not None
                                         and captured_request == simulated_request.get(key)})
    frame = pd.DataFrame(rows, columns=["group_id", "topic", "partition", "captured_offset", "simulated_offset",
                                        "captured_request_id", "simulated_request_id", "same_last_commit"])
    return frame.astype({"partition": "Int32", "captured_offset": "Int64", "simulated_offset": "Int64",
                         "same_last_commit": "boolean"})


# ---------------------------------------------------------------------------------------------- output

def write_divergences(out_dir: str | os.PathLike, divergences) -> Path:
    """`OUT/divergences/part-00000.parquet`, beside the run's other tables."""
    folder = Path(out_dir) / DIVERGENCES_TABLE
    with output_errors(folder, "the divergences table"):
        folder.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pandas(divergences, schema=_SCHEMA, preserve_index=False)
        pq.write_table(table, folder / PART_FILE, compression="zstd")
    return folder


def divergence_summary(divergences, offsets=None) -> list[tuple[str, str]]:
    """(label, text) lines for a readable summary: counts per kind, per API, the generation (and member epoch)
    shift, the most frequent error pairs and, when given, the final offsets."""
    total = len(divergences)
    kinds = Counter(divergences["divergence"])
    lines = [("requests compared", str(total))]
    lines.append(("by kind", ", ".join(f"{kind} {kinds[kind]}" for kind, _ in KINDS if kinds[kind]) or "-"))
    per_api = divergences[divergences["divergence"] != "none"].groupby("api")["divergence"].agg(
        lambda s: ", ".join(f"{k} {n}" for k, n in Counter(s).most_common()))
    for api, text in per_api.items():
        lines.append((f"  {api}", text))
    answered = divergences[(divergences["captured_error"] == "NONE") & (divergences["simulated_error"] == "NONE")]
    for api, label in (("JoinGroup", "generation shift"), ("ConsumerGroupHeartbeat", "member epoch shift")):
        handed_out = answered[(answered["api"] == api) & (answered["captured_generation"] > 0)
                              & (answered["simulated_generation"] > 0)]
        for group_id, group in handed_out.groupby("group_id"):
            shifts = Counter((group["captured_generation"] - group["simulated_generation"]).astype(int))
            lines.append((f"{label} {group_id}", ", ".join(
                f"captured = simulated {s:+d} ×{n}" for s, n in sorted(shifts.items()))))
    errors = divergences[divergences["divergence"] == "error"]
    pairs = Counter(zip(errors["api"], errors["captured_error"], errors["simulated_error"]))
    for (api, captured, simulated), n in pairs.most_common(5):
        lines.append(("  error", f"{api}: {captured} captured, {simulated} simulated ×{n}"))
    if offsets is not None and len(offsets):
        agree = offsets["captured_offset"].eq(offsets["simulated_offset"]).fillna(False)
        same = offsets["same_last_commit"].fillna(False)
        lines.append(("final offsets", f"{int(agree.sum())} of {len(offsets)} partitions equal; the last accepted "
                                       f"commit is the same request for {int(same.sum())}"))
    return lines


def print_divergence_summary(console, divergences, offsets=None) -> None:
    """The summary on a rich Console, in the style of the replay summary."""
    from rich.markup import escape

    lines = divergence_summary(divergences, offsets)
    width = max(len(label) for label, _ in lines)
    for label, value in lines:
        console.print(f"[bold]{escape(label):<{width}}[/bold]  {escape(value)}", highlight=False, soft_wrap=True)
