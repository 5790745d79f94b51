"""Engines: what drives `state.runtime.GroupRuntime` over a whole input.

An engine takes validated events (`state.events.Event`), a `CoordinatorConfig` and an optional inclusive end
time, and returns the rows of every table in `state.tables.GROUP_TABLES` plus the rejects it made itself
(late events), or writes them as it goes (`run_local_to`). `local` runs in this process; the Spark engine (`streaming/`) must give identical tables.
"""

from simulations.engines.local import RunResult, run_local, run_local_to

__all__ = ["RunResult", "run_local", "run_local_to"]
