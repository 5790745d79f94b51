"""The records of `__consumer_offsets` that the `offsets` and `group_metadata` rows were written from
(state.records.group_log, the values as state.records.record_bytes reads them): what a record's bytes
(tableio.coordinator_load) and its formatters' JSON (simulations.views.record_json) are computed from.

Rows come from pandas, where a null reads back as NaN or pd.NA (and the integer columns a tombstone leaves
null as floats).
"""

from __future__ import annotations

import pandas as pd

from state.records.group_log import GroupMetadataRecord, OffsetCommitRecord


def offset_record(row: dict) -> OffsetCommitRecord:
    """The OffsetCommit record of an `offsets` row (one commit of it, for a quiet run's)."""
    if pd.isna(row["offset"]):
        return OffsetCommitRecord(row["topic"], int(row["partition"]), None)
    return OffsetCommitRecord(row["topic"], int(row["partition"]), {
        "offset": int(row["offset"]), "metadata": row["metadata"], "commit_ts": int(row["commit_ts"]),
        "expire_ts": _int(row["expire_ts"]), "topic_id": _text(row["topic_id"]),
        "leader_epoch": _int(row["leader_epoch"])})


def group_metadata_record(row: dict, members: list[dict] | None) -> GroupMetadataRecord:
    """The GroupMetadata record of a `group_metadata` row, with its `members` (their list as Arrow gives it)."""
    if row["tombstone"]:
        return GroupMetadataRecord(None)
    return GroupMetadataRecord({
        "protocol_type": _text(row["protocol_type"]), "generation_id": int(row["generation_id"]),
        "protocol_name": _text(row["protocol_name"]), "leader_id": _text(row["leader_id"]),
        "current_state_ts": int(row["current_state_ts"]), "members": members})


def _int(value) -> int | None:
    return None if pd.isna(value) else int(value)


def _text(value) -> str | None:
    return None if pd.isna(value) else value
