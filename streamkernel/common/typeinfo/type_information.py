"""TypeInformation: the base class of every type description, and its argument check."""

from __future__ import annotations

from typing import Any

from streamkernel.errors import InvalidProgramError

__all__ = ["TypeInformation"]


class TypeInformation:
    """The description of a data type: basic types, rows, tuples, arrays, lists and maps.

    Equal descriptions compare equal and hash alike. ``repr`` is PyFlink's (``String``,
    ``RowTypeInfo(word: String, count: Integer)``); :attr:`type_name` is a short SQL-like
    label (``STRING``, ``ROW<word STRING, count INT>``) for graph labels.
    """

    @property
    def type_name(self) -> str:
        """A short SQL-like label, e.g. ``'INT'`` or ``'ROW<word STRING, count INT>'``."""
        return repr(self)

    def _key(self) -> tuple:
        return ()

    def need_conversion(self) -> bool:
        """Whether values of this type are converted between Python and internal form."""
        return False

    def to_internal_type(self, obj: Any) -> Any:
        """Converts a Python object into the internal form (identity unless overridden)."""
        return obj

    def from_internal_type(self, obj: Any) -> Any:
        """Converts an internal value into a Python object (identity unless overridden)."""
        return obj

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __str__(self) -> str:
        return repr(self)


def check_type(value: Any, argument: str) -> None:
    if not isinstance(value, TypeInformation):
        hint = " (did you forget the parentheses, e.g. Types.INT()?)" if callable(value) else ""
        raise InvalidProgramError(f"{argument} must be a TypeInformation, got {value!r}{hint}")
