"""A record as text, the way PyFlink's sinks write it: ``print()`` and ``SimpleStringEncoder``.

In PyFlink a record of a declared type reaches a Java sink as the Java object its type
maps to, and the sink writes that object's ``toString()``:

- ``Types.TUPLE([...])`` is a Java ``TupleN``: ``(hi,0,5,4)`` (no spaces, no quotes);
- ``Types.ROW([...])`` is a Java ``Row``: ``+I[hi, 4]``;
- basic types are boxed Java values: ``true``/``false``, doubles as Java prints them
  (``1.0E7``), SQL timestamps as ``2021-01-01 00:00:00.0``;
- ``Types.PICKLED_BYTE_ARRAY()`` (no declared type) is the Python object's ``str()``.

``DataStream.print()`` first maps records of two kinds to strings on the Python side
(PyFlink's ``DataStream._align_output_type``): pickled records become ``str(value)`` and
Row records ``'+I[' + ','.join(str(field) ...) + ']'``; every other type is printed by
Java. :func:`print_formatter` is that; :func:`java_formatter` is the plain Java
``toString()`` that a ``FileSink`` with ``Encoder.simple_string_encoder()`` writes.

>>> from streamkernel.common.typeinfo import Types
>>> print_formatter(Types.TUPLE([Types.STRING(), Types.INT()]))(("hi", 4))
'(hi,4)'
>>> print_formatter(Types.PICKLED_BYTE_ARRAY())(("hi", 4))
"('hi', 4)"
>>> print_formatter(Types.ROW([Types.STRING(), Types.DOUBLE()]))(("hi", 1.5))
'+I[hi,1.5]'
>>> java_formatter(Types.ROW([Types.STRING(), Types.DOUBLE()]))(("hi", 1.5))
'+I[hi, 1.5]'
"""

from __future__ import annotations

import datetime
import math
import struct
from decimal import Decimal
from typing import Any, Callable

from streamkernel.common.typeinfo.basic import (
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    PickledBytesTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
)
from streamkernel.common.typeinfo.composite import (
    MapTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    _ElementTypeInfo,
)

__all__ = ["print_formatter", "java_formatter", "java_string"]

Formatter = Callable[[Any], str]


def print_formatter(type_info: Any) -> Formatter:
    """How ``DataStream.print()`` writes a record of ``type_info`` (None: no declared type)."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return _python_string
    if isinstance(type_info, RowTypeInfo):
        return _python_row_string
    return java_formatter(type_info)


def java_formatter(type_info: Any) -> Formatter:
    """Java's ``toString()`` of a record of ``type_info`` (None/pickled: Python's ``str``)."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return _python_string
    if isinstance(type_info, BasicTypeInfo) and type_info._basic_type in _PLAIN_BASIC_TYPES:
        return _plain_string
    return lambda value: java_string(value, type_info)


def java_string(value: Any, type_info: Any) -> str:
    """Java's ``toString()`` of ``value`` held as ``type_info`` (a field inside a tuple, too)."""
    if value is None:
        return "null"
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return _python_string(value)
    if isinstance(type_info, BasicTypeInfo):
        basic = type_info._basic_type
        if basic is BasicType.BOOLEAN and isinstance(value, bool):
            return "true" if value else "false"
        if basic is BasicType.DOUBLE and isinstance(value, (int, float)):
            return _java_double(float(value))
        if basic is BasicType.FLOAT and isinstance(value, (int, float)):
            return _java_float(float(value))
        if basic is BasicType.INSTANT and hasattr(value, "to_epoch_milli"):
            return _java_instant(value.to_epoch_milli())
        return str(value)
    if isinstance(type_info, (TupleTypeInfo, RowTypeInfo)) and not _is_sequence(value):
        return str(value)  # not what the type declares: PyFlink would fail; show it as it is
    if isinstance(type_info, TupleTypeInfo):
        fields = _values(value)
        return "(" + ",".join(java_string(v, t) for v, t in zip(fields, _field_types(type_info, fields))) + ")"
    if isinstance(type_info, RowTypeInfo):
        fields = _values(value)
        return (_row_kind(value) + "["
                + ", ".join(java_string(v, t) for v, t in zip(fields, _field_types(type_info, fields))) + "]")
    if isinstance(type_info, _ElementTypeInfo):  # Java arrays (Arrays.toString) and lists
        element_type = type_info.get_element_type()
        return "[" + ", ".join(java_string(v, element_type) for v in value) + "]"
    if isinstance(type_info, MapTypeInfo) and isinstance(value, dict):
        k_type, v_type = type_info.get_key_type(), type_info.get_value_type()
        return "{" + ", ".join(f"{java_string(k, k_type)}={java_string(v, v_type)}"
                               for k, v in value.items()) + "}"
    if isinstance(type_info, TimestampTypeInfo) and isinstance(value, datetime.datetime):
        nanos = f"{value.microsecond * 1000:09d}".rstrip("0") or "0"
        return f"{value:%Y-%m-%d %H:%M:%S}.{nanos}"
    if isinstance(type_info, DateTypeInfo) and isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(type_info, TimeTypeInfo) and isinstance(value, datetime.time):
        return f"{value:%H:%M:%S}"
    return str(value)


