"""What ``execute_and_collect`` hands out for a record of a declared type, as PyFlink's collect.

PyFlink collects through Java objects pickled back to Python, which changes two types beyond
what the typed boundary (:mod:`~streamkernel.common.typeinfo.conversion`) already did:
a ``Types.FLOAT()`` value arrives as the double of its Java text (``Float.toString``), so
``1/3`` is collected as ``0.33333334``, not ``0.3333333432674408``, inside rows, tuples,
arrays, lists and maps too; a ``SQL_TIME`` loses its milliseconds
(``java.sql.Time.toLocalTime``). Both were seen under PyFlink 2.3.

>>> from streamkernel.common.typeinfo import Types
>>> collect_converter(Types.FLOAT())(0.3333333432674408)
0.33333334
>>> collect_converter(Types.STRING()) is None
True
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.common.typeinfo.basic import BasicType, BasicTypeInfo, TimeTypeInfo
from streamkernel.common.typeinfo.composite import MapTypeInfo, RowTypeInfo, TupleTypeInfo, _ElementTypeInfo

__all__ = ["collect_converter"]


def collect_converter(type_info: Any) -> Optional[Callable[[Any], Any]]:
    """How ``execute_and_collect`` hands out a record of ``type_info`` (None: as it is)."""
    if isinstance(type_info, BasicTypeInfo) and type_info._basic_type is BasicType.FLOAT:
        from streamkernel.common.typeinfo.text import java_string

        return lambda v: v if v is None else float(java_string(v, type_info))
    if isinstance(type_info, TimeTypeInfo):
        return lambda v: v if v is None else v.replace(microsecond=0)
    if isinstance(type_info, _ElementTypeInfo):
        element = collect_converter(type_info.get_element_type())
        if element is None:
            return None
        return lambda v: v if v is None else [None if e is None else element(e) for e in v]
    if isinstance(type_info, MapTypeInfo):
        key, item = collect_converter(type_info.get_key_type()), collect_converter(type_info.get_value_type())
        if key is None and item is None:
            return None
        key_of = key or (lambda k: k)
        item_of = item or (lambda x: x)
        return lambda v: v if v is None else {key_of(k): None if x is None else item_of(x) for k, x in v.items()}
    if isinstance(type_info, (RowTypeInfo, TupleTypeInfo)):
        return _collect_fields(type_info)
    return None


def _collect_fields(type_info: Any) -> Optional[Callable[[Any], Any]]:
    fields = [collect_converter(t) for t in type_info.get_field_types()]
    if not any(fields):
        return None
    plan = [(i, f) for i, f in enumerate(fields) if f is not None]
    is_tuple = isinstance(type_info, TupleTypeInfo)

    def convert(record: Any) -> Any:
        if record is None:
            return None
        values = list(record)
        for i, field in plan:
            if i < len(values) and values[i] is not None:
                values[i] = field(values[i])
        if is_tuple:
            return tuple(values)
        from streamkernel.common.types import create_row

        return create_row(record._fields, values, record.get_row_kind())
    return convert
