"""The source behind ``env.from_collection(...)``: a Python collection, read by one subtask.

Flink's collection source is non-parallel (parallelism 1). The elements are copied into a
list when the source is created, so a generator is consumed once and later changes to the
caller's list do not leak into the job.
"""

from __future__ import annotations

from typing import Any, Iterable

from streamkernel.datastream.connectors.base import Boundedness, Source

__all__ = ["CollectionSource"]


class CollectionSource(Source):
    """A bounded, non-parallel source of the given elements, in order."""

    default_name = "Collection Source"

    def __init__(self, elements: Iterable[Any]) -> None:
        self.elements: list[Any] = list(elements)

    def get_boundedness(self) -> Boundedness:
        """Always BOUNDED."""
        return Boundedness.BOUNDED

    @property
    def max_parallelism(self) -> int:
        """A collection is read by exactly one subtask."""
        return 1

    def __repr__(self) -> str:
        return f"CollectionSource({len(self.elements)} elements)"
