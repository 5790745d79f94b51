"""The bundled sample trace is exactly what its generator writes, and a plausible client conversation."""

from __future__ import annotations

import json
from collections import Counter

from simulations.samples import make_sample_trace

from .conftest import SAMPLE


def test_generator_reproduces_the_bundled_file():
    assert make_sample_trace.render() == SAMPLE.read_text(encoding="utf-8")


def test_trace_shape():
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 2_000
    rows = []
    for line in lines:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    assert len(rows) == len(lines) - 1  # the cut-short line
    assert all(make_sample_trace.START <= r["ts"] <= make_sample_trace.END for r in rows)
    assert [r["ts"] for r in rows] == sorted(r["ts"] for r in rows)
    assert Counter(r["request_id"] for r in rows).most_common(1)[0][1] == 1
    types = Counter(r["type"] for r in rows)
    assert types.keys() >= {"JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT", "LEAVE_GROUP", "OFFSET_COMMIT", "OFFSET_FETCH"}
    standalone = [r for r in rows if r["type"] == "OFFSET_COMMIT" and r["generation_id"] == -1]
    assert standalone and {r["group_id"] for r in standalone} == {"billing-exporter"}
