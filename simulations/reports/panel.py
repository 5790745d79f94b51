"""What a report panel is (a title, a one-line reading guide, an HTML body) and the words panels share."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape


@dataclass(frozen=True)
class Panel:
    id: str
    title: str
    guide: str
    body: str


def note(text: str) -> str:
    """A panel's body when it has nothing to draw: it says so in words."""
    return f'<p class="note">{escape(text)}</p>'


def span(ms: int) -> str:
    """A bin width as a reader says it: `5 min`, `30 s`, `250 ms`."""
    if ms % 60_000 == 0:
        return f"{ms // 60_000} min"
    return f"{ms / 1000:g} s" if ms >= 1000 else f"{ms} ms"
