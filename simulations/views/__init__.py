"""Kafka-style views of a run: `describe` (kafka-consumer-groups.sh --describe) and `offsets_log`
(`__consumer_offsets` through OffsetsMessageFormatter or GroupMetadataMessageFormatter), computed from the
output tables at any simulated time, and `lag_status` (LinkedIn Burrow's consumer lag evaluation).
`run_tables` reads a run folder (finished or in progress); `quiet_runs` reads a quiet run's row back as the
requests it stands for; `history` rebuilds a group at a time."""

from simulations.views.describe import MODES, Described, UnknownGroup, describe, require_group
from simulations.views.offsets_log import offsets_log
from simulations.views.run_tables import RunError, RunTables, load_run

__all__ = ["MODES", "Described", "RunError", "RunTables", "UnknownGroup", "describe", "load_run", "offsets_log",
           "require_group"]
