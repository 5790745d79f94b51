"""The coordinator's broker settings for a run: `conf/coordinator.yaml` (Kafka's defaults), then a scenario's
`broker:` settings (`coordsim run`), then a user's `--conf FILE`, then `--set name=value` overrides, all under
Kafka's config names.

The defaults file sits at the repository root (`conf/`), next to the `tableio` package of a clone
installed with `pip install -e .`; an installation without it runs on `CoordinatorConfig()`'s built-in
defaults, which are the same values.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from state.config import ConfigError, CoordinatorConfig

SECTION = "coordinator"
DEFAULTS_FILE = Path(__file__).resolve().parent.parent / "conf" / "coordinator.yaml"


def load_config(conf_file: str | os.PathLike | None = None, overrides: Iterable[str] = (),
                scenario: Mapping[str, Any] | None = None) -> CoordinatorConfig:
    """Layer the defaults file, a scenario's settings, `conf_file` and `overrides` ("name=value" strings);
    ConfigError on any unknown name, bad value or unreadable file."""
    settings: dict[str, Any] = {}
    if DEFAULTS_FILE.is_file():
        settings.update(read_conf_file(DEFAULTS_FILE))
    settings.update(scenario or {})
    if conf_file is not None:
        settings.update(read_conf_file(Path(conf_file)))
    settings.update(parse_overrides(overrides))
    return CoordinatorConfig.from_kafka(settings)


def read_conf_file(path: Path) -> dict[str, Any]:
    """The `coordinator:` mapping of a YAML settings file."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read ({error.strerror or error})") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({error})") from None
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        raise ConfigError(f"{path}: expected a mapping with a '{SECTION}:' section")
    unknown = [str(key) for key in document if key != SECTION]
    if unknown:
        raise ConfigError(f"{path}: unknown section(s) {', '.join(unknown)}; broker settings go under "
                          f"'{SECTION}:' with Kafka's names, e.g. '{SECTION}:\\n  group.initial.rebalance.delay.ms: 0'")
    section = document.get(SECTION) or {}
    if not isinstance(section, Mapping):
        raise ConfigError(f"{path}: '{SECTION}:' must be a mapping of Kafka setting names to values")
    return {str(key): value for key, value in section.items()}


def parse_overrides(overrides: Iterable[str], option: str = "--set") -> dict[str, str]:
    """NAME=VALUE items of the command-line `option` as a mapping."""
    settings = {}
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{option} expects name=value (a setting name), got {item!r}")
        settings[name.strip()] = value.strip()
    return settings


def non_default_settings(config: CoordinatorConfig) -> dict[str, int]:
    """The settings of `config` that differ from Kafka's defaults, for the run summary."""
    defaults = CoordinatorConfig().to_kafka()
    return {name: value for name, value in config.to_kafka().items() if defaults[name] != value}
