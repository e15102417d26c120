"""Typed boundaries cost nothing per record when the values already are what PyFlink's coder gives back
(issue 15): the batch passes as it is (the same list, the same records); anything else converts as before."""

from __future__ import annotations

import enum
import gc

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


def test_a_batch_of_tuples_converts_without_per_record_tracked_objects():
    # ``zip(*values)`` made an iterator per record: enough tracked objects, alive together, to
    # start garbage collections (and to reach the old generation: full collections of the heap)
    records = [("k%d" % i, i) for i in range(5000)]
    convert = batch_converter(Types.TUPLE([Types.STRING(), Types.INT()]), True)
    threshold = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1000, threshold[1], threshold[2])
    try:
        before = gc.get_stats()[0]["collections"]
        out = convert(records)
        collections = gc.get_stats()[0]["collections"] - before
    finally:
        gc.set_threshold(*threshold)
    assert out == records
    assert collections == 0, f"{collections} garbage collections while converting one batch"


def test_from_collection_checks_its_elements_once_and_keeps_the_callers_later_changes_out():
    from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    records = [("a", 1), ("b", 2)]
    typed = env.from_collection(records, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    source = typed._transformation.operator.source
    assert source.emits_produced_type and source.elements == records and source.elements is not records
    records.append(("c", 3))
    assert list(typed.execute_and_collect()) == [("a", 1), ("b", 2)]
    # values that need converting (a list, a bool field) still convert as PyFlink's coders
    mixed = env.from_collection([["a", True]], type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    assert not mixed._transformation.operator.source.emits_produced_type
    assert [(r, type(r[1])) for r in mixed.execute_and_collect()] == [(("a", 1), int)]
