"""What every `coordsim` command shares: the command group (a closed standard output ends any command
quietly, a bad option value is one line), the user-error exception (one line on stderr, exit code 2, never a
traceback), the console, the timestamp parameter type, and the aligned label/value lines of the summaries."""

from __future__ import annotations

import os
import signal
import sys

import click
import rich.console
from rich.markup import escape

from state.events import EventError, parse_ts

# The status a shell shows for a Unix tool that SIGPIPE stopped, e.g. `seq 100000 | head -1`.
BROKEN_PIPE_EXIT = 128 + signal.SIGPIPE


class UserError(click.ClickException):
    exit_code = 2


class CommandGroup(click.Group):
    """A click group whose commands stop quietly when their reader goes away (`coordsim offsets RUN | head`):
    no message, exit status BROKEN_PIPE_EXIT, as a Unix tool stopped by SIGPIPE. Python ignores SIGPIPE, so
    the write raises BrokenPipeError instead; it is handled here once for every command. A bad value of an
    option or argument (click's BadParameter: `--at yesterday`, `--port 99999`, `--engine sprak`) is a user's
    mistake like any other: one line, exit code 2, without click's usage lines, which say nothing about the
    value; a missing or unknown option keeps them."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _silence_stdout()
            raise SystemExit(BROKEN_PIPE_EXIT) from None
        except click.BadParameter as error:
            if isinstance(error, click.MissingParameter):
                raise
            raise UserError(error.format_message()) from None


def _silence_stdout() -> None:
    # Whatever is still buffered would fail again when Python flushes stdout on exit, with a message.
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return  # not a file (a test's capture): nothing is flushed to a closed pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


class Console(rich.console.Console):
    """rich's console, leaving a closed standard output to CommandGroup (rich would exit with status 1)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


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
