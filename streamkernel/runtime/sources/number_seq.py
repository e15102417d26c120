"""Reader of a NumberSequenceSource: one contiguous part of ``start..end`` per subtask.

The range is cut into ``parallelism`` contiguous splits of (nearly) equal size, as Flink's
NumberSequenceSource does; subtask ``i`` reads split ``i``. Position: the next number.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
from streamkernel.runtime.sources.base import Batch, SourceReader, split_range

__all__ = ["NumberSequenceReader"]


class NumberSequenceReader(SourceReader):
    """Emits this subtask's numbers in ascending order, ``max_records`` at a time."""

    def __init__(self, source: NumberSequenceSource, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        super().__init__(subtask_index, parallelism, now_ms)
        self._next, self._stop = split_range(source.start, source.end + 1, subtask_index, parallelism)

    def read_batch(self, max_records: int) -> Optional[Batch]:
        """The next numbers; None after this subtask's last one."""
        start = self._next
        if start >= self._stop:
            return None
        stop = min(start + max_records, self._stop)
        self._next = stop
        return list(range(start, stop)), None

    def snapshot_position(self) -> int:
        """The next number to emit."""
        return self._next

    def restore_position(self, position: Any) -> None:
        """Continue at number ``position``."""
        self._next = int(position)
