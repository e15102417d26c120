"""Map / FlatMap / Filter / Process operators: Flink semantics per batch, keyed slow path, errors."""

from __future__ import annotations

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.datastream.function_base import FilterFunction, FlatMapFunction, MapFunction
from streamkernel.datastream.function_process import ProcessFunction
from streamkernel.datastream.function_wrappers import (
    FilterFunctionWrapper,
    FlatMapFunctionWrapper,
    KeySelectorWrapper,
    MapFunctionWrapper,
)
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.errors import InvalidProgramError, StreamKernelError, UserFunctionError
from streamkernel.graph.operator_specs import FilterSpec, FlatMapSpec, MapSpec, ProcessSpec

OperatorHarness = harness.OperatorHarness


# ------------------------------------------------------------------ map
def test_map_keeps_order_and_passes_timestamps_through():
    h = OperatorHarness(MapSpec(function=MapFunctionWrapper(lambda x: x * 3 + 1)))
    h.process([1, 2, 3], [10, 20, 30]).process([4])
    assert h.output.records == [(4, 10), (7, 20), (10, 30), (13, None)]
    assert h.metrics.records_in == 4 and h.metrics.records_out == 4


def test_map_function_class_with_open_and_close():
    events = []

    class Scale(MapFunction):
        def open(self, runtime_context):
            events.append(("open", runtime_context.get_index_of_this_subtask()))
            self.factor = 10

        def map(self, value):
            return value * self.factor

        def close(self):
            events.append("close")

    h = OperatorHarness(MapSpec(function=Scale()))
    h.process([1, 2])
    h.close()
    assert h.output.values == [10, 20]
    assert events == [("open", 0), "close"]


def test_map_error_names_operator_subtask_and_failing_record():
    seen = []

    def f(x):
        seen.append(x)
        return 10 // x

    h = OperatorHarness(MapSpec(function=MapFunctionWrapper(f)), name="Map")
    with pytest.raises(UserFunctionError) as info:
        h.process([5, 2, 0, 7])
    message = str(info.value)
    assert "'Map'" in message and "Map (1/1)#0" in message
    assert "record 0" in message and "ZeroDivisionError" in message
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert isinstance(info.value, StreamKernelError)
    assert seen == [5, 2, 0]  # never re-run: records after the failing one untouched
    assert h.output.values == []  # nothing of the failed batch is emitted


def test_error_record_repr_is_truncated():
    h = OperatorHarness(MapSpec(function=MapFunctionWrapper(lambda x: 1 / 0)))
    with pytest.raises(UserFunctionError) as info:
        h.process(["x" * 5000])
    assert len(str(info.value)) < 600
    assert "5002 chars" in str(info.value)


def test_keyed_map_sets_current_key_so_state_works():
    class Count(MapFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("count"))

        def map(self, value):
            n = (self.count.value() or 0) + 1
            self.count.update(n)
            return value[0], n

    spec = MapSpec(function=Count(), key_selector=KeySelectorWrapper(lambda r: r[0]))
    h = OperatorHarness(spec, keyed=True)
    h.process([("a", 1), ("b", 1), ("a", 1)]).process([("a", 1), ("b", 1)])
    assert h.output.values == [("a", 1), ("b", 1), ("a", 2), ("a", 3), ("b", 2)]


def test_state_on_non_keyed_map_is_a_clear_error():
    class Bad(MapFunction):
        def open(self, runtime_context):
            runtime_context.get_state(ValueStateDescriptor("count"))

        def map(self, value):
            return value

    with pytest.raises(InvalidProgramError, match="keyed stream"):
        OperatorHarness(MapSpec(function=Bad()))


# ------------------------------------------------------------------ flat_map
def test_flat_map_accepts_generators_and_iterables_and_replicates_timestamps():
    def gen(x):
        for i in range(x):
            yield (x, i)

    h = OperatorHarness(FlatMapSpec(function=FlatMapFunctionWrapper(gen)))
    h.process([2, 0, 1], [100, 200, 300])
    assert h.output.records == [((2, 0), 100), ((2, 1), 100), ((1, 0), 300)]

    class Split(FlatMapFunction):
        def flat_map(self, value):
            return value.split()

    h2 = OperatorHarness(FlatMapSpec(function=Split()))
    h2.process(["a b", "", "c"])
    assert h2.output.values == ["a", "b", "c"] and h2.output.timestamps == [None] * 3
    assert h2.metrics.records_in == 3 and h2.metrics.records_out == 3


def test_flat_map_error_inside_generator_reports_the_record():
    def gen(x):
        yield x
        if x == "bad":
            raise ValueError("boom")

    h = OperatorHarness(FlatMapSpec(function=FlatMapFunctionWrapper(gen)))
    with pytest.raises(UserFunctionError, match="record 'bad'.*ValueError: boom"):
        h.process(["ok", "bad", "later"], [1, 2, 3])


def test_flat_map_returning_none_fails_clearly():
    h = OperatorHarness(FlatMapSpec(function=FlatMapFunctionWrapper(lambda x: None)))
    with pytest.raises(UserFunctionError, match="not iterable"):
        h.process([1])


