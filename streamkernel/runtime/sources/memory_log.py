"""Reader of a MemoryLogSource: this subtask's partitions of a MemoryLog, by offset.

Partition ``p`` belongs to subtask ``p % parallelism`` (Kafka's rule of thumb, made exact):
a subtask with no partition is **idle** (``is_idle``; the SourceOperator marks its output
idle so it does not hold back watermarks) and, when the source is bounded, finishes at
once; a subtask with several partitions reads them in turn, each in offset order.
Bounded readers stop at the end offsets present when they open. Position: the next offset
per partition (and the stop offsets), so replay resumes exactly.
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

    def snapshot_position(self) -> dict:
        """``{"offsets": {partition: next offset}, "stop": {partition: stop offset} or None}``."""
        return {"offsets": dict(self._offsets or {}), "stop": dict(self._stop) if self._stop is not None else None}

    def restore_position(self, position: Any) -> None:
        """Continue at the saved offsets (a partition missing from them starts as configured)."""
        saved = {int(p): int(o) for p, o in position["offsets"].items()}
        saved_stop = {int(p): int(o) for p, o in (position.get("stop") or {}).items()}
        ends = self._log.end_offsets()
        self._offsets = {p: saved.get(p, 0 if self._earliest else ends[p]) for p in self.partitions}
        if self._bounded:
            self._stop = {p: saved_stop.get(p, ends[p]) for p in self.partitions}
