"""The scenario format: what a scenario file may say, read into typed objects and checked.

A scenario names group sets (many groups alike: members, topics, assignors, membership, consumer settings)
and a timeline of actions on them, and optionally the cluster under them (`cluster:`, a
state.cluster.Cluster). Anything wrong is a `ScenarioError` naming the file, line and key path.
docs/scenarios.md is the user's reference for the same format; `generator` turns a `Scenario` into events.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from simulations.scenarios.document import (Node, ScenarioError, Section, as_choice, as_duration_ms, as_int, as_list,
                                            as_mapping, as_number, as_str, as_time_ms, describe, parse_yaml)
from state.clients.config import ClientConfig
from state.cluster import (AUTO_LEADER_REBALANCE, DEFAULT_NUM_PARTITIONS, DEFAULT_REPLICATION_FACTOR,
                           HEARTBEAT_INTERVAL, IMBALANCE_CHECK_INTERVAL, IMBALANCE_PERCENTAGE, LOAD_RATE,
                           NUM_PARTITIONS, REPLICATION_FACTOR, SEGMENT_BYTES, SESSION_TIMEOUT, Broker, Cluster,
                           ClusterError, ControllerSettings, TopicDescription, parse_topic_description)
from state.config import ConfigError, CoordinatorConfig
from state.consumer_group.regex import InvalidRegularExpression, compile_regex
from state.events import TOPIC_MAX_LENGTH

DEFAULT_START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: fixed, so a scenario without `start` reproduces
DEFAULT_RECORDS_PER_SECOND = 100.0
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"
NAME_HINT = " (letters, digits, '.', '_' and '-', starting with a letter or digit)"
ASSIGNMENT_STRATEGY = "partition.assignment.strategy"
SWEEP_KEY = "sweep"
TOP_LEVEL_KEYS = ("name", "description", "start", "duration", "seed", "broker", "cluster", "group_sets", "timeline",
                  SWEEP_KEY)
GROUP_SET_KEYS = ("name", "groups", "members", "topics", "topic_pattern", "assignors", "membership", "config",
                  "stagger")


@dataclass(frozen=True)
class Topic:
    name: str
    partitions: int
    records_per_second: float


@dataclass(frozen=True)
class GroupSet:
    name: str
    groups: int
    members: int
    topics: tuple[Topic, ...]
    static: bool
    config: dict[str, Any]  # consumer settings under Kafka's names, as CLIENT_START carries them
    stagger_ms: int
    line: int
    # The members subscribe to this broker-side pattern (group.protocol=consumer) instead of `topics`, which
    # then only make the cluster's topics.
    topic_pattern: str | None = None


@dataclass(frozen=True)
class Share:
    """How many of n: every one (`all`), a count, or a fraction rounded up."""

    count: int | None = None
    fraction: float | None = None

    def of(self, n: int) -> int:
        if self.count is not None:
            return self.count
        if self.fraction is not None:
            return min(n, math.ceil(self.fraction * n - 1e-9))
        return n


ALL = Share()
ONE = Share(count=1)


@dataclass(frozen=True)
class Distribution:
    """A duration drawn per member: `fixed` (low), `uniform` [low, high], `exponential` (mean low, capped at
    high when high is set)."""

    kind: str
    low_ms: int
    high_ms: int | None = None

    def draw(self, rng: random.Random) -> int:
        if self.kind == "fixed":
            return self.low_ms
        if self.kind == "uniform":
            return rng.randint(self.low_ms, self.high_ms)
        value = round(rng.expovariate(1 / self.low_ms)) if self.low_ms else 0
        return value if self.high_ms is None else min(value, self.high_ms)


@dataclass(frozen=True)
class Action:
    kind: str
    at_ms: int | None  # None: when the previous action of the timeline ends
    targets: tuple[str, ...]
    groups: Share
    members: Share
    seed: str | None
    path: str
    line: int

    @property
    def label(self) -> str:
        return f"{self.path} ({self.kind}, line {self.line})"


@dataclass(frozen=True)
class RollingRestart(Action):
    downtime_ms: int
    gap_ms: int
    batch: int
    jitter_ms: int
    crash: bool
    config: dict[str, Any] | None = None  # settings the restarted clients come back with, over their set's


@dataclass(frozen=True)
class Crash(Action):
    restart_after: Distribution | None
    config: dict[str, Any] | None = None  # as RollingRestart's; only with restart_after


@dataclass(frozen=True)
class Pause(Action):
    duration: Distribution
    scope: str  # process | poll


@dataclass(frozen=True)
class Flap(Action):
    cycles: int
    down_ms: int
    up_ms: int
    jitter_ms: int
    crash: bool


@dataclass(frozen=True)
class ScaleOut(Action):
    pass


@dataclass(frozen=True)
class ScaleIn(Action):
    pass


@dataclass(frozen=True)
class PartitionIncrease(Action):
    topic: str
    partitions: int


@dataclass(frozen=True)
class Idle(Action):
    duration_ms: int


@dataclass(frozen=True)
class CoordinatorMove(Action):
    load_ms: int


@dataclass(frozen=True)
class BrokerAction(Action):
    """broker_down, broker_shutdown, broker_up or preferred_leader_election (no broker)."""

    broker: int | None
    restart_after_ms: int | None


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    start_ms: int
    duration_ms: int
    seed: int | str
    broker: dict[str, Any]
    group_sets: tuple[GroupSet, ...]
    timeline: tuple[Action, ...]
    source: str
    cluster: Cluster | None = None  # None: one implicit coordinator for every group
    controller: ControllerSettings = ControllerSettings()

    @property
    def until_ms(self) -> int:
        return self.start_ms + self.duration_ms


# ----------------------------------------------------------------------------------------------------------

def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    return parse_scenario(read_scenario_text(path), str(path), path.stem)


def read_scenario_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioError(f"cannot read ({error.strerror or error})", str(path)) from None
    except UnicodeDecodeError:
        raise ScenarioError("not UTF-8 text", str(path)) from None


def parse_scenario(text: str, source: str = "<scenario>", default_name: str = "scenario") -> Scenario:
    return scenario_from_document(parse_yaml(text, source), default_name)


def scenario_from_document(document: Node, default_name: str = "scenario") -> Scenario:
    """The scenario a parsed document describes (a sweep's variant is a document with values replaced). Its
    `sweep:` section is not read here: it describes other scenarios (`simulations.scenarios.sweep`)."""
    source = document.source
    root = Section(document, "the scenario").allow(TOP_LEVEL_KEYS)
    root.get(SWEEP_KEY)
    name = _optional(root, "name", lambda n: as_str(n, NAME_PATTERN, NAME_HINT), default_name)
    description = _optional(root, "description", as_str, "")
    start_ms = _optional(root, "start", as_time_ms, DEFAULT_START_MS)
    duration = root.require("duration")
    duration_ms = as_duration_ms(duration, positive=True)
    seed = _optional(root, "seed", _seed, 0)
    broker_node = root.get("broker")
    broker = {} if broker_node is None else _broker(broker_node)
    cluster_node = root.get("cluster")
    cluster = None if cluster_node is None else _cluster(cluster_node, broker_node, seed)
    controller = ControllerSettings() if cluster_node is None else _controller(cluster_node)
    if cluster is not None:
        broker = {**broker, NUM_PARTITIONS: cluster.num_partitions}
    sets_node = root.require("group_sets")
    group_sets = tuple(_group_set(item) for item in as_list(sets_node))
    names = [s.name for s in group_sets]
    for index, group_set in enumerate(group_sets):
        if names.index(group_set.name) != index:
            raise ScenarioError(f"group set name {group_set.name!r} is used twice", source, group_set.line,
                                f"group_sets[{index}].name")
    timeline_node = root.get("timeline")
    actions = [] if timeline_node is None or timeline_node.value is None else as_list(timeline_node, non_empty=False)
    timeline = tuple(_action(item, group_sets, duration_ms, cluster) for item in actions)
    return Scenario(name, description, start_ms, duration_ms, seed, broker, group_sets, timeline, source, cluster,
                    controller)


def _optional(section: Section, key: str, read: Callable[[Node], Any], default: Any) -> Any:
    node = section.get(key)
    return default if node is None else read(node)


def _seed(node: Node) -> int | str:
    if isinstance(node.value, bool) or not isinstance(node.value, (int, str)):
        raise node.error(f"must be an integer or text, got {describe(node.value)}")
    return node.value


def _broker(node: Node) -> dict[str, Any]:
    located = as_mapping(node, "broker settings")
    settings = {key: value.value for key, value in located.items()}
    _check_settings(node, located, settings, CoordinatorConfig.from_kafka)
    return settings


def _check_settings(node: Node, located: dict[str, Node], settings: dict[str, Any],
                    build: Callable[[dict], Any]) -> None:
    """Check the settings as a whole. An error is reported at the one setting that fails alone with the same
    message (an unknown name, a bad value), else at `node` (settings that only conflict together)."""
    try:
        build(settings)
    except ConfigError as error:
        for key, value in located.items():
            try:
                build({key: settings[key]})
            except ConfigError as alone:
                if str(alone) == str(error):
                    raise value.error(str(error)) from None
        raise node.error(str(error)) from None


# ----------------------------------------------------------------------------------------------------------
# The cluster

def _cluster(node: Node, broker_node: Node | None, seed: int | str) -> Cluster:
    """Placed as a controller places a new topic (seeded from the scenario), or from a partition map. The
    partition count has one source of truth, the cluster: the coordinator's `offsets.topic.num.partitions`
    is set from it, and a different value under `broker:` is an error."""
    if isinstance(node.value, dict) and IMBALANCE_PERCENTAGE in node.value:
        raise node.value[IMBALANCE_PERCENTAGE].error(
            "a KRaft controller does not read it (only the ZooKeeper controller did): it gives every partition "
            f"off its preferred leader back at each {IMBALANCE_CHECK_INTERVAL}, however small the imbalance; "
            "remove it")
    section = Section(node, "the cluster").allow(
        ["brokers", NUM_PARTITIONS, REPLICATION_FACTOR, "partitions_from", "replicas"] + list(CONTROLLER_KEYS))
    brokers_node = section.get("brokers")
    count_node, factor_node = section.get(NUM_PARTITIONS), section.get(REPLICATION_FACTOR)
    from_node, replicas_node = section.get("partitions_from"), section.get("replicas")
    brokers = None if brokers_node is None else _brokers(brokers_node)
    count = None if count_node is None else as_int(count_node, lo=1)
    factor = None if factor_node is None else as_int(factor_node, lo=1)
    if from_node is not None and replicas_node is not None:
        raise replicas_node.error("give the partition map either here or as partitions_from, not both")
    map_node = from_node or replicas_node
    if map_node is None:
        if brokers is None:
            raise ScenarioError("missing required key 'brokers' (the cluster)", node.source, node.line, node.path)
        count = _agreed_partition_count(count, count_node or node, broker_node)
        factor = DEFAULT_REPLICATION_FACTOR if factor is None else factor
        if factor > len(brokers):
            raise (factor_node or node).error(f"{REPLICATION_FACTOR} is {factor}, more than the {len(brokers)} "
                                              f"broker(s)" + ("" if factor_node else " (the default is 3)"))
        placement_seed = random.Random(f"{seed}/cluster").getrandbits(64)
        return _located(lambda: Cluster.placed(brokers, count, factor, placement_seed), brokers_node)
    replicas, line_of = (_replicas_from(from_node) if from_node is not None else _replicas(replicas_node))
    if brokers is None:
        brokers = tuple(Broker(i) for i in sorted({r for ids in replicas.values() for r in ids}))
    cluster = _located(lambda: Cluster.of(brokers, replicas), map_node, line_of)
    if count is not None and count != cluster.num_partitions:
        raise count_node.error(f"is {count}, but {map_node.path} has {cluster.num_partitions} partitions")
    if factor is not None and factor != cluster.replication_factor:
        raise factor_node.error(f"is {factor}, but {map_node.path} has {cluster.replication_factor} replicas "
                                "per partition")
    _agreed_partition_count(cluster.num_partitions, map_node, broker_node)
    return cluster


def _as_bool(node: Node) -> bool:
    if not isinstance(node.value, bool):
        raise node.error(f"must be true or false, got {describe(node.value)}")
    return node.value


# The cluster section's controller settings: key -> (ControllerSettings field, reader)
CONTROLLER_KEYS: dict[str, tuple[str, Callable[[Node], Any]]] = {
    SESSION_TIMEOUT: ("broker_session_timeout_ms", lambda n: as_int(n, lo=1)),
    HEARTBEAT_INTERVAL: ("broker_heartbeat_interval_ms", lambda n: as_int(n, lo=1)),
    AUTO_LEADER_REBALANCE: ("auto_leader_rebalance_enable", _as_bool),
    IMBALANCE_CHECK_INTERVAL: ("leader_imbalance_check_interval_s", lambda n: as_int(n, lo=1)),
    SEGMENT_BYTES: ("offsets_topic_segment_bytes", lambda n: as_int(n, lo=1)),
    LOAD_RATE: ("load_bytes_per_second", lambda n: as_int(n, lo=1)),
}


def _controller(node: Node) -> ControllerSettings:
    values = {field: read(node.value[key]) for key, (field, read) in CONTROLLER_KEYS.items() if key in node.value}
    settings = ControllerSettings(**values)
    if settings.broker_heartbeat_interval_ms >= settings.broker_session_timeout_ms:
        raise (node.value.get(HEARTBEAT_INTERVAL) or node.value.get(SESSION_TIMEOUT) or node).error(
            f"{HEARTBEAT_INTERVAL} ({settings.broker_heartbeat_interval_ms}) must be lower than {SESSION_TIMEOUT} "
            f"({settings.broker_session_timeout_ms}): the controller would fence a live broker between its "
            "heartbeats")
    return settings


def _agreed_partition_count(count: int | None, where: Node, broker_node: Node | None) -> int:
    """The cluster's partition count, which the broker setting of the same name must not contradict."""
    setting = None if broker_node is None else broker_node.value.get(NUM_PARTITIONS)
    if count is None:
        return DEFAULT_NUM_PARTITIONS if setting is None else setting.value
    if setting is not None and setting.value != count:
        raise setting.error(f"is {setting.value}, but the cluster has {count} partitions ({where.path}, line "
                            f"{where.line}): give {NUM_PARTITIONS} once, under cluster:")
    return count


def _brokers(node: Node) -> tuple[Broker, ...]:
    """`brokers: 6` (ids 1 to 6, as Kafka's shipped server.properties starts at node.id=1) or a list of
    `{id: 1, rack: a}`."""
    if isinstance(node.value, int) and not isinstance(node.value, bool):
        return tuple(Broker(i) for i in range(1, as_int(node, lo=1) + 1))
    if not isinstance(node.value, list):
        raise node.error(f"must be a broker count or a list of {{id: 1, rack: a}}, got {describe(node.value)}")
    brokers = []
    for item in as_list(node):
        section = Section(item, "a broker").allow(["id", "rack"])
        id_node = section.require("id")
        broker_id = as_int(id_node, lo=0)
        if broker_id in {b.id for b in brokers}:
            raise id_node.error(f"broker id {broker_id} is listed twice")
        rack_node = section.get("rack")
        if rack_node is not None and (isinstance(rack_node.value, bool)
                                      or not isinstance(rack_node.value, (str, int)) or rack_node.value == ""):
            raise rack_node.error(f"must be a rack name, got {describe(rack_node.value)}")
        brokers.append(Broker(broker_id, None if rack_node is None else str(rack_node.value)))
    return tuple(brokers)


def _replicas(node: Node) -> tuple[dict[int, list[int]], Callable[[int], tuple[str, int, str]]]:
    mapping = as_mapping(node, "the partition map (partition: [broker ids])")
    replicas: dict[int, list[int]] = {}
    for key, value in mapping.items():
        if not key.isdigit():
            raise value.error(f"{key!r} is not a partition number")
        replicas[int(key)] = [as_int(item, lo=0) for item in as_list(value)]
    nodes = {int(key): value for key, value in mapping.items()}
    return replicas, lambda partition: (node.source, nodes[partition].line, nodes[partition].path)


def _replicas_from(node: Node) -> tuple[dict[int, tuple[int, ...]], Callable[[int], tuple[str, int, str]]]:
    """A `kafka-topics.sh --describe --topic __consumer_offsets` output, relative to the scenario's folder."""
    path = Path(node.source).parent / as_str(node)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise node.error(f"cannot read {path} ({getattr(error, 'strerror', None) or error})") from None
    try:
        description: TopicDescription = parse_topic_description(text)
    except ClusterError as error:
        raise node.error(f"{path}: {error}") from None
    lines = {p.partition: p.line for p in description.partitions}
    return description.replicas(), lambda partition: (str(path), lines[partition], node.path)


def _located(build: Callable[[], Cluster], node: Node,
             where: Callable[[int], tuple[str, int, str]] | None = None) -> Cluster:
    """The cluster, or its ClusterError at the partition's own line when it names one, else at `node`."""
    try:
        return build()
    except ClusterError as error:
        if error.partition is not None and where is not None:
            raise ScenarioError(str(error), *where(error.partition)) from None
        raise node.error(str(error)) from None


def _group_set(node: Node) -> GroupSet:
    section = Section(node, "a group set").allow(GROUP_SET_KEYS)
    name = as_str(section.require("name"), NAME_PATTERN, NAME_HINT)
    groups = _optional(section, "groups", lambda n: as_int(n, lo=1), 1)
    members = as_int(section.require("members"), lo=1)
    topics_node = section.require("topics")
    topics = tuple(_topic(item) for item in as_list(topics_node))
    topic_names = [t.name for t in topics]
    for index, topic in enumerate(topics):
        if topic_names.index(topic.name) != index:
            raise topics_node.value[index].error(f"topic {topic.name!r} is listed twice")
    membership = _optional(section, "membership", lambda n: as_choice(n, ("dynamic", "static")), "dynamic")
    config = _consumer_config(section.get("config"), section.get("assignors"))
    stagger_ms = _optional(section, "stagger", as_duration_ms, None)
    if stagger_ms is None:
        stagger_ms = default_stagger_ms(ClientConfig.from_kafka(config))
    pattern = _topic_pattern(section.get("topic_pattern"), config)
    return GroupSet(name, groups, members, topics, membership == "static", config, stagger_ms, node.line, pattern)


def _topic_pattern(node: Node | None, config: dict[str, Any]) -> str | None:
    """A group set's `topic_pattern`: a broker-side (RE2J) pattern the coordinator can compile, for consumers
    with group.protocol=consumer (the classic consumer refuses subscribe(SubscriptionPattern))."""
    if node is None or node.value is None:
        return None
    pattern = as_str(node)
    if not pattern:
        raise node.error("must be a non-empty regular expression")
    try:
        compile_regex(pattern)
    except InvalidRegularExpression as error:
        raise node.error(str(error)) from None
    if ClientConfig.from_kafka(config).group_protocol != "consumer":
        raise node.error("needs config group.protocol: consumer (the classic consumer refuses "
                         "subscribe(SubscriptionPattern); a client-side java.util.regex.Pattern is not modelled)")
    return pattern


def default_stagger_ms(config: ClientConfig) -> int:
    """The default spread of a group set's group clocks: the longer of the heartbeat interval and the poll
    loop's commit interval. A Java client's heartbeat timer starts when its group's JoinGroup completes and its
    auto-commit timer when its group's SyncGroup does (ConsumerCoordinator.onJoinComplete), so the members of
    one group heartbeat and commit in phase, while groups whose pods started at unrelated times are in any
    phase: spreading the groups over one full interval of each spreads their requests evenly over every
    second, instead of stacking them into one."""
    return max(config.heartbeat_interval_ms, config.commit_interval_ms)


def _topic(node: Node) -> Topic:
    section = Section(node, "a topic").allow(["name", "partitions", "records_per_second"])
    name_node = section.require("name")
    name = as_str(name_node, NAME_PATTERN, NAME_HINT)
    if len(name) > TOPIC_MAX_LENGTH:
        raise name_node.error(f"is {len(name)} characters long; Kafka's topic names have at most {TOPIC_MAX_LENGTH}")
    partitions = as_int(section.require("partitions"), lo=1)
    rate = _optional(section, "records_per_second", as_number, DEFAULT_RECORDS_PER_SECOND)
    return Topic(name, partitions, rate)


def _consumer_config(config_node: Node | None, assignors_node: Node | None,
                     base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The consumer settings given (a group set's `config:` and `assignors`). With `base` (a group set's
    settings, when these come over them: a restart's `config:`), they are checked merged over it, and a
    `null` value removes base's setting (back to the client's default)."""
    located: dict[str, Node] = {}
    if config_node is not None and config_node.value is not None:
        located.update(as_mapping(config_node, "consumer settings"))
    settings = {key: value.value for key, value in located.items()}
    for key, value in located.items():
        if isinstance(value.value, dict) or (value.value is None and base is None):
            raise value.error(f"must be a value, got {describe(value.value)}")
    if assignors_node is not None:
        if ASSIGNMENT_STRATEGY in settings:
            raise assignors_node.error(f"give the assignors either here or as config.{ASSIGNMENT_STRATEGY}, "
                                       "not both")
        names = assignors_node.value if isinstance(assignors_node.value, list) else [assignors_node]
        settings[ASSIGNMENT_STRATEGY] = [as_str(n) for n in names]
        located[ASSIGNMENT_STRATEGY] = assignors_node
    if settings:
        given = {key: node for key, node in located.items() if settings[key] is not None}
        _check_settings(config_node or assignors_node, given, merged_config(base or {}, settings),
                        ClientConfig.from_kafka)
    return settings


def merged_config(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override`'s settings over `base`'s; a None in `override` removes the setting."""
    return {key: value for key, value in {**base, **override}.items() if value is not None}


# ----------------------------------------------------------------------------------------------------------
# Actions

def _share(node: Node | None, default: Share, allow_all: bool = True) -> Share:
    if node is None:
        return default
    value = node.value
    if value == "all" and allow_all:
        return ALL
    if isinstance(value, int) and not isinstance(value, bool):
        return Share(count=as_int(node, lo=1))
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = float(value[:-1])
        except ValueError:
            percent = -1.0
        if 0 < percent <= 100:
            return Share(fraction=percent / 100)
    forms = "a count (2), a percentage ('25%')" + (" or all" if allow_all else "")
    raise node.error(f"must be {forms}, got {describe(value)}")


DISTRIBUTION_KEYS = {"fixed": ("value",), "uniform": ("min", "max"), "exponential": ("mean", "max")}


def _distribution(node: Node) -> Distribution:
    if not isinstance(node.value, dict):
        return Distribution("fixed", as_duration_ms(node))
    section = Section(node, "a duration distribution")
    kind = as_choice(section.require("distribution"), DISTRIBUTION_KEYS)
    section.allow(["distribution", *DISTRIBUTION_KEYS[kind]])
    if kind == "fixed":
        return Distribution("fixed", as_duration_ms(section.require("value")))
    if kind == "uniform":
        low, high_node = as_duration_ms(section.require("min")), section.require("max")
        high = as_duration_ms(high_node)
        if high < low:
            raise high_node.error(f"must be >= min ({low} ms), got {high} ms")
        return Distribution("uniform", low, high)
    mean = as_duration_ms(section.require("mean"), positive=True)
    return Distribution("exponential", mean, _optional(section, "max", as_duration_ms, None))


def _stop_mode(section: Section) -> bool:
    """True when members are killed (CLIENT_CRASH) rather than closed (CLIENT_STOP)."""
    return _optional(section, "mode", lambda n: as_choice(n, ("stop", "crash")), "stop") == "crash"


def _restart_config(node: Node | None, targets: tuple[GroupSet, ...]) -> dict[str, Any] | None:
    """A restart's `config:`: the consumer settings the restarted clients come back with, merged over their
    group set's `config:` (so checked merged over each target set's); None: each client keeps its config."""
    if node is None:
        return None
    config: dict[str, Any] = {}
    for group_set in targets:
        try:
            config = _consumer_config(node, None, base=group_set.config)
        except ScenarioError as error:
            # A set's own setting that the new ones do not allow (partition.assignment.strategy with
            # group.protocol: consumer): say where it comes from and how to drop it.
            kept = [key for key in group_set.config if key in str(error) and key not in (node.value or {})]
            if not kept and len(targets) == 1:
                raise
            hint = f" (over the config of group set {group_set.name!r}"
            hint += f": drop its {', '.join(kept)} with `{kept[0]}: null`)" if kept else ")"
            raise ScenarioError(f"{error}{hint}") from None
    return config


def _rolling_restart(section: Section, common: dict, targets: tuple[GroupSet, ...]) -> Action:
    return RollingRestart(**common, downtime_ms=as_duration_ms(section.require("downtime")),
                          gap_ms=_optional(section, "gap", as_duration_ms, 30_000),
                          batch=_optional(section, "batch", lambda n: as_int(n, lo=1), 1),
                          jitter_ms=_optional(section, "jitter", as_duration_ms, 0), crash=_stop_mode(section),
                          config=_restart_config(section.get("config"), targets))


def _crash(section: Section, common: dict, targets: tuple[GroupSet, ...]) -> Action:
    restart_after = _optional(section, "restart_after", _distribution, None)
    config_node = section.get("config")
    config = _restart_config(config_node, targets)
    if config is not None and restart_after is None:
        raise config_node.error("a crashed member without restart_after never comes back: give restart_after, "
                                "or remove 'config'")
    return Crash(**common, restart_after=restart_after, config=config)


def _pause(scope: str) -> Callable[[Section, dict], Action]:
    def read(section: Section, common: dict) -> Action:
        return Pause(**common, duration=_distribution(section.require("duration")), scope=scope)
    return read


def _flap(section: Section, common: dict) -> Action:
    return Flap(**common, cycles=as_int(section.require("cycles"), lo=1),
                down_ms=as_duration_ms(section.require("down"), positive=True),
                up_ms=as_duration_ms(section.require("up"), positive=True),
                jitter_ms=_optional(section, "jitter", as_duration_ms, 0), crash=_stop_mode(section))


def _partition_increase(section: Section, common: dict, targets: tuple[GroupSet, ...]) -> Action:
    topic_node = section.get("topic")
    topics = {t.name for group_set in targets for t in group_set.topics}
    if topic_node is None:
        if len(topics) != 1:
            raise ScenarioError(f"missing required key 'topic' (the target sets have topics "
                                f"{', '.join(sorted(topics))})", section.node.source, section.node.line,
                                section.node.path)
        topic = next(iter(topics))
    else:
        topic = as_str(topic_node)
        for group_set in targets:
            if topic not in {t.name for t in group_set.topics}:
                raise topic_node.error(f"group set {group_set.name!r} has no topic {topic!r}")
    partitions = as_int(section.require("partitions"), lo=1)
    return PartitionIncrease(**common, topic=topic, partitions=partitions)


def _coordinator_move(section: Section, common: dict) -> Action:
    return CoordinatorMove(**common, load_ms=_optional(section, "load_time", as_duration_ms, 0))


def _broker_action(section: Section, common: dict, cluster: Cluster | None) -> Action:
    kind = common["kind"]
    if cluster is None:
        raise section.node.error(f"{kind} needs the brokers: add a 'cluster:' section to the scenario")
    broker = None
    if kind != "preferred_leader_election":
        broker_node = section.require("broker")
        broker = as_int(broker_node)
        if broker not in cluster.broker_ids:
            raise broker_node.error(f"no broker {broker} in the cluster (brokers: "
                                    f"{', '.join(str(b) for b in cluster.broker_ids)})")
    restart = _optional(section, "restart_after", lambda n: as_duration_ms(n, positive=True), None)
    return BrokerAction(**common, broker=broker, restart_after_ms=restart)


def _idle(section: Section, common: dict) -> Action:
    return Idle(**common, duration_ms=as_duration_ms(section.require("duration"), positive=True))


# kind -> (reader, its own keys, default members share; None = the action takes no `members`)
ACTIONS: dict[str, tuple[Callable, tuple[str, ...], Share | None]] = {
    "rolling_restart": (_rolling_restart, ("downtime", "gap", "batch", "jitter", "mode", "config"), ALL),
    "crash": (_crash, ("restart_after", "config"), ONE),
    "pause": (_pause("process"), ("duration",), ONE),
    "slow_poll": (_pause("poll"), ("duration",), ONE),
    "flap": (_flap, ("cycles", "down", "up", "jitter", "mode"), ONE),
    "scale_out": (lambda section, common: ScaleOut(**common), (), ONE),
    "scale_in": (lambda section, common: ScaleIn(**common), (), ONE),
    "partition_increase": (_partition_increase, ("topic", "partitions"), None),
    "coordinator_move": (_coordinator_move, ("load_time",), None),
    "idle": (_idle, ("duration",), None),
    "broker_down": (_broker_action, ("broker", "restart_after"), None),
    "broker_shutdown": (_broker_action, ("broker", "restart_after"), None),
    "broker_up": (_broker_action, ("broker",), None),
    "preferred_leader_election": (_broker_action, (), None),
}
# Actions on the cluster rather than on groups.
BROKER_ACTIONS = ("broker_down", "broker_shutdown", "broker_up", "preferred_leader_election")
# Actions whose reader also gets the target group sets (reader(section, common, target sets)).
READ_WITH_TARGETS = ("rolling_restart", "crash", "partition_increase")
COMMON_KEYS = ("action", "at", "target", "groups", "members", "seed")


def _action(node: Node, group_sets: tuple[GroupSet, ...], duration_ms: int, cluster: Cluster | None) -> Action:
    section = Section(node, "a timeline action")
    kind = as_choice(section.require("action"), ACTIONS)
    read, own_keys, default_members = ACTIONS[kind]
    section.allow(COMMON_KEYS + own_keys)
    at_node = section.get("at")
    at_ms = None if at_node is None else as_duration_ms(at_node)
    if at_ms is not None and at_ms >= duration_ms:
        raise at_node.error(f"is at or after the end of the run (duration: {duration_ms} ms)")
    by_name = {s.name: s for s in group_sets}
    target_node = section.get("target")
    if target_node is None:
        targets = tuple(by_name)
    else:
        names = as_list(target_node) if isinstance(target_node.value, list) else [target_node]
        targets = tuple(as_str(n) for n in names)
        for name_node, name in zip(names, targets):
            if name not in by_name:
                raise name_node.error(f"no group set named {name!r}; the scenario has {', '.join(by_name)}")
    members_node = section.get("members")
    if kind == "idle" or kind in BROKER_ACTIONS:
        whole = "an idle period applies to the whole scenario" if kind == "idle" else \
            f"{kind} applies to the whole cluster"
        for key in ("target", "groups", "members"):
            if key in node.value:
                raise node.value[key].error(f"{whole}: remove it")
    elif default_members is None and members_node is not None:
        raise members_node.error(f"{kind} applies to whole groups: remove 'members'")
    members = _share(members_node, default_members or ALL, allow_all=kind != "scale_out")
    seed_node = section.get("seed")
    common = dict(kind=kind, at_ms=at_ms, targets=targets, groups=_share(section.get("groups"), ALL),
                  members=members, seed=None if seed_node is None else str(_seed(seed_node)),
                  path=node.path, line=node.line)
    if kind in BROKER_ACTIONS:
        return _broker_action(section, common, cluster)
    if kind in READ_WITH_TARGETS:
        return read(section, common, tuple(by_name[name] for name in targets))
    return read(section, common)

