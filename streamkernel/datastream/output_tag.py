"""OutputTag: the name (and type) of a side output, as ``pyflink.datastream.output_tag``."""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.common.typeinfo import RowTypeInfo, TypeInformation, Types  # noqa: F401 - PyFlink's module has them
from streamkernel.errors import InvalidArgumentTypeError, InvalidProgramError

__all__ = ["OutputTag"]


class OutputTag:
    """A named, optionally typed tag for the side output of an operator.

    A process function emits to a side output by yielding ``(tag, value)``; the stream of a
    side output is ``stream.get_side_output(tag)``. Late window data goes to the tag given to
    ``side_output_late_data(tag)``.

    Example::

        >>> late = OutputTag("late-data", Types.TUPLE([Types.STRING(), Types.LONG()]))
        >>> row_tag = OutputTag("rows", [Types.STRING(), Types.LONG()])   # a list -> Types.ROW
        >>> side = OutputTag("side")                                      # untyped

    Two tags are equal when their ``tag_id`` is equal (Flink's rule); the type does not take
    part, so a second tag with the same id but another type can be detected and reported.
    """

    __slots__ = ("_tag_id", "_type_info")

    def __init__(self, tag_id: str, type_info: Optional[Any] = None) -> None:
        if not tag_id:
            raise InvalidProgramError(
                f"OutputTag tag_id cannot be None or empty string: OutputTag needs a non-empty str "
                f"name, got {tag_id!r}"
            )
        if not isinstance(tag_id, str):
            raise InvalidArgumentTypeError(
                f"OutputTag: tag_id must be a non-empty str, got {type(tag_id).__name__}: {tag_id!r}"
            )
        self._tag_id = tag_id
        self._type_info = _normalize_type_info(tag_id, type_info)

    @property
    def tag_id(self) -> str:
        """The name of the side output."""
        return self._tag_id

    @property
    def type_info(self) -> Optional[Any]:
        """The TypeInformation of the side output's elements, or None if untyped."""
        return self._type_info

    def get_java_output_tag(self) -> "OutputTag":
        """There is no JVM in streamkernel: returns this tag, so code passing it on keeps working."""
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other._tag_id == self._tag_id

    def __hash__(self) -> int:
        return hash(("OutputTag", self._tag_id))

    def __reduce__(self) -> Any:
        return (OutputTag, (self._tag_id, self._type_info))

    def __repr__(self) -> str:
        if self._type_info is None:
            return f"OutputTag('{self._tag_id}')"
        return f"OutputTag('{self._tag_id}', {self._type_info!r})"


def _normalize_type_info(tag_id: str, type_info: Any) -> Optional[Any]:
    if type_info is None:
        return None
    if isinstance(type_info, list):
        return RowTypeInfo(type_info)
    if not isinstance(type_info, TypeInformation):
        raise InvalidArgumentTypeError(
            f"OutputTag type_info must be None, list or TypeInformation: OutputTag('{tag_id}') got "
            f"{type(type_info).__name__}: {type_info!r}"
        )
    return type_info
