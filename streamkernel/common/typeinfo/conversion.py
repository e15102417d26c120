"""Typed boundaries: a batch of records converted as PyFlink converts values of a declared type.

In PyFlink an operator with an ``output_type`` (and a source with a ``type_info``) encodes
each record with the type's coder and the next operator decodes it, so what the next
function, a sink or ``execute_and_collect`` sees is the value *after* that round trip:

- ``Types.FLOAT()`` is 32 bits: ``1/3`` comes back as ``0.3333333432674408``;
- ``DOUBLE`` turns ints into floats (``2`` -> ``2.0``); ``BOOLEAN`` gives bools; ``INT``,
  ``BYTE``, ``SHORT``, ``LONG`` give ints, ``int()`` of a float or bool (``1.5`` -> ``1``,
  as Cython converts), and fail out of range; ``BIG_INT`` is PyFlink's 64-bit ``LONG``
  coder; ``STRING`` needs a str; ``CHAR`` and ``INSTANT`` pass unchanged;
- ``SQL_DATE`` keeps the date; ``SQL_TIME`` and ``SQL_TIMESTAMP`` keep milliseconds
  (``12:34:56.789123`` -> ``12:34:56.789``) and drop a time zone, as PyFlink's coders;
- arrays and lists convert their elements, maps their keys and values, rows and tuples their
  fields (a Row gets the type's field names); None may be a Row field, a map value or an
  element of a list or basic array, never a record, a tuple field or a primitive array's element.

:func:`batch_converter` gives the conversion of a whole batch (``list`` -> ``list``), or None
when the type needs none (``PICKLED_BYTE_ARRAY``, no declared type): the untyped path costs
nothing. Numbers convert in one C call per batch (an ``array`` round trip), rows and tuples
column by column. A value the type cannot hold raises :class:`TypeMismatch`;
:func:`first_mismatch` finds the record that caused it, so the runtime can name it.
:mod:`~streamkernel.common.typeinfo.collected` is what ``execute_and_collect`` does on top.

>>> from streamkernel.common.typeinfo import Types
>>> batch_converter(Types.FLOAT())([1 / 3, 2])
[0.3333333432674408, 2.0]
>>> batch_converter(Types.TUPLE([Types.STRING(), Types.FLOAT()]))([("a", 0.1)])
[('a', 0.10000000149011612)]
>>> batch_converter(Types.PICKLED_BYTE_ARRAY()) is None
True
"""

from __future__ import annotations

import datetime
import operator
from array import array
from decimal import Decimal
from typing import Any, Callable, Optional

from streamkernel.common.typeinfo.basic import (
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
)
from streamkernel.common.typeinfo.composite import (
    MapTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    _ElementTypeInfo,
)

__all__ = ["BatchConverter", "TypeMismatch", "batch_converter", "first_mismatch", "passes_as_is"]

BatchConverter = Callable[[list], list]


class TypeMismatch(ValueError):
    """A value that the declared type cannot hold (out of range, wrong kind, None)."""


# array typecodes of the fixed-size numbers: the array round trip checks range and kind in C
# (PyFlink's coder of BIG_INT is its LONG coder: 64 bits)
_ARRAY_CODES = {BasicType.BYTE: "b", BasicType.SHORT: "h", BasicType.INT: "i", BasicType.LONG: "q",
                BasicType.BIG_INT: "q", BasicType.FLOAT: "f", BasicType.DOUBLE: "d"}
_BOUNDS = {code: (-(1 << (8 * size - 1)), (1 << (8 * size - 1)) - 1)
           for code, size in (("b", 1), ("h", 2), ("i", 4), ("q", 8))}
_BOUNDS["B"] = (0, 255)
_RANGES = {"B": "0..255", "b": "-128..127", "h": "-32768..32767", "i": "-2147483648..2147483647",
           "q": "-9223372036854775808..9223372036854775807"}


