"""``NumberSequenceSource``: the numbers ``start..end`` (both inclusive), split across subtasks.

As Flink's, the range is cut into splits that source subtasks read in parallel; it is
bounded and replayable (a split's position is just the next number).
"""

from __future__ import annotations

from streamkernel.common.typeinfo import TypeInformation, Types
from streamkernel.datastream.connectors.base import Boundedness, Source
from streamkernel.errors import InvalidProgramError

__all__ = ["NumberSequenceSource"]


class NumberSequenceSource(Source):
    """A bounded source of the integers from ``start`` to ``end``, inclusive.

    >>> NumberSequenceSource(1, 10).count
    10
    """

    default_name = "Sequence Source"
    emits_produced_type = True  # Python ints within the range of a Java long

    def __init__(self, start: int, end: int) -> None:
        for arg, value in (("start", start), ("end", end)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidProgramError(f"NumberSequenceSource: {arg} must be an int, got {value!r}")
        if end < start:
            raise InvalidProgramError(f"NumberSequenceSource: end ({end}) must not be below start ({start})")
        self.start = start
        self.end = end

    @property
    def count(self) -> int:
        """How many numbers the source emits."""
        return self.end - self.start + 1

    def get_produced_type(self) -> TypeInformation:
        """``Types.LONG()``, as Flink's NumberSequenceSource (``ds.get_type()`` says ``Long``)."""
        return Types.LONG()

    def get_boundedness(self) -> Boundedness:
        """Always BOUNDED."""
        return Boundedness.BOUNDED

    def get_java_function(self) -> "NumberSequenceSource":
        """PyFlink compatibility: there is no Java object; the source itself."""
        return self

    def __repr__(self) -> str:
        return f"NumberSequenceSource({self.start}, {self.end})"
