"""Session windows: merging (MergingWindowSet), bridging sessions, triggers on merge, state cleanup."""

from __future__ import annotations

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common.watermark_strategy import MAX_WATERMARK
from streamkernel.datastream.function_base import AggregateFunction
from streamkernel.datastream.function_window import ProcessWindowFunction
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window import (
    CountTrigger,
    DynamicEventTimeSessionWindows,
    EventTimeSessionWindows,
    ProcessingTimeSessionWindows,
    TimeWindow,
)
from streamkernel.errors import UserFunctionError
from streamkernel.runtime.operators.merging_window_set import MergingWindowSet
from streamkernel.runtime.state.heap import HeapKeyedStateBackend

OperatorHarness = harness.OperatorHarness
first = harness.first
add_counts = harness.add_counts
entries = harness.entries
window_harness = harness.window_harness


class Session(ProcessWindowFunction):
    """(key, session window, sorted values)."""

    def process(self, key, context, elements):
        yield key, context.window(), sorted(v for _, v in elements)


def sessions(gap=10, **kwargs):
    return window_harness(lambda ds: ds.key_by(first).window(EventTimeSessionWindows.with_gap(gap)).process(Session()),
                          **kwargs)


def assert_no_state_left(h):
    assert entries(h) == []
    assert entries(h, "merging-window-set") == []
    assert h.operator.timers.num_event_time_timers() == 0


# ------------------------------------------------------------------ the operator
def test_elements_closer_than_the_gap_form_one_session():
    h = sessions()
    h.process([("a", 1), ("a", 2), ("b", 3), ("a", 3)], [0, 5, 7, 12])
    h.watermark(20)  # a's session [0, 22) is not over; b's [7, 17) is
    assert h.output.records == [(("b", TimeWindow(7, 17), [3]), 16)]
    h.watermark(MAX_WATERMARK)
    assert h.output.records[1:] == [(("a", TimeWindow(0, 22), [1, 2, 3]), 21)]
    assert_no_state_left(h)


def test_a_gap_splits_sessions():
    h = sessions()
    h.process([("a", 1), ("a", 2)], [0, 10])  # [0,10) and [10,20) touch: Flink merges touching windows
    h.process([("a", 3)], [31])
    h.watermark(MAX_WATERMARK)
    assert h.output.values == [("a", TimeWindow(0, 20), [1, 2]), ("a", TimeWindow(31, 41), [3])]


def test_a_late_arriving_element_bridges_two_sessions():
    h = sessions()
    h.process([("a", 1), ("a", 2)], [0, 25])  # sessions [0,10) and [25,35)
    assert h.operator.timers.num_event_time_timers() == 2
    h.process([("a", 3)], [12])  # [12,22) touches neither ... until the next one
    h.process([("a", 4)], [9])  # [9,19) bridges [0,10) and [12,22), which touch [25,35)? no: 22 < 25
    h.watermark(MAX_WATERMARK)
    assert h.output.values == [("a", TimeWindow(0, 22), [1, 3, 4]), ("a", TimeWindow(25, 35), [2])]
    assert_no_state_left(h)


def test_one_element_merges_three_sessions_out_of_order():
    h = sessions(gap=5)
    h.process([("a", 1), ("a", 2), ("a", 3)], [0, 12, 6])  # [0,5) [12,17) then [6,11): none touch
    h.watermark(4)
    assert h.output.values == [("a", TimeWindow(0, 5), [1])]
    h.process([("a", 4)], [8])  # [8,13) bridges [6,11) and [12,17)
    h.watermark(MAX_WATERMARK)
    assert h.output.values[1:] == [("a", TimeWindow(6, 17), [2, 3, 4])]
    assert_no_state_left(h)


def test_session_reduce_merges_the_contents_of_merged_windows():
    h = window_harness(lambda ds: ds.key_by(first).window(EventTimeSessionWindows.with_gap(10)).reduce(add_counts))
    h.process([("a", 1), ("a", 10), ("a", 100)], [0, 20, 10])  # [10,20) bridges [0,10) and [20,30)
    h.watermark(MAX_WATERMARK)
    assert h.output.records == [(("a", 111), 29)]


