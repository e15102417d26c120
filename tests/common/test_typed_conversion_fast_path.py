"""Typed boundaries cost nothing per record when the values already are what PyFlink's coder gives back
(issue 15): the batch passes as it is (the same list, the same records); anything else converts as before."""

from __future__ import annotations

import enum

import pytest

from streamkernel.common import Types
from streamkernel.common.typeinfo.conversion import TypeMismatch, batch_converter

LONG_MAX = (1 << 63) - 1


class Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize("type_info, values", [
    (Types.LONG(), [0, -(1 << 63), LONG_MAX, 42]),
    (Types.INT(), [-(1 << 31), (1 << 31) - 1]),
    (Types.BYTE(), [-128, 127]),
    (Types.DOUBLE(), [0.5, float("inf"), -1.0]),
    (Types.BOOLEAN(), [True, False]),
    (Types.STRING(), ["a", ""]),
    (Types.TUPLE([Types.STRING(), Types.INT()]), [("k1", 1), ("k2", 2)]),
    (Types.TUPLE([Types.INT(), Types.TUPLE([Types.LONG(), Types.DOUBLE()])]), [(1, (2, 3.0))]),
    (Types.TUPLE([Types.INT(), Types.LONG(), Types.INT()]), []),
])
def test_values_that_already_fit_pass_as_they_are(type_info, values):
    convert = batch_converter(type_info, True)
    out = convert(values)
    assert out is values or (not values and out == [])
    assert all(a is b for a, b in zip(out, values))


def test_values_that_do_not_fit_still_convert_as_pyflink():
    assert _converted(Types.LONG(), [True, 1.5, Level.HIGH]) == [(int, 1), (int, 1), (int, 3)]
    assert _converted(Types.DOUBLE(), [2, 0.5]) == [(float, 2.0), (float, 0.5)]
    assert _converted(Types.BOOLEAN(), [1, 0, True]) == [(bool, True), (bool, False), (bool, True)]
    out = batch_converter(Types.TUPLE([Types.STRING(), Types.INT()]), True)([["a", 1], ("b", True)])
    assert out == [("a", 1), ("b", 1)] and [type(r) for r in out] == [tuple, tuple] and type(out[1][1]) is int
    assert batch_converter(Types.TUPLE([Types.STRING(), Types.FLOAT()]))([("a", 0.1)]) == [("a", 0.10000000149011612)]


@pytest.mark.parametrize("type_info, values, problem", [
    (Types.LONG(), [1, LONG_MAX + 1], "out of the range"),
    (Types.INT(), [1 << 31], "out of the range"),
    (Types.LONG(), [1, None], "needs an int"),
    (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), ("b", None)], "cannot be None"),
    (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), None], "cannot be None"),
    (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), ("b", 2, 3)], "has 2 fields, got 3"),
    (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1, 0), ("b", 2, 3)], "has 2 fields, got 3"),
    (Types.TUPLE([Types.STRING(), Types.INT()]), [("a", "x"), ("b", None)], "needs an int"),
])
def test_values_that_the_type_cannot_hold_still_fail(type_info, values, problem):
    with pytest.raises(TypeMismatch, match=problem):
        batch_converter(type_info, True)(values)


def test_a_row_field_may_be_none_and_other_fields_still_convert():
    convert = batch_converter(Types.ROW_NAMED(["a", "b"], [Types.STRING(), Types.LONG()]), False)
    rows = convert([("x", None), ("y", True)])
    assert [r.b for r in rows] == [None, 1] and type(rows[1].b) is int


def _converted(type_info, values):
    return [(type(v), v) for v in batch_converter(type_info, True)(values)]
