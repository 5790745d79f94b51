"""The core's shape (docs/architecture.md): no class of state/ too big to read, counting what it inherits, and
a runtime that holds its coordinator and client objects instead of mixing them into itself."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import state
from state.config import CoordinatorConfig
from state.clients.elision import PeriodicElision
from state.clients.lookup_loop import LookupLoops
from state.runtime.group_runtime import GroupRuntime

MOST_METHODS = 60


def _methods(cls: type) -> list[str]:
    """Its methods and properties, inherited ones included, dunders excluded."""
    return [name for name, value in inspect.getmembers(cls)
            if (inspect.isfunction(value) or isinstance(value, (property, classmethod, staticmethod)))
            and not (name.startswith("__") and name.endswith("__"))]


def _classes():
    for info in pkgutil.walk_packages(state.__path__, "state."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == info.name:
                yield cls


def test_no_class_of_the_core_has_more_than_60_methods():
    found = {f"{cls.__module__}.{cls.__qualname__}": len(_methods(cls)) for cls in _classes()}
    assert found, "no class found"
    too_big = {name: count for name, count in found.items() if count > MOST_METHODS}
    assert not too_big, too_big


def test_the_runtime_holds_its_managers_and_clients_and_inherits_nothing():
    assert GroupRuntime.__bases__ == (object,)
    runtime = GroupRuntime("g", CoordinatorConfig())
    held = {type(value).__name__ for value in vars(runtime).values()}
    assert {"ClassicGroupManager", "ConsumerGroupManager", "OffsetMetadataManager", "ConsumerFleet",
            "PeriodicElision", "PeriodicAnswers", "LookupLoops", "LookupAnswers", "QuietRuns", "GroupMetrics",
            "ClusterImage"} <= held


def test_the_managers_read_the_cluster_image_not_the_runtime():
    runtime = GroupRuntime("g", CoordinatorConfig())
    assert runtime.offset_manager.image is runtime.image and runtime.consumer.image is runtime.image
    decoded = GroupRuntime.decode(runtime.encode(), CoordinatorConfig())
    assert decoded.offset_manager.image is decoded.image and decoded.consumer.image is decoded.image


def test_the_client_sides_closed_forms_are_given_the_fleet_and_the_other_half_never_the_runtime():
    for cls in (PeriodicElision, LookupLoops):
        for name, method in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith("__"):
                parameters = set(inspect.signature(method).parameters)
                assert not parameters & {"rt", "runtime", "host"}, f"{cls.__name__}.{name}{parameters}"
