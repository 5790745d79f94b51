"""Scenario YAML as a tree of located values, and the typed readers the scenario schema is parsed with.

Every value keeps the key path that leads to it (`group_sets[0].topics[1].partitions`) and its line in the
file, so whatever is wrong with a scenario is reported as `FILE:LINE: PATH: what is wrong` instead of a
traceback. The tree comes from PyYAML's composer (node marks), with PyYAML's safe constructor for scalars.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable

import yaml

from state.events import DURATION_HINT, duration_ms


class ScenarioError(Exception):
    """A scenario the generator cannot use; the message names the file, line and key path."""

    def __init__(self, message: str, source: str = "", line: int | None = None, path: str = "") -> None:
        where = source + (f":{line}" if line is not None else "")
        super().__init__(": ".join(part for part in (where, path, message) if part))


@dataclass(frozen=True)
class Node:
    """A value of the document: a scalar, a dict of key -> Node, or a list of Nodes."""

    value: Any
    path: str
    line: int | None  # None: a value given on the command line
    source: str

    def error(self, message: str) -> ScenarioError:
        return ScenarioError(message, self.source, self.line, self.path)

    def child_path(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key


def parse_yaml(text: str, source: str) -> Node:
    """The document's root node; ScenarioError for text that is not YAML or not a mapping."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = None if mark is None else mark.line + 1
        problem = getattr(error, "problem", None) or str(error)
        raise ScenarioError(f"not valid YAML: {problem}", source, line) from None
    if root is None:
        raise ScenarioError("the scenario is empty", source, 1)
    node = _convert(root, "", source, yaml.SafeLoader(""))
    if not isinstance(node.value, dict):
        raise node.error("a scenario is a mapping (name:, duration:, group_sets:, timeline:, ...)")
    return node


def _convert(node: yaml.Node, path: str, source: str, loader: yaml.SafeLoader, line: int | None = None) -> Node:
    """`line`: where the value's key is (a block mapping under a key starts on the next line)."""
    line = line or node.start_mark.line + 1
    here = Node(None, path, line, source)
    if isinstance(node, yaml.MappingNode):
        own = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
        loader.flatten_mapping(node)  # `<<: *defaults` merges first, as yaml.safe_load does
        merged = len(node.value) - own
        items: dict[str, Node] = {}
        explicit: set[str] = set()
        for index, (key_node, value_node) in enumerate(node.value):
            key = loader.construct_object(key_node)
            key_line = key_node.start_mark.line + 1
            if isinstance(key, int) and not isinstance(key, bool):  # a partition number: `replicas: {0: [1, 2]}`
                key = str(key)
            if not isinstance(key, str):
                raise ScenarioError(f"keys must be text, got {key!r}", source, key_line, path)
            if index >= merged:  # a key written here may override a merged one, not another written one
                if key in explicit:
                    raise ScenarioError(f"duplicate key {key!r}", source, key_line, path)
                explicit.add(key)
            items[key] = _convert(value_node, here.child_path(key), source, loader, key_line)
        return Node(items, path, line, source)
    if isinstance(node, yaml.SequenceNode):
        return Node([_convert(item, here.child_path(i), source, loader) for i, item in enumerate(node.value)],
                    path, line, source)
    try:
        value = loader.construct_object(node)
    except yaml.YAMLError as error:
        raise here.error(f"not a valid value: {getattr(error, 'problem', None) or error}") from None
    return Node(value, path, line, source)


def parse_value(text: str, path: str, source: str) -> Node:
    """A value given outside a scenario file (a command-line option's text, read as YAML: `10`, `range`,
    `[range, sticky]`) as a document node at `path`; it has no line, and `source` names the option."""
    try:
        composed = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        raise ScenarioError(f"not a valid value: {getattr(error, 'problem', None) or error}", source, None,
                            path) from None
    if composed is None:
        raise ScenarioError("a value is empty", source, None, path)
    return _without_lines(_convert(composed, path, source, yaml.SafeLoader("")))


def _without_lines(node: Node) -> Node:
    value = node.value
    if isinstance(value, dict):
        value = {key: _without_lines(child) for key, child in value.items()}
    elif isinstance(value, list):
        value = [_without_lines(child) for child in value]
    return Node(value, node.path, None, node.source)


