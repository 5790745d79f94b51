"""The run's rebalances as rows of its tables, for either protocol: the one table-side reading of the figure
the `metrics` table counts per group (`rebalances`, `rebalance_causes`; state/metrics.py), so the report's
header and panels, the run summary and the Prometheus counters agree with it.

- a classic group rebalances each time it enters PreparingRebalance (a `group_states` row), as the
  coordinator's NumGroupsPreparingRebalance sees it;
- a consumer group (KIP-848) rebalances each time its group epoch is bumped, as Kafka's
  consumer-group-rebalance-count counts: one `generations` row per group epoch, at its `rebalance_start_ts`,
  whether its members reconciled to it or a later epoch superseded it. Both protocols' `generations` rows say
  protocol_type `consumer`; a consumer group's are those written while the group id named a consumer group,
  as its `group_states` rows' `group_type` says (simulations/views/group_types.py): a group id may change
  protocol online, both ways.
"""

from __future__ import annotations

import pandas as pd

from simulations.views.group_types import CLASSIC, CONSUMER, row_group_types

PREPARING = "PreparingRebalance"
COLUMNS = {"group_states": ("group_id", "ts", "group_type", "to_state", "cause"),
           "generations": ("group_id", "rebalance_start_ts", "cause")}


def rebalance_starts(group_states: pd.DataFrame, generations: pd.DataFrame) -> pd.DataFrame:
    """One row per rebalance: group_id, ts (its start), cause, protocol (`classic` or `consumer`), by time."""
    classic = group_states[group_states["to_state"] == PREPARING]
    types = row_group_types(generations, group_states, on="rebalance_start_ts", states_on="ts")
    epochs = generations[(types == CONSUMER).to_numpy(bool)]
    rows = pd.concat([
        pd.DataFrame({"group_id": classic["group_id"], "ts": classic["ts"].astype("int64"),
                      "cause": classic["cause"], "protocol": CLASSIC}),
        pd.DataFrame({"group_id": epochs["group_id"], "ts": epochs["rebalance_start_ts"].astype("int64"),
                      "cause": epochs["cause"], "protocol": CONSUMER}),
    ], ignore_index=True)
    return rows.sort_values(["ts", "group_id"], kind="stable", ignore_index=True)

