"""WindowOperator: tumbling/sliding event-time windows, window functions and their context,
window_all, triggers, processing-time windows, the fast path against the general path,
errors and checkpoints of the fast path."""

from __future__ import annotations

import random

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common.watermark_strategy import MAX_WATERMARK
from streamkernel.datastream.function_base import AggregateFunction
from streamkernel.datastream.function_window import ProcessAllWindowFunction, ProcessWindowFunction, WindowFunction
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    PurgingTrigger,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from streamkernel.errors import InvalidProgramError, UserFunctionError
from streamkernel.runtime.state.heap import HeapKeyedStateBackend

OperatorHarness = harness.OperatorHarness
first = harness.first
add_counts = harness.add_counts
entries = harness.entries
window_harness = harness.window_harness


class GeneralEventTimeTrigger(EventTimeTrigger):
    """EventTimeTrigger under another class: the operator takes the general (per-timer) path."""


class Average(AggregateFunction):
    def create_accumulator(self):
        return [0, 0]

    def add(self, value, accumulator):
        accumulator[0] += value[1]
        accumulator[1] += 1
        return accumulator

    def get_result(self, accumulator):
        return accumulator[0] / accumulator[1]

    def merge(self, acc_a, acc_b):
        return [acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]]


# ------------------------------------------------------------------ tumbling / sliding
@pytest.mark.parametrize("trigger", [None, GeneralEventTimeTrigger()], ids=["fast", "general"])
def test_tumbling_event_time_out_of_order_within_bound(trigger):
    def build(ds):
        windowed = ds.key_by(first).window(TumblingEventTimeWindows.of(10))
        return (windowed if trigger is None else windowed.trigger(trigger)).reduce(add_counts)

    h = window_harness(build)
    assert (h.operator._fast is not None) == (trigger is None)
    h.process([("a", 1), ("b", 1), ("a", 1)], [12, 3, 1])  # out of order, nothing late yet
    h.process([("a", 1), ("b", 1)], [9, 15])
    h.watermark(8)
    assert h.output.values == [] and h.output.watermarks == [8]
    h.watermark(9)  # max_timestamp 9 of [0, 10) reached: fires before the watermark is forwarded
    assert [e[0] for e in h.output.events] == ["watermark", "records", "watermark"]
    assert sorted(h.output.records) == [(("a", 2), 9), (("b", 1), 9)]
    h.output.clear()
    h.watermark(MAX_WATERMARK)
    assert sorted(h.output.records) == [(("a", 1), 19), (("b", 1), 19)]
    assert h.output.watermarks == [MAX_WATERMARK]


@pytest.mark.parametrize("trigger", [None, GeneralEventTimeTrigger()], ids=["fast", "general"])
def test_sliding_event_time_windows(trigger):
    def build(ds):
        windowed = ds.key_by(first).window(SlidingEventTimeWindows.of(10, 5))
        return (windowed if trigger is None else windowed.trigger(trigger)).reduce(add_counts)

    h = window_harness(build)
    h.process([("a", 1), ("a", 2), ("a", 4)], [1, 7, 12])
    h.watermark(MAX_WATERMARK)
    # windows [-5,5) {1}, [0,10) {1,7}, [5,15) {7,12}, [10,20) {12}
    assert sorted(h.output.records, key=lambda r: r[1]) == [
        (("a", 1), 4), (("a", 3), 9), (("a", 6), 14), (("a", 4), 19)]


def test_tumbling_windows_with_offset():
    h = window_harness(lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(10, 3)).reduce(add_counts))
    h.process([("a", 1), ("a", 1), ("a", 1)], [2, 3, 12])
    h.watermark(MAX_WATERMARK)
    assert sorted(h.output.records, key=lambda r: r[1]) == [(("a", 1), 2), (("a", 2), 12)]


@pytest.mark.parametrize("assigner", [TumblingEventTimeWindows.of(10), SlidingEventTimeWindows.of(20, 10)])
def test_aggregate_with_accumulator(assigner):
    h = window_harness(lambda ds: ds.key_by(first).window(assigner).aggregate(Average()))
    h.process([("a", 1), ("a", 2), ("b", 10), ("a", 6)], [1, 2, 3, 12])
    h.watermark(9)
    assert sorted(h.output.values) == ([1.5, 10.0] if assigner.get_size() == 10 else [1.5, 10.0])
    h.watermark(MAX_WATERMARK)
    expected = [6.0] if assigner.get_size() == 10 else [3.0, 6.0, 10.0]
    assert sorted(h.output.values[2:]) == expected


