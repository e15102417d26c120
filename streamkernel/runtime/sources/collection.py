"""Reader of a CollectionSource: the elements in order, all on subtask 0.

A collection source is non-parallel; should it run with more subtasks anyway, the others
own nothing and finish at once. Position: one split, the index of the next element, on
subtask 0 (``[next]``; the other subtasks have none).
"""

from __future__ import annotations

from typing import Callable, Optional

from streamkernel.datastream.connectors.collection import CollectionSource
from streamkernel.runtime.sources.base import Batch, SourceReader

__all__ = ["CollectionReader"]


class CollectionReader(SourceReader):
    """Emits ``source.elements`` in slices of ``max_records``."""

    def __init__(self, source: CollectionSource, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        super().__init__(subtask_index, parallelism, now_ms)
        self._source = source
        self._owner = subtask_index == 0  # whether this subtask reads the collection
        self._elements = source.elements if self._owner else []
        self._next = 0

    def read_batch(self, max_records: int) -> Optional[Batch]:
        """The next slice of elements; None after the last one."""
        start = self._next
        if start >= len(self._elements):
            return None
        stop = start + max_records
        self._next = min(stop, len(self._elements))
        return self._elements[start:stop], None

    def snapshot_splits(self) -> list[int]:
        """``[index of the next element]`` on the subtask that reads the collection, else ``[]``."""
        return [self._next] if self._owner else []

    def restore_splits(self, splits: list) -> None:
        """Continue at the restored index (no split: nothing to read)."""
        self._owner = bool(splits)
        self._elements = self._source.elements if self._owner else []
        self._next = int(splits[0]) if self._owner else 0
