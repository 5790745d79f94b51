"""Engines: what drives `state.runtime.GroupRuntime` over a whole input.

An engine takes validated events (`state.events.Event`), a `CoordinatorConfig` and an optional inclusive end
time, and returns the rows of every table in `state.tables.GROUP_TABLES` plus the rejects it made itself
(late events). `local` runs in this process; the Spark engine (`streaming/`) must give identical tables.
"""

from simulations.engines.local import RunResult, run_local

__all__ = ["RunResult", "run_local"]
