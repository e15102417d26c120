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
Positions are per subtask: restoring is at the same parallelism (rescaling sources needs
split-level redistribution, which comes with the fault-tolerance work).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any, Callable, Optional

__all__ = ["SourceReader", "DEFAULT_POLL_DELAY_SECONDS", "system_now_ms", "split_range"]

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

    @abstractmethod
    def snapshot_position(self) -> Any:
        """Where reading stands (picklable), for a checkpoint."""

    @abstractmethod
    def restore_position(self, position: Any) -> None:
        """Continue from ``position`` (a ``snapshot_position`` result); called before ``open``."""

    def close(self) -> None:
        """Release files, sockets; idempotent."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.subtask_index + 1}/{self.parallelism})"
