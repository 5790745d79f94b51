"""The shared replays of tests/simulations/views/runs.py, as fixtures here."""

from .runs import (failed_broker_run, lagging_run, moved_run, sample_run, tiny_run,  # noqa: F401
                   upgraded_run)
