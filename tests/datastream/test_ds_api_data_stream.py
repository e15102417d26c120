"""DataStream: each call's transformation, operator settings, partitioning, sinks and misuse."""

from __future__ import annotations

import pytest

from streamkernel.common.typeinfo import Types
from streamkernel.common.watermark_strategy import WatermarkStrategy
from streamkernel.datastream.connectors.print_sink import PrintSink
from streamkernel.datastream.data_stream import CloseableIterator, DataStream, DataStreamSink
from streamkernel.datastream.functions import (
    FilterFunction,
    KeyedProcessFunction,
    MapFunction,
    ProcessFunction,
    SinkFunction,
)
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.slot_sharing_group import SlotSharingGroup
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.errors import InvalidFunctionError, InvalidProgramError
from streamkernel.graph.partitioners import (
    BroadcastPartitioner,
    CustomPartitionerWrapper,
    ForwardPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
)
from streamkernel.graph.stream_graph import build_stream_graph
from streamkernel.graph.transformations import (
    ChainingStrategy,
    OneInputTransformation,
    PartitionTransformation,
    SideOutputTransformation,
    SinkTransformation,
    UnionTransformation,
)


def _env(parallelism: int = 1) -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment().set_parallelism(parallelism)


def _source(env: StreamExecutionEnvironment, data=(1, 2, 3)) -> DataStream:
    return env.from_collection(list(data))


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        yield value


def test_map_flat_map_filter_create_named_operators_with_wrapped_functions() -> None:
    env = _env(3)
    src = _source(env)
    mapped = src.map(lambda v: v + 1, output_type=Types.INT())
    flat = mapped.flat_map(lambda v: [v, v])
    kept = flat.filter(lambda v: v > 1)
    for stream, name, kind, method in ((mapped, "Map", "map", "map"), (flat, "FlatMap", "flat_map", "flat_map"),
                                       (kept, "Filter", "filter", "filter")):
        t = stream._transformation
        assert isinstance(t, OneInputTransformation)
        assert (t.name, t.operator.kind, t.parallelism) == (name, kind, 3)
        assert t.state_key_selector is None and t.operator.key_selector is None
        assert callable(getattr(t.operator.function, method))
        assert t in env.transformations
    assert mapped._transformation.inputs == (src._transformation,)
    assert mapped._transformation.operator.function.map(1) == 2
    assert list(flat._transformation.operator.function.flat_map(4)) == [4, 4]
    assert mapped.get_type() == Types.INT()
    assert flat.get_type() == Types.PICKLED_BYTE_ARRAY()  # PyFlink's default without output_type
    assert kept.get_type() == flat.get_type()             # filter keeps its input's type


def test_output_type_as_a_list_is_a_row_type_and_garbage_is_rejected() -> None:
    src = _source(_env())
    assert src.map(lambda v: v, output_type=[Types.INT(), Types.STRING()]).get_type() == \
        Types.ROW([Types.INT(), Types.STRING()])
    with pytest.raises(InvalidProgramError, match="output_type"):
        src.map(lambda v: v, output_type="int")


def test_operators_take_the_environment_parallelism_at_creation() -> None:
    env = _env(2)
    first = _source(env).map(str)
    env.set_parallelism(5)
    second = first.map(str)
    assert first._transformation.parallelism == 2
    assert second._transformation.parallelism == 5
    assert not first._transformation.parallelism_configured


def test_function_objects_are_kept_as_given() -> None:
    class Upper(MapFunction):
        def map(self, value):
            return value.upper()

    upper = Upper()
    assert _source(_env()).map(upper)._transformation.operator.function is upper


def test_process_requires_a_process_function() -> None:
    src = _source(_env())
    split = Split()
    t = src.process(split, Types.INT())._transformation
    assert (t.name, t.operator.kind, t.operator.function) == ("PROCESS", "process", split)
    with pytest.raises(InvalidFunctionError, match=r"process\(\) expects a ProcessFunction, got function"):
        src.process(lambda v, ctx: v)

    class Keyed(KeyedProcessFunction):
        def process_element(self, value, ctx):
            yield value

    with pytest.raises(InvalidFunctionError, match=r"key_by"):
        src.process(Keyed())


