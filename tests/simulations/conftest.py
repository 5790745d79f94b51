"""Shared paths: the repository and the bundled sample trace."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "simulations" / "samples" / "sample-trace.jsonl"
