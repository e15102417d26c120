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

    def __init__(self, elements: Iterable[Any], produced_type: Any = None) -> None:
        self.elements: list[Any] = list(elements)
        #: set by ``from_collection`` when every element already is a value of ``type_info`` as
        #: PyFlink gives it (checked once, when the source is made): no conversion in the job
        self._produced_type = produced_type
        self.emits_produced_type = produced_type is not None

    def get_produced_type(self) -> Any:
        """The type every element was checked to be (None: not checked)."""
        return self._produced_type

    def get_boundedness(self) -> Boundedness:
        """Always BOUNDED."""
        return Boundedness.BOUNDED

    @property
    def max_parallelism(self) -> int:
        """A collection is read by exactly one subtask."""
        return 1

    def __repr__(self) -> str:
        return f"CollectionSource({len(self.elements)} elements)"
