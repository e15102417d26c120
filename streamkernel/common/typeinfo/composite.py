"""Composite types: arrays, lists, maps, rows and tuples, built from other types."""

from __future__ import annotations

from typing import Any, List, Optional

from streamkernel.common.typeinfo.type_information import TypeInformation, check_type
from streamkernel.errors import InvalidProgramError

__all__ = [
    "PrimitiveArrayTypeInfo",
    "BasicArrayTypeInfo",
    "ObjectArrayTypeInfo",
    "ListTypeInfo",
    "MapTypeInfo",
    "RowTypeInfo",
    "TupleTypeInfo",
]


class _ElementTypeInfo(TypeInformation):
    """A type made of one element type (arrays and lists)."""

    _label = ""
    _java_name = ""

    def __init__(self, element_type: TypeInformation) -> None:
        check_type(element_type, f"{self._label}(element_type)")
        self._element_type = element_type

    def get_element_type(self) -> TypeInformation:
        """The type of the elements."""
        return self._element_type

    def _key(self) -> tuple:
        return (self._element_type,)

    @property
    def type_name(self) -> str:
        return f"{self._label}<{self._element_type.type_name}>"

    def __repr__(self) -> str:
        return f"{self._java_name}<{self._element_type!r}>"


class PrimitiveArrayTypeInfo(_ElementTypeInfo):
    """Type information for arrays of primitive types (int, long, double, ...)."""

    _label, _java_name = "PRIMITIVE_ARRAY", "PrimitiveArrayTypeInfo"


class BasicArrayTypeInfo(_ElementTypeInfo):
    """Type information for arrays of boxed primitive types (Integer, Long, Double, ...)."""

    _label, _java_name = "BASIC_ARRAY", "BasicArrayTypeInfo"


class ObjectArrayTypeInfo(_ElementTypeInfo):
    """Type information for arrays of non-primitive types."""

    _label, _java_name = "OBJECT_ARRAY", "ObjectArrayTypeInfo"


class ListTypeInfo(_ElementTypeInfo):
    """Type information for lists."""

    _label, _java_name = "LIST", "ListTypeInfo"

    @property
    def elem_type(self) -> TypeInformation:
        """The type of the list's elements (PyFlink's attribute name)."""
        return self._element_type


class _FieldsTypeInfo(TypeInformation):
    """A type made of a fixed list of field types (rows and tuples)."""

    def __init__(self, field_types: List[TypeInformation], argument: str) -> None:
        if not isinstance(field_types, (list, tuple)):
            raise InvalidProgramError(f"{argument} must be a list of TypeInformation, got {field_types!r}")
        for i, field_type in enumerate(field_types):
            check_type(field_type, f"{argument}[{i}]")
        self._field_types = list(field_types)
        self._need_conversion = [f.need_conversion() for f in self._field_types]
        self._need_any = any(self._need_conversion)

    def get_field_types(self) -> List[TypeInformation]:
        """The types of the fields, in order."""
        return self._field_types

    def need_conversion(self) -> bool:
        return True

    def _convert(self, values: Any, internal: bool) -> tuple:
        if not self._need_any:
            return tuple(values)
        return tuple(
            (f.to_internal_type(v) if internal else f.from_internal_type(v)) if c else v
            for f, v, c in zip(self._field_types, values, self._need_conversion)
        )