def test_keyed_flat_map_with_timestamps():
    class Emit(FlatMapFunction):
        def open(self, runtime_context):
            self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

        def flat_map(self, value):
            if self.seen.value() is None:
                self.seen.update(True)
                yield value

    spec = FlatMapSpec(function=Emit(), key_selector=KeySelectorWrapper(lambda r: r % 3))
    h = OperatorHarness(spec, keyed=True)
    h.process([1, 2, 4, 3, 5, 6], [1, 2, 4, 3, 5, 6])
    assert h.output.records == [(1, 1), (2, 2), (3, 3)]


# ------------------------------------------------------------------ filter
def test_filter_keeps_truthy_records_with_their_timestamps():
    h = OperatorHarness(FilterSpec(function=FilterFunctionWrapper(lambda x: x % 2)))
    h.process([1, 2, 3, 4, 5], [10, 20, 30, 40, 50])
    assert h.output.records == [(1, 10), (3, 30), (5, 50)]
    h.output.clear()
    h.process([2, 4])  # nothing kept: no empty batch emitted
    assert h.output.events == []
    h.process([7, 8])
    assert h.output.records == [(7, None)]
    assert h.metrics.records_in == 9 and h.metrics.records_out == 4


def test_filter_error_reports_record_with_and_without_timestamps():
    class F(FilterFunction):
        def filter(self, value):
            return 1 / value

    h = OperatorHarness(FilterSpec(function=F()))
    with pytest.raises(UserFunctionError, match="record 0"):
        h.process([3, 0, 4])
    with pytest.raises(UserFunctionError, match="record 0"):
        h.process([3, 4, 0], [1, 2, 3])


def test_keyed_filter():
    class FirstPerKey(FilterFunction):
        def open(self, runtime_context):
            self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

        def filter(self, value):
            first = self.seen.value() is None
            self.seen.update(True)
            return first

    spec = FilterSpec(function=FirstPerKey(), key_selector=KeySelectorWrapper(lambda r: r[0]))
    h = OperatorHarness(spec, keyed=True)
    h.process([("a", 1), ("a", 2), ("b", 3)], [1, 2, 3])
    assert h.output.records == [(("a", 1), 1), (("b", 3), 3)]


# ------------------------------------------------------------------ process
NEGATIVE = OutputTag("negative")


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        if value < 0:
            yield NEGATIVE, value
        else:
            yield value, ctx.timestamp()


def test_process_yields_main_and_side_outputs_with_record_timestamps():
    h = OperatorHarness(ProcessSpec(function=Split()))
    h.process([1, -2, 3, -4], [10, 20, 30, 40])
    assert h.output.records == [((1, 10), 10), ((3, 30), 30)]
    assert h.output.side(NEGATIVE) == [(-2, 20), (-4, 40)]
    # side outputs go out once per batch, after the main batch
    assert [e[0] for e in h.output.events] == ["records", "side"]
    assert h.metrics.records_out == 4


def test_process_without_timestamps_and_ctx_output():
    other = OutputTag("other")

    class F(ProcessFunction):
        def process_element(self, value, ctx):
            ctx.output(other, value * 10)
            return [value, value]  # any iterable works, not only generators

    h = OperatorHarness(ProcessSpec(function=F()))
    h.process([1, 2])
    assert h.output.records == [(1, None), (1, None), (2, None), (2, None)]
    assert h.output.side(other) == [(10, None), (20, None)]


def test_process_returning_none_emits_nothing():
    class Sink(ProcessFunction):
        def process_element(self, value, ctx):
            return None

    h = OperatorHarness(ProcessSpec(function=Sink()))
    h.process([1, 2, 3])
    assert h.output.events == []
    assert h.metrics.records_in == 3


def test_process_time_queries_work_but_timers_are_refused_as_in_flink():
    class Timed(ProcessFunction):
        def process_element(self, value, ctx):
            service = ctx.timer_service()
            yield service.current_processing_time(), service.current_watermark()
            if value == "timer":
                service.register_event_time_timer(5)

    h = OperatorHarness(ProcessSpec(function=Timed()), start_ms=1234)
    h.watermark(77)
    h.process(["x"])
    assert h.output.values == [(1234, 77)]
    with pytest.raises(UserFunctionError, match="Setting timers is only supported on a keyed streams") as info:
        h.process(["timer"])
    assert isinstance(info.value.__cause__, InvalidProgramError)


def test_process_side_output_with_a_non_tag_is_an_error():
    class Bad(ProcessFunction):
        def process_element(self, value, ctx):
            ctx.output("negative", value)
            return ()

    h = OperatorHarness(ProcessSpec(function=Bad()))
    with pytest.raises(UserFunctionError, match="must be an OutputTag"):
        h.process([1])


def test_process_failure_reports_record_and_drops_partial_side_outputs():
    class F(ProcessFunction):
        def process_element(self, value, ctx):
            ctx.output(NEGATIVE, value)
            if value == 2:
                raise KeyError("missing")
            yield value

    h = OperatorHarness(ProcessSpec(function=F()), name="Proc")
    with pytest.raises(UserFunctionError, match=r"'Proc'.*record 2.*KeyError"):
        h.process([1, 2, 3], [1, 2, 3])
    h.process([5])
    assert h.output.side(NEGATIVE) == [(5, None)]


def test_watermarks_are_forwarded():
    h = OperatorHarness(MapSpec(function=MapFunctionWrapper(str)))
    h.watermark(5).watermark(9)
    assert h.output.watermarks == [5, 9]
    assert h.operator.current_watermark == 9
