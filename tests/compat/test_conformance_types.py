"""Values of declared types, as PyFlink converts them at typed boundaries (issue 13).

PyFlink encodes the output of an operator with an ``output_type`` with that type's coder, so
the next function, ``print()`` and ``execute_and_collect`` see the value after the round
trip. The expectations here are computed by plain Python from the programs' data:

- ``Types.FLOAT()`` is a 32-bit float: :func:`f32` rounds with ``struct``; Java prints it
  with ``Float.toString`` (:func:`java_float`, written here from numpy's shortest float32
  digits and JDK 17's rule for whole floats), a ``Row`` field with Python's ``str`` (PyFlink
  maps Rows to text in Python before printing);
- ``DOUBLE`` turns ints into floats; the integral types check their range and take
  ``int()`` of a float (Cython's conversion in PyFlink's coders);
- a record the type cannot hold fails the job, here with an error naming the operator,
  the record and the type.

``typed_values.py`` was run under real PyFlink 2.3 (Java 17); its output equals these
expectations.
"""

from __future__ import annotations

import datetime
import math
import struct
from decimal import Decimal

import numpy as np
import pytest

from streamkernel.common import Row, Types
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import JobExecutionError
from tests.compat.test_pyflink_programs import run


# --------------------------------------------------------------------------- Java's view
def f32(x: float) -> float:
    """``x`` rounded to a 32-bit float and widened back (what PyFlink's FLOAT coder gives)."""
    return struct.unpack(">f", struct.pack(">f", x))[0]


