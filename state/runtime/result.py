"""What one operation of a group's coordinator does, as a value: the records to append, the responses (to the
request, and to parked requests the operation releases), and the changes to the coordinator's timers and to
what the run's tables observe, in the order the operation does them. Kafka's CoordinatorResult
(coordinator-common, runtime/CoordinatorResult.java) holds the records and the response; a coordsim operation
may append more than once (a new classic group's empty GroupMetadata record, then its first generation's) and
answers parked requests with the rest of its output, so its result is the ordered list of those effects.

A manager builds the result of a request or a timer and returns it; the runtime carries it out
(`GroupRuntime.execute`): it appends the records to the group's partition and replays those of a result that
asks for it (Kafka's `replayRecords`: offsets and consumer groups, not a classic group's GroupMetadata, whose
handlers change the group in memory), writes the rows, answers, and sets the timers. No manager answers,
writes or schedules anything itself.

An append's outcome is known when the operation is decided, as Kafka's appendFuture is before its response is
sent: the failures a COORDINATOR_FAULT injected are the partition's (`outcomes`), taken in order by the
operations that append, and a failed append leaves no effect.
"""

from __future__ import annotations

# What an error raised before any handler logic leaves in each response (Kafka's defaults); an OffsetCommit's
# is repeated per partition (`CoordinatorResult.respond_error`).
GENERIC_ERROR_FIELDS = {
    "JOIN_GROUP": {"member_id": "", "generation_id": -1, "leader_id": ""},
    "SYNC_GROUP": {"assignment": []},
}


def partition_result(topic: str, partition: int, error: str, offset=None, leader_epoch=None, metadata=None) -> dict:
    """One entry of a `responses` row's `results`: a partition's answer (OffsetCommit, OffsetFetch)."""
    return {"member_id": None, "group_instance_id": None, "topic": topic, "partition": partition, "error": error,
            "offset": offset, "leader_epoch": leader_epoch, "metadata": metadata}

# Effect kinds: a tuple (kind, ...) each.
RESPOND = 0          # (RESPOND, request, error, fields): the answer to a request
APPEND = 1           # (APPEND, records): records appended to the group's partition (offset records replayed)
SCHEDULE = 2         # (SCHEDULE, key, deadline, kind, args): the coordinator timer `key` (re)scheduled
CANCEL = 3           # (CANCEL, key): the coordinator timer `key` cancelled
CANCEL_ALL = 4       # (CANCEL_ALL,): every coordinator timer of the group cancelled
CREATE_SIMPLE_GROUP = 5  # (CREATE_SIMPLE_GROUP,): a group without protocol type or members exists from now on
DELETE_GROUP = 6     # (DELETE_GROUP, cause): the group (classic or consumer) goes Dead and is deleted
DELETE_CONSUMER_GROUP = 7  # (DELETE_CONSUMER_GROUP, cause): the Empty consumer group goes, its tombstones written
DISCONNECT = 8       # (DISCONNECT, request): a parked request whose broker failed: the client's connection fails
STATE = 9            # (STATE, from, to, cause, generation_id, leader_id, member_count): a classic group's transition
MEMBER = 10          # (MEMBER, change, member_id, instance_id, client_id, client_host, cause, generation, count)
GENERATION = 11      # (GENERATION, row): a `generations` row, once the generation's outcome is known
ASSIGNMENT = 12      # (ASSIGNMENT, row): an `assignments` row
SCHEDULE_IF_ABSENT = 13  # (SCHEDULE_IF_ABSENT, key, deadline, kind, args): unless the timer `key` is pending
REPLAY_CONSUMER_GROUP = 14  # (.., records, cause, first_delta, converted): a consumer group's written records
CONSUMER_GROUP_WRITTEN = 15  # (.., metadata_refreshed): after a consumer group's records were replayed
LOG_CONSUMER_GROUP = 16  # (.., records): a consumer group's records written without replay (a downgrade)
UNLOAD_CONSUMER_GROUP = 17  # (.., cause): the consumer group goes Dead with its members
RESOLVE_REGEXES = 18  # (.., regexes): the group's regular expressions resolved in a write of their own, next
# What the group's figures observe of a consumer group's replay (state/metrics.py; a classic group's are its
# STATE effects): the rows are the replay's own, written as it goes.
REBALANCE_STARTED = 19  # (.., cause): the consumer group's epoch was bumped
IN_STATE = 20        # (.., state): the consumer group is in this state (by name) after a write


