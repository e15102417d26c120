"""Row and RowKind: PyFlink's record with optional field names and a changelog kind.

A :class:`Row` is a list of values, optionally named, plus a :class:`RowKind` that says
which change of a changelog it stands for (insert, update before/after, delete). Behaviour
follows PyFlink's ``pyflink/common/types.py``: positional, attribute and key access,
``Row("name", "age")`` used as a row class, pickling that keeps names and kind, and the
reprs ``Row(name='Alice', age=11)`` and ``<Row(1, 2)>``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Dict, Iterator, List, Optional, Sequence

from streamkernel.errors import InvalidProgramError

__all__ = ["Row", "RowKind", "RowFieldError"]


class RowKind(Enum):
    """The kind of change a row describes in a changelog (Flink's RowKind).

    ``str(kind)`` (and :meth:`short_string`) is Flink's short form: ``+I``, ``-U``, ``+U``, ``-D``.
    """

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def short_string(self) -> str:
        """Flink's short form of this kind: ``+I``, ``-U``, ``+U`` or ``-D``."""
        return _SHORT[self.value]

    def __str__(self) -> str:
        return _SHORT[self.value]


_SHORT = ("+I", "-U", "+U", "-D")


def create_row(fields: Optional[Sequence[str]], values: Sequence[Any], row_kind: Optional[RowKind] = None) -> "Row":
    """Rebuilds a Row from its parts (used by pickling and by row classes)."""
    row = Row(*values)
    if fields is not None:
        row._fields = list(fields)
    if row_kind is not None:
        row._row_kind = row_kind
    return row


_create_row = create_row  # PyFlink's name (pyflink.common.types._create_row)


class RowFieldError(KeyError, ValueError):
    """``row[name]`` names no field of the row. A KeyError, and a ValueError as PyFlink raises."""


class Row:
    """A row of values, accessed by position, by attribute or by key (PyFlink's Row).

    ::

        >>> row = Row(name="Alice", age=11)
        >>> row
        Row(name='Alice', age=11)
        >>> row["name"], row.age, row[1]
        ('Alice', 11, 11)
        >>> "name" in row
        True

    Keyword arguments keep their order. ``Row(*field_names)`` makes a row *class*: calling
    it with values creates rows with those names::

        >>> Person = Row("name", "age")
        >>> Person("Alice", 11)
        Row(name='Alice', age=11)
    """

    __slots__ = ("_fields", "_values", "_row_kind", "_from_dict")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise InvalidProgramError("Can not use both args and kwargs to create Row")
        if kwargs:
            object.__setattr__(self, "_fields", list(kwargs))
            object.__setattr__(self, "_values", list(kwargs.values()))
            object.__setattr__(self, "_from_dict", True)
        else:
            object.__setattr__(self, "_fields", None)
            object.__setattr__(self, "_values", list(args))
            object.__setattr__(self, "_from_dict", False)
        object.__setattr__(self, "_row_kind", RowKind.INSERT)

    # -- PyFlink's methods ---------------------------------------------------------------------

    def as_dict(self, recursive: bool = False) -> Dict[str, Any]:
        """The row as a dict of field name to value; nested Rows too if ``recursive``.

        Raises ``TypeError`` for a row without field names.
        """
        if self._fields is None:
            raise TypeError("Cannot convert a Row without field names into a dict")
        if not recursive:
            return dict(zip(self._fields, self._values))

        def conv(obj: Any) -> Any:
            if isinstance(obj, Row):
                return obj.as_dict(True)
            if isinstance(obj, list):
                return [conv(o) for o in obj]
            if isinstance(obj, dict):
                return {k: conv(v) for k, v in obj.items()}
            return obj

        return dict(zip(self._fields, (conv(v) for v in self._values)))

    def get_row_kind(self) -> RowKind:
        """The changelog kind of this row (INSERT unless set)."""
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        """Sets the changelog kind of this row."""
        if not isinstance(row_kind, RowKind):
            raise InvalidProgramError(f"set_row_kind(row_kind) needs a RowKind, got {row_kind!r}")
        self._row_kind = row_kind

    def set_field_names(self, field_names: List[str]) -> None:
        """Names the fields of this row, in order."""
        self._fields = list(field_names)

    def get_fields_by_names(self, names: List[str]) -> List[Any]:
        """The values of the fields ``names``, in that order (all values for an unnamed row)."""
        if self._fields is None or list(names) == self._fields:
            return self._values
        missing = [name for name in names if name not in self._fields]
        if missing:
            raise InvalidProgramError(f"Field names {missing} not exist in {self._fields}.")
        return [self._values[self._fields.index(name)] for name in names]

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> "Row":
        """A row of the given kind: ``Row.of_kind(RowKind.DELETE, 1, "a")``."""
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    # -- row class ---------------------------------------------------------------------------

    def __call__(self, *args: Any) -> "Row":
        """Creates a row named by this row's values: ``Row("a", "b")(1, 2)``.

        As in PyFlink, fewer values than names make a row of the first fields:
        ``Row("a", "b")(1)`` is ``Row(a=1)``."""
        if len(args) > len(self):
            raise InvalidProgramError(
                f"Can not create Row with fields {self!r}, expected {len(self)} values but got {args!r}"
            )
        return create_row(self._values, args, self._row_kind)

    # -- access --------------------------------------------------------------------------------

    def _index(self, name: str, error: Optional[type] = None) -> int:
        error = error or RowFieldError
        if self._fields is None:
            raise error(f"Row {self!r} has no field names; access its fields by position")
        try:
            return self._fields.index(name)
        except ValueError:
            raise error(f"Row has no field {name!r}; its fields are {self._fields}") from None

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, (int, slice)):
            return self._values[item]
        return self._values[self._index(item)]

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, (int, slice)):
            self._values[key] = value
        else:
            self._values[self._index(key)] = value

    def __getattr__(self, item: str) -> Any:
        # Only called when normal lookup fails: field names, never private/dunder names
        # (copy and pickle probe those and must see AttributeError).
        if item.startswith("_"):
            raise AttributeError(item)
        index = self._index(item, AttributeError)
        if index >= len(self._values):  # a row made by a row class from fewer values
            raise AttributeError(f"Row {self!r} has no value for field {item!r}")
        return self._values[index]

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in Row.__slots__:
            raise AttributeError(
                f"Row fields can not be set as attributes ({key!r}); use row[{key!r}] = value"
            )
        object.__setattr__(self, key, value)

    def __contains__(self, item: Any) -> bool:
        if self._fields is not None:
            return item in self._fields
        return item in self._values

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    # -- value semantics -----------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row) or self._row_kind != other._row_kind:
            return False
        if self._fields is None or other._fields is None:
            return self._fields is None and other._fields is None and self._values == other._values
        # Named rows are equal when they hold the same value under each name, whatever the order.
        if sorted(self._fields) != sorted(other._fields):
            return False
        return all(v == other._values[other._fields.index(n)] for n, v in zip(self._fields, self._values))

    def __hash__(self) -> int:
        if self._fields is None:
            return hash(tuple(self._values))
        # Consistent with __eq__: values ordered by field name.
        return hash(tuple(v for _, v in sorted(zip(self._fields, self._values), key=lambda p: p[0])))

    def __reduce__(self) -> Any:
        return create_row, (self._fields, tuple(self._values), self._row_kind)

    def __repr__(self) -> str:
        if self._fields is not None:
            return "Row(%s)" % ", ".join("%s=%r" % (k, v) for k, v in zip(self._fields, self._values))
        return "<Row(%s)>" % ", ".join(repr(v) for v in self._values)
