"""Rows as `state.runtime.output.Output` shapes them."""

from __future__ import annotations

import pytest

from state.events import parse_event
from state.metrics import GroupMetrics
from state.runtime.output import Output
from state.tables import columns

HEARTBEAT = parse_event({"ts": 5, "group_id": "g", "type": "HEARTBEAT", "request_id": "r1", "client_id": "c",
                         "member_id": "m", "generation_id": 2}, "test", 7)


def test_response_row_has_every_column_with_kafka_defaults() -> None:
    out = Output("g", coordinator_partition=3, coordinator_id=2)
    row = out.response(HEARTBEAT, 9, "NONE", results=[])
    assert set(row) == set(columns("responses"))
    assert (row["coordinator_partition"], row["coordinator_id"]) == (3, 2)
    assert (row["request_ts"], row["response_ts"], row["api"], row["member_id"], row["generation_id"]) == (
        5, 9, "Heartbeat", "m", 2)
    assert (row["results"], row["leader_id"], row["repeat_count"], row["out_seq"]) == ([], None, 1, 0)
    assert out.tables["responses"] == [row]


def test_response_refuses_a_column_the_table_lacks() -> None:
    out = Output("g")
    with pytest.raises(KeyError, match="responses has no column \\['bogus'\\]"):
        out.response(HEARTBEAT, 9, "NONE", bogus=1, results=[])
    assert len(out) == 0


def test_the_generations_figure_counts_the_generations_rows() -> None:
    # Both protocols' generations reach the table here, and so the figure (docs/tables.md: rows of
    # `generations`); responses that are no failed commit leave failed_commits alone.
    figures = GroupMetrics()
    out = Output("g", figures=figures)
    out.generation({"generation_id": 1})
    out.generation({"generation_id": 2})
    out.response(HEARTBEAT, 9, "NONE", results=[])
    assert (figures.generations, figures.failed_commits, len(out.tables["generations"])) == (2, 0, 2)
