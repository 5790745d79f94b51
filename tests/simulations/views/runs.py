"""Runs the views, report and validation tests share: the tiny trace and the sample, replayed once per
session, small shipped scenarios whose coordinators move, and a Spark-style run in progress written
micro-batch by micro-batch with the real sink."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simulations import scenarios
from simulations.engines import run_local, run_local_to
from tableio.inputs import read_events
from tableio.parquet import write_tables
from tableio.coordinator_settings import load_config
from simulations.views.run_tables import BATCHES, TIME_COLUMNS
from streaming.sink import BatchSink, encode_table

from state.events import parse_event
from tests.state.harness import GroupContext

from ..conftest import SAMPLE
from ..scenarios.helpers import shipped_small

TINY = Path(__file__).with_name("data") / "tiny-trace.jsonl"
T0 = 1772442000000  # 2026-03-02T09:00:00Z, the tiny trace's first event


def _tables(events: Path) -> dict[str, list[dict]]:
    """Every table of a local replay of `events`, input rejects included (as `coordsim replay` writes them)."""
    inputs = read_events([events])
    tables = run_local(inputs.events, load_config()).tables
    return dict(tables, rejects=inputs.rejects + tables["rejects"])


def replay(events: Path, out: Path) -> Path:
    write_tables(out, _tables(events))
    return out


def manual_commits(path: Path, offsets: list[list[int]], every_ms: int, rate: int = 100, start: int = 0) -> Path:
    """Events into `path`: topic `t` (one partition per list of `offsets`) produced at `rate` records/s per
    partition from `start`, and a consumer of group `etl` committing (outside any group protocol, as an admin or a
    manually assigned consumer does) the i-th offset of every list at start + (i + 1) * every_ms."""
    rows = [{"ts": start, "group_id": "etl", "type": "TOPIC_METADATA",
             "topics": [{"topic": "t", "partitions": len(offsets), "records_per_second": rate}]}]
    rows += [{"ts": start + every_ms * (i + 1), "group_id": "etl", "type": "OFFSET_COMMIT", "api_version": 8,
              "client_id": "etl", "generation_id": -1, "member_id": "",
              "offsets": [{"topic": "t", "partition": p, "offset": column[i]} for p, column in enumerate(offsets)]}
             for i in range(len(offsets[0]))]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def lagging_run(tmp_path_factory) -> Path:
    """Every 10 s for 2 minutes, at 100 records/s: partition 0 consumed at half that rate (WARN), partition 1
    kept up with (OK)."""
    folder = tmp_path_factory.mktemp("lagging")
    events = manual_commits(folder / "events.jsonl", [[500 * (i + 1) for i in range(12)],
                                                       [1000 * (i + 1) for i in range(12)]], 10_000)
    return replay(events, folder / "run")


UPGRADE_MS = 60_000  # upgraded_run: when a consumer-protocol member joins the classic group


def _consumer_heartbeat(ctx: GroupContext, member_id: str, epoch: int, owned: dict) -> tuple[int, dict]:
    """A KIP-848 heartbeat (a join's full request at epoch 0); the member's epoch and partitions after it."""
    join = {"rebalance_timeout_ms": 30_000, "subscribed_topic_names": ["foo"]} if epoch == 0 else {}
    reply = ctx.send("CONSUMER_GROUP_HEARTBEAT", member_id=member_id, member_epoch=epoch, **join,
                     topic_partitions=[{"topic": t, "partitions": ps} for t, ps in owned.items()])
    assert reply.error == "NONE", reply.response
    assigned = reply.assignment
    return reply.generation_id, owned if assigned is None else {p["topic"]: p["partitions"] for p in assigned}


def _group(group_id: str) -> GroupContext:
    ctx = GroupContext(group_id, T0, group_consumer_assignment_interval_ms=0)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 4, "topic_id": "Xq6LK8SnRkGxz7Da8ZvqLA"}])
    return ctx


@pytest.fixture(scope="session")
def upgraded_run(tmp_path_factory) -> Path:
    """Both protocols and an online upgrade, 65 s from T0. `upgraded`: a classic group of two members,
    Stable from T0 + 6 s (the initial rebalance delay), heartbeating every 3 s, until a consumer-protocol
    member joins it at UPGRADE_MS: it is converted into a consumer group (Reconciling: the new member waits
    for partitions). `native`: a consumer group of one member, Stable from T0."""
    upgraded = _group("upgraded")
    members = [upgraded.join_new_dynamic() for _ in range(2)]
    for member_id in members:
        upgraded.join(member_id)
    while upgraded.state == "PreparingRebalance":  # the initial rebalance delay, extended once per join
        upgraded.sleep(upgraded.config.group_initial_rebalance_delay_ms)
    leader = upgraded.group.leader_id
    for member_id in sorted(members, key=lambda m: m == leader):  # the leader's SyncGroup last
        upgraded.sync(member_id, 1, assignments={m: [("foo", [2 * i, 2 * i + 1])] for i, m in enumerate(members)}
                      if member_id == leader else None)
    assert upgraded.state == "Stable"
    while upgraded.time < T0 + UPGRADE_MS:
        upgraded.sleep(3_000)
        for member_id in members:
            assert upgraded.heartbeat(member_id, 1).error == "NONE"
    _consumer_heartbeat(upgraded, "C", 0, {})
    upgraded.sleep(5_000)
    native = _group("native")
    epoch, owned = _consumer_heartbeat(native, "A", 0, {})
    while native.time < upgraded.time:
        native.sleep(5_000)
        epoch, owned = _consumer_heartbeat(native, "A", epoch, owned)
    tables: dict[str, list[dict]] = {}
    for ctx in (upgraded, native):
        ctx.finish()
        for name, rows in ctx.tables.items():
            tables.setdefault(name, []).extend(rows)
    out = tmp_path_factory.mktemp("upgraded") / "run"
    write_tables(out, tables)
    return out


def scenario_run(name: str, out: Path, **changes) -> Path:
    """The shipped scenario `name`, every group set with `changes` (groups, members, config, ...), run on the
    local engine into `out` as `coordsim run` writes it."""
    scenario = shipped_small(name, sets={"*": changes})
    generated = scenarios.generate(scenario)
    events = [parse_event(row, "scenario", line) for line, row in enumerate(generated.rows, start=1)]
    run_local_to(out, events, load_config(scenario=scenario.broker), generated.until_ms)
    return out


@pytest.fixture(scope="session")
def failed_broker_run(tmp_path_factory) -> Path:
    """broker-failure with 18 groups: payments-17's coordinator (__consumer_offsets-34 on broker 3) is unloaded
    at 3m when broker 3 fails, loaded Stable at generation 1 on broker 6 at 3m8.966s, and moved back at 8m8.965s."""
    return scenario_run("broker-failure", tmp_path_factory.mktemp("broker-failure") / "run", groups=18)


@pytest.fixture(scope="session")
def moved_run(tmp_path_factory) -> Path:
    """coordinator-move with one group of three (orders-0): its coordinator moves at 2m while it is Stable,
    and at 4m11s while it rebalances (loaded Stable at the generation stored before)."""
    return scenario_run("coordinator-move", tmp_path_factory.mktemp("coordinator-move") / "run", groups=1, members=3)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    return replay(TINY, tmp_path_factory.mktemp("tiny") / "run")


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory) -> Path:
    return replay(SAMPLE, tmp_path_factory.mktemp("sample") / "run")


class SinkBatch:
    """What `BatchSink` needs of a Spark micro-batch: `batch_df.write.partitionBy("table").parquet(path)`
    writing its envelope rows as Spark would (one folder per table, the partition column left out)."""

    def __init__(self, rows: list[tuple[str, dict]]) -> None:
        self.rows = rows

    @property
    def write(self) -> "SinkBatch":
        return self

    def partitionBy(self, column: str) -> "SinkBatch":  # noqa: N802 (Spark's name)
        assert column == "table"
        return self

    def parquet(self, path: str) -> None:
        for table in sorted({t for t, _ in self.rows}):
            rows = [r for t, r in self.rows if t == table]
            folder = Path(path) / f"table={table}"
            folder.mkdir(parents=True)
            # One envelope row per table, as the step writes them.
            pq.write_table(pa.table({"group_id": pa.array([None], pa.string()),
                                     "rows": pa.array([len(rows)], pa.int64()),
                                     "payload": [encode_table(table, rows)]}), folder / "part-00000.parquet")
        Path(path).mkdir(parents=True, exist_ok=True)


def live_run(events: Path, run_dir: Path, cuts: list[int]):
    """Write the local engine's rows of `events` into `run_dir` the way the Spark engine's sink does, one
    committed micro-batch per cut (rows up to that simulated time, its horizon; the run's last time for a cut
    beyond it); yields after each batch. The groups leave no live snapshots: the trace's requests are not
    quiet runs of synthetic clients."""
    tables = _tables(events)
    last = max(t for name, rows in tables.items() for row in rows if (t := _time(name, row)) is not None)
    sink, done = BatchSink(run_dir / BATCHES, lambda batch_id: min(cuts[batch_id], last)), None
    for batch_id, cut in enumerate(cuts):
        batch = [(name, row) for name, rows in tables.items() for row in rows
                 if _in_batch(_time(name, row), done, cut)]
        sink(SinkBatch(batch), batch_id)
        done = cut
        yield batch_id


def _time(table: str, row: dict) -> int | None:
    columns = TIME_COLUMNS.get(table)
    return row[columns[0]] if columns else None


def _in_batch(time: int | None, done: int | None, cut: int) -> bool:
    if time is None:  # rejects (and tables without a clock) come with the first batch
        return done is None
    return (done is None or time > done) and time <= cut
