"""The `coordinator_load` table: what each broker's group coordinator takes per time window, derived from a
run's written tables once the run has ended (docs/tables.md#coordinator_load). Both engines call
`write_coordinator_load` on their finished tables, so they agree by construction; `coordsim capacity`
calls `coordinator_load` again when asked for another window.

Rows are long: (broker_id, window_start_ts, window_ms, measure, name, value), one per nonzero value. A
window is [window_start_ts, window_start_ts + window_ms), its start a multiple of window_ms since the epoch.
- Counts of things that happen in a window: `requests` by API (at `request_ts`) and `responses` by error (at
  `response_ts`) that a broker answered, at the broker the request went to (`node_id`: FindCoordinator's
  is the one its client picked), `records` and `bytes` appended to `__consumer_offsets` by record type (at `write_ts`):
  OffsetCommit and GroupMetadata from the `offsets` and `group_metadata` rows, a consumer group's records
  (ConsumerGroupMetadata, ...) from `consumer_group_records`, whose rows carry their bytes in their batch.
- Levels at the window's end e (after everything at e): `groups` hosted, in each state and rebalancing,
  `members` of the hosted groups, JoinGroups `parked` (request_ts <= e < response_ts).

A quiet run (docs/tables.md, "Quiet runs"; its count and interval read by `state.quiet_run`'s rules) is counted
exactly without expanding it: its requests lie on the
lattice `phase + k * interval`; runs whose phases differ by less than gcd(interval, window) put their k-th
requests in the same window, so they share a lattice, the runs of a lattice are summed with a difference
array over lattice indices, and only the lattice's points are binned into windows. A storm hour's 10^8
heartbeats (3 s apart, 1 s windows) cost three lattices of 1,200 points per broker.

Every figure is a sum over groups, so the written tables are read once, a range of groups at a time, in
bounded memory (`read_inputs`); strings are read as categories and grouped by their codes.

Bytes are `state.record_bytes`' sizes of the rows' records (`tableio.record_rows`), measured once per shape of
record (the byte lengths of its variable fields and which optional fields it has: all a size depends on). A
batch is one operation's records, rebuilt from the rows: the `offsets` rows of one group written at one
`write_ts` by one member (one OffsetCommit request; each commit of a quiet run of them); a GroupMetadata
record alone; the expiry sweep's tombstones of one group at one `write_ts` (its offset tombstones, then its
group tombstone). Records take their offset deltas in `out_seq` order and the batch header is counted with the
batch's first record, so a batch's bytes are `record_bytes.batch_size` of its records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pandas.api.types import union_categoricals

from state.errors import NETWORK_EXCEPTION
from state.quiet_run import COUNT, INTERVAL, run_counts, run_intervals
from state.record_bytes import RECORD_BATCH_OVERHEAD, record_size
from state.variants import VARIANT
from tableio.parquet import PART_FILE, PartFileWriter, arrow_schema, rows_to_arrow, sort_table, variant_rows
from tableio.record_rows import group_metadata_record, offset_record

TABLE = "coordinator_load"
WINDOW_MS = 1000
# The windows a run's own table may use: the first that keeps the run within MAX_RUN_WINDOWS (a week of
# simulated time fits 1 s windows; an offsets-expiry run of months takes minutes or hours).
RUN_WINDOWS_MS = (1_000, 10_000, 60_000, 600_000, 3_600_000, 86_400_000)
MAX_RUN_WINDOWS = 1_000_000
# At most this many (figure, window) cells in one computation: a shorter window is a mistake, not a request
# for memory.
MAX_CELLS = 50_000_000
# Rows of the largest input table held at once, and read from a file at a time.
RANGE_ROWS = 1_000_000
BATCH_ROWS = 65_536
# Lattice points binned at once (bounds the memory of a quiet-run computation).
LATTICE_CHUNK = 4_000_000
NO_BROKER = -1  # a null broker_id: the run has no cluster, or a FindCoordinator to a broker the input names not
FIND_COORDINATOR = "FindCoordinator"

OFFSET_COMMIT, GROUP_METADATA = "OffsetCommit", "GroupMetadata"
METADATA_MEMBERS = "group_metadata.members"
STRINGS = ("group_id", "api", "error", "topic", "metadata", "topic_id", "member_id", "protocol_type",
           "protocol_name", "leader_id", "to_state", "record_type")
# A classic group rebalancing; a consumer group whose target assignment is not computed or not reached yet.
REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")
# A GroupMetadata member's variable-length fields (the others are two int32 timeouts).
MEMBER_FIELDS = ("member_id", "group_instance_id", "client_id", "client_host", "subscription", "assignment")
DEAD = "Dead"

# The time each table's rows are placed by; the earliest is where the windows start.
TIME_COLUMNS = {"responses": "request_ts", "offsets": "write_ts", "group_metadata": "write_ts",
                "consumer_group_records": "write_ts", "group_states": "ts", "members": "ts"}
INPUT_COLUMNS = {
    "responses": ("request_ts", "response_ts", "api", "error", "coordinator_id", "node_id", COUNT, INTERVAL),
    "offsets": ("group_id", "topic", "partition", "offset", "metadata", "leader_epoch", "commit_ts",
                "expire_ts", "topic_id", "write_ts", "member_id", "coordinator_id", COUNT, INTERVAL, "out_seq"),
    "group_metadata": ("group_id", "write_ts", "tombstone", "protocol_type", "generation_id", "protocol_name",
                       "leader_id", "current_state_ts", "members", "coordinator_id", "out_seq"),
    "consumer_group_records": ("group_id", "write_ts", "record_type", "batch_bytes", "coordinator_id", "out_seq"),
    "group_states": ("group_id", "ts", "to_state", "member_count", "coordinator_id", "out_seq"),
    "members": ("group_id", "ts", "member_count", "coordinator_id", "out_seq"),
}


class LoadError(ValueError):
    """A window that cannot be computed: not positive, or so short the run has too many windows."""


def write_coordinator_load(out: Path, final: int | None, writer: PartFileWriter | None = None,
                           variants: Sequence[str] | None = None) -> int:
    """Derive the table from the tables written under `out` and write it (into `writer` if given, which this
    closes); returns its rows. `variants`: a sweep's, sorted; each variant's rows are derived from its own
    rows alone, as if it had run alone, and get its `variant` column."""
    writer = writer or PartFileWriter(out, TABLE, variants is not None)
    with writer:
        for variant in [None] if variants is None else variants:
            start = first_time(out, variant)
            data = coordinator_load(read_inputs(out, variant), start, final, run_window_ms(start, final))
            if variant is not None:
                data = data.add_column(0, VARIANT, pa.array([variant] * data.num_rows, pa.string()))
            writer.write(data)
    return writer.rows


def coordinator_load_rows(tables: Mapping[str, list[dict]], final: int | None, sweep: bool = False) -> list[dict]:
    """The table from a run's rows held in memory (`tableio.run_result`); `sweep`: the rows of one variant of
    a sweep (with their variant column)."""
    frames = input_frames({table: rows_to_arrow(table, list(tables[table]), sweep) for table in INPUT_COLUMNS})
    start = min((int(frames[table][column].min()) for table, column in TIME_COLUMNS.items()
                 if len(frames[table])), default=None)
    return coordinator_load([frames], start, final, run_window_ms(start, final)).to_pylist()


def run_window_ms(start: int | None, final: int | None) -> int:
    """The window of a run's own table: 1 s unless the run is too long for it (RUN_WINDOWS_MS)."""
    span = 0 if start is None or final is None else final - start
    return next((w for w in RUN_WINDOWS_MS if span // w < MAX_RUN_WINDOWS), RUN_WINDOWS_MS[-1])


def first_time(out: Path, variant: str | None = None) -> int | None:
    """The earliest time in the tables under `out` the load is derived from (of a sweep's `variant`)."""
    times = []
    for table, column in TIME_COLUMNS.items():
        path = out / table / PART_FILE
        if path.is_file():
            times.append(pc.min(variant_rows(pq.read_table(path, columns=_with_variant([column], variant)),
                                            variant)[column]).as_py())
    return min((t for t in times if t is not None), default=None)


def _with_variant(columns: list[str], variant: str | None) -> list[str]:
    return columns if variant is None else [*columns, VARIANT]


def read_inputs(out: Path, variant: str | None = None) -> Iterator[dict[str, pd.DataFrame]]:
    """The input columns of the tables written under `out` (of a sweep's `variant`), a range of groups at a
    time (about RANGE_ROWS rows of the largest table): every figure is a sum over groups. Each table is read
    once, in order."""
    paths = {table: out / table / PART_FILE for table in INPUT_COLUMNS}
    rows = max((pq.ParquetFile(path).metadata.num_rows for path in paths.values() if path.is_file()), default=0)
    # Cut points among the groups that have states (a group without any still falls in one range).
    states = paths["group_states"]
    ids = sorted(pc.unique(variant_rows(pq.read_table(states, columns=_with_variant(["group_id"], variant)),
                                       variant)["group_id"]).drop_null().to_pylist() if states.is_file() else [])
    count = max(1, min(len(ids), -(-rows // RANGE_ROWS)))
    cursors = {table: _Cursor(path, table, variant) for table, path in paths.items()}
    # Responses are counted row by row: they come in pieces of their own, without their group ids.
    responses = cursors.pop("responses")
    piece = -(-responses.rows // count)
    for bound in [*(ids[i * len(ids) // count] for i in range(1, count)), None]:
        tables = {table: cursor.until(bound) for table, cursor in cursors.items()}
        yield input_frames({"responses": responses.next(None if bound is None else piece), **tables})


class _Cursor:
    """A written table's input columns in file order, which is group_id order, handed out one range of
    groups at a time."""

    def __init__(self, path: Path, table: str, variant: str | None = None) -> None:
        schema = arrow_schema(table)
        grouped = () if table == "responses" else ("group_id",)
        columns = [name for name in dict.fromkeys((*grouped, *INPUT_COLUMNS[table])) if name in schema.names]
        self.rows = 0
        if path.is_file():
            # Strings read as dictionaries: the files keep them so.
            file = pq.ParquetFile(path, read_dictionary=[name for name in columns if name in STRINGS])
            columns = [name for name in columns if name in file.schema_arrow.names]
            self.schema = pa.schema([file.schema_arrow.field(name) for name in columns])
            batches = file.iter_batches(batch_size=BATCH_ROWS, columns=_with_variant(columns, variant))
            # A sweep's variants lie one after the other in the file (it is sorted by variant first).
            self.batches = (variant_rows(batch, variant) for batch in batches)
            self.rows = file.metadata.num_rows
        else:
            self.schema, self.batches = schema.empty_table().select(columns).schema, iter(())
        self.held: pa.RecordBatch | None = None

    def next(self, rows: int | None) -> pa.Table:
        """The next `rows` rows (with None: all the rest)."""
        if rows is None:
            return self._take(lambda batch, taken: len(batch))
        return self._take(lambda batch, taken: min(len(batch), rows - taken))

    def until(self, bound: str | None) -> pa.Table:
        """The rows of the groups before `bound` not handed out yet (with None: all the rest)."""
        if bound is None:
            return self.next(None)
        return self._take(lambda batch, taken: pc.sum(pc.less(batch["group_id"], bound)).as_py() or 0)

    def _take(self, count: Callable[[pa.RecordBatch, int], int]) -> pa.Table:
        """Rows from the front, batch after batch, `count(batch, rows taken so far)` of each, until a batch
        is not taken whole (its rest is held for the next call)."""
        taken: list[pa.RecordBatch] = []
        while True:
            batch = self.held if self.held is not None else next(self.batches, None)
            self.held = None
            if batch is None:
                break
            rows = count(batch, sum(map(len, taken)))
            taken.append(batch.slice(0, rows))
            if rows < len(batch):
                self.held = batch.slice(rows)
                break
        return pa.Table.from_batches(taken, self.schema)


def input_frames(tables: Mapping[str, pa.Table]) -> dict[str, pd.DataFrame]:
    """The INPUT_COLUMNS of a run's tables as pandas (`coordinator_id` null where a run's tables lack it),
    with the byte lengths of the records' variable fields, all a record's size depends on; the
    group_metadata members stay in Arrow (METADATA_MEMBERS), read only for the few records measured."""
    frames = {}
    for table, names in INPUT_COLUMNS.items():
        data = tables[table]
        data = data.select([name for name in names if name in data.schema.names and name != "members"])
        # Strings as categories: names and ids repeat, and are grouped by their codes.
        frame = pa.table([pc.dictionary_encode(column) if pa.types.is_string(column.type) else column
                          for column in data.columns], names=data.column_names).to_pandas()
        for name in names:
            if name not in frame.columns and name != "members":
                frame[name] = np.nan
        frames[table] = frame
    offsets, metadata = tables["offsets"], tables["group_metadata"]
    for name in ("group_id", "topic", "metadata"):
        frames["offsets"][f"{name}_bytes"] = _lengths(offsets[name])
    for name in ("group_id", "protocol_type", "protocol_name", "leader_id"):
        frames["group_metadata"][f"{name}_bytes"] = _lengths(metadata[name])
    members = metadata["members"].combine_chunks()
    frames[METADATA_MEMBERS] = members
    flat, parents = members.flatten(), pc.list_parent_indices(members).to_numpy()
    member_bytes = sum(_lengths(flat.field(name)).clip(min=0) for name in MEMBER_FIELDS)
    frames["group_metadata"]["member_count"] = pc.list_value_length(members).fill_null(-1).to_numpy()
    frames["group_metadata"]["members_bytes"] = np.bincount(parents, weights=member_bytes,
                                                            minlength=len(members)).astype("int64")
    return frames


def _lengths(values) -> np.ndarray:
    """The byte length of each string or binary value, -1 for null."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    lengths = [pc.take(pc.binary_length(chunk.dictionary), chunk.indices) if pa.types.is_dictionary(chunk.type)
               else pc.binary_length(chunk) for chunk in chunks]
    return np.concatenate([pc.fill_null(part, -1).to_numpy().astype("int64") for part in lengths]
                          + [np.empty(0, dtype="int64")])


def coordinator_load(chunks: Iterable[Mapping[str, pd.DataFrame]], start: int | None, final: int | None,
                     window_ms: int = WINDOW_MS) -> pa.Table:
    """The table for windows of `window_ms`, sorted, from `input_frames` of a run's tables (in chunks of
    whole groups), whose times run from `start` to `final`."""
    if window_ms < 1:
        raise LoadError(f"window must be at least 1 ms, got {window_ms}")
    if final is None or start is None:
        return arrow_schema(TABLE).empty_table()
    load = _Load(window_ms, start, final)
    for tables in chunks:
        responses = tables["responses"]
        answered = responses[responses["error"] != NETWORK_EXCEPTION]
        count, interval = _runs(answered)
        brokers = _nodes(answered)
        load.events(brokers, "requests", answered["api"], answered["request_ts"], count, interval)
        load.events(brokers, "responses", answered["error"], answered["response_ts"], count, interval)
        # A JoinGroup parked at a broker that then failed was parked there until the failure.
        parked = responses[(responses["api"] == "JoinGroup") & (responses["response_ts"] > responses["request_ts"])]
        load.levels(_nodes(parked), "parked", "JoinGroup", parked["request_ts"], parked["response_ts"])
        _records(load, tables["offsets"], tables["group_metadata"], tables[METADATA_MEMBERS])
        _consumer_group_records(load, tables["consumer_group_records"])
        _groups(load, tables["group_states"], tables["members"])
    return load.table()


def _ints(column: pd.Series, null: int) -> np.ndarray:
    return np.nan_to_num(column.to_numpy("float64", na_value=np.nan), nan=null).astype("int64")


def _brokers(frame: pd.DataFrame) -> np.ndarray:
    return _ints(frame["coordinator_id"], NO_BROKER)


def _nodes(responses: pd.DataFrame) -> np.ndarray:
    """The broker each request went to: its `node_id`; where that is null (no cluster, a FindCoordinator to
    brokers the input names not, or tables from before the column) the coordinator, except for a
    FindCoordinator, which names the coordinator without going to it."""
    node = _ints(responses["node_id"], NO_BROKER)
    fallback = np.where(responses["api"].to_numpy(object) == FIND_COORDINATOR, NO_BROKER, _brokers(responses))
    return np.where(node == NO_BROKER, fallback, node)

def _runs(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's request count and interval (`state.quiet_run`'s rules)."""
    count = run_counts(frame[COUNT].to_numpy("float64", na_value=np.nan))
    return count, run_intervals(count, frame[INTERVAL].to_numpy("float64", na_value=np.nan))


def _records(load: "_Load", offsets: pd.DataFrame, metadata: pd.DataFrame, members: pa.ListArray) -> None:
    """Records and bytes by type: each row's record at its offset delta in its batch, plus the batch header
    with the batch's first record."""
    o_count, o_interval = _runs(offsets)
    tombstone = np.concatenate([offsets["offset"].isna().to_numpy(), metadata["tombstone"].to_numpy(bool)])
    out_seq = np.concatenate([offsets["out_seq"], metadata["out_seq"]]).astype("int64")
    kind = np.repeat([0, 1], [len(offsets), len(metadata)])  # 0: OffsetCommit, 1: GroupMetadata
    rows = {
        "group": union_categoricals([offsets["group_id"].array, metadata["group_id"].array]).codes,
        "write_ts": np.concatenate([offsets["write_ts"], metadata["write_ts"]]).astype("int64"),
        "count": np.concatenate([o_count, np.ones(len(metadata), "int64")]),
        "interval": np.concatenate([o_interval, np.zeros(len(metadata), "int64")]),
        # Who wrote it: the committing member; none for tombstones and GroupMetadata records (-1).
        "member": np.concatenate([offsets["member_id"].cat.codes, np.full(len(metadata), -1)]),
        "tombstone": tombstone,
        # A GroupMetadata record that is not a tombstone is its own batch: its out_seq keeps it apart.
        "batch": np.where((kind == 1) & ~tombstone, out_seq, -1),
        "kind": kind,
        "broker": np.concatenate([_brokers(offsets), _brokers(metadata)]),
        "row": np.concatenate([np.arange(len(offsets)), np.arange(len(metadata))]),
    }
    order = np.lexsort((out_seq, rows["write_ts"], rows["group"]))
    rows = {name: values[order] for name, values in rows.items()}
    batch, _ = _factorize(*(rows[key] for key in
                            ("group", "write_ts", "count", "interval", "member", "tombstone", "batch")))
    delta = pd.Series(batch).groupby(batch).cumcount().to_numpy()
    sizes = np.empty(len(batch), dtype="int64")
    commits = rows["kind"] == 0
    sizes[commits] = _offset_sizes(offsets, rows["row"][commits], delta[commits])
    sizes[~commits] = _metadata_sizes(metadata, members, rows["row"][~commits], delta[~commits])
    sizes += np.where(delta == 0, RECORD_BATCH_OVERHEAD, 0)
    types = pd.Categorical.from_codes(rows["kind"], [OFFSET_COMMIT, GROUP_METADATA])
    for measure, weight in (("records", None), ("bytes", sizes)):
        load.events(rows["broker"], measure, types, rows["write_ts"], rows["count"], rows["interval"], weight)


def _consumer_group_records(load: "_Load", records: pd.DataFrame) -> None:
    """A consumer group's records by type: each row is one record, with its bytes in its batch (the batch
    header counted with the batch's first record) measured when it was written."""
    once, lone = np.ones(len(records), "int64"), np.zeros(len(records), "int64")
    brokers, times = _brokers(records), records["write_ts"].to_numpy("int64")
    for measure, weight in (("records", None), ("bytes", _ints(records["batch_bytes"], 0))):
        load.events(brokers, measure, records["record_type"], times, once, lone, weight)


def _offset_sizes(offsets: pd.DataFrame, rows: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    source = offsets.iloc[rows]
    return _sizes(source, deltas, offset_record, (
        source["group_id_bytes"], source["topic_bytes"], source["metadata_bytes"], source["expire_ts"].notna(),
        source["topic_id"].notna(), source["leader_epoch"].notna(), source["offset"].isna()))


def _metadata_sizes(metadata: pd.DataFrame, members: pa.ListArray, rows: np.ndarray, deltas: np.ndarray
                    ) -> np.ndarray:
    source = metadata.iloc[rows].assign(row=rows)
    return _sizes(source, deltas, lambda row: group_metadata_record(row, members[row["row"]].as_py()), (
        source["group_id_bytes"], source["protocol_type_bytes"], source["protocol_name_bytes"],
        source["leader_id_bytes"], source["member_count"], source["members_bytes"], source["tombstone"]))


def _sizes(source: pd.DataFrame, deltas: np.ndarray, record, shape: tuple) -> np.ndarray:
    """record_size of each row's record at its offset delta, measured once per shape: records whose variable
    fields have the same byte lengths (and nulls) have the same size."""
    codes, first = _factorize(*(np.asarray(column) for column in shape), deltas)
    sizes = np.array([record_size(record(row), row["group_id"], offset_delta=int(delta))
                      for row, delta in zip(source.iloc[first].to_dict("records"), deltas[first])], dtype="int64")
    return sizes[codes] if len(codes) else codes


def _groups(load: "_Load", states: pd.DataFrame, members: pd.DataFrame) -> None:
    """Groups hosted, per state and rebalancing, and their members, at each window's end: every row of a
    group sets its broker and member count (and a state row its state) until the group's next row."""
    group = union_categoricals([states["group_id"].array, members["group_id"].array]).codes
    ts = np.concatenate([states["ts"], members["ts"]]).astype("int64")
    to_state = pd.Categorical(states["to_state"])
    state = np.concatenate([to_state.codes, np.full(len(members), -1)])  # a members row changes no state
    order = np.lexsort((np.concatenate([states["out_seq"], members["out_seq"]]), group))
    group, ts, state = group[order], ts[order], state[order]
    brokers = np.concatenate([_brokers(states), _brokers(members)])[order]
    count = pd.to_numeric(pd.concat([states["member_count"], members["member_count"]])).fillna(0)
    count = count.to_numpy("int64")[order]
    # The group's state: its last state row's (forward fill within the group).
    last = np.maximum.accumulate(np.where(state >= 0, np.arange(len(state)), -1))
    known = (last >= 0) & (group[np.maximum(last, 0)] == group)
    state = np.where(known, state[np.maximum(last, 0)], -1)
    following = np.append(group[1:] == group[:-1], False)
    # The last row of a group lasts past the end of the run's last window.
    until = np.where(following, np.append(ts[1:], 0), (load.first + load.windows) * load.window_ms + 1)
    names = np.asarray(to_state.categories, dtype=object)
    hosted = (state >= 0) & ~np.isin(state, np.flatnonzero(names == DEAD))
    brokers, state, start, end = brokers[hosted], names[state[hosted]], ts[hosted], until[hosted]
    load.levels(brokers, "groups", "hosted", start, end)
    load.levels(brokers, "groups", state, start, end)
    rebalancing = np.isin(state, REBALANCING)
    load.levels(brokers[rebalancing], "groups", "rebalancing", start[rebalancing], end[rebalancing])
    load.levels(brokers, "members", "hosted", start, end, count[hosted])


def _factorize(*columns) -> tuple[np.ndarray, np.ndarray]:
    """A code per row for its combination of values (a null a value like any other), and the first row of
    each code. Categories and integers of a small range are codes already; other columns are hashed."""
    codes, bound = np.zeros(len(columns[0]), dtype="int64"), 1
    for column in columns:
        column_codes, cardinality = _codes(column)
        if bound * cardinality >= 1 << 62:  # keep the mixed-radix code within int64
            codes, bound = _dense(codes, bound)
        codes, bound = codes * cardinality + column_codes, bound * cardinality
    codes, count = _dense(codes, bound)
    first = np.empty(count, dtype="int64")
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return codes, first


def _codes(column) -> tuple[np.ndarray, int]:
    """Codes from 0 for a column's values, and how many codes there can be."""
    if isinstance(column, pd.Categorical):
        return column.codes.astype("int64") + 1, len(column.categories) + 1
    column = np.asarray(column)
    if column.dtype.kind in "iub" and len(column):
        low, high = int(column.min()), int(column.max())
        if high - low < 1 << 22:
            return column.astype("int64") - low, high - low + 1
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    return codes.astype("int64"), max(1, len(uniques))


def _dense(codes: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """The same codes renumbered 0, 1, ... without gaps."""
    if bound <= 4 * len(codes) + 1024:
        present = np.bincount(codes, minlength=bound) > 0
        return (np.cumsum(present) - 1)[codes], int(present.sum())
    codes, uniques = pd.factorize(codes)
    return codes.astype("int64"), len(uniques)


class _Load:
    """The table's values as they are added, per label (broker, measure, name) and window: counts of events
    (`events`) and levels over time (`levels`, as a difference array over the windows)."""

    def __init__(self, window_ms: int, start: int, final: int) -> None:
        self.window_ms = window_ms
        self.first = start // window_ms
        self.windows = final // window_ms - self.first + 1
        self.labels: dict[tuple[int, str, str], int] = {}
        self.counts: dict[int, np.ndarray] = {}
        self.diffs: dict[int, np.ndarray] = {}

    def _label(self, brokers: np.ndarray, measure: str, names) -> np.ndarray:
        """Each row's label code; `names`: one name for every row, or a name per row."""
        if isinstance(names, str):
            names = pd.Categorical.from_codes(np.zeros(len(brokers), dtype="int64"), [names])
        names = pd.Categorical(names)
        codes, first = _factorize(brokers, names)
        table = np.array([self.labels.setdefault((int(brokers[i]), measure, names[i]), len(self.labels))
                          for i in first], dtype="int64")
        if len(self.labels) * self.windows > MAX_CELLS:
            raise LoadError(f"a {self.window_ms} ms window cuts the run into {self.windows:,} windows, too many "
                            f"for its {len(self.labels)} figures: give a longer window")
        return table[codes] if len(codes) else codes

    def _add(self, into: dict[int, np.ndarray], width: int, label: np.ndarray, at: np.ndarray,
             value: np.ndarray) -> None:
        """value[i] added at position at[i] of label[i]'s array, summed in one pass over the labels present."""
        if not len(label):
            return
        present = np.flatnonzero(np.bincount(label))
        local = np.zeros(present[-1] + 1, dtype="int64")
        local[present] = np.arange(len(present))
        sums = np.bincount(local[label] * width + at, weights=value, minlength=len(present) * width)
        for index, row in zip(present, np.rint(sums).astype("int64").reshape(len(present), width)):
            if index in into:
                into[index] += row
            else:
                into[index] = row

    def _count(self, label, times, value) -> None:
        self._add(self.counts, self.windows, label, times // self.window_ms - self.first, value)

    def events(self, brokers, measure: str, names, start, count, interval, weight=None) -> None:
        """Row i stands for count[i] events at start[i] + k * interval[i], each of weight[i] (1 if none)."""
        label = self._label(np.asarray(brokers), measure, names)
        start, count, interval = (np.asarray(a, dtype="int64") for a in (start, count, interval))
        weight = np.ones(len(label), dtype="int64") if weight is None else np.asarray(weight, dtype="int64")
        lone = (count == 1) | (interval <= 0)
        self._count(label[lone], start[lone], weight[lone] * count[lone])
        run = ~lone
        self._lattice(label[run], start[run], count[run], interval[run], weight[run])

    def _lattice(self, label, start, count, interval, weight) -> None:
        """Runs summed per lattice with a difference array over lattice indices k (start // interval); each
        lattice point's total goes to its window. Runs whose phases (start % interval) differ by less than g
        = gcd(interval, window) put their k-th requests in the same window, so a lattice is (label, interval,
        phase // g): a heartbeat interval of 3 s over 1 s windows has three, whatever the members' phases."""
        if not len(label):
            return
        g = np.gcd(interval, self.window_ms)
        offset = (start % interval) // g * g  # the lattice's time at k = 0
        k0 = start // interval
        k1 = k0 + count
        codes, first = _factorize(label, interval, offset)
        lo, hi = np.full(len(first), np.iinfo("int64").max), np.full(len(first), np.iinfo("int64").min)
        np.minimum.at(lo, codes, k0)
        np.maximum.at(hi, codes, k1)
        lattice_label, lattice_interval, lattice_offset = label[first], interval[first], offset[first]
        size = hi - lo + 1
        chunk_of = (np.cumsum(size) - size) // LATTICE_CHUNK
        row_chunk = chunk_of[codes]
        for chunk in np.unique(chunk_of):
            lattices = np.flatnonzero(chunk_of == chunk)
            rows = np.flatnonzero(row_chunk == chunk)
            local = np.full(len(size), -1)
            local[lattices] = np.arange(len(lattices))
            lsize = size[lattices]
            base = np.cumsum(lsize) - lsize
            c = codes[rows]
            diff = np.bincount(base[local[c]] + k0[rows] - lo[c], weights=weight[rows], minlength=lsize.sum())
            diff -= np.bincount(base[local[c]] + k1[rows] - lo[c], weights=weight[rows], minlength=lsize.sum())
            level = np.rint(np.cumsum(diff)).astype("int64")
            owner = np.repeat(lattices, lsize)
            k = lo[owner] + np.arange(lsize.sum()) - np.repeat(base, lsize)
            points = level != 0
            owner, k = owner[points], k[points]
            self._count(lattice_label[owner], lattice_offset[owner] + k * lattice_interval[owner], level[points])

    def levels(self, brokers, measure: str, names, start, end, weight=None) -> None:
        """Row i holds weight[i] (1 if none) at every window end e with start[i] <= e < end[i]."""
        label = self._label(np.asarray(brokers), measure, names)
        start, end = np.asarray(start, dtype="int64"), np.asarray(end, dtype="int64")
        weight = np.ones(len(label), dtype="int64") if weight is None else np.asarray(weight, dtype="int64")
        # Window w ends at (w + 1) * window_ms: ends in [start, end) are windows ceil(start/W) - 1 up to
        # (excluding) ceil(end/W) - 1.
        lo = np.clip(-(-start // self.window_ms) - 1 - self.first, 0, self.windows)
        hi = np.clip(-(-end // self.window_ms) - 1 - self.first, 0, self.windows)
        keep = (hi > lo) & (weight != 0)
        label, lo, hi, weight = label[keep], lo[keep], hi[keep], weight[keep]
        self._add(self.diffs, self.windows + 1, np.concatenate([label, label]), np.concatenate([lo, hi]),
                  np.concatenate([weight, -weight]))

    def table(self) -> pa.Table:
        names = list(self.labels)
        label, window, value = [], [], []
        held = {index: np.cumsum(diff)[:-1] for index, diff in self.diffs.items()}
        for index, values in [*self.counts.items(), *held.items()]:
            nonzero = np.flatnonzero(values)
            label.append(np.full(len(nonzero), index))
            window.append(nonzero)
            value.append(values[nonzero])
        label, window, value = (np.concatenate([*parts, np.empty(0, dtype="int64")]).astype("int64")
                                for parts in (label, window, value))
        broker = np.array([name[0] for name in names] or [0], dtype="int64")[label]
        data = pa.table({
            "broker_id": pa.array(broker, pa.int32(), mask=broker == NO_BROKER),
            "window_start_ts": pa.array((window + self.first) * self.window_ms, pa.int64()),
            "window_ms": pa.array(np.full(len(label), self.window_ms), pa.int64()),
            "measure": pa.array([names[i][1] for i in label], pa.string()),
            "name": pa.array([names[i][2] for i in label], pa.string()),
            "value": pa.array(value, pa.int64()),
        }, schema=arrow_schema(TABLE))
        return sort_table(TABLE, data)