def test_session_aggregate_uses_merge_of_accumulators():
    class CountAndSum(AggregateFunction):
        merged = 0

        def create_accumulator(self):
            return (0, 0)

        def add(self, value, acc):
            return acc[0] + 1, acc[1] + value[1]

        def get_result(self, acc):
            return acc

        def merge(self, a, b):
            CountAndSum.merged += 1
            return a[0] + b[0], a[1] + b[1]

    h = window_harness(lambda ds: ds.key_by(first).window(EventTimeSessionWindows.with_gap(10)).aggregate(CountAndSum()))
    h.process([("a", 1), ("a", 2), ("a", 4)], [0, 18, 9])
    h.watermark(MAX_WATERMARK)
    assert h.output.values == [(3, 7)]
    assert CountAndSum.merged >= 1


def test_count_trigger_counts_across_merged_sessions():
    h = window_harness(lambda ds: ds.key_by(first).window(EventTimeSessionWindows.with_gap(10))
                       .trigger(CountTrigger.of(3)).process(Session()))
    h.process([("a", 1), ("a", 2)], [0, 20])  # two sessions, one element each
    assert h.output.values == []
    h.process([("a", 3)], [10])  # bridges them: the merged count is 3 -> FIRE
    assert h.output.values == [("a", TimeWindow(0, 30), [1, 2, 3])]


def test_sessions_allow_global_state_but_not_per_window_state():
    class PerKey(ProcessWindowFunction):
        def process(self, key, context, elements):
            sessions = context.global_state().get_state(ValueStateDescriptor("sessions"))
            sessions.update((sessions.value() or 0) + 1)
            yield context.window(), sessions.value()

    h = window_harness(lambda ds: ds.key_by(first).window(EventTimeSessionWindows.with_gap(10)).process(PerKey()))
    h.process([("a", 1), ("a", 2), ("a", 3)], [0, 5, 40])
    h.watermark(MAX_WATERMARK)
    assert h.output.values == [(TimeWindow(0, 15), 1), (TimeWindow(40, 50), 2)]

    class PerWindow(ProcessWindowFunction):
        def process(self, key, context, elements):
            context.window_state().get_state(ValueStateDescriptor("n"))
            return []

    h = window_harness(lambda ds: ds.key_by(first).window(EventTimeSessionWindows.with_gap(10)).process(PerWindow()))
    h.process([("a", 1)], [0])
    with pytest.raises(UserFunctionError, match="Per-window state is not allowed when using merging windows"):
        h.watermark(MAX_WATERMARK)


def test_late_session_element_goes_to_side_output_and_lateness_keeps_sessions():
    late = OutputTag("late")
    h = window_harness(lambda ds: ds.key_by(first).window(EventTimeSessionWindows.with_gap(10))
                       .allowed_lateness(20).side_output_late_data(late).process(Session()))
    h.process([("a", 1)], [0])
    h.watermark(15)  # [0,10) fires; kept until 9 + 20
    assert h.output.values == [("a", TimeWindow(0, 10), [1])]
    h.process([("a", 2)], [3])  # late but within lateness: merges into [0,13) and fires at once
    assert h.output.values[1:] == [("a", TimeWindow(0, 13), [1, 2])]
    h.watermark(40)  # past the cleanup time of the session
    h.process([("a", 3)], [1])  # [1,11): its cleanup time 30 <= 40 -> dropped as late
    assert h.output.side(late) == [(("a", 3), 1)]
    assert_no_state_left(h)


def test_dynamic_gap_sessions():
    h = window_harness(lambda ds: ds.key_by(first).window(
        DynamicEventTimeSessionWindows.with_dynamic_gap(lambda r: r[1])).process(Session()))
    h.process([("a", 20), ("a", 1)], [0, 15])  # [0,20) swallows [15,16)
    h.process([("a", 2)], [25])
    h.watermark(MAX_WATERMARK)
    assert h.output.values == [("a", TimeWindow(0, 20), [1, 20]), ("a", TimeWindow(25, 27), [2])]


