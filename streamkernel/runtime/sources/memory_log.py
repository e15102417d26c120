"""Reader of a MemoryLogSource: this subtask's partitions of a MemoryLog, by offset.

Partition ``p`` belongs to subtask ``p % parallelism`` (Kafka's rule of thumb, made exact):
a subtask with no partition is **idle** (``is_idle``; the SourceOperator marks its output
idle so it does not hold back watermarks) and, when the source is bounded, finishes at
once; a subtask with several partitions reads them in turn, each in offset order.
Bounded readers stop at the end offsets present when they open. Position: one split per
partition, ``(partition, next offset, stop offset or None)``, so replay resumes exactly.
Restored at another parallelism, partition ``p``'s split goes to subtask
``p % parallelism`` (``owns_split``: the same rule), which continues at its offset.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.datastream.connectors.memory_log import MemoryLogSource
from streamkernel.runtime.sources.base import DEFAULT_POLL_DELAY_SECONDS, Batch, SourceReader

__all__ = ["MemoryLogReader"]

_IDLE_POLL_DELAY_SECONDS = 0.1


class MemoryLogReader(SourceReader):
    """Reads the partitions ``p`` with ``p % parallelism == subtask_index``."""

    def __init__(self, source: MemoryLogSource, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        super().__init__(subtask_index, parallelism, now_ms)
        self._log = source.log
        self._bounded = source.bounded
        self._earliest = source.start_from_earliest
        #: the partitions this subtask reads
        self.partitions: list[int] = source.partitions_of_subtask(subtask_index, parallelism)
        self.is_idle = not self.partitions
        self._offsets: Optional[dict[int, int]] = None
        self._stop: Optional[dict[int, int]] = None
        self._turn = 0

    def open(self) -> None:
        """Fix the start offsets (earliest or latest) and, when bounded, the stop offsets."""
        ends = self._log.end_offsets()
        if self._offsets is None:
            self._offsets = {p: 0 if self._earliest else ends[p] for p in self.partitions}
        if self._bounded and self._stop is None:
            self._stop = {p: ends[p] for p in self.partitions}

    def read_batch(self, max_records: int) -> Optional[Batch]:
        """Up to ``max_records`` records from this subtask's partitions, starting with a rotating one."""
        partitions = self.partitions
        if not partitions:
            return None if self._bounded else ([], None)
        offsets, stop, read = self._offsets, self._stop, self._log.read
        assert offsets is not None, "MemoryLogReader.read_batch before open()"
        values: list = []
        n = len(partitions)
        for i in range(n):
            p = partitions[(self._turn + i) % n]
            start = offsets[p]
            end = start + max_records - len(values)
            if stop is not None and end > stop[p]:
                end = stop[p]
            if end <= start:
                continue
            chunk = read(p, start, end)  # a slice: atomic under the GIL while others append
            if chunk:
                offsets[p] = start + len(chunk)
                values = chunk if not values else values + chunk
                if len(values) >= max_records:
                    break
        self._turn = (self._turn + 1) % n
        if values:
            return values, None
        if stop is not None and all(offsets[p] >= stop[p] for p in partitions):
            return None
        return [], None

    def poll_delay_seconds(self) -> float:
        """A short poll interval (longer for an idle subtask)."""
        return _IDLE_POLL_DELAY_SECONDS if self.is_idle else DEFAULT_POLL_DELAY_SECONDS

    def snapshot_splits(self) -> list[tuple[int, int, Optional[int]]]:
        """``[(partition, next offset, stop offset or None), ...]`` (none before ``open``)."""
        offsets, stop = self._offsets or {}, self._stop or {}
        return [(p, offsets[p], stop.get(p)) for p in self.partitions if p in offsets]

    def restore_splits(self, splits: list) -> None:
        """Continue each split's partition at its offset (an own partition without a split starts as configured)."""
        restored = {int(p): int(offset) for p, offset, _stop in splits}
        self.partitions = sorted(set(self.partitions) | set(restored))
        self.is_idle = not self.partitions
        ends = self._log.end_offsets()
        self._offsets = {p: restored.get(p, 0 if self._earliest else ends[p]) for p in self.partitions}
        if self._bounded:
            stops = {int(p): stop for p, _offset, stop in splits if stop is not None}
            self._stop = {p: int(stops.get(p, ends[p])) for p in self.partitions}

    def owns_split(self, index: int, split: Any) -> bool:
        """Partition ``p`` belongs to subtask ``p % parallelism``."""
        return int(split[0]) % self.parallelism == self.subtask_index
