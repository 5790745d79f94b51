"""Engines: what drives `state.runtime.group_runtime.GroupRuntime` over a whole input.

An engine takes validated events (`state.events.Event`), a `CoordinatorConfig` and an optional inclusive end
time, and returns the rows of every table in `state.tables.GROUP_TABLES` plus the rejects it made itself
(late events) as a `tableio.run_result.RunResult`, or writes them as it goes (`run_local_to`). `local` runs
in this process; the Spark engine (`streaming/`) must give identical tables.
"""

from simulations.engines.local import run_local, run_local_to

__all__ = ["run_local", "run_local_to"]
