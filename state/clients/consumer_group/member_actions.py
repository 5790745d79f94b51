"""What the membership asks of the application side, which the state machine does not run itself: the
auto-commits and the ConsumerRebalanceListener callbacks that the Java consumer hands from its background
thread to the application thread (PartitionsRemovedEvent, PartitionsAssignedEvent) and waits for, and the
errors it hands over to be thrown from the next poll() (ErrorEvent).

Every action but `ErrorEvent` is pending until the runtime reports it done (`Membership.action_done`), with
or without an error; that is where a runtime gives callbacks and commits their durations. Kafka runs the
callbacks only inside the application's poll(), so a faithful runtime completes them at a poll. `seq`
tells actions with the same content apart. `PendingActions` keeps them and what follows each (`Then`: data,
not a closure, so that a member's state can be stored by state/runtime/encoding.py).

Partitions are (topic id, partition) pairs, sorted.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from state.consumer_group.topic_id import TopicId

Partition = tuple[TopicId, int]


@dataclass(frozen=True, slots=True)
class Then:
    """What follows an action once it is done (where Kafka chains a CompletableFuture): a step of the
    membership manager (`membership_manager.Step`) and the arguments it runs with besides (now, error)."""

    step: enum.Enum
    args: tuple = ()


@dataclass(frozen=True, slots=True)
class CommitBeforeRebalance:
    """CommitRequestManager.maybeAutoCommitSyncBeforeRebalance: commit every consumed offset, retrying
    (STALE_MEMBER_EPOCH too, with the newest epoch) until done or `deadline_ms` (now + rebalance timeout).
    Reconciliation goes on whether it succeeds or not."""

    seq: int
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class CommitOnClose:
    """The synchronous auto-commit close() makes before releasing the partitions (autoCommitOnClose)."""

    seq: int


@dataclass(frozen=True, slots=True)
class OnPartitionsRevoked:
    """ConsumerRebalanceListener.onPartitionsRevoked; a failure aborts the reconciliation (no ack)."""

    seq: int
    partitions: tuple[Partition, ...]


@dataclass(frozen=True, slots=True)
class OnPartitionsLost:
    """ConsumerRebalanceListener.onPartitionsLost; the member goes on whether it fails or not."""

    seq: int
    partitions: tuple[Partition, ...]


@dataclass(frozen=True, slots=True)
class OnPartitionsAssigned:
    """PartitionsAssignedEvent: the application thread makes `assigned` its assignment (what
    consumer.assignment() shows), then calls onPartitionsAssigned(`added`) if a listener is registered
    (`listener`), even with nothing added. Sent on every reconciliation, listener or not."""

    seq: int
    assigned: tuple[Partition, ...]
    added: tuple[Partition, ...]
    listener: bool


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """An error the application's next poll() throws: the response's error name (or the exception of a
    request that failed) and its message. Needs no answer."""

    error: str
    message: str | None


Action = CommitBeforeRebalance | CommitOnClose | OnPartitionsRevoked | OnPartitionsLost | OnPartitionsAssigned

# Not run by the application thread: may complete in any order.
COMMITS = (CommitBeforeRebalance, CommitOnClose)


class PendingActions:
    """The actions emitted and not yet taken, and those pending with what follows each (Kafka's
    CompletableFuture chains). The application thread takes its events from one queue, so a runtime must
    complete the callbacks and assignments in the order emitted; commits may complete in any order."""

    def __init__(self) -> None:
        self._outbox: list[Action | ErrorEvent] = []
        self._waiting: dict[int, tuple[Action, Then]] = {}
        self._next_seq = 0

    def take(self) -> list[Action | ErrorEvent]:
        emitted, self._outbox = self._outbox, []
        return emitted

    def pending(self) -> list[Action]:
        return [action for _, (action, _) in sorted(self._waiting.items())]

    def emit_error(self, error: str, message: str | None) -> None:
        self._outbox.append(ErrorEvent(error, message))

    def emit(self, then: Then, kind: type, *fields) -> None:
        """A new action `kind(seq, *fields)`, followed by `then` once done."""
        action = kind(self._next_seq, *fields)
        self._waiting[self._next_seq] = (action, then)
        self._next_seq += 1
        self._outbox.append(action)

    def complete(self, action: Action) -> Then:
        """The runtime ran `action`: it is no longer pending; what follows it is returned."""
        if self._waiting.get(action.seq, (None,))[0] != action:
            raise ValueError(f"{action} is not pending")
        if not isinstance(action, COMMITS):
            first = min(seq for seq, (a, _) in self._waiting.items() if not isinstance(a, COMMITS))
            if first != action.seq:
                raise ValueError(f"{action} completed before {self._waiting[first][0]}")
        return self._waiting.pop(action.seq)[1]
