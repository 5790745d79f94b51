"""`coordsim offsets`: the run's `__consumer_offsets` records as Kafka's console-consumer formatters print them
(`kafka-console-consumer.sh --topic __consumer_offsets --formatter org.apache.kafka.tools.consumer.F`).

By default, Kafka 4.x's JSON (`simulations.views.record_json`), one record a line, of the formatter F asked
for, each printing only its record types: `OffsetsMessageFormatter` (the default) the OffsetCommit records
(the `offsets` table), `GroupMetadataMessageFormatter` the GroupMetadata records (`group_metadata`). Neither
prints a consumer group's (KIP-848) records. Kafka's formatters write no line separator, so a cluster's
records come as one line: `jq -c .` cuts it into the lines printed here.

`legacy`: the text of `kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter` in Kafka 0.10.1
to 2.0, the last text format of offset records (2.1 switched to `OffsetAndMetadata(offset=…, …)`):

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
from simulations.views.record_json import group_metadata_json, offset_commit_json
from simulations.views.run_tables import RunTables, load_run
from tableio.record_rows import group_metadata_record, offset_record

OFFSETS_FORMATTER = "OffsetsMessageFormatter"
GROUP_METADATA_FORMATTER = "GroupMetadataMessageFormatter"
KAFKA_PACKAGE = "org.apache.kafka.tools.consumer"
# Each formatter's table: the records it prints.
FORMATTERS = {OFFSETS_FORMATTER: "offsets", GROUP_METADATA_FORMATTER: "group_metadata"}
NO_METADATA = "NO_METADATA"
NO_EXPIRY = "_"


class FormatterError(ValueError):
    """A formatter coordsim does not print as, or the legacy text of one that has none."""


def offsets_log(run_dir: str | os.PathLike | RunTables, group: str | None = None,
                formatter: str = OFFSETS_FORMATTER, legacy: bool = False) -> Iterator[str]:
    """The formatter's lines (without newlines) for every record it prints, or only `group`'s. `formatter`: its
    class name, with or without its package; `legacy`: the 0.10.1-2.0 text format (OffsetsMessageFormatter's
    only)."""
    formatter = formatter.removeprefix(KAFKA_PACKAGE + ".")
    if formatter not in FORMATTERS:
        raise FormatterError(f"--formatter {formatter}: not one coordsim prints as; one of {', '.join(FORMATTERS)}")
    if legacy and formatter != OFFSETS_FORMATTER:
        raise FormatterError(f"--format legacy: a text format of {OFFSETS_FORMATTER}'s records only, not of "
                             f"{formatter}'s")
    run = run_dir if isinstance(run_dir, RunTables) else load_run(run_dir)
    table = FORMATTERS[formatter]
    rows = run[table]
    if group is not None:
        require_group(run, group)
        rows = rows[rows["group_id"] == group]
    rows = expand_runs(table, rows).sort_values(["write_ts", "group_id", "out_seq"], kind="stable")
    for row in rows.to_dict("records"):
        if legacy:
            yield f"[{row['group_id']},{row['topic']},{row['partition']}]::{_legacy_value(row)}"
        elif table == "offsets":
            yield offset_commit_json(offset_record(row), row["group_id"])
        else:
            members = None if row["tombstone"] else list(row["members"])
            yield group_metadata_json(group_metadata_record(row, members), row["group_id"])


def _legacy_value(row: dict) -> str:
    if pd.isna(row["offset"]):
        return "NULL"
    metadata = row["metadata"] or NO_METADATA
    expiry = NO_EXPIRY if pd.isna(row["expire_ts"]) else row["expire_ts"]
    return f"[OffsetMetadata[{row['offset']},{metadata}],CommitTime {row['commit_ts']},ExpirationTime {expiry}]"
