"""Every input row either processed or in `rejects`: the events file(s) of a run against its tables.

The input is read again with the replay's own reader (`tableio.inputs.read_events`), so each row is
valid or not for the same reason as in the run. Then, as a replay counts them:

    input rows = requests answered            a `responses` row with the request's (group, ts, seq, api)
               + directives and faults        CLIENT_*, SUBSCRIBE, TOPIC_METADATA, COORDINATOR_FAULT: applied,
                                              never answered
               + parked at the end            a JoinGroup while the group ends PreparingRebalance, a SyncGroup
                                              while it ends CompletingRebalance (Kafka answers them later)
               + after --until                events past the run's end, left out (not rejected)
               + rejected by the coordinator  a valid event the coordinator could not apply (its group's clock
                                              had passed it; a directive for a client not running)
               + rejected                     a `rejects` row with the row's line and text

A `rejects` row is the coordinator's or the reader's as `tableio.inputs.coordinator_reject` says, the
definition the run summaries count "events applied" and "rejected rows" by.

A row with `repeat_count` counts as the requests it stands for, and a quiet run (a `requests` or
`responses` row with `repeat_count`) as its requests. Requests that synthetic clients sent (the `requests`
table) must be answered too (or parked at the end). A synthetic request sent to a broker that was down reached
none (no `requests` row): its `responses` row (NETWORK_EXCEPTION, the client's failed connection) answers
nothing of the input, and is counted apart.
A replay of captured traffic answers one request the input does not hold: the JoinGroup retry it sends
itself when the coordinator asks a new member for the MEMBER_ID_REQUIRED round the captured broker skipped
(`state.runtime.captured_ids`, request_id ending in RETRY_SUFFIX); it is accounted for by its input JoinGroup's
MEMBER_ID_REQUIRED answer.
A response with no request behind it, a request neither answered nor explained, or an invalid row missing
from `rejects` fails the check.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from tableio.inputs import InputError, coordinator_reject, read_events
from simulations.group_ranges import WHOLE, GroupRange
from simulations.validation.result import Check
from simulations.views.quiet_runs import repeat_counts, repeat_times
from state.runtime.captured_ids import is_retry
from state.errors import NETWORK_EXCEPTION
from state.events import API_NAMES, expand_repeats

PARKED_IN = {"JoinGroup": "PreparingRebalance", "SyncGroup": "CompletingRebalance"}
NAME = "every input row processed or rejected"


class InputAccounting:
    """The input rows against a run's tables, one range of groups at a time (`add`, then `check`): requests
    and responses carry their group, so each range's are matched alone; the input rows and the `rejects`
    table (no group) are read once, here."""

    def __init__(self, events: Sequence[str | Path], until: int | None) -> None:
        self.problem: str | None = None
        try:
            rows = read_events(events)
        except InputError as error:
            self.problem = f"cannot read the events: {error}"
            return
        events = [e for row in rows.events for e in expand_repeats(row)]
        applied = [(position, e) for position, e in enumerate(events) if until is None or e.ts <= until]
        self.after_until = len(events) - len(applied)
        self.directives = Counter(_key(e.group_id, e.ts, e.seq, e.type) for _, e in applied if e.type not in API_NAMES)
        # Each request with the position of its first input row: examples come in input order.
        self.requests: dict[str, Counter] = {}
        self.first_seen: dict[tuple, int] = {}
        for position, e in applied:
            if e.type in API_NAMES:
                key = _key(e.group_id, e.ts, e.seq, e.type)
                self.requests.setdefault(e.group_id, Counter())[key] += 1
                self.first_seen.setdefault(key, position)
        self.given_rejects = Counter((r["line"], r["raw"]) for r in rows.rejects)
        self.rows = len(events) + len(rows.rejects)
        self.rejects_read = False
        self.coordinator_rejects: Counter = Counter()
        self.terms = Counter()
        self.synthetic = Counter()  # "sent", "answered" and "refused" (sent to a broker that was down)
        self.member_id_retries = 0
        self.unexplained = self.orphans = 0
        self.input_example: tuple[int, tuple] | None = None
        self.synthetic_example = self.orphan_example = None
        self.lost_rejects: Counter = Counter()

    def add(self, tables: dict[str, pd.DataFrame], groups: GroupRange = WHOLE) -> None:
        """Match the requests of `groups`, whose rows `tables` hold (the first range's tables also hold the
        whole `rejects` table, the others none of its rows)."""
        if self.problem is not None:
            return
        if "responses" not in tables or "rejects" not in tables:
            self.problem = "cannot check: the responses or rejects table is not readable"
            return
        if not self.rejects_read and not tables["rejects"].empty:
            self._read_rejects(tables["rejects"])
        requests = Counter()
        for group, sent in self.requests.items():
            if groups.holds(group):
                requests.update(sent)
        # A synthetic request is known by its request id too: two clients of a group send requests of the same
        # time, seq and API (their counters run alike), one refused by a down broker, the other answered.
        synthetic = Counter()
        if "requests" in tables:
            sent = tables["requests"]
            for r, count in zip(sent.itertuples(index=False), repeat_counts(sent).tolist()):
                synthetic[(r.group_id, int(r.ts), int(r.seq), API_NAMES.get(r.type, r.type), r.request_id)] += count
        # A synthetic run is answered by a run of the same first request and count; any other response row
        # answers one request per repeat.
        responses = tables["responses"]
        synthetic_answered, retries, member_id_required, refused = Counter(), Counter(), Counter(), 0
        one_by_one = []  # rows that answer one request per repeat
        for r, count in zip(responses.itertuples(index=False), repeat_counts(responses).tolist()):
            key = (r.group_id, int(r.request_ts), int(r.request_seq), r.api)
            own = (*key, r.request_id)
            if synthetic[own] - synthetic_answered[own] >= count:
                synthetic_answered[own] += count
            elif is_retry(r.request_id):
                retries[key] += count
            elif r.error == NETWORK_EXCEPTION:
                refused += count
            else:
                if r.error == "MEMBER_ID_REQUIRED":
                    member_id_required[key] += count
                one_by_one.append(True)
                continue
            one_by_one.append(False)
        rows = responses.loc[np.array(one_by_one, dtype=bool)]
        times = repeat_times(rows, "request_ts")
        rows = rows.loc[times.index]
        answered = Counter(zip(rows["group_id"], times.tolist(), rows["request_seq"].astype("int64").tolist(),
                               rows["api"]))
        input_answered = requests & answered
        # The retry answers the same request as its JoinGroup, which must have been asked for it.
        retried = retries & (input_answered & member_id_required)
        orphans = answered - input_answered + (retries - retried)
        late = Counter({key: n for key, n in self.coordinator_rejects.items() if groups.holds(key[0])})
        late_matched = (requests - input_answered) & late

        final_states = _final_states(tables.get("group_states"))
        input_unanswered = requests - input_answered - late_matched
        synthetic_unanswered = synthetic - synthetic_answered
        parked_input = Counter({key: n for key, n in input_unanswered.items() if _parked(key, final_states)})
        unexplained_input = input_unanswered - parked_input
        unexplained_synthetic = Counter({key[:4]: n for key, n in synthetic_unanswered.items()
                                         if not _parked(key[:4], final_states)})

        self.terms.update({"answered": sum(input_answered.values()), "parked": sum(parked_input.values()),
                           "late": sum(late_matched.values())})
        self.synthetic.update({"sent": sum(synthetic.values()), "answered": sum(synthetic_answered.values()),
                               "refused": refused})
        self.unexplained += sum(unexplained_input.values()) + sum(unexplained_synthetic.values())
        self.orphans += sum(orphans.values())
        self.member_id_retries += sum(retried.values())
        if unexplained_input:
            first = min((self.first_seen[key], key) for key in unexplained_input)
            self.input_example = min(self.input_example or first, first)
        if unexplained_synthetic and self.synthetic_example is None:
            self.synthetic_example = next(iter(unexplained_synthetic))
        if orphans and self.orphan_example is None:
            self.orphan_example = next(iter(orphans))

    def _read_rejects(self, rejects: pd.DataFrame) -> None:
        self.rejects_read = True
        readers = Counter()
        for row in rejects.itertuples(index=False):
            event = coordinator_reject(row._asdict())
            if event is None:
                readers[(int(row.line), row.raw)] += 1
            else:
                self.coordinator_rejects[_key(event.get("group_id"), event.get("ts"), event.get("seq"),
                                              event.get("type"))] += 1
        self.lost_rejects = self.given_rejects - readers
        self.terms["rejected"] = sum((self.given_rejects & readers).values())

    def check(self) -> Check:
        if self.problem is not None:
            return Check("input", NAME, False, self.problem)
        if not self.rejects_read:
            self.lost_rejects = self.given_rejects
        directives_rejected = sum((self.directives & self.coordinator_rejects).values())
        terms = [(self.terms["answered"], "answered"),
                 (sum(self.directives.values()) - directives_rejected, "directives and faults applied"),
                 (self.terms["parked"], "parked at the end"), (self.after_until, "after --until"),
                 (self.terms["late"] + directives_rejected, "rejected by the coordinator"),
                 (self.terms["rejected"], "rejected")]
        total = self.rows
        detail = f"{total} = " + " + ".join(f"{n} {label}" for n, label in terms if n) if total else "0 input rows"
        if self.synthetic["sent"]:
            detail += f"; {self.synthetic['answered']} of {self.synthetic['sent']} synthetic requests answered"
        if self.synthetic["refused"]:
            detail += f"; {self.synthetic['refused']} sent to a broker that was down"
        if self.member_id_retries:
            detail += (f"; {self.member_id_retries} JoinGroup retries the replay sent for MEMBER_ID_REQUIRED rounds "
                       f"the capture skipped")
        problems = []
        if self.unexplained:
            group, ts, seq, api = self.input_example[1] if self.input_example else self.synthetic_example
            problems.append(f"{self.unexplained} requests neither answered nor rejected, e.g. {api} of "
                            f"{group} at {ts} (seq {seq})")
        if self.orphans:
            group, ts, seq, api = self.orphan_example
            problems.append(f"{self.orphans} responses to no input or synthetic request, e.g. {api} of "
                            f"{group} at {ts} (seq {seq})")
        if self.lost_rejects:
            (line, _), _ = next(iter(self.lost_rejects.items()))
            problems.append(f"{sum(self.lost_rejects.values())} invalid input rows missing from rejects, "
                            f"e.g. line {line}")
        if problems:
            return Check("input", NAME, False, "; ".join(problems) + f" ({detail})")
        return Check("input", NAME, True, detail)


def _key(group: str, ts: int, seq: int, event_type: str) -> tuple:
    """An input row's key, as its response names it: (group, ts, seq, api), the event type for a directive."""
    return group, ts, seq, API_NAMES.get(event_type, event_type)


def _final_states(states: pd.DataFrame | None) -> dict[str, tuple[str, int]]:
    if states is None or states.empty:
        return {}
    last = states.sort_values(["group_id", "out_seq"]).groupby("group_id").tail(1)
    return {row.group_id: (row.to_state, int(row.ts)) for row in last.itertuples(index=False)}


def _parked(key: tuple, final_states: dict[str, tuple[str, int]]) -> bool:
    group, ts, _, api = key
    state, since = final_states.get(group, (None, 0))
    return PARKED_IN.get(api) == state and ts >= since
