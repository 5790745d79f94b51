"""Replay of captured requests: each imported event gets the captured broker's answer to it attached, and then
runs through either engine like any other event (`run_local`, or `run_spark(..., captured=FILE)`, whose source
attaches the answers as it reads the events).

The group's runtime does the rest (state/captured_ids.py): right before it handles a request that carries a
captured answer it translates the captured broker's member ids and generations into its own, it learns the
translation from its answers to captured JoinGroups, and it sends the MEMBER_ID_REQUIRED round the captured
broker skipped. The replay is open loop: every request is sent at its captured time, whatever the group
answered before. Events without a captured answer (our own JSONL traces, made against this coordinator)
run unchanged, so without captured responses the tables are the plain run's.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, Mapping

from simulations.capture.captured import CapturedInput, captured_records
from state.events import CapturedAnswer, Event


def captured_answers(captured_responses: CapturedInput) -> dict[str, CapturedAnswer]:
    """What the runtime needs of each captured response, by request id, from a captured-responses file, its
    DataFrame, or its rows. Raises CapturedError for a file that cannot be read."""
    return {row["request_id"]: CapturedAnswer(connection=row["connection"], error=row["error"],
                                              member_id=row["member_id"], generation_id=row["generation_id"])
            for row in captured_records(captured_responses)}


<<<<<<< HEAD
def attach_captured(events: Iterable[Event], answers: Mapping[str, CapturedAnswer]) -> Iterator[Event]:
    """`events` with the captured answer to each (`Event.captured`), matched by `request_id`."""
    for event in events:
        answer = answers.get(event.request_id) if event.request_id is not None else None
        yield event if answer is None else dataclasses.replace(event, captured=answer)
=======
def original_request_id(request_id: str | None) -> str | None:
    return request_id.removesuffix(RETRY_SUFFIX) if request_id else request_id


class _GroupReplay:
    def __init__(self, group_id: str, config: CoordinatorConfig, captured: dict[str, dict],
                 result: RunResult) -> None:
        self.runtime = GroupRuntime(group_id, config)
        self.ids = IdMap(captured)
        self.result = result
        self.offered: dict[str | None, Event] = {}

    def run(self, events: list[Event]) -> None:
        for event in events:
            self.runtime.advance_to(event.ts)
            self.collect()
            self.offer(self.ids.rewrite(event))

    def offer(self, event: Event) -> None:
        self.offered[event.request_id] = event
        self.runtime.offer([event])
        self.runtime.advance_to(event.ts)
        self.collect()

    def collect(self) -> None:
        output = self.runtime.take_output()
        for name, rows in output.tables.items():
            self.result.tables[name].extend(rows)
        self.result.tables["rejects"].extend(output.rejects)
        for response in output.tables["responses"]:
            event = self.offered.pop(response["request_id"], None)
            if event is None:
                continue
            retry_with = self.ids.learn(event, response)
            if retry_with is not None:
                self.offer(dataclasses.replace(event, member_id=retry_with,
                                               request_id=event.request_id + RETRY_SUFFIX))


def replay_captured(events: Iterable[Event], captured_responses: CapturedInput, config: CoordinatorConfig,
                    until: int | None = None, progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Replay `events` (as `read_events` returns them) with the member-id mapping learned against
    `captured_responses` (a captured-responses file, its DataFrame, or its rows). Returns the same tables
    and counts as `run_local`; without matching captured responses the tables are equal to its."""
    captured = {row["request_id"]: row for row in captured_records(captured_responses)}
    result = RunResult()
    by_group = events_by_group(events, until, result)
    replays = {group_id: _GroupReplay(group_id, config, captured, result) for group_id in by_group}
    for group_id, replay in replays.items():
        replay.run(sorted(by_group[group_id], key=lambda e: e.sort_key))
    result.groups = len(replays)

    # The end of the run, as run_local decides it.
    if until is not None:
        final = until
    elif replays:
        final = max(e.ts for group in by_group.values() for e in group)
        for replay in replays.values():
            replay.runtime.advance_to(final)
            replay.collect()
        pending = [d for r in replays.values() if (d := r.runtime.max_pending_deadline()) is not None]
        final = max([final, *pending])
    else:
        final = None
    for done, replay in enumerate(replays.values(), start=1):
        replay.runtime.advance_to(final)
        replay.collect()
        replay.runtime.finish()
        replay.collect()
        if progress is not None:
            progress(done, len(replays))
    result.end_at(final)
    return result
>>>>>>> wip-lag