def test_reduce_with_process_window_function_sees_window_and_key():
    class Describe(ProcessWindowFunction):
        def process(self, key, context, elements):
            (total,) = elements
            yield key, context.window(), total[1], context.current_watermark()

    h = window_harness(lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(10))
                       .reduce(add_counts, window_function=Describe()))
    assert h.operator._fast is not None  # the fast path calls window functions too
    h.process([("a", 1), ("a", 2), ("b", 5)], [1, 2, 15])
    h.watermark(9)
    assert h.output.records == [(("a", TimeWindow(0, 10), 3, 9), 9)]


@pytest.mark.parametrize("trigger", [None, GeneralEventTimeTrigger()], ids=["fast", "general"])
def test_apply_window_function_gets_all_elements(trigger):
    class Collect(WindowFunction):
        def apply(self, key, window, inputs):
            return [(key, window.start, sorted(v for _, v in inputs))]

    def build(ds):
        windowed = ds.key_by(first).window(TumblingEventTimeWindows.of(10))
        return (windowed if trigger is None else windowed.trigger(trigger)).apply(Collect())

    h = window_harness(build)
    assert (h.operator._fast is None) == (trigger is not None)
    h.process([("a", 3), ("a", 1), ("b", 2), ("a", 7)], [5, 1, 2, 11])
    h.watermark(MAX_WATERMARK)
    assert sorted(h.output.values) == [("a", 0, [1, 3]), ("a", 10, [7]), ("b", 0, [2])]


class StatefulProcess(ProcessWindowFunction):
    """Counts firings per window (window_state) and per key (global_state); side output per firing."""

    tag = OutputTag("firings")

    def __init__(self):
        self.cleared = []

    def process(self, key, context, elements):
        per_window = context.window_state().get_state(ValueStateDescriptor("fires"))
        per_key = context.global_state().get_state(ValueStateDescriptor("fires"))
        per_window.update((per_window.value() or 0) + 1)
        per_key.update((per_key.value() or 0) + 1)
        context.output(self.tag, (key, context.window().start))
        yield key, context.window().start, len(list(elements)), per_window.value(), per_key.value()

    def clear(self, context):
        self.cleared.append(context.window())
        context.window_state().get_state(ValueStateDescriptor("fires")).clear()


def test_process_window_function_context_state_and_side_output():
    function = StatefulProcess()
    h = window_harness(lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(10))
                       .trigger(CountTrigger.of(1)).process(function))
    h.process([("a", 1), ("a", 1), ("a", 1)], [1, 2, 11])
    # each element fires its window: per-window counts 1, 2 then 1; per-key counts 1, 2, 3
    assert h.output.records == [(("a", 0, 1, 1, 1), 9), (("a", 0, 2, 2, 2), 9), (("a", 10, 1, 1, 3), 19)]
    assert h.output.side(StatefulProcess.tag) == [(("a", 0), 9), (("a", 0), 9), (("a", 10), 19)]
    h.watermark(MAX_WATERMARK)  # cleanup of both windows calls clear(context) with the window
    assert function.cleared == [TimeWindow(0, 10), TimeWindow(10, 20)]
    assert entries(h, "fires") == [("a", None)]  # per-window state cleared, global state stays


def test_yielded_tag_value_pairs_go_to_side_outputs():
    tag = OutputTag("big")

    class Split(ProcessWindowFunction):
        def process(self, key, context, elements):
            for _, v in elements:
                yield (tag, v) if v > 5 else v

    h = window_harness(lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(10)).process(Split()))
    h.process([("a", 1), ("a", 9)], [1, 2])
    h.watermark(MAX_WATERMARK)
    assert h.output.records == [(1, 9)]
    assert h.output.side(tag) == [(9, 9)]


def test_window_all_uses_key_zero():
    class All(ProcessAllWindowFunction):
        def process(self, context, elements):
            yield context.window().start, sorted(elements)

    h = window_harness(lambda ds: ds.window_all(TumblingEventTimeWindows.of(10)).process(All()))
    assert h.operator.spec.non_keyed is True
    h.process([("a", 1), ("b", 2), ("c", 3)], [1, 2, 13])
    h.watermark(MAX_WATERMARK)
    assert h.output.values == [(0, [("a", 1), ("b", 2)]), (10, [("c", 3)])]
    assert entries(h) == []


def test_window_all_reduce_on_the_fast_path():
    h = window_harness(lambda ds: ds.window_all(TumblingEventTimeWindows.of(10)).reduce(add_counts))
    assert h.operator._fast is not None
    h.process([("a", 1), ("b", 2), ("c", 3)], [1, 2, 13])
    h.watermark(MAX_WATERMARK)
    assert h.output.records == [(("a", 3), 9), (("c", 3), 19)]


