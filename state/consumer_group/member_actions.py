"""What the membership asks of the application side, which the state machine does not run itself: the
auto-commits and the ConsumerRebalanceListener callbacks that the Java consumer hands from its background
thread to the application thread (PartitionsRemovedEvent, PartitionsAssignedEvent) and waits for, and the
errors it hands over to be thrown from the next poll() (ErrorEvent).

Every action but `ErrorEvent` is pending until the runtime reports it done (`Membership.action_done`), with
or without an error; that is where a runtime gives callbacks and commits their durations. Kafka runs the
callbacks only inside the application's poll(), so a faithful runtime completes them at a poll. `seq`
tells actions with the same content apart.

Partitions are (topic id, partition) pairs, sorted.
"""

from __future__ import annotations

from dataclasses import dataclass

from state.consumer_group.topic_id import TopicId

Partition = tuple[TopicId, int]


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
    consumer.assignment() shows), then calls onPartitionsAssigned(`added`) if a listener is registered.
    Sent on every reconciliation, listener or not."""

    seq: int
    assigned: tuple[Partition, ...]
    added: tuple[Partition, ...]


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """An error the application's next poll() throws: the response's error name (or the exception of a
    request that failed) and its message. Needs no answer."""

    error: str
    message: str | None


Action = CommitBeforeRebalance | CommitOnClose | OnPartitionsRevoked | OnPartitionsLost | OnPartitionsAssigned
