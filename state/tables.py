"""The output contract: every table's columns, in order, with their types.

Types are written in a small vocabulary (`string`, `int32`, `int64`, `float64`, `bool`, `binary`, `list<T>`,
`struct<name:T,...>`) that the Parquet writers (local engine) and the Spark schema builder both translate, so
the two engines cannot drift apart. Rows are plain dicts keyed by column name. docs/tables.md documents the
same contract for users.

Every row carries `out_seq`: its position among its group's output rows across all tables, in the order the
coordinator produced them. Sorting a table by (group_id, out_seq) gives the same order on every engine.
"""

from __future__ import annotations

from state.variants import VARIANT

PARTITIONS = "list<struct<topic:string,partitions:list<int32>>>"


def partitions_column(partitions) -> list[dict] | None:
    """Partitions by topic (PartitionLists) as a PARTITIONS column, and the input contract, write them."""
    if partitions is None:
        return None
    return [{"topic": p.topic, "partitions": list(p.partitions)} for p in partitions]

RESPONSE_MEMBER = "struct<member_id:string,group_instance_id:string,metadata:binary>"
RESULT = ("struct<member_id:string,group_instance_id:string,topic:string,partition:int32,error:string,"
          "offset:int64,leader_epoch:int32,metadata:string>")
GENERATION_MEMBER = "struct<member_id:string,group_instance_id:string,client_id:string,client_host:string>"
METADATA_MEMBER = ("struct<member_id:string,group_instance_id:string,client_id:string,client_host:string,"
                   "rebalance_timeout_ms:int32,session_timeout_ms:int32,subscription:binary,assignment:binary>")
# A distribution of durations: each duration that occurred and how many times, sorted by duration.
DURATIONS = "list<struct<ms:int64,count:int32>>"

