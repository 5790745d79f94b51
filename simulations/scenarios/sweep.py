"""Sweeps: one scenario with some of its values varied, every combination a variant (`coordsim sweep`).

An axis is a NAME and its values, from the scenario's `sweep:` section (NAME -> list of values) and from
`--vary NAME=V1,V2,...` (which adds an axis, or replaces the section's axis of the same NAME). NAME is a path
into the scenario document, read by the document's structure, because Kafka's setting names hold dots:

    broker.SETTING                  group_sets.SET.FIELD               timeline.N.KEY  (N from 0)
    cluster.KEY                     group_sets.SET.config.SETTING      start, duration, seed
                                    group_sets.SET.topics.TOPIC.FIELD

Every combination of the axes' values (the cartesian product, the first axis varying slowest) is a variant:
the base document with those values in place, checked as a scenario of its own, so a bad value gets the
scenario's own one-line error, prefixed with the variant's name. A variant is named `label=value,...` in axis
order, each label the shortest tail of its NAME's parts that no other axis of the sweep ends with (`members`,
`session.timeout.ms`, or `orders.members` beside `payments.members`); names are unique, and the same
sweep always names its variants the same.

The variants share one clock: they must start and end together (the engine runs them as one run).
"""

from __future__ import annotations

import difflib
import itertools
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from simulations.scenarios.document import Node, ScenarioError, as_list, as_mapping, parse_value, parse_yaml
from simulations.scenarios.generator import Generated, generate
from simulations.scenarios.schema import (GROUP_SET_KEYS, SWEEP_KEY, Scenario, read_scenario_text,
                                          scenario_from_document)
from state.cluster import NUM_PARTITIONS

# Top-level keys a sweep can vary: the ones with values (name and description only label the scenario).
VALUE_KEYS = ("start", "duration", "seed")
SECTION_KEYS = ("broker", "cluster")
VARIED_KEYS = (*VALUE_KEYS, *SECTION_KEYS, "group_sets", "timeline")
TOPIC_FIELDS = ("partitions", "records_per_second")
VARY_OPTION = "--vary"


@dataclass(frozen=True)
class Axis:
    name: str                 # as written
    parts: tuple[str, ...]    # by the document's structure: ("group_sets", "svc", "config", "session.timeout.ms")
    values: tuple[Node, ...]
    texts: tuple[str, ...]    # each value as variant names show it


@dataclass(frozen=True)
class Variant:
    name: str
    values: dict[str, str]    # axis name -> the value's text
    scenario: Scenario


@dataclass(frozen=True)
class Sweep:
    base: Scenario
    axes: tuple[Axis, ...]
    variants: tuple[Variant, ...]

    def varied_broker_settings(self) -> list[str]:
        """The broker settings an axis varies (`broker.SETTING`, and the cluster's partition count, which the
        coordinator's setting of the same name follows)."""
        return [axis.parts[1] for axis in self.axes
                if axis.parts[0] == "broker" or axis.parts == ("cluster", NUM_PARTITIONS)]


def load_sweep(path: str | Path, vary: Sequence[str] = ()) -> Sweep:
    """The sweep of the scenario file `path`: its `sweep:` section with the `--vary` options over it."""
    path = Path(path)
    document = parse_yaml(read_scenario_text(path), str(path))
    base = scenario_from_document(document, path.stem)
    axes = _merge(_section_axes(document), [_option_axis(document, option) for option in vary])
    if not axes:
        raise ScenarioError(f"nothing to vary: give {VARY_OPTION} NAME=V1,V2,... or a {SWEEP_KEY}: section "
                            f"(NAME -> list of values)", str(path))
    labels = _labels(axes)
    variants = []
    for choice in itertools.product(*(range(len(axis.values)) for axis in axes)):
        values = {axis.name: axis.texts[i] for axis, i in zip(axes, choice)}
        name = ",".join(f"{labels[axis.name]}={values[axis.name]}" for axis in axes)
        varied = document
        for axis, i in zip(axes, choice):
            varied = _replaced(varied, axis.parts, axis.values[i])
        try:
            scenario = scenario_from_document(varied, path.stem)
        except ScenarioError as error:
            raise ScenarioError(f"variant {name}: {error}") from None
        if (scenario.start_ms, scenario.until_ms) != (base.start_ms, base.until_ms):
            raise ScenarioError(f"variant {name}: starts or ends at another time than the scenario; the variants "
                                f"of a sweep run as one run, on one clock: vary neither start nor duration",
                                str(path))
        variants.append(Variant(name, values, scenario))
    _check_names([variant.name for variant in variants], str(path))
    return Sweep(base, tuple(axes), tuple(variants))


