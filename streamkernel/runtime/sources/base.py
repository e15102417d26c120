"""The SourceReader contract: how one source subtask reads its share of a Source.

A :class:`~streamkernel.datastream.connectors.base.Source` is plan data; at runtime each
source subtask gets a **reader** (Flink's ``SourceReader``) for the splits it owns. Split
assignment is static and computed by the reader itself from ``(subtask_index,
parallelism)`` (Flink's split enumerator runs on the JobManager; the built-in sources here
need no coordination, so each reader derives its own share, deterministically).

The SourceOperator drives a reader, in the task's thread:

* ``restore_position(pos)`` (only when restoring; **before** ``open``), then ``open()``;
* ``read_batch(max_records)`` repeatedly: returns ``(values, timestamps)`` with at most
  ``max_records`` records (``timestamps`` None: the built-in sources carry none), an empty
  ``values`` list when nothing is available *right now* (unbounded sources; the task then
  waits ``poll_delay_seconds()`` without blocking checkpoints), or None when the reader is
  finished for good;
* ``snapshot_position()`` between batches (checkpoints): plain picklable data that
  ``restore_position`` accepts, so reading resumes exactly after the last emitted record;
* ``close()`` at the end, also after a failure.

Readers never sleep: a rate limit or a discovery interval is expressed through
``poll_delay_seconds()`` so the task stays responsive to checkpoints and cancellation.

**Split-level positions (rescaling).** A reader whose position is a list of independent
splits (Flink's ``SourceReader.snapshotState`` returns ``List<SplitT>``) implements
``snapshot_splits()`` -> a list of split states and ``restore_splits(splits)``; its
``snapshot_position`` is then that list. Finished splits stay in the list (a split read to
its end is a position too, so a source that read everything never looks stateless). On a
restore at another parallelism the SourceOperator concatenates the splits of every old
subtask (in old subtask order), lets the reader cut them into more pieces where it can
(``rebalance_splits``: index ranges are halved so that a larger parallelism has work for
every subtask) and gives each new subtask the splits it ``owns_split(index, split)``
(default: ``index % parallelism == subtask_index``, see :func:`owned_splits`), so every
split is read by exactly one new subtask. Readers keeping
one opaque position per subtask (the socket, the testing kit's ScriptedSource, a source
of your own) restore only at the same parallelism.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any, Callable, Optional

__all__ = ["SourceReader", "DEFAULT_POLL_DELAY_SECONDS", "system_now_ms", "split_range", "owned_splits"]

#: how long the task waits before polling again an unbounded reader that had nothing
DEFAULT_POLL_DELAY_SECONDS = 0.01

Batch = tuple[list, Optional[list]]


def system_now_ms() -> int:
    """Wall-clock milliseconds (the default clock of readers)."""
    return time.time_ns() // 1_000_000


def split_range(start: int, end_exclusive: int, subtask_index: int, parallelism: int) -> tuple[int, int]:
    """The contiguous part ``[lo, hi)`` of ``[start, end_exclusive)`` owned by one subtask.

    The range is cut into ``parallelism`` pieces whose sizes differ by at most one (the
    first ``total % parallelism`` pieces are one longer), as Flink's NumberSequenceSource
    splits its range.

        >>> [split_range(0, 10, i, 3) for i in range(3)]
        [(0, 4), (4, 7), (7, 10)]
    """
    total = end_exclusive - start
    base, extra = divmod(total, parallelism)
    lo = start + subtask_index * base + min(subtask_index, extra)
    hi = lo + base + (1 if subtask_index < extra else 0)
    return lo, hi


def owned_splits(splits: list, subtask_index: int, parallelism: int) -> list:
    """The splits new subtask ``subtask_index`` of ``parallelism`` takes: those whose index
    in ``splits`` (every old subtask's splits, concatenated in old subtask order) is
    ``subtask_index`` modulo ``parallelism``: each split goes to exactly one subtask.

        >>> [owned_splits(["a", "b", "c"], i, 2) for i in range(2)]
        [['a', 'c'], ['b']]
    """
    return [split for index, split in enumerate(splits) if index % parallelism == subtask_index]


class SourceReader(ABC):
    """Reads the splits of one source subtask in batches (Flink's ``SourceReader``)."""

    #: True while the reader has no split assigned (its output should be marked idle)
    is_idle: bool = False

    def __init__(self, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        self.subtask_index = subtask_index
        self.parallelism = parallelism
        self.now_ms: Callable[[], int] = now_ms or system_now_ms

    def open(self) -> None:
        """Start reading (connect, open files); after a restore, from the restored position."""

    @abstractmethod
    def read_batch(self, max_records: int) -> Optional[Batch]:
        """Up to ``max_records`` records as ``(values, timestamps)``; ``([], None)`` when
        nothing is available now; None when finished for good."""

    def poll_delay_seconds(self) -> float:
        """How long to wait before the next ``read_batch`` after one returned no records."""
        return DEFAULT_POLL_DELAY_SECONDS

    def snapshot_position(self) -> Any:
        """Where reading stands (picklable), for a checkpoint; by default the split list."""
        splits = self.snapshot_splits()
        if splits is None:
            raise NotImplementedError(f"{type(self).__name__} must define snapshot_position() or snapshot_splits()")
        return splits

    def restore_position(self, position: Any) -> None:
        """Continue from ``position`` (a ``snapshot_position`` result); called before ``open``."""
        if not self.supports_splits:
            raise NotImplementedError(f"{type(self).__name__} must define restore_position() or restore_splits()")
        self.restore_splits(list(position))

    # ------------------------------------------------------ split-level positions
    @property
    def supports_splits(self) -> bool:
        """True if the position is a list of splits (the reader can be restored at another parallelism)."""
        return type(self).snapshot_splits is not SourceReader.snapshot_splits

    def snapshot_splits(self) -> Optional[list]:
        """The state of every split this reader owns (finished ones included), or None when
        the reader keeps one position per subtask (not redistributable)."""
        return None

    def restore_splits(self, splits: list) -> None:
        """Read exactly ``splits`` (states from ``snapshot_splits``), instead of this subtask's
        fresh assignment; called before ``open``. Empty: this subtask has nothing to read."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore splits")

    def rebalance_splits(self, splits: list) -> list:
        """Every old subtask's splits, possibly cut into more pieces so that each of the
        ``parallelism`` new subtasks gets work (called with the same list in every new
        subtask: must be deterministic). By default unchanged."""
        return splits

    def owns_split(self, index: int, split: Any) -> bool:
        """Whether this subtask takes ``split``, the ``index``-th of all old subtasks' splits,
        when restoring at another parallelism (:func:`owned_splits`' rule by default)."""
        return index % self.parallelism == self.subtask_index

    def close(self) -> None:
        """Release files, sockets; idempotent."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.subtask_index + 1}/{self.parallelism})"
