"""Spark profiles and the SparkSession: `conf/spark-<profile>.yaml` (master + settings), overrides on top.

A profile's `settings` mix two kinds of keys: `streaming.*` settings belong to the engine
(`streaming.engine`), `spark.*` keys go to Spark. Everything else about Spark lives here, so the engine, the
CLI and the tests share one way of starting it (its logging: `conf/log4j2.properties`; the JVM's own notice
about an incubator module kept off stderr, JVM_NOTICE) and of stopping it.
A JVM has one SparkContext, so `get_session` hands back the session that is already running (tests share
one); a run's own SQL settings are applied to a child session (`run_session`), never to the shared one.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any, Mapping

import yaml

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
# Spark's logging, in the conf folder: docs/spark.md, "Logging".
LOG4J_FILE = "log4j2.properties"
# The one line the driver's JVM prints of its own as it starts: the module system's notice about the incubator
# module Spark's launcher adds to every JVM it starts (org.apache.spark.launcher.JavaModuleOptions,
# --add-modules=jdk.incubator.vector). The JDK prints it whenever such a module is resolved
# (jdk.internal.module.ModuleBootstrap) and has no option against it, so the JVM's stderr is forwarded with
# exactly this line left out.
JVM_NOTICE = b"WARNING: Using incubator modules: jdk.incubator.vector\n"
STDERR = 2

# The engine's settings: name -> (default, smallest allowed value). docs/spark.md documents each.
ENGINE_SETTINGS: dict[str, tuple[int, int]] = {
    # The late-row filter drops rows at or before the previous watermark; the drain relies on a row at
    # watermark + delay never being late, hence at least 1.
    "streaming.watermark.delay.ms": (30_000, 1),
    "streaming.state.buckets": (0, 0),
    "streaming.files.per.trigger": (0, 0),
}


class SettingsError(ValueError):
    """An unknown profile or setting, or a value the engine cannot use."""


def conf_dir() -> Path:
    # The Docker image installs the package without the repository around it and points here instead.
    return Path(os.environ.get("COORDSIM_CONF_DIR") or CONF_DIR)


def load_profile(profile: str) -> tuple[str | None, dict[str, Any]]:
    """(master, settings) of `conf/spark-<profile>.yaml`."""
    path = conf_dir() / f"spark-{profile}.yaml"
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as error:
        raise SettingsError(f"Spark profile {profile!r}: cannot read {path} ({error.strerror or error})") from None
    except yaml.YAMLError as error:
        raise SettingsError(f"{path}: not valid YAML ({error})") from None
    if not isinstance(document, Mapping) or set(document) - {"master", "settings"}:
        raise SettingsError(f"{path}: expected only 'master:' and 'settings:'")
    return document.get("master"), dict(document.get("settings") or {})


def resolve_settings(profile: str = "local", overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The profile's settings with `overrides` on top; engine settings checked and made integers."""
    _, settings = load_profile(profile)
    settings.update(overrides or {})
    for name, value in settings.items():
        if name in ENGINE_SETTINGS:
            _, lowest = ENGINE_SETTINGS[name]
            try:
                number = int(value)
            except (TypeError, ValueError):
                raise SettingsError(f"setting {name} must be an integer, got {value!r}") from None
            if number < lowest or number != float(value):
                raise SettingsError(f"setting {name} must be an integer >= {lowest}, got {value!r}")
            settings[name] = number
        elif not name.startswith("spark."):
            known = ", ".join(sorted(ENGINE_SETTINGS))
            raise SettingsError(f"unknown Spark engine setting {name!r}; engine settings: {known}; "
                                f"Spark's own settings start with 'spark.'")
    for name, (default, _) in ENGINE_SETTINGS.items():
        settings.setdefault(name, default)
    return settings


def spark_settings(settings: Mapping[str, Any]) -> dict[str, str]:
    """The `spark.*` part of `settings`, as the strings Spark expects."""
    return {name: _spark_value(value) for name, value in settings.items() if name.startswith("spark.")}


def _spark_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def build_session(profile: str = "local", master: str | None = None,
                  overrides: Mapping[str, Any] | None = None):
    """Start (or join) the SparkSession of `profile`. The master: `master`, else spark-submit's, else the
    profile's."""
    from pyspark.sql import SparkSession

    profile_master, _ = load_profile(profile)
    # Under spark-submit the JVM is already up with spark-submit's --master: a profile must not override it.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    master = master or (None if submitted else profile_master)
    if not master and not submitted:
        raise SettingsError(f"Spark profile {profile!r} has no master; give one (e.g. --master spark://host:7077)")
    conf = spark_settings(resolve_settings(profile, overrides))
    # Python workers must run this interpreter: it is the one with pandas, pyarrow and coordsim installed.
    conf.setdefault("spark.pyspark.python", sys.executable)
    os.environ.setdefault("PYSPARK_PYTHON", conf["spark.pyspark.python"])
    options = {"spark.app.name": "coordsim", **({"spark.master": master} if master else {}), **conf}
    if not submitted:
        _configure_driver_jvm(master, options)
        _launch_driver_jvm(options)
    builder = SparkSession.builder
    for name, value in options.items():
        builder = builder.config(name, value)
    return builder.getOrCreate()