# ------------------------------------------------------------------ triggers
def test_count_trigger_on_time_windows_fires_every_n_and_never_on_time():
    h = window_harness(lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(100))
                       .trigger(CountTrigger.of(2)).reduce(add_counts))
    h.process([("a", 1)] * 5, [1, 2, 3, 4, 5])
    assert h.output.values == [("a", 2), ("a", 4)]  # FIRE keeps the contents: the sum keeps growing
    h.watermark(MAX_WATERMARK)  # the 5th element never fires; cleanup drops it
    assert h.output.values == [("a", 2), ("a", 4)]
    assert entries(h) == []


def test_purging_trigger_clears_the_pane_on_each_firing():
    h = window_harness(lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(100))
                       .trigger(PurgingTrigger.of(CountTrigger.of(2))).reduce(add_counts))
    h.process([("a", 1)] * 5, [1, 2, 3, 4, 5])
    assert h.output.values == [("a", 2), ("a", 2)]


def test_continuous_event_time_trigger_fires_early_and_at_the_end():
    h = window_harness(lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(100))
                       .trigger(ContinuousEventTimeTrigger.of(30)).reduce(add_counts))
    h.process([("a", 1), ("a", 1)], [5, 10])
    h.watermark(29)
    assert h.output.values == []
    h.watermark(30)  # first early firing at 30
    assert h.output.records == [(("a", 2), 99)]
    h.process([("a", 1)], [40])
    h.watermark(65)  # the next at 60
    h.watermark(MAX_WATERMARK)  # 90 and the end of the window (99)
    assert h.output.values == [("a", 2), ("a", 3), ("a", 3), ("a", 3)]
    assert h.operator.timers.num_event_time_timers() == 0


# ------------------------------------------------------------------ processing time
def test_processing_time_tumbling_windows_with_manual_clock():
    h = window_harness(lambda ds: ds.key_by(first).window(TumblingProcessingTimeWindows.of(100))
                       .reduce(add_counts), start_ms=1000)
    h.process([("a", 1), ("b", 1)])  # no timestamps needed
    h.advance_time(50)
    h.process([("a", 1)])
    assert h.output.values == []
    h.advance_time(49)  # clock 1099 = max_timestamp of [1000, 1100)
    assert sorted(h.output.records) == [(("a", 2), 1099), (("b", 1), 1099)]
    h.process([("a", 5)])  # still 1099: a new pane of [1000, 1100), its timer is due at once
    h.advance_time(0)
    assert h.output.records[-1] == (("a", 5), 1099)
    h.advance_time(1)
    h.process([("a", 6)])
    h.advance_time(150)
    assert h.output.records[-1] == (("a", 6), 1199)
    assert h.operator.timers.num_processing_time_timers() == 0


def test_processing_time_windows_open_at_end_of_input_are_not_fired():
    h = window_harness(lambda ds: ds.key_by(first).window(SlidingProcessingTimeWindows.of(100, 50))
                       .reduce(add_counts), start_ms=0)
    h.process([("a", 1)])
    h.operator.end_input()
    h.watermark(MAX_WATERMARK)  # the end of a bounded input: event time ends, processing time does not
    h.finish()
    assert h.output.values == []


# ------------------------------------------------------------------ fast path = general path
def _random_stream(seed, n=400, keys="abc", bound=30):
    rng = random.Random(seed)
    events = []
    for i in range(n):
        ts = i * 5 + rng.randint(-bound, bound)
        events.append(((rng.choice(keys), rng.randint(1, 9)), max(ts, 0)))
    return events


