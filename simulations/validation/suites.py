"""The great-expectations side of `coordsim validate`: one suite per output table, run over the table.

A table's suite is its schema, from the contract (`state/tables.py`: the columns in order, each value of the
contract's type), followed by the value checks of `conf/expectations/TABLE.yaml` (see the README there).
great-expectations is imported only when a validation runs: it takes seconds to import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from simulations.validation.result import Check
from simulations.views.lag_status import GROUP_STATUSES, PARTITION_STATUSES
from state.errors import ERROR_CODES
from state.events import API_NAMES
from state.group_state import GroupState
from state.tables import TABLES, parse_type

SUITES_DIR = Path(__file__).resolve().parents[2] / "conf" / "expectations"

# The sets a suite names with `$name`: owned by the code, so the suites cannot drift from it.
VALUE_SETS: dict[str, list[str]] = {
    "kafka_errors": sorted(ERROR_CODES),
    "group_states": [state.value for state in GroupState],
    "apis": sorted(API_NAMES.values()),
    "request_types": sorted(API_NAMES),
    "lag_partition_statuses": list(PARTITION_STATUSES),
    "lag_group_statuses": list(GROUP_STATUSES),
}

# What great-expectations calls each contract type in a pandas frame read by `raw_tables`.
GE_TYPES = {"string": "str", "binary": "bytes", "int32": "Int32Dtype", "int64": "Int64Dtype", "float64": "float64",
            "bool": "BooleanDtype", "list": "list"}


NULLS = {"<NA>", "None", "nan", "NaT"}


class SuiteError(Exception):
    """A suite file that cannot be read or names an unknown value set."""


def expectations_for(table: str, suites_dir: Path = SUITES_DIR) -> list[tuple[str, dict[str, Any]]]:
    """(expectation type, kwargs) of the table's suite: schema first, then the file's checks."""
    schema = [("expect_table_columns_to_match_ordered_list", {"column_list": [name for name, _ in TABLES[table]]})]
    schema += [("expect_column_values_to_be_in_type_list", {"column": name, "type_list": [GE_TYPES[parse_type(spec)[0]]]})
               for name, spec in TABLES[table]]
    return schema + _file_expectations(suites_dir / f"{table}.yaml")


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


def run_suites(tables: dict[str, pd.DataFrame], data_docs_dir: Path | None = None) -> tuple[list[Check], Path | None]:
    """Validate every table with its suite; with `data_docs_dir`, also build great-expectations' data docs
    there. Returns the checks and the data docs' index page."""
    import great_expectations as gx
    from great_expectations.core.expectation_suite import ExpectationSuite
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    context = gx.get_context(mode="ephemeral")
    # The progress bars would bury the summary; they go to stderr once per expectation batch.
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("run")
    if data_docs_dir is not None:
        context.add_data_docs_site("coordsim", {
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(data_docs_dir)},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        })
    checks: list[Check] = []
    for table, frame in tables.items():
        suite = ExpectationSuite(name=table)
        for kind, kwargs in expectations_for(table):
            suite.add_expectation_configuration(ExpectationConfiguration(type=kind, kwargs=kwargs))
        batch_definition = source.add_dataframe_asset(table).add_batch_definition_whole_dataframe("whole table")
        if data_docs_dir is None:
            result = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(
                suite, result_format="SUMMARY")
        else:
            definition = context.validation_definitions.add(
                gx.ValidationDefinition(name=table, data=batch_definition, suite=context.suites.add(suite)))
            result = definition.run(batch_parameters={"dataframe": frame}, result_format="SUMMARY")
        checks += [_check(table, outcome) for outcome in result.results]
    index = None
    if data_docs_dir is not None:
        context.build_data_docs(site_names=["coordsim"])
        index = Path(data_docs_dir) / "index.html"
    return checks, index


def _check(table: str, outcome) -> Check:
    config = outcome.expectation_config
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
    """A suite's row condition ({type: nullity | comparison, ...}) in words."""
    if not isinstance(condition, dict):
        return str(condition)
    column = condition.get("column", {}).get("name")
    if condition.get("type") == "nullity":
        return f"{column} is {'' if condition.get('is_null') else 'not '}null"
    return f"{column} {condition.get('operator')} {condition.get('parameter')}"