def generate_variants(sweep: Sweep) -> dict[str, Generated]:
    """Each variant's events, as `coordsim run` of the variant alone generates them; a variant whose timeline
    cannot happen is named in the error."""
    generated = {}
    for variant in sweep.variants:
        try:
            generated[variant.name] = generate(variant.scenario)
        except ScenarioError as error:
            raise ScenarioError(f"variant {variant.name}: {error}") from None
    return generated


def _parse_vary(option: str) -> tuple[str, list[str]]:
    """`NAME=V1,V2,...` as (NAME, [V1, V2, ...]); commas inside brackets or quotes do not split
    (`assignors=[range,sticky],[cooperative-sticky]`)."""
    name, equals, values = option.partition("=")
    name = name.strip()
    if not equals or not name:
        raise ScenarioError(f"{option!r}: expected NAME=V1,V2,... (e.g. group_sets.orders.members=3,6)", VARY_OPTION)
    texts = [text.strip() for text in _split_values(values)]
    if not all(texts):
        raise ScenarioError(f"{option!r}: a value is empty", VARY_OPTION, None, name)
    return name, texts


def _split_values(text: str) -> list[str]:
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote is not None:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


# ----------------------------------------------------------------------------------------------------------
# Axes

def _section_axes(document: Node) -> list[Axis]:
    section = document.value.get(SWEEP_KEY)
    if section is None:
        return []
    axes = []
    for name, values in as_mapping(section, "a sweep (NAME -> list of values)").items():
        nodes = as_list(values)
        axes.append(_axis(document, name, values, tuple(nodes), tuple(_text(_plain(node)) for node in nodes)))
    return axes


def _option_axis(document: Node, option: str) -> Axis:
    name, texts = _parse_vary(option)
    where = Node(None, name, None, VARY_OPTION)
    return _axis(document, name, where, tuple(parse_value(text, name, VARY_OPTION) for text in texts), tuple(texts))


def _axis(document: Node, name: str, where: Node, values: tuple[Node, ...], texts: tuple[str, ...]) -> Axis:
    for index, text in enumerate(texts):
        if texts.index(text) != index:
            raise where.error(f"value {text} is given twice")
    return Axis(name, _parts(document, name, where), values, texts)


def _merge(section: list[Axis], options: list[Axis]) -> list[Axis]:
    """The section's axes, each replaced by an option's of the same path, then the options' other axes."""
    axes = list(section)
    given: set[tuple[str, ...]] = set()
    for axis in options:
        if axis.parts in given:
            raise ScenarioError(f"{axis.name} is varied twice", VARY_OPTION)
        given.add(axis.parts)
        position = next((i for i, other in enumerate(axes) if other.parts == axis.parts), None)
        if position is None:
            axes.append(axis)
        else:
            axes[position] = axis
    return axes


def _parts(document: Node, name: str, where: Node) -> tuple[str, ...]:
    """NAME cut by the document's structure: a top-level key, a group set's or topic's name (names may hold
    dots: the longest that fits), a field, and the rest as one setting name."""
    top, _, rest = name.partition(".")
    if top not in VARIED_KEYS:
        raise where.error(f"cannot vary '{top}'{_hint(top, VARIED_KEYS)}")
    if top in VALUE_KEYS:
        if rest:
            raise where.error(f"'{top}' is a value: vary it as {top}")
        return (top,)
    if top in SECTION_KEYS:
        if not rest:
            raise where.error(f"name a setting: {top}.SETTING")
        return (top, rest)
    if top == "timeline":
        index, _, key = rest.partition(".")
        actions = _items(document, "timeline")
        if not (index.isdigit() and int(index) < len(actions)) or not key:
            raise where.error(f"expected timeline.N.KEY, N an action's position from 0 (the timeline has "
                              f"{len(actions)})")
        return (top, index, key)
    group_set, field = _named(_items(document, "group_sets"), rest, "group set", where)
    key, _, setting = field.partition(".")
    if key not in GROUP_SET_KEYS or key == "name":
        raise where.error(f"a group set has no field '{key}'{_hint(key, GROUP_SET_KEYS)}")
    if key == "config":
        if not setting:
            raise where.error("name a consumer setting: group_sets.SET.config.SETTING")
        return (top, group_set, key, setting)
    if key == "topics" and setting:
        topic, topic_field = _named(_items(_group_set_node(document, group_set), "topics"), setting, "topic", where)
        if topic_field not in TOPIC_FIELDS:
            raise where.error(f"a topic has no field '{topic_field}'{_hint(topic_field, TOPIC_FIELDS)}")
        return (top, group_set, key, topic, topic_field)
    if setting:
        raise where.error(f"'{key}' of a group set is a value: vary it as group_sets.{group_set}.{key}")
    return (top, group_set, key)


