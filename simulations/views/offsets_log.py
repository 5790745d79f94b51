"""`coordsim offsets`: the offsets table printed as Kafka's OffsetsMessageFormatter prints `__consumer_offsets`.

The format is the one of `kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter` in Kafka
0.10.1 to 2.0, the last text format of offset records (2.1 switched to `OffsetAndMetadata(offset=…, …)`,
and Kafka 4's `org.apache.kafka.tools.consumer.OffsetsMessageFormatter` prints JSON):

    [group,topic,partition]::[OffsetMetadata[offset,metadata],CommitTime commit_ms,ExpirationTime expire_ms]
    [group,topic,partition]::NULL                       a tombstone (the offset expired and was removed)

Metadata that is empty prints as `NO_METADATA`. Up to 2.0 every commit had an expiration time; since
KIP-211 (2.1) a commit without `retention_time_ms` has none and expires relative to the group becoming
Empty: its ExpirationTime prints as `_`, as Kafka's source printed it when KIP-211 landed. Tombstones print
`NULL` in upper case, as every version of the text formatter did.

Records come in the order they were written (write_ts, then each group's out_seq): the merged log of every
`__consumer_offsets` partition in time order. A quiet run of auto-commits (one row of the table) prints as
the records of each of its commits.
"""

from __future__ import annotations

import os
from typing import Iterator

import pandas as pd

from simulations.views.describe import require_group
from simulations.views.quiet_runs import expand_runs
from simulations.views.run_tables import RunTables, load_run

NO_METADATA = "NO_METADATA"
NO_EXPIRY = "_"


def offsets_log(run_dir: str | os.PathLike | RunTables, group: str | None = None) -> Iterator[str]:
    """The formatter's lines (without newlines) for every offsets record, or only `group`'s."""
    run = run_dir if isinstance(run_dir, RunTables) else load_run(run_dir)
    rows = run["offsets"]
    if group is not None:
        require_group(run, group)
        rows = rows[rows["group_id"] == group]
    rows = expand_runs("offsets", rows).sort_values(["write_ts", "group_id", "out_seq"], kind="stable")
    for row in rows.itertuples(index=False):
        yield f"[{row.group_id},{row.topic},{row.partition}]::{_value(row)}"


def _value(row) -> str:
    if pd.isna(row.offset):
        return "NULL"
    metadata = row.metadata or NO_METADATA
    expiry = NO_EXPIRY if pd.isna(row.expire_ts) else row.expire_ts
    return f"[OffsetMetadata[{row.offset},{metadata}],CommitTime {row.commit_ts},ExpirationTime {expiry}]"
