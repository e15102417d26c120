"""WindowedStream and AllWindowedStream: the window operator's name, spec and misuse errors."""

from __future__ import annotations

import pytest

from streamkernel.common.time import Duration, Time
from streamkernel.common.typeinfo import Types
from streamkernel.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    InternalIterableProcessWindowFunction,
    InternalIterableWindowFunction,
    InternalSingleValueProcessWindowFunction,
    InternalSingleValueWindowFunction,
    NullByteKeySelector,
    PassThroughAllWindowFunction,
    PassThroughWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    ReduceFunction,
    WindowFunction,
)
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.datastream.window import (
    CountTrigger,
    EventTimeSessionWindows,
    EventTimeTrigger,
    ProcessingTimeTrigger,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from streamkernel.errors import InvalidFunctionError, InvalidProgramError
from streamkernel.graph.stream_graph import build_stream_graph

INPUT_TYPE = Types.TUPLE([Types.STRING(), Types.INT()])


def _source(parallelism: int = 2):
    env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(parallelism)
    return env.from_collection([("a", 1), ("b", 2)], type_info=INPUT_TYPE)


def _windowed(assigner=None):
    return _source().key_by(lambda v: v[0]).window(assigner or TumblingEventTimeWindows.of(Time.seconds(5)))


class Average(AggregateFunction):
    def create_accumulator(self):
        return 0, 0

    def add(self, value, acc):
        return acc[0] + value[1], acc[1] + 1

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]


class PerWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, len(list(elements))


class Apply(WindowFunction):
    def apply(self, key, window, inputs):
        yield key


def test_reduce_builds_one_keyed_window_operator_named_like_flink() -> None:
    windowed = _windowed()
    result = windowed.reduce(lambda a, b: (a[0], a[1] + b[1]))
    t = result._transformation
    assert t.name == ("Window(TumblingEventTimeWindows(5000), EventTimeTrigger, ReduceFunction, "
                      "PassThroughWindowFunction)")
    assert t.description == t.name and t.parallelism == 2
    spec = t.operator
    assert spec.kind == "window" and isinstance(spec.function, ReduceFunction)
    assert spec.function.reduce(("a", 1), ("a", 2)) == ("a", 3)
    p = spec
    assert isinstance(p.trigger, EventTimeTrigger)  # the assigner's default
    assert p.window_assigner is windowed._window_assigner
    assert (p.allowed_lateness, p.late_data_output_tag, p.window_state, p.non_keyed) == (0, None, "reducing", False)
    assert isinstance(p.window_function, PassThroughWindowFunction)
    assert isinstance(p.internal_window_function, InternalSingleValueWindowFunction)
    assert t.state_key_selector is p.key_selector is windowed._keyed_stream._key_selector()
    assert result.get_type() == INPUT_TYPE  # reduce without window function keeps the input type
    graph = build_stream_graph([t])
    (edge,) = graph.in_edges(t.id)
    assert edge.label == "HASH" and graph.node(t.id).is_keyed


def test_reduce_with_a_process_window_function() -> None:
    pwf = PerWindow()
    t = _windowed().reduce(lambda a, b: a, window_function=pwf, output_type=Types.STRING())._transformation
    assert t.name.endswith("ReduceFunction, PerWindow)")
    assert t.operator.window_function is pwf
    internal = t.operator.internal_window_function
    assert isinstance(internal, InternalSingleValueProcessWindowFunction) and internal.wrapped_function is pwf
    with pytest.raises(InvalidFunctionError, match="WindowFunction or ProcessWindowFunction"):
        _windowed().reduce(lambda a, b: a, window_function=lambda k, w, i: i)


def test_aggregate_apply_and_process() -> None:
    avg = Average()
    agg = _windowed().aggregate(avg, accumulator_type=Types.TUPLE([Types.LONG(), Types.LONG()]),
                                output_type=Types.DOUBLE())._transformation
    assert agg.operator.function is avg and agg.operator.window_state == "aggregating"
    assert agg.operator.accumulator_type == Types.TUPLE([Types.LONG(), Types.LONG()])
    assert agg.output_type == Types.DOUBLE()
    assert agg.name == "Window(TumblingEventTimeWindows(5000), EventTimeTrigger, Average, PassThroughWindowFunction)"

    applied = _windowed().apply(Apply())._transformation
    assert applied.operator.function is None and applied.operator.window_state == "list"
    assert isinstance(applied.operator.internal_window_function, InternalIterableWindowFunction)
    assert applied.name.endswith("EventTimeTrigger, Apply)")

    processed = _windowed().process(PerWindow())._transformation
    assert isinstance(processed.operator.internal_window_function, InternalIterableProcessWindowFunction)

    with pytest.raises(InvalidFunctionError, match="AggregateFunction"):
        _windowed().aggregate(lambda v, acc: acc)
    with pytest.raises(InvalidFunctionError, match="WindowFunction"):
        _windowed().apply(PerWindow())
    with pytest.raises(InvalidFunctionError, match="ProcessWindowFunction"):
        _windowed().process(Apply())


