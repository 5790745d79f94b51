"""What the invariants of both protocols (`invariants`, `consumer_groups`) share: a group's rows of several
tables in output order, and how a rule reports what it finds."""

from __future__ import annotations

import pandas as pd

LOAD = "coordinator_load"

# What a rule finds: (how many things break the invariant, an example), or None.
Finding = tuple[int, str] | None


def first(problems: list[tuple[str, int, str]]) -> Finding:
    """The count of (group, out_seq, text) problems and the text of the first in table order."""
    if not problems:
        return None
    return len(problems), min(problems, key=lambda p: (p[0] or "", p[1]))[2]


def history(tables: dict[str, pd.DataFrame], names: tuple[str, ...], columns: tuple[str, ...]) -> list[tuple]:
    """The rows of the tables `names`, each as (table, row with those of `columns` it has), in each group's
    output order."""
    wanted = dict.fromkeys(("group_id", "out_seq") + columns)
    frames = [tables[name][[c for c in wanted if c in tables[name]]].assign(table=name)
              for name in names if not tables[name].empty]
    if not frames:
        return []
    rows = pd.concat(frames, ignore_index=True).astype({"out_seq": "int64"})
    rows = rows.sort_values(["group_id", "out_seq"], kind="stable", na_position="first")
    return [(row.table, row) for row in rows.itertuples(index=False)]
