"""Fixtures every test folder shares: a writer of small JSONL inputs, and one SparkSession for the whole pytest
session (starting one costs 10-20 s here)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest


@pytest.fixture
def write_jsonl(tmp_path):
    """Write rows (dicts are JSON-encoded, strings written verbatim) to a file; returns its path."""

    def write(rows, name="events.jsonl") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from streaming.session import build_session

    session = build_session("local")
    yield session
    session.stop()


def pytest_collection_modifyitems(items):
    # Under pytest-xdist (`-n`), the tests of the one shared SparkSession run on one worker, so the suite starts
    # a single JVM for them while the other workers take everything else.
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark-session"))