def batch_converter(type_info: Any, strict_rows: bool = False) -> Optional[BatchConverter]:
    """The conversion of a batch of records of ``type_info``; None when values pass unchanged.

    With ``strict_rows`` (what an operator's output goes through in PyFlink: its Row coder),
    a ``ROW`` value must be a :class:`Row`, and a Row with field names must have the type's
    names; without it (elements of ``from_collection``, records of a source) a tuple or a
    list is taken field by field too.
    """
    if isinstance(type_info, BasicTypeInfo):
        basic = type_info._basic_type
        code = _ARRAY_CODES.get(basic)
        if code is not None:
            return _numbers(code, type_info)
        if basic is BasicType.BOOLEAN:
            return _booleans
        if basic is BasicType.BIG_DEC:
            return _decimals
        if basic is BasicType.STRING:
            return _strings
        return None  # CHAR, INSTANT: the value itself
    if isinstance(type_info, DateTypeInfo):
        return _temporal(_date, type_info)
    if isinstance(type_info, TimeTypeInfo):
        return _temporal(_time, type_info)
    if isinstance(type_info, TimestampTypeInfo):
        return _temporal(_timestamp, type_info)
    if isinstance(type_info, PrimitiveArrayTypeInfo):
        if type_info.get_element_type() == BasicTypeInfo(BasicType.BYTE):
            return None  # bytes (PyFlink's BinaryCoder)
        return _lists(batch_converter(type_info.get_element_type(), strict_rows), False)
    if isinstance(type_info, _ElementTypeInfo):  # basic/object arrays and lists: elements may be None
        return _lists(batch_converter(type_info.get_element_type(), strict_rows), True)
    if isinstance(type_info, MapTypeInfo):
        return _maps(batch_converter(type_info.get_key_type(), strict_rows),
                     batch_converter(type_info.get_value_type(), strict_rows))
    if isinstance(type_info, RowTypeInfo):
        return _rows(type_info, strict_rows)
    if isinstance(type_info, TupleTypeInfo):
        return _tuples(type_info, strict_rows)
    return None


def passes_as_is(type_info: Any, values: list) -> bool:
    """True when ``values`` already are exactly what PyFlink's coder of ``type_info`` gives back,
    so neither ``to_internal_type``/``from_internal_type`` nor the batch conversion changes
    them: numbers, bools and strings (``BYTE`` ... ``DOUBLE`` but ``FLOAT``, ``BOOLEAN``,
    ``STRING``) and tuples of those, each value already of its Python type and in range."""
    if not _plain(type_info):
        return False
    convert = batch_converter(type_info)
    try:
        return convert is None or convert(values) is values
    except TypeMismatch:
        return False


def _plain(type_info: Any) -> bool:
    if isinstance(type_info, BasicTypeInfo) and type(type_info) is BasicTypeInfo:
        basic = type_info._basic_type
        return basic in (BasicType.BOOLEAN, BasicType.STRING) or _ARRAY_CODES.get(basic, "f") != "f"
    if isinstance(type_info, TupleTypeInfo):
        return all(map(_plain, type_info.get_field_types()))
    return False


def first_mismatch(convert: BatchConverter, values: list) -> tuple[int, Exception]:
    """The index of the first record of ``values`` that ``convert`` rejects, and its error."""
    for i, value in enumerate(values):
        try:
            convert([value])
        except Exception as exc:  # noqa: BLE001 - any failure of the conversion names the record
            return i, exc
    raise AssertionError("the batch failed to convert but no single record does")  # pragma: no cover


def _numbers(code: str, type_info: Any) -> BatchConverter:
    integral = code not in "fd"
    # values that already are what the coder gives back pass as they are (the same list): ints
    # in range for the integral types, floats for DOUBLE; FLOAT always rounds to 32 bits
    fits = int if integral else float if code == "d" else None
    low, high = _BOUNDS.get(code, (0, 0))

    def convert(values: list) -> list:
        if fits is not None and _all_of_type(values, fits) \
                and (not integral or not values or (low <= min(values) and max(values) <= high)):
            return values
        try:
            try:
                return array(code, values).tolist()
            except TypeError:
                if not integral:
                    raise
                # PyFlink's coder takes int(value) of a float (1.5 -> 1) or a Decimal, as Cython does
                return array(code, [_integral(v, type_info) for v in values]).tolist()
        except (TypeError, OverflowError) as exc:
            raise TypeMismatch(_number_problem(code, type_info, values, exc)) from None
    return convert


def _integral(value: Any, type_info: Any) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, (str, bytes)) or not hasattr(type(value), "__int__"):
        raise TypeMismatch(f"{type_info!r} needs an int, got {type(value).__name__} {_short(value)}")
    try:
        return int(value)
    except (ValueError, OverflowError):  # NaN, infinity
        raise TypeMismatch(f"{type_info!r} needs an int, got {_short(value)}") from None


