"""How ``Types.*`` map to Apache Arrow types, the column types of Parquet files.

Row fields are written as, and read from, these column types (Flink's Parquet format
maps its SQL types the same way)::

    Types.STRING(), CHAR()                 string (large/view strings read too)
    BOOLEAN()                              bool
    BYTE(), SHORT(), INT(), LONG()         int8, int16, int32, int64 (any integer column reads)
    FLOAT(), DOUBLE()                      float32, float64 (either reads into either)
    BIG_DEC()                              decimal128(38, 18)  (any decimal column reads)
    BIG_INT()                              decimal128(38, 0)   (decimal or integer columns read)
    SQL_DATE()                             date32
    SQL_TIME()                             time64[us]
    SQL_TIMESTAMP()                        timestamp[us] (a wall-clock time, Spark's TIMESTAMP_NTZ);
                                           timestamp[us, UTC] with utc_timestamp=True
    INSTANT()                              timestamp[us, UTC]
    PRIMITIVE_ARRAY(BYTE())                binary
    LIST(t), BASIC_ARRAY(t), OBJECT_ARRAY(t), PRIMITIVE_ARRAY(t)   list<t>
    MAP(k, v)                              map<k, v>
    ROW_NAMED(names, types), ROW(types)    struct<...>
    TUPLE(types)                           struct<f0, f1, ...>

``PICKLED_BYTE_ARRAY`` (any Python object) has no column type: declare the field's type.
This module only describes types; pyarrow is imported inside the functions that need it,
so importing it (or ``streamkernel.datastream``) never loads pyarrow.
"""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
    Types,
)
from streamkernel.errors import InvalidProgramError

__all__ = ["kind_of", "check_supported", "to_arrow_type", "to_arrow_schema", "from_arrow_type", "compatible",
           "element_types"]

_BASIC_KINDS = {
    BasicType.STRING: "string", BasicType.CHAR: "string", BasicType.BOOLEAN: "bool",
    BasicType.BYTE: "int", BasicType.SHORT: "int", BasicType.INT: "int", BasicType.LONG: "int",
    BasicType.FLOAT: "float", BasicType.DOUBLE: "float",
    BasicType.BIG_DEC: "decimal", BasicType.BIG_INT: "bigint", BasicType.INSTANT: "instant",
}
_LISTS = (ListTypeInfo, BasicArrayTypeInfo, ObjectArrayTypeInfo, PrimitiveArrayTypeInfo)


def kind_of(type_info: TypeInformation) -> Optional[str]:
    """The column family of a type: ``"int"``, ``"string"``, ``"list"``, ``"row"`` ... (None: no column type)."""
    if isinstance(type_info, BasicTypeInfo):  # InstantTypeInfo included
        return _BASIC_KINDS.get(type_info._basic_type)
    if isinstance(type_info, PrimitiveArrayTypeInfo) and type_info.get_element_type() == Types.BYTE():
        return "binary"
    simple = {DateTypeInfo: "date", TimeTypeInfo: "time", TimestampTypeInfo: "timestamp", MapTypeInfo: "map",
              RowTypeInfo: "row", TupleTypeInfo: "tuple"}
    for cls, kind in simple.items():
        if isinstance(type_info, cls):
            return kind
    if isinstance(type_info, _LISTS):
        return "list"
    return None


def element_types(type_info: TypeInformation) -> list[TypeInformation]:
    """The nested types of a list, map, row or tuple type (empty for the others)."""
    kind = kind_of(type_info)
    if kind == "list":
        return [type_info.get_element_type()]  # type: ignore[attr-defined]
    if kind == "map":
        return [type_info.get_key_type(), type_info.get_value_type()]  # type: ignore[attr-defined]
    if kind in ("row", "tuple"):
        return list(type_info.get_field_types())  # type: ignore[attr-defined]
    return []


def check_supported(type_info: Any, column: str) -> None:
    """Raise if ``type_info`` (of column ``column``) has no Parquet column type."""
    if not isinstance(type_info, TypeInformation):
        raise InvalidProgramError(f"column {column!r}: expected a TypeInformation (e.g. Types.LONG()), "
                                  f"got {type_info!r}")
    if kind_of(type_info) is None:
        raise InvalidProgramError(
            f"column {column!r} has type {type_info!r}, which has no Parquet column type; declare the field with "
            f"Types.STRING(), LONG(), DOUBLE(), BOOLEAN(), BIG_DEC(), SQL_DATE(), SQL_TIMESTAMP(), LIST(...), "
            f"MAP(...), ROW_NAMED(...) and the like")
    names = type_info.get_field_names() if isinstance(type_info, RowTypeInfo) else None
    for i, inner in enumerate(element_types(type_info)):
        check_supported(inner, f"{column}.{names[i] if names else i}")


def _field_names(type_info: TypeInformation) -> list[str]:
    if isinstance(type_info, RowTypeInfo):
        return type_info.get_field_names()
    return [f"f{i}" for i in range(len(type_info.get_field_types()))]  # type: ignore[attr-defined]


