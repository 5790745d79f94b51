"""Replay of captured requests: each imported event gets the captured broker's answer to it attached, and then
runs through either engine like any other event (`run_local`, or `run_spark(..., captured=FILE)`, whose source
attaches the answers as it reads the events).

The group's runtime does the rest (state/runtime/captured_ids.py): right before it handles a request that carries a
captured answer it translates the captured broker's member ids and generations into its own, it learns the
translation from its answers to captured JoinGroups, and it sends the MEMBER_ID_REQUIRED round the captured
broker skipped. The replay is open loop: every request is sent at its captured time, whatever the group
answered before. Events without a captured answer (our own JSONL traces, made against this coordinator)
run unchanged, so without captured responses the tables are the plain run's.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, Mapping

from tableio.captured import CapturedInput, captured_records
from state.events import CapturedAnswer, Event


def captured_answers(captured_responses: CapturedInput) -> dict[str, CapturedAnswer]:
    """What the runtime needs of each captured response, by request id, from a captured-responses file, its
    DataFrame, or its rows. Raises CapturedError for a file that cannot be read."""
    return {row["request_id"]: CapturedAnswer(connection=row["connection"], error=row["error"],
                                              member_id=row["member_id"], generation_id=row["generation_id"])
            for row in captured_records(captured_responses)}


def attach_captured(events: Iterable[Event], answers: Mapping[str, CapturedAnswer]) -> Iterator[Event]:
    """`events` with the captured answer to each (`Event.captured`), matched by `request_id`."""
    for event in events:
        answer = answers.get(event.request_id) if event.request_id is not None else None
        yield event if answer is None else dataclasses.replace(event, captured=answer)
