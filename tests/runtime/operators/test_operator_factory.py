"""create_operator: a StreamNode's typed spec becomes the operator class its registry names,
with the spec's Function fields copied per subtask."""

from __future__ import annotations

import pytest

from streamkernel.common import WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.function_window import ProcessWindowFunction
from streamkernel.datastream.window_assigners import TumblingEventTimeWindows
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.operator_specs import MapSpec, WindowSpec
from streamkernel.graph.stream_graph import StreamNode
from streamkernel.graph.transformations import ChainingStrategy
from streamkernel.runtime.operators.factory import create_operator
from streamkernel.runtime.operators.simple import MapOperator
from streamkernel.runtime.operators.window import WindowOperator


class _Emit(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield from elements


def _window_node() -> StreamNode:
    env = StreamExecutionEnvironment.get_execution_environment()
    (env.from_collection([("a", 1)])
     .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps())
     .key_by(lambda r: r[0])
     .window(TumblingEventTimeWindows.of(1000))
     .reduce(lambda a, b: (a[0], a[1] + b[1]), window_function=_Emit())
     .print())
    (node,) = [n for n in env.get_stream_graph().nodes if isinstance(n.operator, WindowSpec)]
    return node


def test_every_function_field_is_copied_per_subtask_with_one_memo() -> None:
    node = _window_node()
    spec = node.operator
    first, second = create_operator(node), create_operator(node)
    assert isinstance(first, WindowOperator) and type(first.spec) is WindowSpec
    for operator in (first, second):
        copy = operator.spec
        assert copy is not spec and copy.kind == spec.kind
        # Functions are fresh per subtask ...
        assert copy.function is not spec.function and type(copy.function) is type(spec.function)
        assert copy.window_function is not spec.window_function
        assert copy.internal_window_function is not spec.internal_window_function
        # ... and a Function held by two fields is still one object (one memo for the whole spec)
        assert copy.internal_window_function.wrapped_function is copy.window_function
        assert copy.key_selector is not spec.key_selector  # a KeySelector is a Function too
        # what is not a Function is shared
        assert copy.window_assigner is spec.window_assigner and copy.trigger is spec.trigger
    assert first.spec.function is not second.spec.function


def test_a_spec_class_the_registry_does_not_know_is_refused() -> None:
    class Homemade(MapSpec):
        KINDS = ("homemade",)

    node = StreamNode(1, "Mine", Homemade(function=str), 1, 128, "default", ChainingStrategy.ALWAYS)
    # a subclass of a known spec class runs its base's operator ...
    assert isinstance(create_operator(node), MapOperator)
    # ... but a spec class of its own is unknown
    from dataclasses import dataclass

    from streamkernel.graph.operator_specs import OperatorSpec

    @dataclass(frozen=True, eq=False, kw_only=True)
    class Unknown(OperatorSpec):
        KINDS = ("unknown",)

    node = StreamNode(2, "Odd", Unknown(function=str), 1, 128, "default", ChainingStrategy.ALWAYS)
    with pytest.raises(InvalidProgramError, match="^operator 'Odd': unknown operator kind 'unknown'$"):
        create_operator(node)