def test_trigger_lateness_and_late_tag_reach_the_operator() -> None:
    tag = OutputTag("late", INPUT_TYPE)
    windowed = _windowed().trigger(CountTrigger.of(3)).allowed_lateness(Duration.of_seconds(2))
    result = windowed.side_output_late_data(tag).reduce(lambda a, b: a)
    p = result._transformation.operator
    assert isinstance(p.trigger, CountTrigger) and "CountTrigger" in result._transformation.name
    assert p.allowed_lateness == 2000 and p.late_data_output_tag == tag
    late = result.get_side_output(tag).map(str)
    graph = build_stream_graph([late._transformation])
    (edge,) = graph.in_edges(late._transformation.id)
    assert edge.output_tag == tag and edge.source_id == result._transformation.id
    assert _windowed().allowed_lateness(1500)._allowed_lateness == 1500


def test_lateness_is_ignored_for_processing_time_and_checked_for_sign() -> None:
    windowed = _windowed(TumblingProcessingTimeWindows.of(Time.seconds(1)))
    assert windowed.allowed_lateness(5000).reduce(lambda a, b: a)._transformation.operator.allowed_lateness == 0
    assert isinstance(windowed._window_assigner.get_default_trigger(None), ProcessingTimeTrigger)
    with pytest.raises(InvalidProgramError, match=">= 0"):
        _windowed().allowed_lateness(-1)
    with pytest.raises(InvalidProgramError):
        _windowed().allowed_lateness("1s")


def test_misused_window_arguments() -> None:
    keyed = _source().key_by(lambda v: v[0])
    with pytest.raises(InvalidProgramError, match="WindowAssigner"):
        keyed.window(5000)
    with pytest.raises(InvalidProgramError, match="Trigger"):
        _windowed().trigger("count")
    with pytest.raises(InvalidProgramError, match="OutputTag"):
        _windowed().side_output_late_data("late")
    class NotMerging(EventTimeTrigger):
        def can_merge(self):
            return False

    sessions = keyed.window(EventTimeSessionWindows.with_gap(Time.seconds(1)))
    with pytest.raises(InvalidProgramError, match="merging window assigner"):
        sessions.trigger(NotMerging())
    assert sessions.trigger(CountTrigger.of(2)) is sessions  # CountTrigger can merge


def test_window_all_runs_one_subtask_keyed_by_a_constant() -> None:
    src = _source(4)
    result = src.window_all(TumblingEventTimeWindows.of(1000)).reduce(lambda a, b: a)
    t = result._transformation
    assert t.name == ("AllWindow(TumblingEventTimeWindows(1000), EventTimeTrigger, ReduceFunction, "
                      "PassThroughAllWindowFunction)")
    assert (t.parallelism, t.max_parallelism) == (1, 1)
    assert isinstance(t.state_key_selector, NullByteKeySelector) and t.operator.non_keyed
    with pytest.raises(InvalidProgramError, match="non-parallel"):
        result.set_parallelism(2)
    graph = build_stream_graph([t])
    (edge,) = graph.in_edges(t.id)
    assert edge.source_id == src._transformation.id and edge.label == "HASH"


def test_window_all_functions_are_the_non_keyed_kinds() -> None:
    class AllApply(AllWindowFunction):
        def apply(self, window, inputs):
            yield len(list(inputs))

    class AllProcess(ProcessAllWindowFunction):
        def process(self, context, elements):
            yield context.window()

    windowed = _source().window_all(TumblingEventTimeWindows.of(1000))
    assert windowed.apply(AllApply())._transformation.operator.window_state == "list"
    assert windowed.process(AllProcess())._transformation.name.endswith("AllProcess)")
    assert isinstance(windowed.aggregate(Average())._transformation.operator.window_function,
                      PassThroughAllWindowFunction)
    with pytest.raises(InvalidFunctionError, match="AllWindowFunction"):
        windowed.apply(Apply())
    with pytest.raises(InvalidProgramError, match=r"window_all\(\) expects a WindowAssigner"):
        _source().window_all(None)


def test_window_input_type_and_environment() -> None:
    windowed = _windowed()
    assert windowed.get_input_type() == INPUT_TYPE
    assert windowed.get_execution_environment() is windowed._keyed_stream.get_execution_environment()
