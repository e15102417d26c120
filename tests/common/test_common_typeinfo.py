"""TypeInformation and every Types factory."""

from __future__ import annotations

import datetime
import pickle

import pytest

from streamkernel.common import Instant, Row, RowKind, Types
from streamkernel.common.typeinfo import ListTypeInfo, MapTypeInfo, RowTypeInfo, TupleTypeInfo
from streamkernel.errors import InvalidProgramError

BASIC = {
    "STRING": "String",
    "INT": "Integer",
    "LONG": "Long",
    "FLOAT": "Float",
    "DOUBLE": "Double",
    "BOOLEAN": "Boolean",
    "BYTE": "Byte",
    "SHORT": "Short",
    "CHAR": "Char",
    "BIG_INT": "BigInteger",
    "BIG_DEC": "BigDecimal",
    "INSTANT": "Instant",
}


@pytest.mark.parametrize("name, java_name", sorted(BASIC.items()))
def test_basic_types_repr_like_pyflink_and_type_name(name, java_name):
    t = getattr(Types, name)()
    assert repr(t) == java_name
    assert t.type_name == name
    assert t == getattr(Types, name)() and hash(t) == hash(getattr(Types, name)())


def test_distinct_types_are_unequal():
    every = [getattr(Types, n)() for n in BASIC] + [
        Types.SQL_DATE(), Types.SQL_TIME(), Types.SQL_TIMESTAMP(), Types.PICKLED_BYTE_ARRAY(),
        Types.LIST(Types.INT()), Types.BASIC_ARRAY(Types.INT()), Types.PRIMITIVE_ARRAY(Types.INT()),
        Types.OBJECT_ARRAY(Types.INT()), Types.MAP(Types.INT(), Types.INT()), Types.TUPLE([Types.INT()]),
        Types.ROW([Types.INT()]),
    ]
    assert len(set(every)) == len(every)


def test_composite_type_names_and_reprs():
    row = Types.ROW_NAMED(["word", "count"], [Types.STRING(), Types.INT()])
    assert row.type_name == "ROW<word STRING, count INT>"
    assert repr(row) == "RowTypeInfo(word: String, count: Integer)"
    assert repr(Types.ROW([Types.INT(), Types.STRING()])) == "RowTypeInfo(Integer, String)"
    assert Types.TUPLE([Types.INT(), Types.STRING()]).type_name == "TUPLE<INT, STRING>"
    assert Types.MAP(Types.STRING(), Types.LIST(Types.LONG())).type_name == "MAP<STRING, LIST<LONG>>"
    assert repr(Types.MAP(Types.STRING(), Types.INT())) == "MapTypeInfo<String, Integer>"
    assert repr(Types.LIST(Types.INT())) == "ListTypeInfo<Integer>"
    assert Types.PRIMITIVE_ARRAY(Types.BYTE()).type_name == "PRIMITIVE_ARRAY<BYTE>"
    assert Types.OBJECT_ARRAY(Types.ROW([Types.INT()])).type_name == "OBJECT_ARRAY<ROW<f0 INT>>"
    assert Types.PICKLED_BYTE_ARRAY().type_name == "PICKLED_BYTE_ARRAY"
    assert Types.SQL_TIMESTAMP().type_name == "SQL_TIMESTAMP"


def test_row_type_info_fields():
    row = Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.STRING()])
    assert isinstance(row, RowTypeInfo)
    assert row.get_field_names() == ["a", "b"]
    assert row.get_field_types() == [Types.INT(), Types.STRING()]
    assert row.get_field_index("b") == 1 and row.get_field_index("z") == -1
    assert Types.ROW([Types.INT(), Types.INT()]).get_field_names() == ["f0", "f1"]
    assert Types.ROW([Types.INT()]) == Types.ROW_NAMED(["f0"], [Types.INT()])
    assert Types.ROW_NAMED(["a"], [Types.INT()]) != Types.ROW_NAMED(["b"], [Types.INT()])


def test_factories_reject_misuse_naming_the_argument():
    with pytest.raises(InvalidProgramError, match="parentheses"):
        Types.LIST(Types.INT)  # type: ignore[arg-type]
    with pytest.raises(InvalidProgramError, match=r"field_types\[1\]"):
        Types.ROW([Types.INT(), "STRING"])  # type: ignore[list-item]
    with pytest.raises(InvalidProgramError, match="2 field types but 1 field names"):
        Types.ROW_NAMED(["a"], [Types.INT(), Types.INT()])
    with pytest.raises(InvalidProgramError, match="unique"):
        Types.ROW_NAMED(["a", "a"], [Types.INT(), Types.INT()])


def test_row_conversion_round_trips_with_kind_and_nested_conversions():
    row_type = Types.ROW_NAMED(["day", "n"], [Types.SQL_DATE(), Types.INT()])
    assert row_type.need_conversion()
    row = Row.of_kind(RowKind.UPDATE_AFTER, day=datetime.date(1970, 1, 11), n=5)
    internal = row_type.to_internal_type(row)
    assert internal == (RowKind.UPDATE_AFTER.value, 10, 5)
    back = row_type.from_internal_type(internal)
    assert back == row and back.get_row_kind() is RowKind.UPDATE_AFTER
    assert row_type.to_internal_type({"n": 1, "day": datetime.date(1970, 1, 2)}) == (0, 1, 1)
    assert row_type.to_internal_type((datetime.date(1970, 1, 1), 3)) == (0, 0, 3)
    # a named row is read by name, whatever its own field order
    assert row_type.to_internal_type(Row(n=7, day=datetime.date(1970, 1, 1))) == (0, 0, 7)


