"""The `coordinator_load` table: what each broker's group coordinator takes per time window, derived from a
run's written tables once the run has ended (docs/tables.md#coordinator_load). Both engines call
`write_coordinator_load` on their finished tables, so they agree by construction; `coordsim capacity`
calls `coordinator_load` again when asked for another window.

Rows are long: (broker_id, window_start_ts, window_ms, measure, name, value), one per nonzero value. A
window is [window_start_ts, window_start_ts + window_ms), its start a multiple of window_ms since the epoch.
- Counts of things that happen in a window: `requests` by API (at `request_ts`), `responses` by error (at
  `response_ts`), `records` and `bytes` appended to `__consumer_offsets` by record type (at `write_ts`).
- Levels at the window's end e (after everything at e): `groups` hosted, in each state and rebalancing,
  `members` of the hosted groups, JoinGroups `parked` (request_ts <= e < response_ts).

A quiet run (docs/tables.md, "Quiet runs") is counted exactly without expanding it: its requests lie on the
lattice `phase + k * interval`, shared by every run of that interval and phase, so the runs of one lattice
are summed with a difference array over lattice indices and only the lattice's points are binned into
windows: a storm hour's 10^8 heartbeats cost about (intervals x phases x lattice length) points.

Bytes are `state.record_bytes`' sizes. A batch is one operation's records, rebuilt from the rows: the
`offsets` rows of one group written at one `write_ts` by one member (one OffsetCommit request; each commit of
a quiet run of them); a GroupMetadata record alone; the expiry sweep's tombstones of one group at one
`write_ts` (its offset tombstones, then its group tombstone). Records take their offset deltas in `out_seq`
order and the batch header is counted with the batch's first record, so a batch's bytes are
`record_bytes.batch_size` of its records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from state.record_bytes import RECORD_BATCH_OVERHEAD, record_size
from state.records import GroupMetadataRecord, OffsetCommitRecord
from tableio.parquet import PART_FILE, PartFileWriter, arrow_schema, rows_to_arrow, sort_table
from tableio.quiet_run import COUNT, INTERVAL

TABLE = "coordinator_load"
WINDOW_MS = 1000
# At most this many windows in one computation: a smaller window is a mistake, not a request for memory.
MAX_WINDOWS = 10_000_000
# Lattice points binned at once (bounds the memory of a quiet-run computation).
LATTICE_CHUNK = 4_000_000
NO_BROKER = -1  # a null coordinator_id: the run has no cluster, or the request found no coordinator

OFFSET_COMMIT, GROUP_METADATA = "OffsetCommit", "GroupMetadata"
REBALANCING = ("PreparingRebalance", "CompletingRebalance")
DEAD = "Dead"

INPUT_COLUMNS = {
    "responses": ("request_ts", "response_ts", "api", "error", "coordinator_id", COUNT, INTERVAL),
    "offsets": ("group_id", "topic", "partition", "offset", "metadata", "leader_epoch", "commit_ts",
                "expire_ts", "write_ts", "member_id", "coordinator_id", COUNT, INTERVAL, "out_seq"),
    "group_metadata": ("group_id", "write_ts", "tombstone", "protocol_type", "generation_id", "protocol_name",
                       "leader_id", "current_state_ts", "members", "coordinator_id", "out_seq"),
    "group_states": ("group_id", "ts", "to_state", "member_count", "coordinator_id", "out_seq"),
    "members": ("group_id", "ts", "member_count", "coordinator_id", "out_seq"),
}


class LoadError(ValueError):
    """A window that cannot be computed (not positive, or too many windows)."""


def write_coordinator_load(out: Path, final: int | None, writer: PartFileWriter | None = None) -> int:
    """Derive the table from the tables written under `out` and write it (into `writer` if given, which this
    closes); returns its rows."""
    data = coordinator_load(read_inputs(out), final)
    writer = writer or PartFileWriter(out, TABLE)
    with writer:
        writer.write(data)
    return writer.rows


def coordinator_load_rows(tables: Mapping[str, list[dict]], final: int | None) -> list[dict]:
    """The table from a run's rows held in memory (`tableio.run_result`)."""
    frames = {table: _inputs(rows_to_arrow(table, list(tables[table])), names)
              for table, names in INPUT_COLUMNS.items()}
    return coordinator_load(frames, final).to_pylist()


def read_inputs(out: Path) -> dict[str, pd.DataFrame]:
    """The input columns of the tables written under `out`."""
    frames = {}
    for table, names in INPUT_COLUMNS.items():
        path = out / table / PART_FILE
        schema = arrow_schema(table)
        present = [name for name in names if name in schema.names]
        frames[table] = _inputs(pq.read_table(path, columns=present) if path.is_file() else schema.empty_table(),
                                names)
    return frames