def test_processing_time_sessions_with_manual_clock():
    h = window_harness(lambda ds: ds.key_by(first).window(ProcessingTimeSessionWindows.with_gap(100))
                       .process(Session()), start_ms=1000)
    h.process([("a", 1)])
    h.advance_time(60)
    h.process([("a", 2)])  # 1060: extends the session to [1000, 1160)
    h.advance_time(90)  # 1150: the first window's end passed, but it merged away
    assert h.output.values == []
    h.advance_time(9)  # 1159
    assert h.output.records == [(("a", TimeWindow(1000, 1160), [1, 2]), 1159)]
    assert h.operator.timers.num_processing_time_timers() == 0


# ------------------------------------------------------------------ MergingWindowSet
class _ValueState:
    def __init__(self):
        self.stored = None
        self.writes = 0

    def value(self):
        return self.stored

    def update(self, value):
        self.stored = value
        self.writes += 1

    def clear(self):
        self.stored = None
        self.writes += 1


def test_merging_window_set_keeps_the_state_window_of_a_merged_window():
    state = _ValueState()
    merges = []
    assigner = EventTimeSessionWindows.with_gap(10)
    windows = MergingWindowSet(assigner, state)
    record = lambda *args: merges.append(args)  # noqa: E731
    assert windows.add_window(TimeWindow(0, 10), record) == TimeWindow(0, 10)
    assert windows.add_window(TimeWindow(30, 40), record) == TimeWindow(30, 40)
    assert merges == []
    result = windows.add_window(TimeWindow(8, 32), record)  # bridges both
    assert result == TimeWindow(0, 40)
    (merge_result, merged, state_window, merged_state_windows), = merges
    assert merge_result == TimeWindow(0, 40)
    assert sorted(merged) == [TimeWindow(0, 10), TimeWindow(30, 40)]
    assert state_window == TimeWindow(0, 10) and merged_state_windows == [TimeWindow(30, 40)]
    assert windows.get_state_window(TimeWindow(0, 40)) == TimeWindow(0, 10)
    windows.persist()
    assert state.stored == {TimeWindow(0, 40): TimeWindow(0, 10)}


def test_merging_window_set_inside_an_existing_window_is_no_merge():
    state = _ValueState()
    merges = []
    windows = MergingWindowSet(EventTimeSessionWindows.with_gap(10), state)
    windows.add_window(TimeWindow(0, 20), lambda *a: merges.append(a))
    assert windows.add_window(TimeWindow(5, 15), lambda *a: merges.append(a)) == TimeWindow(0, 20)
    assert windows.add_window(TimeWindow(0, 20), lambda *a: merges.append(a)) == TimeWindow(0, 20)  # identical
    assert merges == []
    assert windows.mapping == {TimeWindow(0, 20): TimeWindow(0, 20)}


def test_merging_window_set_persists_only_changes_and_clears_when_empty():
    state = _ValueState()
    windows = MergingWindowSet(EventTimeSessionWindows.with_gap(10), state)
    windows.persist()
    assert state.writes == 0
    windows.add_window(TimeWindow(0, 10), lambda *a: None)
    windows.persist()
    windows.persist()
    assert state.writes == 1
    restored = MergingWindowSet(EventTimeSessionWindows.with_gap(10), state)
    restored.retire_window(TimeWindow(0, 10))
    restored.persist()
    assert state.stored is None
    with pytest.raises(KeyError):
        restored.retire_window(TimeWindow(0, 10))


def test_merging_window_set_lives_in_keyed_state_per_key():
    backend = HeapKeyedStateBackend(128, range(128))
    from streamkernel.runtime.operators.merging_window_set import MERGING_WINDOW_SET_DESCRIPTOR

    state = backend.get_state(MERGING_WINDOW_SET_DESCRIPTOR)
    for key, window in (("a", TimeWindow(0, 10)), ("b", TimeWindow(5, 15))):
        backend.current_key = key
        windows = MergingWindowSet(EventTimeSessionWindows.with_gap(10), state)
        windows.add_window(window, lambda *a: None)
        windows.persist()
    snapshot = backend.snapshot()["states"]["merging-window-set"]["key_groups"]
    entries = sorted((k, v) for group in snapshot.values() for k, _, v in group)
    assert entries == [("a", {TimeWindow(0, 10): TimeWindow(0, 10)}), ("b", {TimeWindow(5, 15): TimeWindow(5, 15)})]