def test_leaf_conversions():
    assert not Types.INT().need_conversion() and Types.INT().to_internal_type(3) == 3
    instant = Instant.of_epoch_milli(1234)
    assert Types.INSTANT().from_internal_type(Types.INSTANT().to_internal_type(instant)) == instant
    t = datetime.time(12, 30, 15, 123)
    assert Types.SQL_TIME().from_internal_type(Types.SQL_TIME().to_internal_type(t)) == t
    ts = datetime.datetime(2024, 5, 6, 7, 8, 9, 10)
    assert Types.SQL_TIMESTAMP().from_internal_type(Types.SQL_TIMESTAMP().to_internal_type(ts)) == ts
    tup = Types.TUPLE([Types.SQL_DATE(), Types.STRING()])
    assert tup.to_internal_type([datetime.date(1970, 1, 3), "x"]) == (2, "x")
    assert tup.from_internal_type((2, "x")) == (datetime.date(1970, 1, 3), "x")


def test_accessors_and_pickling():
    assert isinstance(Types.LIST(Types.INT()), ListTypeInfo) and Types.LIST(Types.INT()).elem_type == Types.INT()
    m = Types.MAP(Types.STRING(), Types.INT())
    assert isinstance(m, MapTypeInfo) and (m.get_key_type(), m.get_value_type()) == (Types.STRING(), Types.INT())
    assert isinstance(Types.TUPLE([Types.INT()]), TupleTypeInfo)
    row = Types.ROW_NAMED(["a"], [Types.LIST(Types.INT())])
    assert pickle.loads(pickle.dumps(row)) == row


# ------------------------------------------- records as text (print / SimpleStringEncoder)
def test_print_text_is_pyflinks_per_declared_type():
    """PyFlink prints pickled records with Python's str, rows as +I[..] of str fields, and
    every other type with Java's toString (tuples without spaces or quotes)."""
    from streamkernel.common.typeinfo.text import print_formatter

    assert print_formatter(None)(("a", 1)) == "('a', 1)"
    assert print_formatter(Types.PICKLED_BYTE_ARRAY())({"k": [1]}) == "{'k': [1]}"
    assert print_formatter(Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()]))(
        ("hi", 0, 5, 4)) == "(hi,0,5,4)"
    assert print_formatter(Types.ROW([Types.STRING(), Types.DOUBLE()]))(Row("a", 1.5)) == "+I[a,1.5]"
    deleted = Row("a", 1)
    deleted.set_row_kind(RowKind.DELETE)
    assert print_formatter(Types.ROW([Types.STRING(), Types.INT()]))(deleted) == "-D[a,1]"
    assert print_formatter(Types.STRING())("plain") == "plain"
    assert print_formatter(Types.BOOLEAN())(True) == "true"
    assert print_formatter(Types.DOUBLE())(1e7) == "1.0E7"


def test_java_text_of_fields_and_values():
    """Java's toString: booleans, doubles (scientific outside [1e-3, 1e7)), floats of 32 bits,
    null, nested rows, lists, maps and SQL time types."""
    from streamkernel.common.typeinfo.text import java_formatter, java_string

    assert [java_string(d, Types.DOUBLE()) for d in (1.0, 0.001, 1234567.0, 12345678.9, 5e-4, -0.0)] == [
        "1.0", "0.001", "1234567.0", "1.23456789E7", "5.0E-4", "-0.0"]
    assert java_string(float("nan"), Types.DOUBLE()) == "NaN"
    assert java_string(float("-inf"), Types.DOUBLE()) == "-Infinity"
    assert java_string(110.1, Types.FLOAT()) == "110.1" and java_string(0.1, Types.FLOAT()) == "0.1"
    nested = Types.TUPLE([Types.BOOLEAN(), Types.STRING(), Types.ROW([Types.INT(), Types.STRING()]),
                          Types.LIST(Types.INT()), Types.MAP(Types.STRING(), Types.LONG())])
    assert java_formatter(nested)((False, None, Row(1, "x"), [1, 2], {"a": 3})) == \
        "(false,null,+I[1, x],[1, 2],{a=3})"
    assert java_formatter(Types.ROW([Types.STRING(), Types.DOUBLE()]))(("hi", 1.5)) == "+I[hi, 1.5]"
    assert java_string(datetime.datetime(2021, 1, 1, 0, 0, 0), Types.SQL_TIMESTAMP()) == "2021-01-01 00:00:00.0"
    assert java_string(datetime.datetime(2021, 1, 1, 0, 0, 0, 120000), Types.SQL_TIMESTAMP()) == \
        "2021-01-01 00:00:00.12"
    assert java_string(datetime.date(2021, 3, 4), Types.SQL_DATE()) == "2021-03-04"
    assert java_string(datetime.time(1, 2, 3), Types.SQL_TIME()) == "01:02:03"
    assert java_string(Instant.of_epoch_milli(1500), Types.INSTANT()) == "1970-01-01T00:00:01.500Z"
    assert [java_formatter(Types.LONG())(v) for v in (7, None)] == ["7", "null"]
    assert java_formatter(Types.STRING())("text") == "text"
