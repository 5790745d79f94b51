"""The lag status of many groups on every core (the Spark engine's compaction, `streaming.compaction`): the
groups, in id order, cut into one chunk per core, each chunk's rows derived in a child process and the rows
put back together in chunk order. Each group is judged on its own rows (`tableio.lag_status`) and its status
rows come in group id order either way, so the rows are the ones a single process derives.

The children are forked: they find their chunk's rows in memory they share with this process, rather than
have them sent, and they import nothing (spawned children would import this program's main module again).
They only run `lag_status_arrow_rows` and return its rows. A range with few commits is derived in this
process, which is quicker than starting others.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from tableio.lag_status import lag_status_arrow_rows

# Below this many `offsets` rows one process is quicker than sharing them out.
PARALLEL_ROWS = 50_000

_chunks: list[Mapping[str, pa.Table]] = []  # what the children read, set while they run


def lag_status_rows_on_every_core(tables: Mapping[str, pa.Table], at: int | None,
                                  workers: int | None = None) -> list[dict]:
    """`lag_status_arrow_rows(tables, at)`, derived by `workers` processes (every core by default)."""
    global _chunks
    workers = workers if workers is not None else (os.cpu_count() or 1)
    groups = tables["offsets"]["group_id"]
    if workers < 2 or at is None or len(groups) < PARALLEL_ROWS or groups.null_count:
        return lag_status_arrow_rows(tables, at)
    ids = pc.unique(groups).to_pylist()
    ids.sort()
    cuts = [ids[i * len(ids) // workers:(i + 1) * len(ids) // workers] for i in range(workers)]
    _chunks = [{name: data.filter(pc.is_in(data["group_id"], value_set=pa.array(cut, data["group_id"].type)))
                for name, data in tables.items()} for cut in cuts if cut]
    try:
        with ProcessPoolExecutor(len(_chunks), mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(_chunk_rows, range(len(_chunks)), [at] * len(_chunks)))
    finally:
        _chunks = []
    return [row for part in parts for row in part]


def _chunk_rows(index: int, at: int) -> list[dict]:
    return lag_status_arrow_rows(_chunks[index], at)
