"""The shared replays of tests/simulations/views/runs.py, as fixtures here."""

from .runs import lagging_run, sample_run, tiny_run, upgraded_run  # noqa: F401 (fixtures)
