"""The conformance suite's short subset against the newest Kafka 4.x release (docs/conformance.md): one classic
and one consumer-protocol scenario, real Java consumers against a real KRaft broker, every answer and record
compared and every difference explained. COORDSIM_CONFORMANCE=full runs every scenario instead, and
COORDSIM_KAFKA_VERSION picks the release."""

from __future__ import annotations

import os
import shutil

import pytest

from simulations.conformance.explain import summary_row
from simulations.conformance.runner import run_suite
from simulations.conformance.scenarios import CI_SUBSET, SCENARIOS

VERSION = os.environ.get("COORDSIM_KAFKA_VERSION", "4.4.0")
NAMES = list(SCENARIOS) if os.environ.get("COORDSIM_CONFORMANCE") == "full" else list(CI_SUBSET)

# One worker runs the module (scripts/test's --dist loadgroup), so the scenarios run once, not once per worker.
pytestmark = [pytest.mark.conformance, pytest.mark.xdist_group("conformance"),
              pytest.mark.skipif(not all(map(shutil.which, ("mvn", "javac", "dumpcap"))),
                                 reason="needs Maven, a JDK and dumpcap (scripts/setup --test installs them)")]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    work = tmp_path_factory.mktemp("conformance")
    return {o.scenario.name: o for o in run_suite(VERSION, NAMES, work, progress=lambda line: None)}


@pytest.mark.parametrize("name", NAMES)
def test_every_answer_and_record_is_equal_or_explained(outcomes, name):
    row = summary_row(outcomes[name])
    assert row["unexplained"] == 0, row["causes"]
    assert row["answers"] >= 10 and row["records"] >= 10
    # The offsets the consumers committed last are what both sides hold at the end.
    offsets = outcomes[name].offsets
    assert len(offsets) == 4 and offsets["same_last_commit"].all()
    assert (offsets["captured_offset"] == offsets["simulated_offset"]).all()
