"""A run as a Prometheus target: the `/metrics` endpoint of `coordsim dashboard`, in the Prometheus text or
OpenMetrics format (whichever the scraper asks for), written by the prometheus_client library.

Names are the ones a platform team's dashboards already use for a real cluster (docs/prometheus.md maps
each to its Kafka MBean): the group coordinator's metrics as Prometheus' JMX exporter names them (the
generic rules of the Strimzi and Confluent configurations: `kafka_coordinator_group_groupmetadatamanager_*`,
`kafka_network_requestmetrics_*_total`; for `kafka.server:type=group-coordinator-metrics`, which those rules
do not export, the exporter's default naming), and consumer-group offsets and lag as kafka_exporter names them
(`kafka_consumergroup_*`, labels `consumergroup`, `topic`, `partition`). Counters are counters (`_total`).

Every sample carries the simulated time the run has reached as its timestamp (`simulations.views.
kafka_metrics` computes the figures there; of a run in progress, the horizon of its latest committed
micro-batch, where its tables read as its history will, `run_tables`): a scrape of a run in progress adds the
run's next point in time, so Prometheus records the run's history on the simulated time axis; a finished run
gives the same point at every scrape. Figures are recomputed only when a file of the run changes
(`run_tables.signature`).
A finished run's whole history, a point every step of simulated time, is `history`: one OpenMetrics document
to backfill with `promtool tsdb create-blocks-from openmetrics`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Iterable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, Timestamp
from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics

from simulations.views.kafka_metrics import COLUMNS, GROUP_STATES, KafkaFigures, figures_at
from simulations.views.rebalances import CLASSIC
from simulations.views.run_tables import RunError, RunTables, load_run, signature

COORDINATOR_GAUGES = "kafka_coordinator_group_groupmetadatamanager_"
GROUP_COORDINATOR = "kafka_server_group_coordinator_metrics_"
REQUEST_METRICS = "kafka_network_requestmetrics_"
CONSUMER_GROUP = "kafka_consumergroup_"


def families(figures: KafkaFigures) -> list[Metric]:
    """The figures as metric families, every sample stamped with the figures' simulated time."""
    stamp = Timestamp(figures.at // 1000, figures.at % 1000 * 1_000_000)  # exact milliseconds, unlike a float
    out: list[Metric] = []

    def gauge(name: str, doc: str, value: float, labels: dict[str, str] | None = None) -> None:
        family = GaugeMetricFamily(name, doc, labels=list(labels or {}))
        family.add_metric(list((labels or {}).values()), value, timestamp=stamp)
        out.append(family)

    def labelled(family: Metric, rows: Iterator[tuple[list[str], float]]) -> None:
        for labels, value in rows:
            family.add_metric(labels, value, timestamp=stamp)
        out.append(family)

    gauge("coordsim_simulated_time_seconds", "The simulated time the run has reached (epoch seconds).",
          figures.at / 1000)
    classic = figures.groups_by_state[CLASSIC]
    # The GroupMetadataManager gauges count classic groups only (NumGroups is group-count{protocol="classic"}).
    gauge(COORDINATOR_GAUGES + "numgroups", "NumGroups: classic groups.", figures.group_count[CLASSIC])
    for state in GROUP_STATES[CLASSIC]:
        gauge(COORDINATOR_GAUGES + "numgroups" + state.lower(), f"NumGroups{state}: classic groups in {state}.",
              classic[state])
    gauge(COORDINATOR_GAUGES + "numoffsets", "NumOffsets: committed offsets retained.", figures.offsets)
    labelled(GaugeMetricFamily(GROUP_COORDINATOR + "group_count", "group-count: groups by rebalance protocol.",
                               labels=["protocol"]),
             (([kind], n) for kind, n in figures.group_count.items()))
    for kind in GROUP_STATES:
        labelled(GaugeMetricFamily(GROUP_COORDINATOR + f"{kind}_group_count", f"{kind}-group-count: {kind} groups "
                                   "by state.", labels=["state"]),
                 (([state], figures.groups_by_state[kind][state]) for state in GROUP_STATES[kind]))
    gauge(GROUP_COORDINATOR + "offset_count", "offset-count: committed offsets retained.", figures.offsets)
    counts = figures.counts
    for name, doc, count, rate in (
            ("group_completed_rebalance", "classic group completed rebalances", counts.completed_rebalances,
             figures.rebalance_rate),
            ("consumer_group_rebalance", "consumer group rebalances (group epoch bumps)",
             counts.consumer_group_rebalances, figures.consumer_group_rebalance_rate),
            ("offset_commit", "committed offsets", counts.offset_commits, figures.offset_commit_rate),
            ("offset_expiration", "expired offsets", counts.offset_expirations, figures.offset_expiration_rate)):
        gauge(GROUP_COORDINATOR + name + "_rate", f"{name.replace('_', '-')}-rate: {doc} per second.", rate)
        counter = CounterMetricFamily(GROUP_COORDINATOR + name + "_count", f"{name.replace('_', '-')}-count: {doc}.")
        counter.add_metric([], count, timestamp=stamp)
        out.append(counter)
    labelled(CounterMetricFamily(REQUEST_METRICS + "requests", "RequestsPerSec: requests answered.",
                                 labels=["request", "version"]),
             (([api, str(version)], n) for (api, version), n in sorted(counts.requests.items())))
    labelled(CounterMetricFamily(REQUEST_METRICS + "errors", "ErrorsPerSec: response errors (NONE included).",
                                 labels=["request", "error"]),
             (([api, error], n) for (api, error), n in sorted(counts.errors.items())))
    failed = CounterMetricFamily("coordsim_failed_commits", "Failed commit requests (the metrics table's "
                                 "failed_commits), failed connections included.")
    failed.add_metric([], counts.failed_commits, timestamp=stamp)
    out.append(failed)
    _consumer_groups(figures, labelled)
    return out


def _consumer_groups(figures: KafkaFigures, labelled) -> None:
    """kafka_exporter's families: per partition, per topic (`_sum`), per group."""
    tp, topic = ["consumergroup", "topic", "partition"], ["consumergroup", "topic"]
    offsets = [([p.group_id, p.topic, str(p.partition)], p.current_offset) for p in figures.partitions]
    lags = [([p.group_id, p.topic, str(p.partition)], p.lag) for p in figures.partitions if p.lag is not None]
    labelled(GaugeMetricFamily(CONSUMER_GROUP + "current_offset", "Current Offset of a ConsumerGroup at "
                               "Topic/Partition", labels=tp), iter(offsets))
    labelled(GaugeMetricFamily(CONSUMER_GROUP + "current_offset_sum", "Current Offset of a ConsumerGroup at Topic "
                               "for all partitions", labels=topic), _sums(offsets))
    labelled(GaugeMetricFamily(CONSUMER_GROUP + "lag", "Current Approximate Lag of a ConsumerGroup at "
                               "Topic/Partition", labels=tp), iter(lags))
    labelled(GaugeMetricFamily(CONSUMER_GROUP + "lag_sum", "Current Approximate Lag of a ConsumerGroup at Topic "
                               "for all partitions", labels=topic), _sums(lags))
    labelled(GaugeMetricFamily(CONSUMER_GROUP + "members", "Amount of members in a consumer group",
                               labels=["consumergroup"]),
             (([group], n) for group, n in sorted(figures.members.items())))


def _sums(rows: list[tuple[list[str], int]]) -> Iterator[tuple[list[str], int]]:
    sums: dict[tuple[str, str], int] = {}
    for (group, topic, _), value in rows:
        sums[group, topic] = sums.get((group, topic), 0) + value
    return (([group, topic], value) for (group, topic), value in sums.items())


class _Families:
    """What an encoder of prometheus_client collects from: fixed families."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


def history(runs: RunTables | Iterable[RunTables], step_ms: int) -> bytes:
    """The run's figures every `step_ms` of simulated time from its start, and at its end, as one OpenMetrics
    document: a sample per series and step, each series' samples in time order (as backfilling requires).
    `runs`: a run, or a sweep's variants (`load_run(..., variant=V)` each), whose series get a `variant`
    label: one document, each variant's series apart."""
    merged: dict[str, Metric] = {}
    for run in [runs] if isinstance(runs, RunTables) else runs:
        start, end = run.start_ts, run.end_ts
        if end is None:
            continue
        extra = {} if run.variant is None else {"variant": run.variant}
        for at in [*range(start, end, step_ms), end]:
            for family in families(figures_at(run, at)):
                merged.setdefault(family.name, Metric(family.name, family.documentation, family.type)).samples.extend(
                    sample._replace(labels={**sample.labels, **extra}) for sample in family.samples)
    for family in merged.values():
        family.samples.sort(key=lambda sample: (sample.name, sorted(sample.labels.items())))  # stable: time order kept
    return openmetrics(_Families(merged.values()))


class RunMetrics:
    """A prometheus_client collector of a run folder that a run may still be writing."""

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self.run_dir = Path(run_dir)
        self._lock = threading.RLock()  # the encoder calls collect() under it
        self._signature: tuple | None = None
        self._families: list[Metric] = []
        self._bodies: dict[str, bytes] = {}

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            self._refresh()
            return iter(self._families)

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The body and content type of a scrape that sent `accept` as its Accept header."""
        encoder, content_type = choose_encoder(accept or "")
        with self._lock:
            self._refresh()
            if content_type not in self._bodies:
                self._bodies[content_type] = encoder(self)
            return self._bodies[content_type], content_type

    def _refresh(self) -> None:
        stamp = signature(self.run_dir)
        if stamp == self._signature:
            return
        try:
            run = load_run(self.run_dir, COLUMNS)
        except RunError:
            run = None  # nothing committed yet
        at = run.end_ts if run is not None else None
        self._families = families(figures_at(run, at)) if at is not None else []
        self._signature, self._bodies = stamp, {}