def _number_problem(code: str, type_info: Any, values: list, exc: Exception) -> str:
    for value in values:
        try:
            array(code, [_integral(value, type_info) if code not in "fd" else value])
        except OverflowError:
            return f"{value!r} is out of the range of {type_info!r} ({_RANGES[code]})"
        except TypeError:
            return f"{type_info!r} needs a number, got {type(value).__name__} {_short(value)}"
    return str(exc)  # pragma: no cover


def _all_of_type(values: list, kind: type) -> bool:
    """Whether every value's type is exactly ``kind`` (one C pass; ``list.count`` compares types by
    identity first, cheaper than building a set of the types)."""
    return list(map(type, values)).count(kind) == len(values)


def _booleans(values: list) -> list:
    # PyFlink writes a bool as an unsigned byte and reads it back as ``not not byte``
    if _all_of_type(values, bool):
        return values
    return [bool(v) for v in _BYTES(values)]


_BYTES = _numbers("B", BasicTypeInfo(BasicType.BOOLEAN))


def _strings(values: list) -> list:
    if _all_of_type(values, str):
        return values
    for value in values:
        if not isinstance(value, str):
            raise TypeMismatch(f"String needs a str, got {type(value).__name__} {_short(value)}")
    return [str.__str__(v) for v in values]  # subclasses of str come back as str (PyFlink's coder)


def _date(v: Any) -> datetime.date:
    return datetime.date.fromordinal(v.toordinal())