def to_arrow_type(type_info: TypeInformation, utc_timestamp: bool = False) -> Any:
    """The Arrow type a field of ``type_info`` is written as (see the module table)."""
    import pyarrow as pa

    kind = kind_of(type_info)
    if kind in ("string", "bool", "float", "int"):
        basic = type_info._basic_type  # type: ignore[attr-defined]
        return {BasicType.STRING: pa.string(), BasicType.CHAR: pa.string(), BasicType.BOOLEAN: pa.bool_(),
                BasicType.BYTE: pa.int8(), BasicType.SHORT: pa.int16(), BasicType.INT: pa.int32(),
                BasicType.LONG: pa.int64(), BasicType.FLOAT: pa.float32(), BasicType.DOUBLE: pa.float64()}[basic]
    simple = {"decimal": lambda: pa.decimal128(38, 18), "bigint": lambda: pa.decimal128(38, 0),
              "instant": lambda: pa.timestamp("us", tz="UTC"), "date": pa.date32, "time": lambda: pa.time64("us"),
              "timestamp": lambda: pa.timestamp("us", tz="UTC" if utc_timestamp else None), "binary": pa.binary}
    if kind in simple:
        return simple[kind]()
    inner = [to_arrow_type(t, utc_timestamp) for t in element_types(type_info)]
    if kind == "list":
        return pa.list_(inner[0])
    if kind == "map":
        return pa.map_(inner[0], inner[1])
    if kind in ("row", "tuple"):
        return pa.struct([pa.field(name, t) for name, t in zip(_field_names(type_info), inner)])
    check_supported(type_info, "?")
    raise AssertionError("unreachable")


def to_arrow_schema(row_type: RowTypeInfo, utc_timestamp: bool = False) -> Any:
    """The Arrow schema of Parquet files holding rows of ``row_type`` (one column per field)."""
    import pyarrow as pa

    return pa.schema([pa.field(name, to_arrow_type(t, utc_timestamp))
                      for name, t in zip(row_type.get_field_names(), row_type.get_field_types())])


def from_arrow_type(arrow_type: Any, column: str, where: str) -> TypeInformation:
    """The ``Types.*`` of an Arrow column type (raise naming ``column`` and ``where`` if there is none)."""
    import pyarrow.types as at

    t = arrow_type
    if at.is_dictionary(t):
        return from_arrow_type(t.value_type, column, where)
    for check, made in ((at.is_int8, Types.BYTE), (at.is_int16, Types.SHORT), (at.is_uint8, Types.SHORT),
                        (at.is_int32, Types.INT), (at.is_uint16, Types.INT), (at.is_int64, Types.LONG),
                        (at.is_uint32, Types.LONG), (at.is_uint64, Types.LONG), (at.is_float32, Types.FLOAT),
                        (at.is_float64, Types.DOUBLE), (at.is_boolean, Types.BOOLEAN), (at.is_date, Types.SQL_DATE),
                        (at.is_time, Types.SQL_TIME), (at.is_timestamp, Types.SQL_TIMESTAMP),
                        (at.is_decimal, Types.BIG_DEC)):
        if check(t):
            return made()
    if at.is_string(t) or at.is_large_string(t) or getattr(at, "is_string_view", lambda _: False)(t):
        return Types.STRING()
    if (at.is_binary(t) or at.is_large_binary(t) or at.is_fixed_size_binary(t)
            or getattr(at, "is_binary_view", lambda _: False)(t)):
        return Types.PRIMITIVE_ARRAY(Types.BYTE())
    if at.is_map(t):
        return Types.MAP(from_arrow_type(t.key_type, f"{column}.key", where),
                         from_arrow_type(t.item_type, f"{column}.value", where))
    if at.is_list(t) or at.is_large_list(t) or at.is_fixed_size_list(t):
        return Types.LIST(from_arrow_type(t.value_type, f"{column}.element", where))
    if at.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return Types.ROW_NAMED([f.name for f in fields],
                               [from_arrow_type(f.type, f"{column}.{f.name}", where) for f in fields])
    raise InvalidProgramError(
        f"{where}: column {column!r} has type {arrow_type}, which streamkernel cannot read into Types.* "
        f"(supported: integers, floating point, decimal, bool, string, binary, date, time, timestamp, list, "
        f"map, struct); leave the column out of the row type")


def compatible(declared: TypeInformation, arrow_type: Any) -> bool:
    """Whether a column of ``arrow_type`` can be read into a field declared as ``declared``."""
    import pyarrow.types as at

    if at.is_dictionary(arrow_type):
        return compatible(declared, arrow_type.value_type)
    kind = kind_of(declared)
    try:
        found = kind_of(from_arrow_type(arrow_type, "", ""))
    except InvalidProgramError:
        return False
    if kind == "bigint":
        return found in ("decimal", "int")
    if kind == "instant":
        return found == "timestamp"
    if kind in ("list", "map"):
        if found != kind:
            return False
        inner = ([arrow_type.value_type] if kind == "list" else [arrow_type.key_type, arrow_type.item_type])
        return all(compatible(d, a) for d, a in zip(element_types(declared), inner))
    if kind in ("row", "tuple"):
        if found != "row":
            return False
        fields = {arrow_type.field(i).name: arrow_type.field(i).type for i in range(arrow_type.num_fields)}
        if kind == "tuple":
            return len(fields) == len(element_types(declared)) and all(
                compatible(d, a) for d, a in zip(element_types(declared), fields.values()))
        return all(name in fields and compatible(d, fields[name])
                   for name, d in zip(declared.get_field_names(), element_types(declared)))  # type: ignore
    return kind == found
