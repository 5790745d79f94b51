"""Which protocol wrote a row: the `group_type` (Kafka's Group.GroupType, `classic` or `consumer`) of its group
when it was written, read from the group's `group_states` rows. The one definition the validation's split of
a run by protocol (simulations/validation/consumer_groups.py) and the rebalances view use.

A group id names one group at a time, of one type for its life (from a `group_states` row from nothing to
Dead). It may change type online: a classic group is converted to, or replaced when Empty by, a consumer group,
and a consumer group is converted back (downgraded) to, or replaced when Empty by, a classic group. The old
group's Dead row then has cause `group_converted`, and the rows written after it (the new group's records
and members) are the new group's, even before the new group's own first `group_states` row.
"""

from __future__ import annotations

import pandas as pd

CLASSIC, CONSUMER = "classic", "consumer"
CONVERTED = "group_converted"
_OTHER = {CLASSIC: CONSUMER, CONSUMER: CLASSIC}
# The group_states columns read.
STATE_COLUMNS = ("group_id", "group_type", "to_state", "cause")


def row_group_types(rows: pd.DataFrame, group_states: pd.DataFrame, on: str = "out_seq",
                    states_on: str | None = None) -> pd.Series:
    """For each of `rows` (group_id and the position column `on`), its group's type when it was written: that
    of the group's last `group_states` row at or before it by `states_on` (default `on`; states in table
    order among equal positions), the other type after a Dead row of a conversion. A row before any state row
    of its group is a classic group's (a group offsets alone created). Aligned with `rows`' index."""
    states_on = states_on or on
    if rows.empty:
        return pd.Series([], index=rows.index, dtype=object)
    converted = (group_states["to_state"] == "Dead") & (group_states["cause"] == CONVERTED)
    after = group_states["group_type"].where(~converted, group_states["group_type"].map(_OTHER))
    right = pd.DataFrame({"group_id": group_states["group_id"].astype(object),
                          "_at": group_states[states_on].astype("int64"), "_type": after})
    right = right.sort_values("_at", kind="stable")
    left = pd.DataFrame({"group_id": rows["group_id"].astype(object), "_at": rows[on].astype("int64"),
                         "_row": range(len(rows))}).sort_values("_at", kind="stable")
    merged = pd.merge_asof(left, right, on="_at", by="group_id", direction="backward")
    types = merged.sort_values("_row")["_type"].fillna(CLASSIC)
    return pd.Series(types.to_numpy(), index=rows.index)