class RowTypeInfo(_FieldsTypeInfo):
    """Type information for :class:`~streamkernel.common.types.Row` with field types and names.

    Fields without explicit names are named ``f0``, ``f1``, ... as in Flink. The internal form
    of a row is the tuple ``(row_kind_value, *field_values)``.
    """

    def __init__(self, field_types: List[TypeInformation], field_names: Optional[List[str]] = None) -> None:
        super().__init__(field_types, "field_types")
        if field_names is not None:
            if not isinstance(field_names, (list, tuple)) or not all(isinstance(n, str) for n in field_names):
                raise InvalidProgramError(f"field_names must be a list of str, got {field_names!r}")
            if len(field_names) != len(self._field_types):
                raise InvalidProgramError(
                    f"Row type has {len(self._field_types)} field types but {len(field_names)} field "
                    f"names {list(field_names)}"
                )
            if len(set(field_names)) != len(field_names):
                raise InvalidProgramError(f"Row field names must be unique, got {list(field_names)}")
        self._explicit_names = field_names is not None
        self._field_names = list(field_names) if field_names is not None else [
            f"f{i}" for i in range(len(self._field_types))
        ]

    def get_field_names(self) -> List[str]:
        """The names of the fields, in order (``f0``, ``f1``, ... when not given)."""
        return self._field_names

    def get_field_index(self, field_name: str) -> int:
        """The position of ``field_name``, or -1 if there is no such field."""
        try:
            return self._field_names.index(field_name)
        except ValueError:
            return -1

    def _key(self) -> tuple:
        return (tuple(self._field_types), tuple(self._field_names))

    @property
    def type_name(self) -> str:
        fields = ", ".join(f"{n} {t.type_name}" for n, t in zip(self._field_names, self._field_types))
        return f"ROW<{fields}>"

    def to_internal_type(self, obj: Any) -> Any:
        """``(row_kind_value, *values)`` from a Row, dict, tuple/list or object with attributes."""
        if obj is None:
            return None
        from streamkernel.common.types import Row, RowKind

        if isinstance(obj, Row):
            by_name = obj._fields is not None and self._explicit_names
            values = [obj[n] for n in self._field_names] if by_name else list(obj)
            return (obj.get_row_kind().value,) + self._convert(values, True)
        if isinstance(obj, dict):
            values = [obj.get(n) for n in self._field_names]
        elif isinstance(obj, (tuple, list)):
            values = list(obj)
        elif hasattr(obj, "__dict__"):
            values = [obj.__dict__.get(n) for n in self._field_names]
        else:
            raise InvalidProgramError(f"Unexpected value {obj!r} for {self!r}")
        return (RowKind.INSERT.value,) + self._convert(values, True)

    def from_internal_type(self, obj: Any) -> Any:
        """A named :class:`Row` (with its row kind) from ``(row_kind_value, *values)``."""
        if obj is None:
            return None
        from streamkernel.common.types import Row, RowKind, create_row

        if isinstance(obj, Row):
            return obj
        kind, *values = obj
        return create_row(self._field_names, self._convert(values, False), RowKind(kind))

    def __repr__(self) -> str:
        if self._explicit_names:
            inner = ", ".join(f"{n}: {t!r}" for n, t in zip(self._field_names, self._field_types))
        else:
            inner = ", ".join(repr(t) for t in self._field_types)
        return f"RowTypeInfo({inner})"


class TupleTypeInfo(_FieldsTypeInfo):
    """Type information for tuples of the given field types."""

    def __init__(self, field_types: List[TypeInformation]) -> None:
        super().__init__(field_types, "field_types")

    def _key(self) -> tuple:
        return tuple(self._field_types)

    @property
    def type_name(self) -> str:
        return "TUPLE<%s>" % ", ".join(t.type_name for t in self._field_types)

    def to_internal_type(self, obj: Any) -> Any:
        return None if obj is None else self._convert(obj, True)

    def from_internal_type(self, obj: Any) -> Any:
        return None if obj is None else self._convert(obj, False)

    def __repr__(self) -> str:
        return "TupleTypeInfo(%s)" % ", ".join(repr(t) for t in self._field_types)


class MapTypeInfo(TypeInformation):
    """Type information for dicts with the given key and value types."""

    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation) -> None:
        check_type(key_type_info, "MAP(key_type_info)")
        check_type(value_type_info, "MAP(value_type_info)")
        self._key_type_info = key_type_info
        self._value_type_info = value_type_info

    def get_key_type(self) -> TypeInformation:
        """The type of the keys."""
        return self._key_type_info

    def get_value_type(self) -> TypeInformation:
        """The type of the values."""
        return self._value_type_info

    def _key(self) -> tuple:
        return (self._key_type_info, self._value_type_info)

    @property
    def type_name(self) -> str:
        return f"MAP<{self._key_type_info.type_name}, {self._value_type_info.type_name}>"

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self._key_type_info!r}, {self._value_type_info!r}>"
