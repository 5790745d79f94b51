"""A sweep's variants in the engines: each variant's groups are keyed apart from the other variants'.

A sweep (`coordsim sweep`, simulations/scenarios/sweep.py) runs all its variants as one run. The engines key
a group on `group_key(variant, group_id)`: the group id alone outside a sweep (so a run that is not a sweep
keys, orders and writes exactly as before), in a sweep the variant's name, a NUL and the group id. NUL sorts
below every other character, so keys sort by variant, then by group id: the order of a sweep's tables.

The core never sees a variant: a group's runtime is built with its real group id and its variant's
coordinator settings, and the engines add the `variant` column (`VARIANT`) to the rows it produced (`tag`).
"""

from __future__ import annotations

from typing import Iterable, Mapping

VARIANT = "variant"
SEPARATOR = "\x00"  # variant names are printable (simulations.scenarios.sweep): the first NUL ends the name


def group_key(variant: str | None, group_id: str) -> str:
    return group_id if variant is None else f"{variant}{SEPARATOR}{group_id}"


def split_key(key: str) -> tuple[str, str]:
    """(variant, group id) of a sweep's key."""
    variant, _, group_id = key.partition(SEPARATOR)
    return variant, group_id


def tag(tables: Mapping[str, list[dict]], variant: str) -> None:
    """Add the `variant` column to every row of `tables` (a group's output, or rows derived from it)."""
    for rows in tables.values():
        for row in rows:
            row[VARIANT] = variant


def tag_output(output, variant: str) -> None:
    """Add the `variant` column to every row a group's runtime produced (`state.runtime.output.Output`): its tables'
    and its rejects'. Both engines call this, so their sweep rows agree."""
    tag({**output.tables, "rejects": output.rejects}, variant)


def by_variant(rows: Iterable[dict]) -> dict[str, list[dict]]:
    """A sweep's rows split by their variant, variants in sorted order."""
    split: dict[str, list[dict]] = {}
    for row in rows:
        split.setdefault(row[VARIANT], []).append(row)
    return {variant: split[variant] for variant in sorted(split)}
