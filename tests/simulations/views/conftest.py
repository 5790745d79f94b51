"""The shared replays of tests/simulations/views/runs.py, as fixtures here."""

from .runs import sample_run, tiny_run  # noqa: F401 (fixtures)