def test_misused_functions_are_rejected_at_the_call() -> None:
    src = _source(_env())
    with pytest.raises(InvalidFunctionError, match=r"map\(\)"):
        src.map(None)
    with pytest.raises(InvalidFunctionError, match=r"filter\(\)"):
        src.filter(3)
    with pytest.raises(InvalidFunctionError, match=r"key_by\(\) expects a KeySelector or a callable for 'key_selector'"):
        src.key_by("field")

    class NotAFilter(FilterFunction):
        def filter(self, value):
            return True

    with pytest.raises(InvalidFunctionError):
        src.map(NotAFilter())


def test_operator_settings_land_on_the_transformation() -> None:
    env = _env(2)
    ds = _source(env).map(str)
    result = (ds.name("parse").uid("parse-uid").set_uid_hash("abc").set_description("parses")
              .set_parallelism(4).set_max_parallelism(16).set_buffer_timeout(0).slot_sharing_group("ssg"))
    assert result is ds
    t = ds._transformation
    assert (t.name, t.uid, t.uid_hash, t.description) == ("parse", "parse-uid", "abc", "parses")
    assert (t.parallelism, t.parallelism_configured, t.max_parallelism) == (4, True, 16)
    assert (t.buffer_timeout, t.slot_sharing_group) == (0, "ssg")
    assert ds.get_name() == "parse"
    ds.set_buffer_timeout(-1)
    assert t.buffer_timeout is None  # -1: the environment's default
    ds.slot_sharing_group(SlotSharingGroup.builder("gpu").build())
    assert t.slot_sharing_group == "gpu"
    assert ds.start_new_chain()._transformation.chaining_strategy is ChainingStrategy.HEAD
    assert ds.disable_chaining()._transformation.chaining_strategy is ChainingStrategy.NEVER


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2", 32769, 10**20])  # -1 is PARALLELISM_DEFAULT
def test_parallelism_must_be_an_int_within_flinks_bounds(bad) -> None:
    ds = _source(_env()).map(str).name("m")
    with pytest.raises(InvalidProgramError, match="on operator 'm'.*an int between 1 and 32768"):
        ds.set_parallelism(bad)


def test_the_largest_parallelism_is_flinks_max_parallelism_bound() -> None:
    ds = _source(_env()).map(str).name("m")
    assert ds.set_parallelism(32768)._transformation.parallelism == 32768


@pytest.mark.parametrize("bad", [0, 32769, 10**20])
def test_the_environments_parallelism_is_refused_outside_flinks_bounds(bad) -> None:
    env = _env()
    with pytest.raises(InvalidProgramError, match=r"set_parallelism: parallelism must be an int in 1\.\.32768"):
        env.set_parallelism(bad)
    with pytest.raises(InvalidProgramError, match=r"set_parallelism\(parallelism\) needs an int in 1\.\.32768"):
        env.get_config().set_parallelism(bad)
    assert env.set_parallelism(32768).get_parallelism() == 32768


def test_max_parallelism_bounds_and_its_relation_to_parallelism() -> None:
    ds = _source(_env(4)).map(str)
    for bad in (0, 32769):
        with pytest.raises(InvalidProgramError, match="between 1 and 32768"):
            ds.set_max_parallelism(bad)
    with pytest.raises(InvalidProgramError, match="at least the operator's parallelism 4"):
        ds.set_max_parallelism(3)
    ds.set_max_parallelism(8)
    with pytest.raises(InvalidProgramError, match="must not exceed the operator's max parallelism 8"):
        ds.set_parallelism(9)
    ds.set_parallelism(8)


def test_force_non_parallel_pins_parallelism_to_one() -> None:
    ds = _source(_env(4)).map(str).force_non_parallel()
    t = ds._transformation
    assert (t.parallelism, t.max_parallelism) == (1, 1)
    with pytest.raises(InvalidProgramError, match="non-parallel"):
        ds.set_parallelism(2)
    ds.set_parallelism(1)


def test_a_collection_source_stays_non_parallel() -> None:
    src = _source(_env(4))
    with pytest.raises(InvalidProgramError, match="at most 1 subtask"):
        src.set_parallelism(2)


def test_duplicate_uid_is_rejected() -> None:
    src = _source(_env())
    src.map(str).uid("same")
    other = src.map(str)
    with pytest.raises(InvalidProgramError, match="'same'"):
        other.uid("same")


