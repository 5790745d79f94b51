"""The great-expectations side of `coordsim validate`: one suite per output table, run over the table, one
range of groups at a time on a large run (`Suites.add`): every expectation is about single rows or about
rows of one group (uniqueness keys start with group_id), so the ranges' outcomes add up to the table's.

A table's suite is its schema, from the contract (`state/tables.py`: the columns in order, each value of the
contract's type), followed by the value checks of `conf/expectations/TABLE.yaml` (see the README there).
great-expectations is imported only when a validation runs: it takes seconds to import.

The column types (`expect_column_values_to_be_in_type_list`, one per column: 336 of a run's 418
expectations) are judged here, as great-expectations judges them on pandas, instead of by great-expectations:
it spends about 10 ms of bookkeeping on each expectation per range whatever the rows, so they were a third of
every validation's time (docs/benchmarks.md). They keep their names, order and failure texts.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from simulations.validation.result import Check
from tableio.lag_status import GROUP_STATUSES, PARTITION_STATUSES
from state.consumer_group.group import ConsumerGroupState
from state.errors import ERROR_CODES
from state.events import API_NAMES
from state.classic.group_state import GroupState
from state.tables import COMPARISON, TABLES, parse_type
from state.variants import VARIANT
from simulations.views.comparison import TABLE as COMPARISON_TABLE

SUITES_DIR = Path(__file__).resolve().parents[2] / "conf" / "expectations"

# The sets a suite names with `$name`: owned by the code, so the suites cannot drift from it.
VALUE_SETS: dict[str, list[str]] = {
    "kafka_errors": sorted(ERROR_CODES),
    # Both protocols' (a consumer group's Assigning, Reconciling); `state transitions chain and are legal`
    # holds each group to its own protocol's.
    "group_states": list(dict.fromkeys([state.value for state in GroupState]
                                       + [state.value for state in ConsumerGroupState])),
    "apis": sorted(API_NAMES.values()),
    "request_types": sorted(API_NAMES),
    "lag_partition_statuses": list(PARTITION_STATUSES),
    "lag_group_statuses": list(GROUP_STATUSES),
}

# What great-expectations calls each contract type in a pandas frame read by `raw_tables`.
GE_TYPES = {"string": "str", "binary": "bytes", "int32": "Int32Dtype", "int64": "Int64Dtype", "float64": "float64",
            "bool": "BooleanDtype", "list": "list"}
TYPE_CHECK = "expect_column_values_to_be_in_type_list"
# Per type name: the column dtype it accepts, and for an object column (values checked one by one, nulls left
# out) the Python types it accepts; great-expectations' own mapping for these names.
_DTYPES = {"Int32Dtype": pd.Int32Dtype(), "Int64Dtype": pd.Int64Dtype(), "BooleanDtype": pd.BooleanDtype(),
           "float64": np.dtype("float64"), "str": np.dtype("str"), "bytes": np.dtype("bytes"), "list": None}
_VALUE_TYPES = {"str": (str, np.str_), "bytes": (bytes, np.bytes_), "list": (list,), "float64": (float, np.float64)}


NULLS = {"<NA>", "None", "nan", "NaT"}


class SuiteError(Exception):
    """A suite file that cannot be read or names an unknown value set."""


def expectations_for(table: str, suites_dir: Path = SUITES_DIR,
                     spec: list[tuple[str, str]] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(expectation type, kwargs) of the table's suite: schema first (the contract's, or `spec` for a table
    outside TABLES), then the file's checks."""
    spec = TABLES[table] if spec is None else spec
    schema = [("expect_table_columns_to_match_ordered_list", {"column_list": [name for name, _ in spec]})]
    schema += [("expect_column_values_to_be_in_type_list", {"column": name, "type_list": [GE_TYPES[parse_type(kind)[0]]]})
               for name, kind in spec]
    return schema + _file_expectations(suites_dir / f"{table}.yaml")


