"""Late data: side output, numLateRecordsDropped, allowed lateness (re-firing, cleanup), end of input."""

from __future__ import annotations

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common.watermark_strategy import MAX_WATERMARK
from streamkernel.datastream.function_window import ProcessWindowFunction
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.datastream.window import (
    EventTimeTrigger,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
)
from streamkernel.runtime.state.heap import HeapKeyedStateBackend

OperatorHarness = harness.OperatorHarness
first = harness.first
add_counts = harness.add_counts
entries = harness.entries

LATE = OutputTag("late")


class GeneralEventTimeTrigger(EventTimeTrigger):
    """EventTimeTrigger under another class: the operator takes the general (per-timer) path."""


PATHS = pytest.mark.parametrize("trigger", [None, GeneralEventTimeTrigger()], ids=["fast", "general"])


def window_harness(assigner, trigger=None, lateness=0, late_tag=None, function=None, **kwargs) -> OperatorHarness:
    env = StreamExecutionEnvironment.get_execution_environment()
    windowed = env.from_collection([("x", 0)]).key_by(first).window(assigner).allowed_lateness(lateness)
    if late_tag is not None:
        windowed = windowed.side_output_late_data(late_tag)
    if trigger is not None:
        windowed = windowed.trigger(trigger)
    stream = windowed.process(function) if function is not None else windowed.reduce(add_counts)
    return OperatorHarness(stream._transformation.operator, keyed=True, **kwargs)


@PATHS
def test_late_records_go_to_the_side_output_with_their_timestamp(trigger):
    h = window_harness(TumblingEventTimeWindows.of(10), trigger, late_tag=LATE)
    h.process([("a", 1)], [5])
    h.watermark(10)
    h.process([("a", 2), ("b", 3), ("a", 4)], [3, 9, 12])  # 3 and 9 belong to the fired window [0,10)
    h.watermark(MAX_WATERMARK)
    assert h.output.side(LATE) == [(("a", 2), 3), (("b", 3), 9)]
    assert h.output.records == [(("a", 1), 9), (("a", 4), 19)]
    assert h.metrics.user.counter("numLateRecordsDropped").get_count() == 0


@PATHS
def test_late_records_without_a_side_output_are_counted_as_dropped(trigger):
    h = window_harness(TumblingEventTimeWindows.of(10), trigger)
    h.watermark(50)
    h.process([("a", 1), ("a", 2), ("a", 3)], [49, 41, 50])  # [40,50) is over; 50 is on time
    assert h.metrics.user.counter("numLateRecordsDropped").get_count() == 2
    assert h.output.side(LATE) == []
    h.watermark(MAX_WATERMARK)
    assert h.output.values == [("a", 3)]


@PATHS
def test_allowed_lateness_refires_the_window_with_each_late_record(trigger):
    h = window_harness(TumblingEventTimeWindows.of(10), trigger, lateness=5, late_tag=LATE)
    h.process([("a", 1), ("a", 2)], [1, 2])
    h.watermark(9)  # fires at the end of the window ...
    assert h.output.records == [(("a", 3), 9)]
    h.process([("a", 10)], [4])  # ... and again for a late record within the lateness
    assert h.output.records[-1] == (("a", 13), 9)
    h.watermark(13)
    h.process([("a", 100)], [8])
    assert h.output.records[-1] == (("a", 113), 9)
    h.watermark(14)  # cleanup time 9 + 5: the window's state is gone
    h.process([("a", 1000)], [7])
    assert h.output.side(LATE) == [(("a", 1000), 7)]
    assert len(h.output.records) == 3
    assert entries(h) == []


@PATHS
def test_a_window_first_seen_within_the_lateness_fires_at_once(trigger):
    h = window_harness(TumblingEventTimeWindows.of(10), trigger, lateness=20)
    h.watermark(25)
    h.process([("a", 1), ("b", 1), ("a", 1)], [12, 5, 15])  # [10,20) is due, kept until 39; [0,10) until 29
    assert h.output.records == [(("a", 1), 19), (("b", 1), 9), (("a", 2), 19)]
    h.watermark(MAX_WATERMARK)  # no second firing at the end: EventTimeTrigger fired them already
    assert len(h.output.records) == 3


@PATHS
def test_sliding_record_late_for_some_windows_only_is_not_late(trigger):
    h = window_harness(SlidingEventTimeWindows.of(20, 10), trigger, late_tag=LATE)
    h.watermark(19)  # [0,20) has fired
    h.process([("a", 1)], [15])  # belongs to [0,20) (late) and [10,30) (on time)
    h.process([("a", 2)], [5])  # belongs to [-10,10) and [0,20): both late
    h.watermark(MAX_WATERMARK)
    assert h.output.records == [(("a", 1), 29)]
    assert h.output.side(LATE) == [(("a", 2), 5)]


@PATHS
def test_end_of_input_fires_every_event_time_window_and_leaves_no_state(trigger):
    h = window_harness(TumblingEventTimeWindows.of(10), trigger, lateness=1000)
    h.process([("a", 1), ("b", 1), ("a", 1)], [1, 22, 35])
    h.operator.end_input()
    h.watermark(MAX_WATERMARK)
    h.finish()
    assert sorted(h.output.records) == [(("a", 1), 9), (("a", 1), 39), (("b", 1), 29)]
    assert entries(h) == []
    assert h.operator.timers.num_event_time_timers() == 0


def test_process_function_clear_is_called_at_cleanup_time_not_at_firing():
    calls = []

    class Tracked(ProcessWindowFunction):
        def process(self, key, context, elements):
            calls.append(("process", context.window()))
            return []

        def clear(self, context):
            calls.append(("clear", context.window()))

    h = window_harness(TumblingEventTimeWindows.of(10), lateness=10, function=Tracked())
    h.process([("a", 1)], [1])
    h.watermark(9)
    assert calls == [("process", TimeWindow(0, 10))]
    h.watermark(19)
    assert calls == [("process", TimeWindow(0, 10)), ("clear", TimeWindow(0, 10))]


def test_restored_fast_path_does_not_refire_windows_that_already_fired():
    def build(**kwargs):
        return window_harness(TumblingEventTimeWindows.of(10), lateness=50, late_tag=LATE, **kwargs)

    before = build()
    before.process([("a", 1), ("b", 1)], [1, 2])
    before.watermark(9)  # both panes fired; kept until 59
    before.process([("a", 1)], [15])
    assert len(before.output.records) == 2
    backend = HeapKeyedStateBackend(128, range(0, 128))
    backend.restore([before.backend.snapshot()])
    after = build(keyed_backend=backend)  # a restored job starts again from the minimal watermark
    after.process([("b", 5)], [3])  # [0,10) of b fired before: this record makes it fire again later
    after.watermark(9)
    assert sorted(after.output.records) == [(("b", 6), 9)]
    after.watermark(MAX_WATERMARK)
    assert sorted(after.output.records) == [(("a", 1), 19), (("b", 6), 9)]
    assert entries(after, "window-fired") == []  # marks go with their panes at cleanup