def _launch_driver_jvm(options: Mapping[str, str]) -> None:
    """Start the driver's JVM as pyspark would for a SparkSession of `options` (spark-submit with each as a
    --conf), but with its stderr, and its Python workers', forwarded by a thread to ours without JVM_NOTICE.
    Nothing if this process has a JVM already: a SparkContext stopped and started again keeps its JVM."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        if SparkContext._gateway is not None:
            return
        conf = SparkConf(loadDefaults=False).setAll(list(options.items()))
        read, write = os.pipe()
        # Where the JVM wrote before (descriptor 2, whatever sys.stderr is now), for as long as it runs: until
        # this process ends.
        pump = threading.Thread(target=forward_stderr, args=(read, STDERR), name="coordsim-jvm-stderr", daemon=True)
        pump.start()
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stderr": write})
        except BaseException:
            os.close(write)
            pump.join(timeout=5)  # the JVM has exited: its last lines say why
            raise
        os.close(write)  # the JVM holds its own end
        SparkContext._ensure_initialized(gateway=gateway)


def forward_stderr(source: int, target: int) -> None:
    """Copy lines from the file descriptor `source` to `target` until `source` ends, all but JVM_NOTICE. A
    `target` that cannot be written any more (a closed pipe) is not waited for: the lines are still read, so
    the JVM never blocks on a full pipe."""
    writable = True
    with open(source, "rb", buffering=0) as lines:
        for line in lines:
            if line == JVM_NOTICE or not writable:
                continue
            try:
                os.write(target, line)
            except OSError:
                writable = False


def _configure_driver_jvm(master: str, conf: dict[str, str]) -> None:
    """What the driver's JVM, about to start, must be given at its start: the logging configuration and,
    for a local master, the address to bind."""
    log_file = conf_dir() / LOG4J_FILE
    options = conf.get("spark.driver.extraJavaOptions", "")
    # A user's own -Dlog4j2.configurationFile wins; a conf folder without the file leaves Spark's defaults.
    if log_file.is_file() and "-Dlog4j2.configurationFile=" not in options:
        # First: run_session recognises the profile's options at the end of the running ones.
        ours = f"-Dlog4j2.configurationFile={log_file.resolve().as_uri()}"
        conf["spark.driver.extraJavaOptions"] = f"{ours} {options}".strip()
    if master.startswith("local"):
        # Everything runs on this machine: without it Spark binds an outer interface, and warns that the host
        # name resolves to a loopback address, as it does on many machines.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def stop_session(session) -> None:
    """Stop the Spark application of `session`, whose streaming queries have ended. The state stores go
    first: their maintenance thread runs on a timer, and a run of it during or after SparkContext.stop fails
    with a stack trace ("SparkEnv not active, cannot do maintenance on StateStores", "RpcEnv already
    stopped")."""
    session.sparkContext._jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
    session.stop()


def get_session(profile: str = "local", master: str | None = None, overrides: Mapping[str, Any] | None = None):
    """The running SparkSession if there is one (whatever its profile), else a new one from `profile`."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    return active if active is not None else build_session(profile, master, overrides)


def run_session(base, settings: Mapping[str, Any]):
    """A child of `base` (same SparkContext, own SQL settings and listeners) with a run's `spark.*` SQL
    settings applied; settings Spark only reads at startup must already match, or the run would silently
    ignore them."""
    session = base.newSession()
    for name, value in spark_settings(settings).items():
        if session.conf.isModifiable(name):
            session.conf.set(name, value)
            continue
        current = base.sparkContext.getConf().get(name, None)
        if current is not None and not _started_with(name, current, value) and name not in _STARTUP_ONLY_TOLERATED:
            raise SettingsError(f"{name}={value} needs a new Spark application; the running one has {current}")
    return session


def _started_with(name: str, current: str, value: str) -> bool:
    """Whether the running application was started with `name=value`. Spark puts its own JVM options
    (module opens and the like) before the user's `*.extraJavaOptions`."""
    if name.endswith(".extraJavaOptions"):
        return current == value or current.endswith(" " + value)
    return current == value


# Startup settings that only affect how the session was started (memory of a JVM that already runs,
# cosmetic UI switches): a shared session that differs on them runs the engine just the same.
_STARTUP_ONLY_TOLERATED = frozenset({
    "spark.driver.memory", "spark.executor.memory", "spark.ui.enabled", "spark.ui.showConsoleProgress",
    "spark.pyspark.python",
})