def _time(v: Any) -> datetime.time:
    return datetime.time(v.hour, v.minute, v.second, v.microsecond // 1000 * 1000)


def _timestamp(v: Any) -> datetime.datetime:
    return datetime.datetime(v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond // 1000 * 1000)


def _temporal(convert_one: Callable[[Any], Any], type_info: Any) -> BatchConverter:
    """Dates as days, times and timestamps in milliseconds (PyFlink's coders; time zones dropped)."""
    def convert(values: list) -> list:
        try:
            return list(map(convert_one, values))
        except (AttributeError, TypeError, ValueError):
            for value in values:
                try:
                    convert_one(value)
                except (AttributeError, TypeError, ValueError):
                    raise TypeMismatch(f"{type_info!r} needs a {_TEMPORAL_NAMES[convert_one]}, "
                                       f"got {type(value).__name__} {_short(value)}") from None
            raise  # pragma: no cover
    return convert


_TEMPORAL_NAMES: dict[Callable[[Any], Any], str] = {_date: "datetime.date", _time: "datetime.time", _timestamp: "datetime.datetime"}


def _decimals(values: list) -> list:
    out = []
    for value in values:
        if not isinstance(value, (Decimal, int, float)) or isinstance(value, bool):
            raise TypeMismatch(f"BigDecimal needs a decimal.Decimal, got {type(value).__name__} {_short(value)}")
        out.append(Decimal(str(value)))  # PyFlink's coder sends str(value) to java.math.BigDecimal
    return out


def _not_none(values: list, what: str) -> None:
    if None in values:
        raise TypeMismatch(f"{what} cannot be None")


def _or_none(convert: BatchConverter, values: list) -> list:
    """``convert(values)`` where None stays None (a null element, field or map value)."""
    if None not in values:
        return convert(values)
    it = iter(convert([v for v in values if v is not None]))
    return [None if v is None else next(it) for v in values]


def _lists(element: Optional[BatchConverter], nullable: bool) -> BatchConverter:
    def convert(values: list) -> list:
        out = []
        for value in values:
            if not isinstance(value, (list, tuple)):
                raise TypeMismatch(f"an array or list needs a list, got {type(value).__name__} {_short(value)}")
            if element is None:
                out.append(list(value))
            else:
                out.append(_or_none(element, list(value)) if nullable else element(list(value)))
        return out
    return convert


def _maps(keys: Optional[BatchConverter], items: Optional[BatchConverter]) -> BatchConverter:
    def convert(values: list) -> list:
        out = []
        for value in values:
            if not isinstance(value, dict):
                raise TypeMismatch(f"a map needs a dict, got {type(value).__name__} {_short(value)}")
            ks = keys(list(value)) if keys is not None else list(value)
            vs = _or_none(items, list(value.values())) if items is not None else list(value.values())
            out.append(dict(zip(ks, vs)))
        return out
    return convert


def _columns(converters: list, values: list, what: str, nullable: bool = True) -> tuple[list, list]:
    """The fields of ``values`` (sequences of ``len(converters)`` fields) as columns
    and as converted columns, where a column that needs no conversion is
    the very column of the first. Without ``nullable`` a None field raises (a tuple's); with
    it None stays None (a Row's)."""
    arity = len(converters)
    if list(map(len, values)).count(arity) != len(values):
        bad = next(v for v in values if len(v) != arity)
        raise TypeMismatch(f"{what} has {arity} fields, got {len(bad)}: {_short(bad)}")
    # a column per field, not ``zip(*values)``: that makes an iterator per record (GC-tracked
    # objects that trigger collections and reach the old generation, each a full collection's work)
    columns = [list(map(operator.itemgetter(i), values)) for i in range(arity)]
    out: list[Any] = []
    for convert, column in zip(converters, columns):
        if convert is None:
            if not nullable and None in column:
                _none_field(values, what)
            out.append(column)
            continue
        try:  # every converter rejects None: a column without None converts in one go
            out.append(convert(column))
        except TypeMismatch:
            if None not in column:
                raise
            converted = _or_none(convert, column)  # None stays None; raises for another bad field
            if not nullable:
                _none_field(values, what)
            out.append(converted)
    return columns, out


def _none_field(values: list, what: str) -> None:
    bad = next(v for v in values if None in v)
    raise TypeMismatch(f"a field of {what} cannot be None (a Row's can): {_short(bad)}")


_NONE_TYPE = type(None)


def _rows(type_info: RowTypeInfo, strict: bool) -> BatchConverter:
    from streamkernel.common.types import Row, RowKind

    converters = [batch_converter(t, strict) for t in type_info.get_field_types()]
    names = type_info.get_field_names()
    explicit = type_info._explicit_names
    insert = RowKind.INSERT
    new_row, set_slot = Row.__new__, object.__setattr__

    def fields(value: Any) -> Any:
        if type(value) is Row or isinstance(value, Row):
            if value._fields is None or value._fields == names:
                return value._values
            if strict or explicit:  # PyFlink's Row.get_fields_by_names
                missing = [n for n in names if n not in value._fields]
                if missing:
                    raise TypeMismatch(f"the fields {missing} of {type_info!r} are missing from the Row's "
                                       f"fields {value._fields}")
                return [value[n] for n in names]
            return value._values
        if isinstance(value, (tuple, list)) and not strict:
            return value
        raise TypeMismatch(f"{type_info!r} needs a Row, got {type(value).__name__} {_short(value)}")

    def make(values: tuple, kind: RowKind) -> Row:  # a named Row, built without Row.__init__'s checks
        row = new_row(Row)
        set_slot(row, "_fields", list(names))
        set_slot(row, "_values", list(values))
        set_slot(row, "_row_kind", kind)
        set_slot(row, "_from_dict", False)
        return row

    def convert(values: list) -> list:
        if not values:
            return []
        _not_none(values, f"a record of {type_info!r}")
        columns = _columns(converters, list(map(fields, values)), repr(type_info))[1]
        kinds = [getattr(v, "_row_kind", insert) for v in values]
        return list(map(make, zip(*columns), kinds))
    return convert


def _tuples(type_info: TupleTypeInfo, strict: bool) -> BatchConverter:
    converters = [batch_converter(t, strict) for t in type_info.get_field_types()]

    def convert(values: list) -> list:
        if not values:
            return []
        types: set[type]
        if _all_of_type(values, tuple):
            types = {tuple}
        else:
            types = set(map(type, values))
        if _NONE_TYPE in types:
            raise TypeMismatch(f"a record of {type_info!r} cannot be None")
        if not types <= {tuple, list}:
            bad = next(v for v in values if not isinstance(v, (tuple, list)))
            raise TypeMismatch(f"{type_info!r} needs a tuple, got {type(bad).__name__} {_short(bad)}")
        fields, columns = _columns(converters, values, repr(type_info), nullable=False)
        if types == {tuple} and all(map(operator.is_, columns, fields)):
            return values  # tuples whose fields already fit: the same records, no new tuples
        return list(zip(*columns))
    return convert


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
