"""Every input row either processed or in `rejects`: the events file(s) of a run against its tables.

The input is read again with the replay's own reader (`simulations.inputs.read_events`), so each row is
valid or not for the same reason as in the run. Then, as a replay counts them:

    input rows = requests answered            a `responses` row with the request's (group, ts, seq, api)
               + directives and faults        CLIENT_*, SUBSCRIBE, TOPIC_METADATA, COORDINATOR_FAULT: applied,
                                              never answered
               + parked at the end            a JoinGroup while the group ends PreparingRebalance, a SyncGroup
                                              while it ends CompletingRebalance (Kafka answers them later)
               + after --until                events past the run's end, left out (not rejected)
               + rejected late                an engine reject of a valid event (its group's clock had passed)
               + rejected                     a `rejects` row with the row's line and text

A row with `repeat_count` counts as the requests it stands for, and a quiet run (a `requests` or
`responses` row with `repeat_count`) as its requests. Requests that synthetic clients sent (the `requests`
table) must be answered too (or parked at the end).
A response with no request behind it, a request neither answered nor explained, or an invalid row missing
from `rejects` fails the check.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Sequence

import pandas as pd

from simulations.inputs import InputError, read_events
from simulations.validation.result import Check
from state.events import API_NAMES, expand_repeats

PARKED_IN = {"JoinGroup": "PreparingRebalance", "SyncGroup": "CompletingRebalance"}
NAME = "every input row processed or rejected"


def account_for_input(tables: dict[str, pd.DataFrame], events: Sequence[str | Path], until: int | None) -> Check:
    try:
        rows = read_events(events)
    except InputError as error:
        return Check("input", NAME, False, f"cannot read the events: {error}")
    if "responses" not in tables or "rejects" not in tables:
        return Check("input", NAME, False, "cannot check: the responses or rejects table is not readable")
    events = [e for row in rows.events for e in expand_repeats(row)]
    applied = [e for e in events if until is None or e.ts <= until]
    requests = Counter((e.group_id, e.ts, e.seq, API_NAMES[e.type]) for e in applied if e.type in API_NAMES)
    directives = sum(1 for e in applied if e.type not in API_NAMES)
    synthetic = Counter()
    for r in tables["requests"].itertuples(index=False) if "requests" in tables else ():
        synthetic[(r.group_id, int(r.ts), int(r.seq), API_NAMES.get(r.type, r.type))] += _repeats(r.repeat_count)
    # A synthetic run is answered by a run of the same first request and count; any other response row
    # answers one request per repeat.
    synthetic_answered, answered = Counter(), Counter()
    for r in tables["responses"].itertuples(index=False):
        key, count = (r.group_id, int(r.request_ts), int(r.request_seq), r.api), _repeats(r.repeat_count)
        if synthetic[key] - synthetic_answered[key] >= count:
            synthetic_answered[key] += count
            continue
        interval = 0 if pd.isna(r.repeat_interval_ms) else int(r.repeat_interval_ms)
        for i in range(count):
            answered[(r.group_id, int(r.request_ts) + i * interval, int(r.request_seq), r.api)] += 1
    input_answered = requests & answered
    orphans = answered - input_answered

    given_rejects = Counter((r["line"], r["raw"]) for r in rows.rejects)
    table_rejects = Counter((int(r.line), r.raw) for r in tables["rejects"].itertuples(index=False))
    lost_rejects = given_rejects - table_rejects
    late = Counter(filter(None, (_event_key(raw) for _, raw in (table_rejects - given_rejects).elements())))
    late_matched = (requests - input_answered) & late

    final_states = _final_states(tables.get("group_states"))
    unanswered = (requests - input_answered - late_matched) + (synthetic - synthetic_answered)
    parked = Counter({key: n for key, n in unanswered.items() if _parked(key, final_states)})
    unexplained = unanswered - parked
    parked_input = sum((parked & (requests - input_answered - late_matched)).values())

    terms = [(sum(input_answered.values()), "answered"), (directives, "directives and faults applied"),
             (parked_input, "parked at the end"), (len(events) - len(applied), "after --until"),
             (sum(late_matched.values()), "rejected late"), (sum((given_rejects & table_rejects).values()), "rejected")]
    total = len(events) + len(rows.rejects)
    detail = f"{total} = " + " + ".join(f"{n} {label}" for n, label in terms if n) if total else "0 input rows"
    if synthetic:
        detail += f"; {sum(synthetic_answered.values())} of {sum(synthetic.values())} synthetic requests answered"
    problems = []
    if unexplained:
        (group, ts, seq, api), _ = next(iter(unexplained.items()))
        problems.append(f"{sum(unexplained.values())} requests neither answered nor rejected, e.g. {api} of "
                        f"{group} at {ts} (seq {seq})")
    if orphans:
        (group, ts, seq, api), _ = next(iter(orphans.items()))
        problems.append(f"{sum(orphans.values())} responses to no input or synthetic request, e.g. {api} of "
                        f"{group} at {ts} (seq {seq})")
    if lost_rejects:
        (line, _), _ = next(iter(lost_rejects.items()))
        problems.append(f"{sum(lost_rejects.values())} invalid input rows missing from rejects, e.g. line {line}")
    if problems:
        return Check("input", NAME, False, "; ".join(problems) + f" ({detail})")
    return Check("input", NAME, True, detail)


def _repeats(count) -> int:
    return 1 if pd.isna(count) else int(count)


def _event_key(raw: str) -> tuple | None:
    """(group, ts, seq, api) of an engine's late reject, whose raw text is the parsed event as JSON."""
    try:
        event = json.loads(raw)
        return event["group_id"], int(event["ts"]), int(event["seq"]), API_NAMES[event["type"]]
    except (ValueError, TypeError, KeyError):
        return None


def _final_states(states: pd.DataFrame | None) -> dict[str, tuple[str, int]]:
    if states is None or states.empty:
        return {}
    last = states.sort_values(["group_id", "out_seq"]).groupby("group_id").tail(1)
    return {row.group_id: (row.to_state, int(row.ts)) for row in last.itertuples(index=False)}


def _parked(key: tuple, final_states: dict[str, tuple[str, int]]) -> bool:
    group, ts, _, api = key
    state, since = final_states.get(group, (None, 0))
    return PARKED_IN.get(api) == state and ts >= since
