"""Type information: PyFlink's ``Types.*`` descriptions of record types.

In PyFlink a ``TypeInformation`` tells the JVM how to serialize records. streamkernel runs
Python end to end, so types are *accepted, never required*: records are never checked
against them. They are carried for display (``type_name``, e.g. ``ROW<word STRING, count
INT>``, labels graph edges), for field names (``RowTypeInfo``), for the conversions
PyFlink defines (``to_internal_type``/``from_internal_type``: ``from_collection`` gives its
elements as PyFlink's functions receive them, e.g. Rows with field names), and for the
text PyFlink's sinks write for a record (``text``: ``(a,1)`` for a tuple type, ``+I[a,1]``
for a row type, ``str(record)`` without a declared type).
"""

from __future__ import annotations

from streamkernel.common.typeinfo.basic import (
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    InstantTypeInfo,
    PickledBytesTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
)
from streamkernel.common.typeinfo.composite import (
    BasicArrayTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
)
from streamkernel.common.typeinfo.type_information import TypeInformation
from streamkernel.common.typeinfo.types import Types

__all__ = [
    "TypeInformation",
    "Types",
    "BasicType",
    "BasicTypeInfo",
    "InstantTypeInfo",
    "PrimitiveArrayTypeInfo",
    "BasicArrayTypeInfo",
    "ObjectArrayTypeInfo",
    "PickledBytesTypeInfo",
    "RowTypeInfo",
    "TupleTypeInfo",
    "DateTypeInfo",
    "TimeTypeInfo",
    "TimestampTypeInfo",
    "ListTypeInfo",
    "MapTypeInfo",
]