def test_buffer_timeout_below_minus_one_is_rejected() -> None:
    with pytest.raises(InvalidProgramError, match=">= -1"):
        _source(_env()).map(str).set_buffer_timeout(-2)


@pytest.mark.parametrize("method,partitioner", [
    ("forward", ForwardPartitioner), ("rebalance", RebalancePartitioner), ("rescale", RescalePartitioner),
    ("shuffle", ShufflePartitioner), ("broadcast", BroadcastPartitioner),
])
def test_partitioning_is_a_virtual_transformation_on_the_edge(method, partitioner) -> None:
    env = _env(2)
    up = _source(env).map(str)
    down = getattr(up, method)().map(str).set_parallelism(2)
    part = down._transformation.inputs[0]
    assert isinstance(part, PartitionTransformation) and isinstance(part.partitioner, partitioner)
    assert part in env.transformations
    graph = build_stream_graph([down._transformation])
    (edge,) = graph.in_edges(down._transformation.id)
    assert edge.source_id == up._transformation.id and edge.label == partitioner.name


@pytest.mark.parametrize("call", ["set_parallelism(2)", "name('x')", "uid('u')", "set_max_parallelism(4)",
                                  "disable_chaining()", "slot_sharing_group('g')", "force_non_parallel()"])
def test_operator_settings_on_a_partitioned_stream_are_errors(call) -> None:
    stream = _source(_env()).map(str).rebalance()
    with pytest.raises(InvalidProgramError, match=r"not an operator"):
        eval(f"stream.{call}", {"stream": stream})


def test_partition_custom_carries_partitioner_and_key_selector() -> None:
    src = _source(_env())
    ds = src.partition_custom(lambda key, n: key % n, lambda v: v * 10).map(str)
    part = ds._transformation.inputs[0].partitioner
    assert isinstance(part, CustomPartitionerWrapper)
    assert part.partitioner.partition(part.key_selector.get_key(3), 4) == 2
    with pytest.raises(InvalidFunctionError, match="partitioner"):
        src.partition_custom(5, lambda v: v)


def test_union_merges_streams_of_one_environment_only() -> None:
    env = _env()
    a, b, c = _source(env), _source(env).map(str), _source(env)
    u = a.union(b, c)
    assert isinstance(u._transformation, UnionTransformation)
    assert u._transformation.inputs == (a._transformation, b._transformation, c._transformation)
    sink = u.map(str)
    graph = build_stream_graph([sink._transformation])
    assert sorted(e.source_id for e in graph.in_edges(sink._transformation.id)) == sorted(
        t._transformation.id for t in (a, b, c))
    with pytest.raises(InvalidProgramError, match="different StreamExecutionEnvironments"):
        a.union(_source(_env()))
    with pytest.raises(InvalidProgramError, match="union"):
        a.union([b])


def test_side_outputs_are_edges_carrying_the_tag() -> None:
    env = _env()
    tag = OutputTag("negatives", Types.INT())
    main = _source(env).process(Split())
    side = main.get_side_output(tag)
    assert isinstance(side._transformation, SideOutputTransformation)
    assert side.get_type() == Types.INT()
    consumer = side.map(str)
    graph = build_stream_graph([consumer._transformation])
    (edge,) = graph.in_edges(consumer._transformation.id)
    assert edge.source_id == main._transformation.id and edge.output_tag == tag
    with pytest.raises(InvalidProgramError, match="OutputTag"):
        main.get_side_output("negatives")
    with pytest.raises(InvalidProgramError, match="not an operator"):
        side.name("x")