# STRING, CHAR and the integral types: Java prints them as Python's str() does.
_PLAIN_BASIC_TYPES = frozenset({BasicType.STRING, BasicType.CHAR, BasicType.BYTE, BasicType.SHORT,
                                BasicType.INT, BasicType.LONG, BasicType.BIG_INT})


def _plain_string(value: Any) -> str:
    """Java's text of a string or an integral number: Python's ``str``; ``null`` for None."""
    return "null" if value is None else str(value)


def _python_string(value: Any) -> str:
    """PyFlink's pickled -> string mapping: ``str(value)`` (bytes pass as text)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _python_row_string(value: Any) -> str:
    """PyFlink's Row -> string mapping before printing: ``+I[a,1]`` with Python's ``str`` of each field."""
    if value is None:
        return "null"
    if not _is_sequence(value):
        return str(value)
    return _row_kind(value) + "[" + ",".join(str(v) for v in _values(value)) + "]"


def _is_sequence(value: Any) -> bool:
    return isinstance(value, (tuple, list)) or hasattr(value, "_values")


def _values(value: Any) -> tuple:
    """The fields of a Row, tuple or list."""
    inner = getattr(value, "_values", None)
    return tuple(inner) if inner is not None else tuple(value)


def _row_kind(value: Any) -> str:
    get_kind = getattr(value, "get_row_kind", None)
    return str(get_kind()) if get_kind is not None else "+I"


def _field_types(type_info: Any, fields: tuple) -> list:
    """The declared field types, padded with None (Python's str) for undeclared extra fields."""
    types = list(type_info.get_field_types())
    return types + [None] * (len(fields) - len(types))


def _java_double(d: float) -> str:
    """Java's ``Double.toString``: shortest digits; scientific (``1.0E7``) outside [1e-3, 1e7)."""
    return _java_decimal(d, repr(d))


def _java_float(f: float) -> str:
    """Java's ``Float.toString`` of ``f`` rounded to 32 bits (shortest digits of the float)."""
    try:
        packed = struct.pack("f", f)
    except OverflowError:
        return "Infinity" if f > 0 else "-Infinity"
    f32 = struct.unpack("f", packed)[0]
    if math.isnan(f32) or math.isinf(f32) or f32 == 0.0:
        return _java_decimal(f32, repr(f32))
    if f32.is_integer() and abs(f32) < 2.0 ** 63:
        return _java_decimal(f32, _jdk17_integral_float_digits(int(f32)))
    for precision in range(1, 10):
        digits = f"{f32:.{precision}g}"
        if struct.pack("f", float(digits)) == packed:
            return _java_decimal(f32, digits)
    return _java_decimal(f32, repr(f32))  # pragma: no cover - 9 digits always round-trip


# FloatingDecimal.insignificantDigitsNumber of JDK 11/17 (the JDKs Flink 2.x runs on)
_INSIGNIFICANT_DIGITS = (0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7,
                         8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 14, 14, 14,
                         15, 15, 15, 15, 16, 16, 16, 17, 17, 17, 18, 18, 18, 19)


def _jdk17_integral_float_digits(value: int) -> str:
    """The digits JDK 17's ``Float.toString`` prints for a whole float below 2^63.

    Before JDK 19 such floats take FloatingDecimal's "long" path, which keeps more digits
    than the shortest form: ``123456792f`` prints ``1.23456792E8`` (JDK 19+: ``1.2345679E8``).
    """
    magnitude = abs(value)
    bin_exp = magnitude.bit_length() - 1
    p2 = bin_exp - 24 - 1  # binExp - nSignificantBits - 1
    insignificant = _INSIGNIFICANT_DIGITS[p2] if 1 < p2 < len(_INSIGNIFICANT_DIGITS) else 0
    exponent = 0
    if insignificant:
        pow10 = 10 ** insignificant
        magnitude, residue = divmod(magnitude, pow10)
        exponent = insignificant
        if residue >= pow10 // 2:
            magnitude += 1
    return f"{'-' if value < 0 else ''}{magnitude}E{exponent}"


def _java_decimal(value: float, shortest: str) -> str:
    """Java's text of a float given its shortest decimal digits ``shortest``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digits, exponent = Decimal(shortest).as_tuple()
    assert isinstance(exponent, int)  # only NaN and infinities (returned above) have a letter here
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + exponent  # position of the decimal point in ``digits``
    minus = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{minus}0.{'0' * -point}{text}"
        whole, frac = text[:point].ljust(point, "0"), text[point:]
        return f"{minus}{whole}.{frac or '0'}"
    return f"{minus}{text[0]}.{text[1:] or '0'}E{point - 1}"


def _java_instant(epoch_milli: int) -> str:
    """Java's ``Instant.toString`` (ISO-8601 in UTC) of an instant in epoch milliseconds."""
    seconds, millis = divmod(epoch_milli, 1000)
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    fraction = f".{millis:03d}" if millis else ""
    return f"{moment:%Y-%m-%dT%H:%M:%S}{fraction}Z"
