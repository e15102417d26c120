"""Reader of a CollectionSource: the elements in order, all on subtask 0.

A collection source is non-parallel; should it run with more subtasks anyway, the others
own nothing and finish at once. Position: the index of the next element.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.datastream.connectors.collection import CollectionSource
from streamkernel.runtime.sources.base import Batch, SourceReader

__all__ = ["CollectionReader"]


class CollectionReader(SourceReader):
    """Emits ``source.elements`` in slices of ``max_records``."""

    def __init__(self, source: CollectionSource, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        super().__init__(subtask_index, parallelism, now_ms)
        self._elements = source.elements if subtask_index == 0 else []
        self._next = 0

    def read_batch(self, max_records: int) -> Optional[Batch]:
        """The next slice of elements; None after the last one."""
        start = self._next
        if start >= len(self._elements):
            return None
        stop = start + max_records
        self._next = min(stop, len(self._elements))
        return self._elements[start:stop], None

    def snapshot_position(self) -> int:
        """The index of the next element."""
        return self._next

    def restore_position(self, position: Any) -> None:
        """Continue at element ``position``."""
        self._next = int(position)