TABLES: dict[str, list[tuple[str, str]]] = {
    "responses": [
        ("group_id", "string"),
        ("request_ts", "int64"),
        ("response_ts", "int64"),
        ("api", "string"),
        ("api_version", "int32"),
        ("request_id", "string"),
        ("request_seq", "int64"),
        ("client_id", "string"),
        ("member_id", "string"),
        ("group_instance_id", "string"),
        ("generation_id", "int32"),
        ("error", "string"),
        ("protocol_type", "string"),
        ("protocol_name", "string"),
        ("leader_id", "string"),
        ("skip_assignment", "bool"),
        ("members", f"list<{RESPONSE_MEMBER}>"),
        ("assignment", PARTITIONS),
        ("results", f"list<{RESULT}>"),
        ("coordinator_partition", "int32"),
        ("coordinator_id", "int32"),
        ("node_id", "int32"),
        ("repeat_count", "int32"),
        ("repeat_interval_ms", "int64"),
        ("heartbeat_interval_ms", "int32"),
        ("out_seq", "int64"),
    ],
    "generations": [
        ("group_id", "string"),
        ("generation_id", "int32"),
        ("protocol_type", "string"),
        ("protocol_name", "string"),
        ("leader_id", "string"),
        ("members", f"list<{GENERATION_MEMBER}>"),
        ("member_count", "int32"),
        ("rebalance_start_ts", "int64"),
        ("join_complete_ts", "int64"),
        ("stable_ts", "int64"),
        ("cause", "string"),
        ("coordinator_partition", "int32"),
        ("coordinator_id", "int32"),
        ("out_seq", "int64"),
    ],
    "assignments": [
        ("group_id", "string"),
        ("generation_id", "int32"),
        ("member_id", "string"),
        ("group_instance_id", "string"),
        ("client_id", "string"),
        ("topic", "string"),
        ("partition", "int32"),
        ("assign_ts", "int64"),
        ("out_seq", "int64"),
    ],
    "offsets": [
        ("group_id", "string"),
        ("topic", "string"),
        ("partition", "int32"),
        ("offset", "int64"),
        ("log_end_offset", "int64"),
        ("metadata", "string"),
        ("leader_epoch", "int32"),
        ("commit_ts", "int64"),
        ("expire_ts", "int64"),
        ("topic_id", "string"),
        ("write_ts", "int64"),
        ("generation_id", "int32"),
        ("member_id", "string"),
        ("coordinator_partition", "int32"),
        ("coordinator_id", "int32"),
        ("repeat_count", "int32"),
        ("repeat_interval_ms", "int64"),
        ("records_per_second", "float64"),
        ("rate_origin_ts", "int64"),
        ("log_end_origin_ts", "int64"),
        ("out_seq", "int64"),
    ],
    "group_metadata": [
        ("group_id", "string"),
        ("write_ts", "int64"),
        ("tombstone", "bool"),
        ("protocol_type", "string"),
        ("generation_id", "int32"),
        ("protocol_name", "string"),
        ("leader_id", "string"),
        ("current_state_ts", "int64"),
        ("members", f"list<{METADATA_MEMBER}>"),
        ("coordinator_partition", "int32"),
        ("coordinator_id", "int32"),
        ("out_seq", "int64"),
    ],
    "consumer_group_records": [
        ("group_id", "string"),
        ("write_ts", "int64"),
        ("record_type", "string"),
        ("member_id", "string"),
        ("regex", "string"),
        ("tombstone", "bool"),
        ("value", "string"),
        ("batch_bytes", "int64"),
        ("coordinator_partition", "int32"),
        ("coordinator_id", "int32"),
        ("out_seq", "int64"),
    ],
    "group_states": [
        ("group_id", "string"),
        ("ts", "int64"),
        ("group_type", "string"),
        ("from_state", "string"),
        ("to_state", "string"),
        ("generation_id", "int32"),
        ("leader_id", "string"),
        ("member_count", "int32"),
        ("cause", "string"),
        ("coordinator_partition", "int32"),
        ("coordinator_id", "int32"),
        ("out_seq", "int64"),
    ],
    "members": [
        ("group_id", "string"),
        ("ts", "int64"),
        ("member_id", "string"),
        ("group_instance_id", "string"),
        ("client_id", "string"),
        ("client_host", "string"),
        ("change", "string"),
        ("cause", "string"),
        ("generation_id", "int32"),
        ("member_count", "int32"),
        ("coordinator_partition", "int32"),
        ("coordinator_id", "int32"),
        ("out_seq", "int64"),
    ],
    "metrics": [
        ("group_id", "string"),
        ("end_ts", "int64"),
        ("end_state", "string"),
        ("end_members", "int32"),
        ("generations", "int32"),
        ("rebalances", "int32"),
        ("rebalance_causes", "list<struct<cause:string,count:int32>>"),
        ("rebalances_after_formation", "int32"),
        ("time_to_stable_ms", "int64"),
        ("rebalance_ms_p50", "int64"),
        ("rebalance_ms_p99", "int64"),
        ("rebalance_ms_max", "int64"),
        ("rebalance_durations", DURATIONS),
        ("unconsumed_partition_ms", "int64"),
        ("unconsumed_gaps", "int64"),
        ("unconsumed_gap_ms_p50", "int64"),
        ("unconsumed_gap_ms_p99", "int64"),
        ("unconsumed_gap_ms_max", "int64"),
        ("unconsumed_gap_durations", DURATIONS),
        ("partitions_moved", "int64"),
        ("duplicate_records", "int64"),
        ("skipped_records", "int64"),
        ("failed_commits", "int64"),
        ("unsent_commits", "int64"),
        ("out_seq", "int64"),
    ],
    "requests": [
        ("group_id", "string"),
        ("ts", "int64"),
        ("seq", "int64"),
        ("type", "string"),
        ("client_id", "string"),
        ("request_id", "string"),
        ("raw", "string"),
        ("repeat_count", "int32"),
        ("repeat_interval_ms", "int64"),
        ("out_seq", "int64"),
    ],
    "log_end_offsets": [
        ("group_id", "string"),
        ("ts", "int64"),
        ("topic", "string"),
        ("records_per_second", "float64"),
        ("base_offset", "int64"),
        ("out_seq", "int64"),
    ],
    "lag_status": [
        ("group_id", "string"),
        ("evaluated_ts", "int64"),
        ("group_status", "string"),
        ("topic", "string"),
        ("partition", "int32"),
        ("status", "string"),
        ("window_commits", "int32"),
        ("window_size", "int32"),
        ("start_offset", "int64"),
        ("start_ts", "int64"),
        ("start_lag", "int64"),
        ("end_offset", "int64"),
        ("end_ts", "int64"),
        ("end_lag", "int64"),
        ("current_lag", "int64"),
        ("maxlag", "bool"),
    ],
    "coordinator_load": [
        ("broker_id", "int32"),
        ("window_start_ts", "int64"),
        ("window_ms", "int64"),
        ("measure", "string"),
        ("name", "string"),
        ("value", "int64"),
    ],
    "rejects": [
        ("raw", "string"),
        ("reason", "string"),
        ("source", "string"),
        ("line", "int64"),
    ],
}