class CoordinatorResult:
    """The effects of one operation, in order (see the module's docstring); built by a manager."""

    __slots__ = ("effects", "outcomes")

    def __init__(self, outcomes: list[str]) -> None:
        self.effects: list[tuple] = []
        self.outcomes = outcomes  # the partition's injected append failures still to come (taken in order)

    def respond(self, request, error: str, **fields) -> None:
        self.effects.append((RESPOND, request, error, fields))

    def respond_error(self, request, error: str, **fields) -> None:
        """An error with Kafka's default fields for the request's API (`fields`: other columns); an
        OffsetCommit's applies to each of its partitions."""
        if request.type == "OFFSET_COMMIT":
            self.respond(request, error, results=[partition_result(p.topic, p.partition, error)
                                                  for p in request.offsets], **fields)
        else:
            self.respond(request, error, **GENERIC_ERROR_FIELDS.get(request.type, {}), **fields)

    def append(self, records: list) -> str | None:
        """Append `records` in one write: None once they are appended, else the error the write fails with
        (nothing appended)."""
        error = self.outcome()
        if error is None:
            self.written(records)
        return error

    def outcome(self) -> str | None:
        """The outcome of the operation's next write (None: it succeeds), whose records come later (`written`)."""
        return self.outcomes.pop(0) if self.outcomes else None

    def written(self, records: list) -> None:
        """Records of a write whose outcome was success (`outcome`), or of one the operation's earlier append
        holds too."""
        self.effects.append((APPEND, records))

    def schedule(self, key: tuple, deadline: int, kind: str, *args) -> None:
        self.effects.append((SCHEDULE, key, deadline, kind, args))

    def schedule_if_absent(self, key: tuple, deadline: int, kind: str, *args) -> None:
        """Kafka's scheduleIfAbsent: the timer `key` unless one is pending when the result is carried out."""
        self.effects.append((SCHEDULE_IF_ABSENT, key, deadline, kind, args))

    def cancel(self, key: tuple) -> None:
        self.effects.append((CANCEL, key))

    def cancel_all(self) -> None:
        self.effects.append((CANCEL_ALL,))

    def create_simple_group(self) -> None:
        self.effects.append((CREATE_SIMPLE_GROUP,))

    def delete_group(self, cause: str) -> None:
        self.effects.append((DELETE_GROUP, cause))

    def delete_consumer_group(self, cause: str) -> None:
        self.effects.append((DELETE_CONSUMER_GROUP, cause))

    def disconnect(self, request) -> None:
        self.effects.append((DISCONNECT, request))

    def state(self, previous, target, cause: str, generation_id: int, leader_id: str | None,
              member_count: int) -> None:
        self.effects.append((STATE, previous, target, cause, generation_id, leader_id, member_count))

    def member(self, change: str, member, cause: str, generation_id: int, member_count: int) -> None:
        self.effects.append((MEMBER, change, member.member_id, member.group_instance_id, member.client_id,
                             member.client_host, cause, generation_id, member_count))

    def generation(self, row: dict) -> None:
        self.effects.append((GENERATION, row))

    def assignment(self, row: dict) -> None:
        self.effects.append((ASSIGNMENT, row))

    def replay_consumer_group(self, records, cause: str, first_delta: int, converted: bool) -> None:
        self.effects.append((REPLAY_CONSUMER_GROUP, tuple(records), cause, first_delta, converted))

    def consumer_group_written(self, metadata_refreshed: bool) -> None:
        self.effects.append((CONSUMER_GROUP_WRITTEN, metadata_refreshed))

    def log_consumer_group(self, records) -> None:
        self.effects.append((LOG_CONSUMER_GROUP, tuple(records)))

    def unload_consumer_group(self, cause: str) -> None:
        self.effects.append((UNLOAD_CONSUMER_GROUP, cause))

    def resolve_regexes(self, regexes) -> None:
        self.effects.append((RESOLVE_REGEXES, regexes))

    def rebalance_started(self, cause: str) -> None:
        self.effects.append((REBALANCE_STARTED, cause))

    def in_state(self, state: str) -> None:
        self.effects.append((IN_STATE, state))


class Operations:
    """What a manager shares with the other managers (a classic group's, a consumer group's): the operation
    being decided, its time and its result, which its handlers fill in and `_end` hands to the runtime."""

    now: int
    op: CoordinatorResult | None

    def _begin(self, now: int, outcomes: list[str]) -> CoordinatorResult:
        self.now = now
        self.op = CoordinatorResult(outcomes)
        return self.op

    def _end(self) -> CoordinatorResult:
        result, self.op = self.op, None
        return result
