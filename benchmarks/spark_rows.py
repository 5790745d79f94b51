"""What moving rows costs Spark: the same bytes as many small rows or as few large ones, through a file
stream, a watermark, the shuffle and sort by key, and an `applyInPandasWithState` that only sums the payload
sizes (no state kept). It bounds what sending events in per-key chunks instead of one row each could save
the engine.

    .venv/bin/python benchmarks/spark_rows.py --rows 1000000

Each layout runs in its own query of one SparkSession (`local[2]`, 2 shuffle partitions, 256 keys), after
an unmeasured warm-up query; the query's wall time is appended to benchmarks/results/spark_rows.jsonl and printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.recording import record  # noqa: E402

KEYS = 256
PAYLOAD = b"x" * 200
T0_US = 1_767_225_600_000_000


def write_rows(folder: Path, rows: int, chunks: int | None) -> None:
    """`rows` payloads of 200 bytes, one per row, or joined into `chunks` rows; keys spread evenly."""
    count = rows if chunks is None else chunks
    size = PAYLOAD if chunks is None else PAYLOAD * (rows // chunks)
    folder.mkdir(parents=True)
    pq.write_table(pa.table({
        "key": [f"k{i % KEYS}" for i in range(count)],
        "event_time": pa.array([T0_US + i for i in range(count)], pa.timestamp("us", tz="UTC")),
        "payload": pa.array([size] * count, pa.binary()),
    }), folder / "part.parquet")


def run_query(spark, folder: Path, checkpoint: Path) -> float:
    import pandas as pd
    from pyspark.sql.streaming.state import GroupStateTimeout

    def step(key, chunks, state):
        yield pd.DataFrame({"key": [key[0]], "bytes": [sum(len(p) for c in chunks for p in c["payload"].tolist())]})

    rows = (spark.readStream.schema("key string, event_time timestamp, payload binary").parquet(str(folder))
            .withWatermark("event_time", "1 second"))
    query = (rows.groupBy("key")
             .applyInPandasWithState(step, "key string, bytes long", "unused long", "Append",
                                     GroupStateTimeout.EventTimeTimeout)
             .writeStream.format("noop").trigger(availableNow=True)
             .option("checkpointLocation", str(checkpoint)).start())
    started = time.monotonic()
    query.awaitTermination()
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunks", type=int, default=2_048, help="rows of the chunked layout")
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results" / "spark_rows.jsonl")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", 2)
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "4g")
             .config("spark.pyspark.python", sys.executable).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as work:
        # Not measured: the first query also starts the Python workers and warms the JIT.
        write_rows(Path(work) / "warm-up" / "in", 10_000, None)
        run_query(spark, Path(work) / "warm-up" / "in", Path(work) / "warm-up" / "checkpoint")
        for layout, chunks in (("one row per payload", None), ("chunked", args.chunks)):
            folder = Path(work) / layout.replace(" ", "-")
            write_rows(folder / "in", args.rows, chunks)
            seconds = run_query(spark, folder / "in", folder / "checkpoint")
            record(args.results, {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                  "layout": layout, "payloads": args.rows, "rows": chunks or args.rows,
                                  "query_s": round(seconds, 1), "load_1m": round(os.getloadavg()[0], 1)})
    spark.stop()


if __name__ == "__main__":
    main()