# A sweep's `comparison` table (simulations/views/comparison.py): one row per variant, in sweep order. Between
# `variant` and these come the sweep's axes, one string column each, named as the axis (e.g.
# `group_sets.orders.members`): they differ from sweep to sweep, so the table is not in TABLES.
COMPARISON: list[tuple[str, str]] = [
    ("groups", "int64"),
    ("rebalances", "int64"),
    ("rebalance_causes", "list<struct<cause:string,count:int64>>"),
    ("rebalances_after_formation", "int64"),
    ("rebalance_ms_p99", "int64"),
    ("rebalance_ms_max", "int64"),
    ("unconsumed_partition_ms", "int64"),
    ("duplicate_records", "int64"),
    ("failed_commits", "int64"),
    ("peak_broker_id", "int32"),
    ("peak_broker_requests", "int64"),
    ("peak_window_start_ts", "int64"),
    ("window_ms", "int64"),
    ("actions_peak_broker_id", "int32"),
    ("actions_peak_broker_requests", "int64"),
    ("actions_peak_window_start_ts", "int64"),
    ("find_coordinator_requests", "int64"),
    ("find_coordinator_peak_requests", "int64"),
    ("coordinator_moves", "int64"),
    ("groups_without_coordinator", "int64"),
    ("without_coordinator_ms", "int64"),
    ("without_coordinator_ms_max", "int64"),
]

# Tables the coordinator produces (rejects come from input validation, before any group sees the row;
# lag_status is derived from the offsets table once the run has ended).
GROUP_TABLES = ("responses", "generations", "assignments", "offsets", "group_metadata", "consumer_group_records",
                "group_states", "members", "requests", "metrics", "log_end_offsets")

# Order in which each table is sorted when written, so outputs are byte-identical run to run.
SORT_KEYS: dict[str, tuple[str, ...]] = {name: ("group_id", "out_seq") for name in GROUP_TABLES}
SORT_KEYS["rejects"] = ("source", "line", "raw")
SORT_KEYS["lag_status"] = ("group_id", "topic", "partition")
SORT_KEYS["coordinator_load"] = ("broker_id", "window_start_ts", "measure", "name")


# A sweep's tables (state/variants.py) have one more column, first: the variant each row belongs to. They are
# sorted by it first, then by the table's own SORT_KEYS.
VARIANT_COLUMN = (VARIANT, "string")


def table_spec(table: str, sweep: bool = False) -> list[tuple[str, str]]:
    return [VARIANT_COLUMN, *TABLES[table]] if sweep else TABLES[table]


def columns(table: str, sweep: bool = False) -> list[str]:
    return [name for name, _ in table_spec(table, sweep)]


def parse_type(spec: str):
    """Parse a type string into nested tuples: ("string",), ("list", T), ("struct", [(name, T), ...])."""
    spec = spec.strip()
    if spec.startswith("list<") and spec.endswith(">"):
        return ("list", parse_type(spec[5:-1]))
    if spec.startswith("struct<") and spec.endswith(">"):
        fields, depth, start, body = [], 0, 0, spec[7:-1]
        for i, ch in enumerate(body + ","):
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
            elif ch == "," and depth == 0:
                name, _, sub = body[start:i].partition(":")
                fields.append((name.strip(), parse_type(sub)))
                start = i + 1
        return ("struct", fields)
    if spec not in ("string", "int32", "int64", "float64", "bool", "binary"):
        raise ValueError(f"unknown column type {spec!r}")
    return (spec,)
