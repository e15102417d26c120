"""Typed boundaries' batch conversion (common/typeinfo/conversion.py) and the untyped path's cost."""

from __future__ import annotations

import struct

import pytest

from streamkernel.common import Row, Types
from streamkernel.common.typeinfo.conversion import TypeMismatch, batch_converter, first_mismatch
from streamkernel.datastream import OutputTag
from streamkernel.graph.operator_specs import MapSpec, SourceSpec
from streamkernel.runtime.tasks.chain import NO_OUTPUT
from streamkernel.runtime.tasks.typed_output import TypedOutput, typed_output


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


class _Operator:
    spec = MapSpec(function=str)


def test_untyped_outputs_are_not_wrapped():
    # pickled records (no declared type) pass without any per-record or per-batch step
    assert batch_converter(None) is None
    assert batch_converter(Types.PICKLED_BYTE_ARRAY()) is None
    assert typed_output(NO_OUTPUT, _Operator(), None) is NO_OUTPUT
    assert typed_output(NO_OUTPUT, _Operator(), Types.PICKLED_BYTE_ARRAY(), [OutputTag("x")]) is NO_OUTPUT
    assert isinstance(typed_output(NO_OUTPUT, _Operator(), Types.FLOAT()), TypedOutput)
    assert isinstance(typed_output(NO_OUTPUT, _Operator(), None, [OutputTag("x", Types.INT())]), TypedOutput)


def test_a_batch_converts_in_one_go_and_keeps_nones_of_row_fields():
    values = [i / 7 for i in range(1000)]
    assert batch_converter(Types.FLOAT())(values) == [f32(v) for v in values]
    convert = batch_converter(Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.FLOAT()]))
    rows = convert([Row(a=1, b=None), (2, 0.1)])
    assert rows == [Row(a=1, b=None), Row(a=2, b=f32(0.1))]
    assert rows[1].b == f32(0.1) and rows[0].get_row_kind() == rows[1].get_row_kind()
    assert batch_converter(Types.PRIMITIVE_ARRAY(Types.BYTE())) is None  # bytes, as PyFlink's BinaryCoder


def test_first_mismatch_names_the_record():
    convert = batch_converter(Types.SHORT())
    with pytest.raises(TypeMismatch, match="70000 is out of the range of Short"):
        convert([1, 2, 70000, 3])
    index, problem = first_mismatch(convert, [1, 2, 70000, 3])
    assert index == 2 and "Short" in str(problem)


def test_a_source_emitting_its_own_produced_type_is_not_converted():
    from streamkernel.datastream.connectors.number_seq import NumberSequenceSource

    class _Source:
        spec = SourceSpec(source=NumberSequenceSource(1, 10))

    assert typed_output(NO_OUTPUT, _Source(), Types.LONG()) is NO_OUTPUT  # ints already, no per-batch pass
    assert isinstance(typed_output(NO_OUTPUT, _Source(), Types.INT()), TypedOutput)  # a declared narrower type


def test_a_str_subclass_comes_back_as_str() -> None:
    """PyFlink's String coder encodes any str (subclasses too) and decodes a plain str."""
    class Name(str):
        pass

    out = batch_converter(Types.STRING())([Name("a"), "b"])
    assert out == ["a", "b"] and [type(v) for v in out] == [str, str]
    with pytest.raises(TypeMismatch, match="String needs a str, got int 3"):
        batch_converter(Types.STRING())([Name("a"), 3])