def _inputs(data: pa.Table, names: tuple[str, ...]) -> pd.DataFrame:
    """`names` of a table; `coordinator_id` reads null where a run's tables lack it."""
    frame = data.select([name for name in names if name in data.schema.names]).to_pandas()
    for name in names:
        if name not in frame.columns:
            frame[name] = None
    return frame


def coordinator_load(tables: dict[str, pd.DataFrame], final: int | None, window_ms: int = WINDOW_MS) -> pa.Table:
    """The table for windows of `window_ms`, sorted, from the INPUT_COLUMNS of a run's tables."""
    if window_ms < 1:
        raise LoadError(f"window must be at least 1 ms, got {window_ms}")
    load = _Load(window_ms)
    if final is not None:
        responses = tables["responses"]
        count, interval = _runs(responses)
        load.events(_brokers(responses), "requests", responses["api"], responses["request_ts"], count, interval)
        load.events(_brokers(responses), "responses", responses["error"], responses["response_ts"], count, interval)
        parked = responses[(responses["api"] == "JoinGroup") & (responses["response_ts"] > responses["request_ts"])]
        load.levels(_brokers(parked), "parked", "JoinGroup", parked["request_ts"], parked["response_ts"])
        _records(load, tables["offsets"], tables["group_metadata"])
        _groups(load, tables["group_states"], tables["members"], final)
    return load.table(final)


def _brokers(frame: pd.DataFrame) -> np.ndarray:
    return pd.to_numeric(frame["coordinator_id"]).fillna(NO_BROKER).to_numpy("int64")