class Section:
    """The keys of one mapping node, taken one by one, after `allow` has refused any unknown key."""

    def __init__(self, node: Node, what: str) -> None:
        self.node = node
        self.what = what
        self._unused = dict(as_mapping(node, what))

    def allow(self, known: Iterable[str]) -> "Section":
        known = list(known)
        for key, node in self._unused.items():
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f"; expected one of {', '.join(sorted(known))}"
                raise ScenarioError(f"unknown key '{key}' in {self.what}{hint}", node.source, node.line, node.path)
        return self

    def get(self, key: str) -> Node | None:
        return self._unused.pop(key, None)

    def require(self, key: str) -> Node:
        found = self.get(key)
        if found is None:
            raise ScenarioError(f"missing required key '{key}' ({self.what})", self.node.source, self.node.line,
                                self.node.path)
        return found


def describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


# ----------------------------------------------------------------------------------------------------------
# Typed readers: each returns a plain Python value or raises the node's error.

def as_mapping(node: Node, what: str) -> dict[str, Node]:
    if not isinstance(node.value, dict):
        raise node.error(f"{what} must be a mapping, got {describe(node.value)}")
    return node.value


def as_int(node: Node, lo: int | None = None, hi: int | None = None) -> int:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int):
        raise node.error(f"must be an integer, got {describe(value)}")
    if lo is not None and value < lo:
        raise node.error(f"must be >= {lo}, got {value}")
    if hi is not None and value > hi:
        raise node.error(f"must be <= {hi}, got {value}")
    return value


def as_number(node: Node, lo: float = 0.0) -> float:
    value = node.value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value):
        raise node.error(f"must be a number, got {describe(value)}")
    if value < lo:
        raise node.error(f"must be >= {lo:g}, got {value}")
    return float(value)


def as_str(node: Node, pattern: str | None = None, hint: str = "") -> str:
    value = node.value
    if not isinstance(value, str) or not value:
        raise node.error(f"must be non-empty text, got {describe(value)}")
    if pattern is not None and not re.fullmatch(pattern, value):
        raise node.error(f"{value!r} is not allowed here{hint}")
    return value


def as_choice(node: Node, choices: Iterable[str]) -> str:
    choices = list(choices)
    value = node.value
    if value not in choices:
        close = difflib.get_close_matches(str(value), choices, n=1) if isinstance(value, str) else []
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise node.error(f"must be one of {', '.join(choices)}, got {describe(value)}{hint}")
    return value


def as_list(node: Node, non_empty: bool = True) -> list[Node]:
    if not isinstance(node.value, list):
        raise node.error(f"must be a list, got {describe(node.value)}")
    if non_empty and not node.value:
        raise node.error("must not be empty")
    return node.value


def as_duration_ms(node: Node, positive: bool = False) -> int:
    """`500ms`, `30s`, `5m`, `2h`, `7d`, combinations (`1h30m`), or an integer of milliseconds."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool):
        ms = value
    elif isinstance(value, str) and not value.strip().isdigit() and (parsed := duration_ms(value)) is not None:
        ms = parsed
    else:
        raise node.error(f"must be {DURATION_HINT}, got {describe(value)}")
    if ms < 0 or (positive and ms == 0):
        raise node.error(f"must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return ms


def as_time_ms(node: Node) -> int:
    """ISO-8601 with a zone (quoted or not: YAML reads an unquoted one as a timestamp) as epoch ms."""
    value = node.value
    if isinstance(value, str):
        try:
            value = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise node.error(f"must be an ISO-8601 time with a zone, e.g. 2026-01-01T00:00:00Z, got {value!r}") from None
    if not isinstance(value, _dt.datetime):
        raise node.error(f"must be an ISO-8601 time with a zone, e.g. 2026-01-01T00:00:00Z, got {describe(value)}")
    if value.tzinfo is None:
        raise node.error("has no time zone (add Z or +00:00)")
    ms = round(value.timestamp() * 1000)
    if ms < 0:
        raise node.error("must not be before 1970-01-01T00:00:00Z")
    return ms