def test_print_add_sink_and_sink_to_create_sinks() -> None:
    env = _env(3)
    ds = _source(env).map(str)
    printed = ds.print("wc")
    assert isinstance(printed, DataStreamSink)
    t = printed._transformation
    assert isinstance(t, SinkTransformation) and t.name == "Print to Std. Out" and t.parallelism == 3
    assert t.operator.kind == "sink" and t.operator.sink == PrintSink("wc")
    assert printed.name("out").uid("out-uid").set_parallelism(1).disable_chaining() is printed
    assert (t.name, t.uid, t.parallelism, t.chaining_strategy) == ("out", "out-uid", 1, ChainingStrategy.NEVER)
    graph = build_stream_graph([t])
    assert [n.name for n in graph.sinks] == ["Sink: out"]

    seen = []
    callable_sink = ds.add_sink(seen.append)._transformation.operator.sink
    assert isinstance(callable_sink, SinkFunction)
    callable_sink.get_java_function()("x")
    assert seen == ["x"]
    given = SinkFunction(print)
    assert ds.add_sink(given)._transformation.operator.sink is given
    assert ds.sink_to(PrintSink(to_stderr=True))._transformation.operator.sink.to_stderr
    with pytest.raises(InvalidFunctionError, match="add_sink"):
        ds.add_sink(42)
    with pytest.raises(InvalidProgramError, match="sink_to"):
        ds.sink_to("stdout")


def test_sinks_carry_the_declared_type_of_their_input() -> None:
    """print() and sink_to() write records as PyFlink does for the stream's declared type."""
    from streamkernel.common.typeinfo import Types

    env = _env(1)
    typed = _source(env).map(lambda v: (v, 1), output_type=Types.TUPLE([Types.INT(), Types.INT()]))
    assert typed.print()._transformation.operator.input_type == Types.TUPLE([Types.INT(), Types.INT()])
    filtered = typed.key_by(lambda v: v[0]).filter(bool)  # keeps its input's type through key_by
    assert filtered.print()._transformation.operator.input_type == Types.TUPLE([Types.INT(), Types.INT()])
    assert _source(env).map(str).print()._transformation.operator.input_type is None


def test_timestamps_and_watermarks_take_the_input_parallelism() -> None:
    env = _env(4)
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    src = _source(env)
    ts = src.assign_timestamps_and_watermarks(strategy)
    t = ts._transformation
    assert (t.name, t.operator.kind, t.parallelism) == ("Timestamps/Watermarks", "timestamps_watermarks", 1)
    assert t.operator.watermark_strategy is strategy
    with pytest.raises(InvalidProgramError, match="WatermarkStrategy"):
        src.assign_timestamps_and_watermarks(lambda v: 0)


def test_project_of_a_typed_tuple_stream_is_typed_as_the_kept_fields() -> None:
    from streamkernel.common.typeinfo import Types

    ds = _env().from_collection([(1, "a", True)], type_info=Types.TUPLE([Types.INT(), Types.STRING(), Types.BOOLEAN()]))
    assert ds.project(2, 0).get_type() == Types.TUPLE([Types.BOOLEAN(), Types.INT()])
    with pytest.raises(InvalidProgramError, match="out of range"):
        ds.project(3)


def test_project_keeps_the_selected_fields() -> None:
    ds = _source(_env(), [(1, "a", True)]).project(2, 0)
    t = ds._transformation
    assert (t.name, t.operator.kind) == ("Projection", "map")
    assert t.operator.function.map((1, "a", True)) == (True, 1)
    with pytest.raises(InvalidProgramError, match="field indexes"):
        ds.project()


def test_window_on_an_unkeyed_stream_explains_the_fix() -> None:
    with pytest.raises(InvalidProgramError, match=r"window\(\) needs a KeyedStream: call key_by"):
        _source(_env()).window(object())


def test_cache_is_refused_clearly() -> None:
    with pytest.raises(InvalidProgramError, match="BATCH"):
        _source(_env()).cache()


def test_environment_and_config_accessors() -> None:
    env = _env()
    ds = _source(env)
    assert ds.get_execution_environment() is env
    assert ds.get_execution_config() is env.get_config()


def test_execute_and_collect_delegates_and_honours_limit() -> None:
    calls = []

    class Env:
        def _execute_and_collect(self, data_stream, name, limit):
            calls.append((data_stream, name, limit))
            return CloseableIterator(iter(range(10)), close=lambda: calls.append("closed"))

    ds = DataStream(_source(_env())._transformation, Env())
    assert ds.execute_and_collect("job", limit=3) == [0, 1, 2]
    assert calls == [(ds, "job", 3), "closed"]
    with ds.execute_and_collect() as it:
        assert next(it) == 0 and it.next() == 1
    assert calls[-1] == "closed"
    with pytest.raises(StopIteration):
        it.next()
    with pytest.raises(InvalidProgramError, match="limit"):
        ds.execute_and_collect(limit=0)