def _runs(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's request count and interval, as `simulations.views.quiet_runs` reads them."""
    count = pd.to_numeric(frame[COUNT]).fillna(1).clip(lower=1).to_numpy("int64")
    interval = pd.to_numeric(frame[INTERVAL]).fillna(0).to_numpy("int64")
    return count, np.where(count > 1, interval, 0)


def _records(load: "_Load", offsets: pd.DataFrame, metadata: pd.DataFrame) -> None:
    """Records and bytes by type: each row's record at its offset delta in its batch, plus the batch header
    with the batch's first record."""
    o_count, o_interval = _runs(offsets)
    rows = pd.DataFrame({
        "group_id": offsets["group_id"], "write_ts": offsets["write_ts"].astype("int64"),
        "count": o_count, "interval": o_interval, "member_id": offsets["member_id"].fillna(""),
        "tombstone": offsets["offset"].isna(), "out_seq": offsets["out_seq"].astype("int64"),
        "type": OFFSET_COMMIT, "broker": _brokers(offsets), "row": np.arange(len(offsets))})
    gm = pd.DataFrame({
        "group_id": metadata["group_id"], "write_ts": metadata["write_ts"].astype("int64"), "count": 1,
        "interval": 0, "member_id": "", "tombstone": metadata["tombstone"].astype(bool),
        "out_seq": metadata["out_seq"].astype("int64"), "type": GROUP_METADATA, "broker": _brokers(metadata),
        "row": np.arange(len(metadata))})
    rows = pd.concat([rows, gm], ignore_index=True)
    # A GroupMetadata record that is not a tombstone is its own batch: its out_seq keeps it apart.
    rows["batch"] = np.where((rows["type"] == GROUP_METADATA) & ~rows["tombstone"], rows["out_seq"], -1)
    rows = rows.sort_values(["group_id", "write_ts", "out_seq"], kind="stable")
    keys = ["group_id", "write_ts", "count", "interval", "member_id", "tombstone", "batch"]
    rows["delta"] = rows.groupby(keys, sort=False).cumcount()
    sizes = np.empty(len(rows), dtype="int64")
    is_commit = (rows["type"] == OFFSET_COMMIT).to_numpy()
    sizes[is_commit] = _offset_sizes(offsets, rows[is_commit])
    sizes[~is_commit] = [record_size(_metadata_record(r), r["group_id"], offset_delta=d) for r, d in
                         zip(metadata.iloc[rows["row"][~is_commit]].to_dict("records"), rows["delta"][~is_commit])]
    sizes += np.where(rows["delta"].to_numpy() == 0, RECORD_BATCH_OVERHEAD, 0)
    brokers, types = rows["broker"].to_numpy(), rows["type"]
    start, count, interval = rows["write_ts"].to_numpy(), rows["count"].to_numpy(), rows["interval"].to_numpy()
    load.events(brokers, "records", types, start, count, interval)
    load.events(brokers, "bytes", types, start, count, interval, sizes)


def _offset_sizes(offsets: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    """record_size of each OffsetCommit row at its offset delta, computed once per distinct shape (the
    value's fixed-width fields do not change a size)."""
    source = offsets.iloc[rows["row"].to_numpy()].reset_index(drop=True)
    shape = pd.DataFrame({"group_id": source["group_id"], "topic": source["topic"],
                          "partition": source["partition"], "metadata": source["metadata"],
                          "expire": source["expire_ts"].notna(), "epoch": source["leader_epoch"].notna(),
                          "tombstone": source["offset"].isna(), "delta": rows["delta"].to_numpy()})
    codes, first = _factorize(*(shape[name] for name in shape.columns))
    sizes = np.array([record_size(_offset_record(source.iloc[i]), source["group_id"].iat[i],
                                  offset_delta=int(shape["delta"].iat[i])) for i in first], dtype="int64")
    return sizes[codes]


def _offset_record(row: pd.Series) -> OffsetCommitRecord:
    if pd.isna(row["offset"]):
        return OffsetCommitRecord(row["topic"], int(row["partition"]), None)
    return OffsetCommitRecord(row["topic"], int(row["partition"]), {
        "offset": int(row["offset"]), "metadata": row["metadata"], "commit_ts": int(row["commit_ts"]),
        "expire_ts": None if pd.isna(row["expire_ts"]) else int(row["expire_ts"]),
        "leader_epoch": None if pd.isna(row["leader_epoch"]) else int(row["leader_epoch"])})


def _metadata_record(row: dict) -> GroupMetadataRecord:
    if row["tombstone"]:
        return GroupMetadataRecord(None)
    # A column with tombstones' nulls reads back as floats.
    return GroupMetadataRecord({
        "protocol_type": row["protocol_type"], "generation_id": int(row["generation_id"]),
        "protocol_name": row["protocol_name"], "leader_id": row["leader_id"],
        "current_state_ts": int(row["current_state_ts"]), "members": row["members"]})


def _groups(load: "_Load", states: pd.DataFrame, members: pd.DataFrame, final: int) -> None:
    """Groups hosted, per state and rebalancing, and their members, at each window's end: every row of a
    group sets its broker and member count (and a state row its state) until the group's next row."""
    rows = pd.concat([states.assign(kind=0), members.assign(to_state=None, kind=1)], ignore_index=True)
    rows = rows.sort_values(["group_id", "out_seq"], kind="stable")
    state = rows["to_state"].where(rows["kind"] == 0).groupby(rows["group_id"]).ffill()
    ts = rows["ts"].to_numpy("int64")
    following = rows["group_id"].shift(-1) == rows["group_id"]
    # The last row of a group lasts past the end of the run's last window.
    after_end = (final // load.window_ms + 1) * load.window_ms + 1
    until = np.where(following, np.roll(ts, -1), after_end)
    hosted = (state.notna() & (state != DEAD)).to_numpy()
    brokers, state = _brokers(rows)[hosted], state[hosted].to_numpy()
    start, end = ts[hosted], until[hosted]
    load.levels(brokers, "groups", "hosted", start, end)
    load.levels(brokers, "groups", state, start, end)
    rebalancing = np.isin(state, REBALANCING)
    load.levels(brokers[rebalancing], "groups", "rebalancing", start[rebalancing], end[rebalancing])
    count = pd.to_numeric(rows["member_count"]).fillna(0).to_numpy("int64")[hosted]
    load.levels(brokers, "members", "hosted", start, end, count)


def _factorize(*columns) -> tuple[np.ndarray, np.ndarray]:
    """A code per row for its combination of values (0, 1, ... in order of first appearance), and the first
    row of each code."""
    codes = pd.DataFrame(dict(enumerate(columns))).groupby(list(range(len(columns))), sort=False,
                                                            dropna=False).ngroup().to_numpy("int64")
    return codes, np.unique(codes, return_index=True)[1]


class _Load:
    """The table's values as they are added: counts of events (`events`) and levels over time (`levels`),
    each under a label (broker, measure, name)."""

    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms
        self.labels: dict[tuple[int, str, str], int] = {}
        self.counted: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (label, window, value)
        self.spans: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # (label, lo, hi, value)

    def _label(self, brokers: np.ndarray, measure: str, names) -> np.ndarray:
        names = np.broadcast_to(np.asarray(names, dtype=object), brokers.shape)
        codes, first = _factorize(brokers, names)
        table = np.array([self.labels.setdefault((int(brokers[i]), measure, names[i]), len(self.labels))
                          for i in first], dtype="int64")
        return table[codes] if len(codes) else codes

    def events(self, brokers, measure: str, names, start, count, interval, weight=None) -> None:
        """Row i stands for count[i] events at start[i] + k * interval[i], each of weight[i] (1 if none)."""
        label = self._label(np.asarray(brokers), measure, names)
        start, count, interval = (np.asarray(a, dtype="int64") for a in (start, count, interval))
        weight = np.ones(len(label), dtype="int64") if weight is None else np.asarray(weight, dtype="int64")
        lone = (count == 1) | (interval <= 0)
        self.counted.append((label[lone], start[lone] // self.window_ms, weight[lone] * count[lone]))
        run = ~lone
        self._lattice(label[run], start[run], count[run], interval[run], weight[run])

    def _lattice(self, label, start, count, interval, weight) -> None:
        """Runs summed per lattice (label, interval, phase) with a difference array over lattice indices;
        each lattice point's total goes to its window."""
        if not len(label):
            return
        phase, k0 = start % interval, start // interval
        k1 = k0 + count
        codes, first = _factorize(label, interval, phase)
        lo = pd.Series(k0).groupby(codes).min().to_numpy()
        hi = pd.Series(k1).groupby(codes).max().to_numpy()
        lattice_label, lattice_interval, lattice_phase = label[first], interval[first], phase[first]
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
            diff = np.zeros(lsize.sum(), dtype="int64")
            np.add.at(diff, base[local[c]] + k0[rows] - lo[c], weight[rows])
            np.add.at(diff, base[local[c]] + k1[rows] - lo[c], -weight[rows])
            level = np.cumsum(diff)
            owner = np.repeat(lattices, lsize)
            k = lo[owner] + np.arange(lsize.sum()) - np.repeat(base, lsize)
            points = level != 0
            owner, k = owner[points], k[points]
            times = lattice_phase[owner] + k * lattice_interval[owner]
            self.counted.append((lattice_label[owner], times // self.window_ms, level[points]))

    def levels(self, brokers, measure: str, names, start, end, weight=None) -> None:
        """Row i holds weight[i] (1 if none) at every window end e with start[i] <= e < end[i]."""
        label = self._label(np.asarray(brokers), measure, names)
        start, end = np.asarray(start, dtype="int64"), np.asarray(end, dtype="int64")
        weight = np.ones(len(label), dtype="int64") if weight is None else np.asarray(weight, dtype="int64")
        # Window w ends at (w + 1) * window_ms: ends in [start, end) are windows ceil(start/W) - 1 up to
        # (excluding) ceil(end/W) - 1.
        lo, hi = -(-start // self.window_ms) - 1, -(-end // self.window_ms) - 1
        keep = (hi > lo) & (weight != 0)
        self.spans.append((label[keep], lo[keep], hi[keep], weight[keep]))

    def table(self, final: int | None) -> pa.Table:
        schema = arrow_schema(TABLE)
        if final is None or not self.labels:
            return schema.empty_table()
        none = np.empty(0, dtype="int64")
        label, window, value = (np.concatenate(parts) for parts in zip(*self.counted, (none,) * 3))
        span_label, lo, hi, weight = (np.concatenate(parts) for parts in zip(*self.spans, (none,) * 4))
        first = min([window.min(initial=final // self.window_ms), lo.min(initial=final // self.window_ms)])
        last = max(window.max(initial=first), final // self.window_ms)
        windows = last - first + 1
        if windows > MAX_WINDOWS:
            raise LoadError(f"a {self.window_ms} ms window cuts the run into {windows:,} windows "
                            f"(at most {MAX_WINDOWS:,}): give a longer window")
        # Counts: summed per (label, window) without a dense array.
        codes, at = np.unique(label * windows + (window - first), return_inverse=True)
        counted = np.bincount(at, weights=value, minlength=len(codes)).round().astype("int64")
        # Levels: a difference array over the windows of each label that has any.
        levelled, span_at = np.unique(span_label, return_inverse=True)
        diff = np.zeros((len(levelled), windows + 1), dtype="int64")
        np.add.at(diff, (span_at, np.clip(lo - first, 0, windows)), weight)
        np.add.at(diff, (span_at, np.clip(hi - first, 0, windows)), -weight)
        held = np.cumsum(diff[:, :windows], axis=1)
        rows, cols = np.nonzero(held)
        all_label = np.concatenate([codes // windows, levelled[rows]])
        all_window = np.concatenate([codes % windows, cols]) + first
        all_value = np.concatenate([counted, held[rows, cols]])
        keep = all_value != 0
        names = list(self.labels)
        broker = np.array([names[i][0] for i in range(len(names))], dtype="int64")[all_label[keep]]
        data = pa.table({
            "broker_id": pa.array(broker, pa.int32(), mask=broker == NO_BROKER),
            "window_start_ts": pa.array(all_window[keep] * self.window_ms, pa.int64()),
            "window_ms": pa.array(np.full(keep.sum(), self.window_ms), pa.int64()),
            "measure": pa.array([names[i][1] for i in all_label[keep]], pa.string()),
            "name": pa.array([names[i][2] for i in all_label[keep]], pa.string()),
            "value": pa.array(all_value[keep], pa.int64()),
        }, schema=schema)
        return sort_table(TABLE, data)