def comparison_spec(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """The contract of a sweep's `comparison` table (state/tables.py `COMPARISON`, after the variant and the
    sweep's axes: its string columns between `variant` and `groups`)."""
    names = list(frame.columns)
    axes = names[1:names.index("groups")] if "groups" in names and names[:1] == [VARIANT] else []
    return [(VARIANT, "string"), *((axis, "string") for axis in axes), *COMPARISON]


# The tables suites know, in the order their checks are listed: the contract's, then a sweep's comparison.
SUITE_TABLES = [*TABLES, COMPARISON_TABLE]


def _file_expectations(path: Path) -> list[tuple[str, dict[str, Any]]]:
    if not path.is_file():
        return []
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as error:
        raise SuiteError(f"{path}: cannot read the suite ({error})") from None
    found = []
    for entry in document.get("expectations") or []:
        if not isinstance(entry, dict) or len(entry) != 1:
            raise SuiteError(f"{path}: each expectation is one 'type: {{kwargs}}' mapping, got {entry!r}")
        (kind, kwargs), = entry.items()
        found.append((kind, {key: _resolve(value, path) for key, value in (kwargs or {}).items()}))
    return found


def _resolve(value: Any, path: Path) -> Any:
    if isinstance(value, str) and value.startswith("$"):
        if value[1:] not in VALUE_SETS:
            raise SuiteError(f"{path}: unknown value set {value}; known: {', '.join('$' + n for n in VALUE_SETS)}")
        return VALUE_SETS[value[1:]]
    return value


# How many unexpected values an outcome shows (great-expectations' SUMMARY format): merged ranges keep as many.
PARTIAL_UNEXPECTED = 20


@dataclass
class _Outcome:
    """One expectation's outcome over the ranges seen so far, in the shape `_explain` reads: the first
    failing range's result, with the counts of every range added up and the first unexpected values in
    table order."""
    config: Any
    success: bool = True
    exception_info: dict | None = None
    first_failure: dict = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    unexpected: list = field(default_factory=list)

    @property
    def result(self) -> dict:
        return {**self.first_failure, **self.counts, "partial_unexpected_list": self.unexpected}

    def add(self, outcome) -> None:
        result = outcome.result or {}
        for key in ("element_count", "unexpected_count"):
            if result.get(key) is not None:
                self.counts[key] = self.counts.get(key, 0) + result[key]
        if outcome.success:
            return
        if self.success:
            self.success, self.exception_info, self.first_failure = False, outcome.exception_info, result
        self.unexpected += list(result.get("partial_unexpected_list") or [])[:PARTIAL_UNEXPECTED - len(self.unexpected)]


def _keep_spark_connect_from_exiting() -> None:
    """great-expectations imports pyspark.sql.connect, which ends the process with status 0 when the main module
    has neither a file nor a spec (`python -c`, a pytest-xdist worker): it takes that for a doctest run
    without Spark Connect's dependencies. There, the package is marked absent first, so the import fails as
    great-expectations expects (it then goes without Spark Connect, which coordsim does not use)."""
    main = sys.modules.get("__main__")
    if (main is not None and getattr(main, "__spec__", None) is None and not hasattr(main, "__file__")
            and not hasattr(sys, "ps1")):
        sys.modules.setdefault("pyspark.sql.connect", None)


class Suites:
    """The tables' suites over a run's ranges of groups: `add` each range's tables, then `checks`. With
    `data_docs_dir`, great-expectations' data docs are built there, each table's from its first range with
    rows (the whole table when the run has one range)."""

    def __init__(self, data_docs_dir: Path | None = None) -> None:
        _keep_spark_connect_from_exiting()
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self._gx = gx
        # great-expectations pins the logger of this module at INFO, which logs the temporary folder of an
        # ephemeral docs site: once anything in the process has installed a root handler, as the Spark
        # engine's run does, that line reached the console.
        logging.getLogger(ProgressBarsConfig.__module__).setLevel(logging.WARNING)
        self.context = gx.get_context(mode="ephemeral")
        # The progress bars would bury the summary; they go to stderr once per expectation batch.
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.source = self.context.data_sources.add_pandas("run")
        self.data_docs_dir = data_docs_dir
        if data_docs_dir is not None:
            self.context.add_data_docs_site("coordsim", {
                "class_name": "SiteBuilder",
                "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(data_docs_dir)},
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            })
        self._batches: dict[str, Any] = {}
        self._suites: dict[str, Any] = {}
        # Per table: the column type checks (index in the table's expectations, configuration).
        self._types: dict[str, list[tuple[int, Any]]] = {}
        self._outcomes: dict[tuple[int, int], _Outcome] = {}
        # Each table's empty frame, validated at the end if the table has no row in any range.
        self._empty: dict[str, pd.DataFrame] = {}
        self._documented: set[str] = set()

    def add(self, tables: dict[str, pd.DataFrame]) -> None:
        for table, frame in tables.items():
            if frame.empty:
                self._empty.setdefault(table, frame)
            else:
                self._validate(table, frame)

    def checks(self) -> list[Check]:
        """One check per expectation of every table seen, in table then suite order; builds the data docs."""
        for table, frame in self._empty.items():
            if table not in self._batches:
                self._validate(table, frame)
        if self.data_docs_dir is not None:
            self.context.build_data_docs(site_names=["coordsim"])
        return [_check(SUITE_TABLES[position], outcome) for (position, _), outcome in sorted(self._outcomes.items())]

    @property
    def data_docs(self) -> Path | None:
        return None if self.data_docs_dir is None else Path(self.data_docs_dir) / "index.html"

    def _validate(self, table: str, frame: pd.DataFrame) -> None:
        from great_expectations.core.expectation_suite import ExpectationSuite
        from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

        if table not in self._batches:
            suite = ExpectationSuite(name=table)
            self._types[table] = []
            spec = comparison_spec(frame) if table == COMPARISON_TABLE else None
            for index, (kind, kwargs) in enumerate(expectations_for(table, spec=spec)):
                # The index rides along: great-expectations hands results back in an order of its own.
                config = ExpectationConfiguration(type=kind, kwargs=kwargs, meta={"coordsim_index": index})
                if kind == TYPE_CHECK:
                    self._types[table].append((index, config))
                else:
                    suite.add_expectation_configuration(config)
            self._suites[table] = suite
            self._batches[table] = self.source.add_dataframe_asset(table).add_batch_definition_whole_dataframe(
                "whole table")
        position = SUITE_TABLES.index(table)
        for index, config in self._types[table]:
            self._outcomes.setdefault((position, index), _Outcome(config)).add(column_type(frame, config))
        suite, batch_definition = self._suites[table], self._batches[table]
        if self.data_docs_dir is None or table in self._documented:
            result = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(
                suite, result_format="SUMMARY")
        else:
            self._documented.add(table)
            definition = self.context.validation_definitions.add(self._gx.ValidationDefinition(
                name=table, data=batch_definition, suite=self.context.suites.add(suite)))
            result = definition.run(batch_parameters={"dataframe": frame}, result_format="SUMMARY")
        for outcome in result.results:
            config = outcome.expectation_config
            self._outcomes.setdefault((position, config.meta["coordsim_index"]), _Outcome(config)).add(outcome)


@dataclass(frozen=True)
class _TypeOutcome:
    """A column type check's outcome, in the shape of great-expectations' result for `_Outcome.add`."""
    success: bool
    result: dict
    exception_info: dict | None = None


def column_type(frame: pd.DataFrame, config) -> _TypeOutcome:
    """`expect_column_values_to_be_in_type_list` of one type name, as great-expectations decides it on a pandas
    frame: a typed column passes when its dtype is the one named (its observed value is the dtype's scalar
    type); an object column when every value but the nulls is of the Python type named (counted as a column
    map expectation counts)."""
    column, (name,) = config.kwargs["column"], config.kwargs["type_list"]
    if column not in frame.columns:
        return _TypeOutcome(False, {}, {"raised_exception": True,
                                        "exception_message": f'The column "{column}" in BatchData does not exist.'})
    dtype = frame[column].dtype
    if dtype != object:
        return _TypeOutcome(dtype == _DTYPES[name], {"observed_value": dtype.type.__name__})
    values = frame[column]
    present = values[values.notna()]
    wrong = present[~present.map(lambda value: isinstance(value, _VALUE_TYPES.get(name, ())))]
    return _TypeOutcome(wrong.empty, {"element_count": len(values), "unexpected_count": len(wrong),
                                      "partial_unexpected_list": wrong.head(PARTIAL_UNEXPECTED).tolist()})


def _check(table: str, outcome: _Outcome) -> Check:
    config = outcome.config
    kwargs = {k: v for k, v in config.kwargs.items() if k not in ("batch_id", "result_format")}
    name = f"{table}.{kwargs.get('column') or _columns(kwargs)}: {config.type}"
    if outcome.success:
        return Check("suite", name, True)
    return Check("suite", name, False, _explain(config.type, kwargs, outcome))


def _columns(kwargs: dict) -> str:
    if "column_A" in kwargs:
        return f"{kwargs['column_A']},{kwargs['column_B']}"
    return ",".join(kwargs.get("column_list") or []) if len(kwargs.get("column_list") or []) < 4 else "*"


def _explain(kind: str, kwargs: dict, outcome) -> str:
    error = outcome.exception_info or {}
    if error.get("raised_exception"):
        return f"could not run: {error.get('exception_message')}"
    result = outcome.result or {}
    if kind == "expect_table_columns_to_match_ordered_list":
        return f"columns are {result.get('observed_value')}, the contract has {kwargs['column_list']}"
    if kind == "expect_column_values_to_be_in_type_list" and result.get("observed_value") is not None:
        return f"column type is {result['observed_value']}, the contract wants {kwargs['type_list'][0]}"
    wanted = {k: v for k, v in kwargs.items() if k not in ("column", "column_A", "column_B", "column_list",
                                                         "row_condition")}
    if len(wanted.get("value_set") or ()) > 6:
        wanted["value_set"] = f"<{len(wanted['value_set'])} names>"
    examples = [e for e in dict.fromkeys(map(str, result.get("partial_unexpected_list") or [])) if e not in NULLS]
    found = f"{result.get('unexpected_count')} of {result.get('element_count')} rows"
    if "row_condition" in kwargs:
        found += f" where {_condition(kwargs['row_condition'])}"
    wanted_text = ", ".join(f"{key}={value}" for key, value in wanted.items())
    return (f"{found} fail{', e.g. ' + ', '.join(examples[:3]) if examples else ''}"
            + (f" ({wanted_text})" if wanted else ""))


def _condition(condition) -> str:
    """A suite's row condition ({type: nullity | comparison | and | or, ...}) in words."""
    if not isinstance(condition, dict):
        return str(condition)
    if condition.get("type") in ("and", "or"):
        parts = [_condition(part) for part in condition.get("conditions") or ()]
        return f" {condition['type']} ".join(f"({part})" if " and " in part or " or " in part else part
                                            for part in parts)
    column = condition.get("column", {}).get("name")
    if condition.get("type") == "nullity":
        return f"{column} is {'' if condition.get('is_null') else 'not '}null"
    return f"{column} {condition.get('operator')} {condition.get('parameter')}"