def java_float(x: float) -> str:
    """Java 17's ``Float.toString`` of ``x`` rounded to 32 bits."""
    value = f32(x)
    if value == int(value) and abs(value) < 2 ** 63:
        # JDK 17 prints a whole float from its exact integer, rounding away only the
        # floor(p * log10(2)) digits that 2^p (p = binary exponent - 25) makes insignificant
        n = int(abs(value))
        p = n.bit_length() - 1 - 25
        drop = int(p * math.log10(2)) if p > 1 else 0
        n = (n + 10 ** drop // 2) // 10 ** drop if drop else n
        digits = str(n)
        exponent = len(digits) - 1 + drop
        mantissa = digits.rstrip("0") or "0"
    else:
        sci = np.format_float_scientific(np.float32(value), unique=True, trim="-")  # '3.3333334e-01'
        mantissa_text, exp_text = sci.lstrip("-").split("e")
        mantissa = mantissa_text.replace(".", "")
        exponent = int(exp_text)
    return java_layout("-" if value < 0 else "", mantissa, exponent, abs(value))


def java_double(x: float) -> str:
    """Java's ``Double.toString`` of ``x`` (numpy's shortest digits; right for the values used here)."""
    value = float(x)
    sci = np.format_float_scientific(value, unique=True, trim="-")
    mantissa_text, exp_text = sci.lstrip("-").split("e")
    return java_layout("-" if value < 0 else "", mantissa_text.replace(".", ""), int(exp_text), abs(value))


def java_layout(sign: str, mantissa: str, exponent: int, magnitude: float) -> str:
    """Java's layout of digits ``mantissa`` (d.ddd x 10^exponent): plain in [1e-3, 1e7), else ``d.dddEn``."""
    if 1e-3 <= magnitude < 1e7:
        if exponent < 0:
            return f"{sign}0.{'0' * (-exponent - 1)}{mantissa}"
        whole = mantissa[:exponent + 1].ljust(exponent + 1, "0")
        return f"{sign}{whole}.{mantissa[exponent + 1:] or '0'}"
    return f"{sign}{mantissa[0]}.{mantissa[1:] or '0'}E{exponent}"


def test_java_float_reference_examples():
    """The helper itself against Float.toString outputs seen from Java 17."""
    assert [java_float(v) for v in (1 / 3, 2 / 3, 1e10, 1e-5, 0.1, 3, 1234567.9, 0.001, 1e7, 123456789.0)] == [
        "0.33333334", "0.6666667", "1.0E10", "1.0E-5", "0.1", "3.0", "1234567.9", "0.001", "1.0E7", "1.23456792E8"]


# --------------------------------------------------------------------------- typed_values.py
FLOATS = [1 / 3, 2 / 3, 1e10, 1e-5, 0.1, 100.0, 1.5, 3, 1234567.9, 0.001, 1e7, 123456789.0]


def expected_typed_values() -> dict[str, list[str]]:
    """The lines of typed_values.py per sink identifier, in order, as PyFlink writes them."""
    row = ("a", f32(1 / 3), True, None, 1e10)
    named = ("a", f32(2 / 3))
    tup = ("a", f32(1 / 3), True, 1e10, Decimal("2.50"))
    # (name, print() text of each value, the value the next Python function receives)
    cases = [
        ("BOOLEAN", ["true", "false"], [True, False]),
        ("BYTE", ["1", "-128", "127"], [1, -128, 127]),
        ("SHORT", ["1000", "-32768"], [1000, -32768]),
        ("INT", ["1", "2147483647", "-5"], [1, 2147483647, -5]),
        ("LONG", [str(2 ** 40)], [2 ** 40]),
        ("FLOAT", [java_float(v) for v in FLOATS], [f32(v) for v in FLOATS]),
        ("DOUBLE", [java_double(v) for v in (1 / 3, 1e10, 1e-5, 2, 0.001, 1e7)],
         [float(v) for v in (1 / 3, 1e10, 1e-5, 2, 0.001, 1e7)]),
        ("STRING", ["hi"], ["hi"]),
        ("BIG_DEC", ["1.50", "1E+3"], [Decimal("1.50"), Decimal("1E+3")]),
        ("SQL_DATE", ["2024-01-02"], [datetime.date(2024, 1, 2)]),
        ("LIST_FLOAT", ["[" + ", ".join(java_float(v) for v in (1 / 3, 2.5)) + "]"], [[f32(1 / 3), 2.5]]),
        ("MAP", ["{a=" + java_float(1 / 3) + "}"], [{"a": f32(1 / 3)}]),
        # a Row is turned into text by Python before printing: str() of each (converted) field
        ("ROW", ["+I[" + ",".join(str(v) for v in row) + "]"], [Row(**{f"f{i}": v for i, v in enumerate(row)})]),
        ("ROWNAMED", ["+I[" + ",".join(str(v) for v in named) + "]"], [Row(s=named[0], f=named[1])]),
        ("TUPLE", [f"(a,{java_float(1 / 3)},true,{java_double(1e10)},2.50)"], [tup]),
        ("PICKLED", [str({"x": 1 / 3})], [{"x": 1 / 3}]),
        ("COLLECTION", [java_float(1 / 3), java_float(2 / 3)], [f32(1 / 3), f32(2 / 3)]),
    ]
    expected: dict[str, list[str]] = {"REPR": []}
    for name, printed, received in cases:
        expected[name] = printed
        expected["REPR"] += [f"{name} {v!r}" for v in received]
    return expected


def test_typed_values_print_and_receive_as_pyflink(tmp_path):
    lines = run("typed_values.py", str(tmp_path / "lines.txt"))
    assert lines[:3] == ["TYPE seq Long", "TYPE text String", "TYPE untyped PickledByteArrayTypeInfo"]
    by_sink: dict[str, list[str]] = {}
    for line in lines[3:-1]:
        sink, _, text = line.partition("> ")
        by_sink.setdefault(sink, []).append(text)
    expected = expected_typed_values()
    # sinks of different branches interleave; each sink's own lines come in order
    assert sorted(by_sink.pop("REPR")) == sorted(expected.pop("REPR"))
    assert by_sink == expected
    # collected FLOAT values: the doubles of Java's Float.toString text
    assert lines[-1] == "COLLECTED " + repr([(repr(float(java_float(v))), "float") for v in FLOATS])


# --------------------------------------------------------------------------- in-process checks
def collect(values, output_type, name="Typed Map"):
    """The records of ``from_collection(values).map(identity, output_type)`` as a map after
    ``rebalance()`` receives them: records are converted where they leave a chain of Python
    functions; a map chained to the typed one would receive them unconverted, as in PyFlink 2.3
    (where this helper's first cases, with ``rebalance()``, were seen to give these values)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    typed = env.from_collection(values).map(lambda v: v, output_type=output_type).name(name)
    return list(typed.rebalance().map(lambda v: v).execute_and_collect())


@pytest.mark.parametrize("output_type, record, problem", [
    (Types.INT(), 2 ** 31, "out of the range of Integer"),
    (Types.BYTE(), 200, "out of the range of Byte"),
    (Types.SHORT(), -40000, "out of the range of Short"),
    (Types.BIG_INT(), 2 ** 70, "out of the range of BigInteger"),  # PyFlink's coder: a 64-bit long
    (Types.INT(), "7", "Integer needs an int, got str"),
    (Types.FLOAT(), "x", "Float needs a number, got str"),
    (Types.TUPLE([Types.STRING(), Types.INT()]), ("a", 2 ** 40), "out of the range of Integer"),
])
def test_a_record_the_type_cannot_hold_fails_the_job_naming_operator_and_record(output_type, record, problem):
    with pytest.raises(JobExecutionError) as failure:
        collect([record], output_type)
    message = str(failure.value)
    assert "operator 'Typed Map'" in message
    assert f"emitted record {record!r}" in message
    assert repr(output_type) in message and problem in message


def test_integral_types_take_int_of_a_float_and_bool_as_pyflink():
    # PyFlink's Cython coder converts with int(): 1.5 -> 1, True -> 1 (seen under PyFlink 2.3)
    assert collect([1.5, True, -2.9], Types.INT()) == [1, 1, -2]
    assert collect([2, 1.5], Types.DOUBLE()) == [2.0, 1.5]
    assert [type(v) for v in collect([2], Types.DOUBLE())] == [float]
    assert collect([1, 0, True], Types.BOOLEAN()) == [True, False, True]


def test_float_fields_and_elements_are_rounded_to_32_bits():
    third = f32(1 / 3)
    assert collect([("a", 1 / 3)], Types.TUPLE([Types.STRING(), Types.FLOAT()])) == [("a", third)]
    assert collect([[1 / 3, None]], Types.LIST(Types.FLOAT()))[0][0] == third
    assert collect([{"k": 1 / 3}], Types.MAP(Types.STRING(), Types.FLOAT())) == [{"k": third}]
    rows = collect([Row(1 / 3, None)], Types.ROW_NAMED(["x", "y"], [Types.FLOAT(), Types.INT()]))
    assert rows == [Row(x=third, y=None)] and rows[0].x == third


def test_times_and_timestamps_keep_milliseconds():
    # PyFlink's TimeCoder and TimestampCoder(3) carry milliseconds
    assert collect([datetime.time(12, 34, 56, 789123)], Types.SQL_TIME()) == [datetime.time(12, 34, 56, 789000)]
    assert collect([datetime.datetime(2024, 1, 2, 3, 4, 5, 678912)], Types.SQL_TIMESTAMP()) == [
        datetime.datetime(2024, 1, 2, 3, 4, 5, 678000)]


def test_side_output_of_float_type_is_rounded():
    from streamkernel.datastream import OutputTag, ProcessFunction

    tag = OutputTag("floats", Types.FLOAT())

    class Split(ProcessFunction):
        def process_element(self, value, ctx):
            yield tag, value

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    main = env.from_collection([1 / 3, 2 / 3]).process(Split(), output_type=Types.DOUBLE())
    side = main.get_side_output(tag).map(lambda v: v)
    assert list(side.execute_and_collect()) == [f32(1 / 3), f32(2 / 3)]


def test_from_source_takes_the_produced_type(tmp_path):
    from streamkernel.common import WatermarkStrategy
    from streamkernel.datastream.connectors.file_system import FileSource, StreamFormat
    from streamkernel.datastream.connectors.number_seq import NumberSequenceSource

    env = StreamExecutionEnvironment.get_execution_environment()
    seq = env.from_source(NumberSequenceSource(1, 5), WatermarkStrategy.no_watermarks(), "seq")
    assert seq.get_type() == Types.LONG() and repr(seq.get_type()) == "Long"
    (tmp_path / "a.txt").write_text("x\n")
    text = env.from_source(FileSource.for_record_stream_format(StreamFormat.text_line_format(),
                                                               str(tmp_path)).build(),
                           WatermarkStrategy.no_watermarks(), "text")
    assert repr(text.get_type()) == "String"
    assert sorted(seq.execute_and_collect()) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("output_type, record, problem", [
    (Types.STRING(), 5, "String needs a str, got int"),  # PyFlink: AttributeError in its coder
    (Types.TUPLE([Types.STRING(), Types.INT()]), ("a", None), "cannot be None"),  # PyFlink: TypeError
    (Types.INT(), None, "Integer needs an int, got NoneType"),
])
def test_values_pyflink_cannot_encode_fail_the_job(output_type, record, problem):
    with pytest.raises(JobExecutionError, match="operator 'Typed Map'.*" + problem):
        collect([record], output_type)


def test_execute_and_collect_gives_floats_as_java_text_and_times_without_milliseconds():
    # what PyFlink 2.3's execute_and_collect returned for these types (through Java objects)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    types = [Types.FLOAT(), Types.SQL_TIME(), Types.LIST(Types.FLOAT()), Types.PRIMITIVE_ARRAY(Types.FLOAT()),
             Types.MAP(Types.STRING(), Types.FLOAT()), Types.BYTE(), Types.DOUBLE(), Types.BOOLEAN()]
    record = (1 / 3, datetime.time(12, 34, 56, 789123), [1 / 3], [1 / 3], {"k": 1 / 3}, 5, 2, True)
    text = float(java_float(1 / 3))
    assert text == 0.33333334
    expected = (text, datetime.time(12, 34, 56), [text], [text], {"k": text}, 5, 2.0, True)
    typed = env.from_collection([0]).map(lambda _: record, output_type=Types.TUPLE(types))
    assert list(typed.execute_and_collect()) == [expected]
    rows = env.from_collection([0]).map(lambda _: Row(*record), output_type=Types.ROW(types))
    collected = list(rows.execute_and_collect())
    assert collected == [Row(**{f"f{i}": v for i, v in enumerate(expected)})]


def test_a_function_result_of_a_row_type_must_be_a_row_with_the_types_names():
    # PyFlink's Row coder takes value.get_fields_by_names(type's names) (all three seen under PyFlink 2.3): a tuple has no such
    # method, a Row with other names fails, a Row with the names in another order is reordered
    with pytest.raises(JobExecutionError, match="operator 'Typed Map'.*needs a Row, got tuple"):
        collect([("a", 1)], Types.ROW([Types.STRING(), Types.INT()]))
    with pytest.raises(JobExecutionError, match=r"operator 'Typed Map'.*fields \['f0', 'f1'\] of .* are missing from the Row's fields"):
        collect([Row(word="a", count=1)], Types.ROW([Types.STRING(), Types.INT()]))
    reordered = collect([Row(word="a", count=1)], Types.ROW_NAMED(["count", "word"], [Types.INT(), Types.STRING()]))
    assert [tuple(r) for r in reordered] == [(1, "a")] and reordered[0].count == 1
    # from_collection takes tuples for a ROW type (PyFlink converts its elements in Python)
    env = StreamExecutionEnvironment.get_execution_environment()
    rows = list(env.from_collection([("a", 1.5)], Types.ROW([Types.STRING(), Types.FLOAT()])).map(
        lambda r: r).execute_and_collect())
    assert rows == [Row(f0="a", f1=1.5)]