class Elements(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield key, context.window().start, sorted(v for _, v in elements)


FINISH = {
    "reduce": lambda windowed: windowed.reduce(add_counts),
    "aggregate": lambda windowed: windowed.aggregate(Average()),
    "process": lambda windowed: windowed.process(Elements()),
}


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("assigner", [TumblingEventTimeWindows.of(50), SlidingEventTimeWindows.of(60, 20)])
@pytest.mark.parametrize("lateness", [0, 40])
@pytest.mark.parametrize("finish", sorted(FINISH))
def test_fast_path_matches_general_path(seed, assigner, lateness, finish):
    late = OutputTag("late")
    events = _random_stream(seed)
    outputs = []
    for trigger in (None, GeneralEventTimeTrigger()):
        def build(ds, trigger=trigger):
            windowed = ds.key_by(first).window(assigner).allowed_lateness(lateness).side_output_late_data(late)
            return FINISH[finish](windowed if trigger is None else windowed.trigger(trigger))

        h = window_harness(build)
        assert (h.operator._fast is not None) == (trigger is None)
        max_seen = 0
        for start in range(0, len(events), 16):  # watermarks lag 10 ms behind: some records are late
            chunk = events[start:start + 16]
            h.process([v for v, _ in chunk], [t for _, t in chunk])
            max_seen = max([max_seen] + [t for _, t in chunk])
            h.watermark(max_seen - 10)
        h.watermark(MAX_WATERMARK)
        outputs.append((sorted(h.output.records), sorted(h.output.side(late))))
        assert entries(h) == [] and entries(h, "window-fired") == []
    assert outputs[0] == outputs[1]
    if lateness == 0 and assigner.get_size() == 50:
        assert outputs[0][1], "the stream should have produced late records"


def test_fast_path_snapshot_and_restore_continue_exactly():
    events = _random_stream(7, n=200)
    build = (lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(50)).allowed_lateness(30)
             .reduce(add_counts))

    def run(h, part):
        for value, ts in part:
            h.process([value], [ts])
            h.watermark(ts - 40)

    whole = window_harness(build)
    run(whole, events)
    whole.watermark(MAX_WATERMARK)

    before = window_harness(build)
    run(before, events[:100])
    snapshot = before.backend.snapshot()
    backend = HeapKeyedStateBackend(128, range(0, 128))
    backend.restore([snapshot])
    after = window_harness(build, keyed_backend=backend)
    after.operator.current_watermark = before.operator.current_watermark
    run(after, events[100:])
    after.watermark(MAX_WATERMARK)
    assert sorted(before.output.records + after.output.records) == sorted(whole.output.records)


def test_general_path_reads_a_fast_path_snapshot():
    build_fast = lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(10)).reduce(add_counts)  # noqa: E731
    fast = window_harness(build_fast)
    fast.process([("a", 1), ("a", 2), ("b", 3)], [1, 2, 15])
    backend = HeapKeyedStateBackend(128, range(0, 128))
    backend.restore([fast.backend.snapshot()])
    general = window_harness(lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(10))
                             .trigger(GeneralEventTimeTrigger()).reduce(add_counts), keyed_backend=backend)
    general.process([("a", 4)], [3])
    general.watermark(MAX_WATERMARK)
    assert sorted(general.output.records) == [(("a", 7), 9), (("b", 3), 19)]


# ------------------------------------------------------------------ errors and metrics
@pytest.mark.parametrize("trigger", [None, GeneralEventTimeTrigger()], ids=["fast", "general"])
def test_user_function_error_names_operator_and_record(trigger):
    def broken(a, b):
        raise ZeroDivisionError("boom")

    def build(ds):
        windowed = ds.key_by(first).window(TumblingEventTimeWindows.of(10))
        return (windowed if trigger is None else windowed.trigger(trigger)).reduce(broken)

    h = window_harness(build, name="Window(sum)")
    with pytest.raises(UserFunctionError, match=r"Window\(sum\).*\('a', 2\).*ZeroDivisionError: boom"):
        h.process([("a", 1), ("a", 2)], [1, 2])


def test_error_in_window_function_at_firing_names_the_window():
    class Broken(ProcessWindowFunction):
        def process(self, key, context, elements):
            raise ValueError("bad window")

    h = window_harness(lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(10)).process(Broken()))
    h.process([("a", 1)], [1])
    with pytest.raises(UserFunctionError, match=r"TimeWindow\(start=0, end=10\).*'a'.*bad window"):
        h.watermark(20)


@pytest.mark.parametrize("trigger", [None, GeneralEventTimeTrigger()], ids=["fast", "general"])
def test_event_time_windows_need_timestamps(trigger):
    def build(ds):
        windowed = ds.key_by(first).window(TumblingEventTimeWindows.of(10))
        return (windowed if trigger is None else windowed.trigger(trigger)).reduce(add_counts)

    h = window_harness(build)
    with pytest.raises((InvalidProgramError, UserFunctionError), match="assign_timestamps_and_watermarks"):
        h.process([("a", 1)])


def test_records_in_and_out_are_counted():
    h = window_harness(lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(10)).reduce(add_counts))
    h.process([("a", 1), ("b", 1), ("a", 1)], [1, 2, 3])
    h.watermark(MAX_WATERMARK)
    assert (h.metrics.records_in, h.metrics.records_out) == (3, 2)
