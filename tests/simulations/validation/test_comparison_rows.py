"""`validate --variant` of a sweep checks the variant's row of the `comparison` table: its suite and its figures
against the variant's own tables; a tampered row fails with one line naming the figure."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from simulations.validation import validate_variant
from simulations.validation.comparison_rows import NAME
from tableio.parquet import PART_FILE

from ..scenarios.test_sweep import cli, write


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep")
    out = folder / "run"
    result = cli("sweep", write(folder), "--vary", "cluster.brokers=2,3", "--out", out, "--engine", "local",
                 "--no-report", "--no-validate")
    assert result.exit_code == 0, result.output
    return out


def _tampered(sweep, tmp_path, column, value):
    folder = tmp_path / "tampered"
    shutil.copytree(sweep, folder)
    path = folder / "comparison" / PART_FILE
    table = pq.read_table(path)
    values = table[column].to_pylist()
    values[0] = value
    index = table.schema.get_field_index(column)
    pq.write_table(table.set_column(index, column, pa.array(values, table.schema.field(column).type)), path)
    return folder


def test_each_variants_comparison_row_passes(sweep):
    for variant in ("brokers=2", "brokers=3"):
        result = validate_variant(sweep, variant)
        assert result.success, result.summary()
        assert any(c.name == NAME and c.passed for c in result.checks)


def test_a_comparison_figure_its_variants_tables_do_not_give_fails(sweep, tmp_path):
    rebalances = pq.read_table(sweep / "comparison" / PART_FILE)["rebalances"][0].as_py()
    result = validate_variant(_tampered(sweep, tmp_path, "rebalances", rebalances + 1), "brokers=2")
    assert [(c.name, c.detail) for c in result.failures] == [
        (NAME, f"rebalances {rebalances + 1}, the variant's tables give {rebalances}")]


def test_a_negative_failed_commits_fails_the_comparison_suite(sweep, tmp_path):
    result = validate_variant(_tampered(sweep, tmp_path, "failed_commits", -5), "brokers=2")
    failures = {c.name: c.detail for c in result.failures}
    assert failures.pop("comparison.failed_commits: expect_column_values_to_be_between").startswith(
        "1 of 1 rows fail, e.g. -5")
    assert list(failures) == [NAME]
