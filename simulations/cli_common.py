"""What every `coordsim` command shares: the user-error exception (one line on stderr, exit code 2, never a
traceback), the timestamp parameter type, and the aligned label/value lines of the summaries."""

from __future__ import annotations

import click
from rich.console import Console
from rich.markup import escape

from state.events import EventError, parse_ts


class UserError(click.ClickException):
    exit_code = 2


class Timestamp(click.ParamType):
    """Epoch milliseconds or ISO-8601 with a zone, as in the events' `ts`."""

    name = "TS"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return parse_ts(value, param.name if param else "ts")
        except EventError as error:
            self.fail(str(error), param, ctx)


def print_lines(console: Console, lines: list[tuple[str, str]]) -> None:
    width = max(len(label) for label, _ in lines)
    for label, value in lines:
        console.print(f"[bold]{label:<{width}}[/bold]  {escape(value)}", highlight=False, soft_wrap=True)