def _items(node: Node, key: str) -> list[Node]:
    found = node.value.get(key)
    return found.value if found is not None and isinstance(found.value, list) else []


def _names(items: list[Node]) -> list[str]:
    return [item.value["name"].value for item in items]


def _group_set_node(document: Node, name: str) -> Node:
    return next(item for item in _items(document, "group_sets") if item.value["name"].value == name)


def _named(items: list[Node], rest: str, what: str, where: Node) -> tuple[str, str]:
    """(name, what follows it) of the longest item name that `rest` starts with."""
    names = sorted(_names(items), key=len, reverse=True)
    found = next((name for name in names if rest == name or rest.startswith(name + ".")), None)
    if found is None:
        given = rest.split(".")[0]
        raise where.error(f"no {what} '{given}'{_hint(given, names)}")
    if rest == found:
        raise where.error(f"name a field of the {what} '{found}' after its name")
    return found, rest[len(found) + 1:]


def _hint(given: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(given, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else f"; expected one of {', '.join(sorted(known))}"


def _labels(axes: list[Axis]) -> dict[str, str]:
    """Each axis's label: the shortest tail of its parts no other axis's parts end with."""
    labels = {}
    for axis in axes:
        for size in range(1, len(axis.parts) + 1):
            tail = axis.parts[-size:]
            if size == len(axis.parts) or not any(other.parts[-size:] == tail for other in axes if other is not axis):
                labels[axis.name] = ".".join(tail)
                break
    return labels


def _check_names(names: list[str], source: str) -> None:
    for index, name in enumerate(names):
        if names.index(name) != index:
            raise ScenarioError(f"two variants are both named {name!r}: give values that read differently",
                                source)
        if not name.isprintable():
            raise ScenarioError(f"variant {name!r}: a value holds a character that cannot be printed", source)


def _plain(node: Node) -> Any:
    if isinstance(node.value, dict):
        return {key: _plain(child) for key, child in node.value.items()}
    if isinstance(node.value, list):
        return [_plain(child) for child in node.value]
    return node.value


def _text(value: Any) -> str:
    """A value as a variant's name shows it: text as it is, anything else in compact JSON (true, 3000, [a,b])."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str).replace('"', "")


# ----------------------------------------------------------------------------------------------------------
# The variant's document

def _replaced(node: Node, parts: tuple[str, ...], value: Node) -> Node:
    """`node` (a mapping) with the value at `parts` replaced by `value`; sections, group-set configs and
    timeline keys that do not exist are created (the scenario's checks then judge them)."""
    top = parts[0]
    if top in VALUE_KEYS:
        return _with(node, top, value)
    if top in SECTION_KEYS:
        section = node.value.get(top) or Node({}, top, value.line, value.source)
        return _with(node, top, _with(section, parts[1], value))
    items = node.value[top]
    if top == "timeline":
        index = int(parts[1])
        return _with(node, top, _with_item(items, index, _with(items.value[index], parts[2], value)))
    index = _names(items.value).index(parts[1])
    group_set = items.value[index]
    if parts[2] == "config":
        config = group_set.value.get("config")
        if config is None or config.value is None:
            config = Node({}, f"{group_set.path}.config", value.line, value.source)
        changed = _with(group_set, "config", _with(config, parts[3], value))
    elif parts[2] == "topics" and len(parts) == 5:
        topics = group_set.value["topics"]
        position = _names(topics.value).index(parts[3])
        changed = _with(group_set, "topics",
                        _with_item(topics, position, _with(topics.value[position], parts[4], value)))
    else:
        changed = _with(group_set, parts[2], value)
    return _with(node, top, _with_item(items, index, changed))


def _with(node: Node, key: str, child: Node) -> Node:
    if not isinstance(node.value, dict):
        return node  # not a mapping: the scenario's checks say so, at the node
    return replace(node, value={**node.value, key: child})


def _with_item(node: Node, index: int, child: Node) -> Node:
    return replace(node, value=[*node.value[:index], child, *node.value[index + 1:]])
