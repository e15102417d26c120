"""KeyedStream: key_by's HASH edge, keyed operators, rolling aggregations, PyFlink's restrictions."""

from __future__ import annotations

import pytest

from streamkernel.common.typeinfo import Types
from streamkernel.datastream.data_stream import KeyedStream
from streamkernel.datastream.functions import KeyedProcessFunction, KeySelector, ProcessFunction, ReduceFunction
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.datastream.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner, CountTrigger
from streamkernel.errors import InvalidFunctionError, InvalidProgramError
from streamkernel.graph.partitioners import KeyGroupStreamPartitioner
from streamkernel.graph.stream_graph import build_stream_graph
from streamkernel.graph.transformations import PartitionTransformation


def _keyed(parallelism: int = 2) -> KeyedStream:
    env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(parallelism)
    src = env.from_collection([("a", 1), ("b", 2), ("a", 3)], type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    return src.key_by(lambda v: v[0])


class Counter(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield ctx.get_current_key(), value


def test_key_by_is_a_hash_partitioning_with_the_wrapped_selector() -> None:
    keyed = _keyed()
    t = keyed._transformation
    assert isinstance(keyed, KeyedStream) and isinstance(t, PartitionTransformation)
    assert isinstance(t.partitioner, KeyGroupStreamPartitioner)
    selector = t.partitioner.key_selector
    assert isinstance(selector, KeySelector) and selector.get_key(("z", 0)) == "z"
    assert keyed.get_type() == Types.TUPLE([Types.STRING(), Types.INT()])  # the input's type


def test_keyed_operators_carry_the_key_selector_and_a_hash_edge() -> None:
    keyed = _keyed(3)
    selector = keyed._transformation.partitioner.key_selector
    for stream, kind in ((keyed.map(str), "map"), (keyed.flat_map(lambda v: [v]), "flat_map"),
                         (keyed.filter(bool), "filter"), (keyed.process(Counter()), "keyed_process"),
                         (keyed.reduce(lambda a, b: a), "reduce"), (keyed.sum(1), "aggregation")):
        t = stream._transformation
        assert t.operator.kind == kind
        assert t.state_key_selector is selector and t.operator.key_selector is selector
        graph = build_stream_graph([t])
        node = graph.node(t.id)
        assert node.is_keyed
        (edge,) = graph.in_edges(t.id)
        assert edge.label == "HASH" and edge.partitioner.max_parallelism == node.max_parallelism


def test_process_names_and_function_checks() -> None:
    keyed = _keyed()
    assert keyed.process(Counter())._transformation.name == "KEYED PROCESS"

    class Plain(ProcessFunction):
        def process_element(self, value, ctx):
            yield value

    with pytest.raises(InvalidFunctionError, match="KeyedProcessFunction, got Plain"):
        keyed.process(Plain())
    with pytest.raises(InvalidFunctionError, match="KeyedProcessFunction"):
        keyed.process(lambda v, ctx: v)


def test_reduce_wraps_callables_and_keeps_the_type() -> None:
    keyed = _keyed()
    reduced = keyed.reduce(lambda a, b: (a[0], a[1] + b[1]))
    t = reduced._transformation
    assert t.name == "Reduce" and isinstance(t.operator.function, ReduceFunction)
    assert t.operator.function.reduce(("a", 1), ("a", 3)) == ("a", 4)
    assert reduced.get_type() == keyed.get_type()
    with pytest.raises(InvalidFunctionError, match="reduce"):
        keyed.reduce("sum")


@pytest.mark.parametrize("method,kind", [("sum", "SUM"), ("min", "MIN"), ("max", "MAX"),
                                         ("min_by", "MIN_BY"), ("max_by", "MAX_BY")])
def test_rolling_aggregations(method, kind) -> None:
    keyed = _keyed()
    t = getattr(keyed, method)(1)._transformation
    assert t.name == "Keyed Aggregation" and t.operator.kind == "aggregation"
    assert t.operator.aggregation_type == kind and t.operator.field == 1
    expected = {"SUM": ("a", 4), "MIN": ("a", 1), "MAX": ("a", 3), "MIN_BY": ("a", 1), "MAX_BY": ("a", 3)}[kind]
    assert t.operator.function.reduce(("a", 1), ("a", 3)) == expected
    assert getattr(keyed, method)()._transformation.operator.field == 0  # PyFlink's default
    with pytest.raises(InvalidProgramError, match="field position"):
        getattr(keyed, method)(1.5)
    with pytest.raises(InvalidProgramError, match=">= 0"):
        getattr(keyed, method)(-1)


@pytest.mark.parametrize("call", ["set_parallelism(2)", "name('k')", "get_name()", "uid('u')", "set_uid_hash('h')",
                                  "set_max_parallelism(8)", "force_non_parallel()", "set_buffer_timeout(5)",
                                  "start_new_chain()", "disable_chaining()", "slot_sharing_group('g')"])
def test_operator_settings_on_a_keyed_stream_are_errors(call) -> None:
    keyed = _keyed()
    with pytest.raises(InvalidProgramError, match="for KeyedStream is not supported"):
        eval(f"keyed.{call}", {"keyed": keyed})


@pytest.mark.parametrize("call", ["forward()", "rebalance()", "rescale()", "shuffle()", "broadcast()",
                                  "partition_custom(lambda k, n: 0, lambda v: v)"])
def test_a_keyed_stream_cannot_be_repartitioned(call) -> None:
    keyed = _keyed()
    with pytest.raises(InvalidProgramError, match="Cannot override partitioning for KeyedStream"):
        eval(f"keyed.{call}", {"keyed": keyed})


def test_key_by_on_a_keyed_stream_rekeys_the_original_stream() -> None:
    keyed = _keyed()
    rekeyed = keyed.key_by(lambda v: v[1])
    assert rekeyed._transformation.inputs == keyed._transformation.inputs


def test_count_window_uses_count_assigners() -> None:
    keyed = _keyed()
    tumbling = keyed.count_window(5)
    assert isinstance(tumbling._window_assigner, CountTumblingWindowAssigner)
    assert tumbling._window_assigner.get_window_size() == 5
    sliding = keyed.count_window(5, 2)
    assert isinstance(sliding._window_assigner, CountSlidingWindowAssigner)
    t = tumbling.reduce(lambda a, b: a)._transformation
    assert t.operator.kind == "count_window"
    assert isinstance(t.operator.trigger, CountTrigger)
    for bad in ((0,), (3, -1), ("3",)):
        with pytest.raises(InvalidProgramError, match="count_window"):
            keyed.count_window(*bad)


def test_sinks_and_union_after_key_by_keep_the_hash_edge() -> None:
    keyed = _keyed()
    sink = keyed.print()._transformation
    graph = build_stream_graph([sink])
    (edge,) = graph.in_edges(sink.id)
    assert edge.label == "HASH"
    assert keyed.union(keyed.filter(bool))._transformation.inputs[0] is keyed._transformation


def test_timestamps_after_key_by_are_not_a_keyed_operator() -> None:
    from streamkernel.common.watermark_strategy import WatermarkStrategy

    keyed = _keyed()
    t = keyed.assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps())._transformation
    assert t.state_key_selector is None
    assert keyed.project(0)._transformation.state_key_selector is not None  # Flink: keyed like any transform
