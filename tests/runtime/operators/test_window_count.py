"""Count windows (PyFlink's CountTumblingWindowAssigner / CountSlidingWindowAssigner with CountTrigger)."""

from __future__ import annotations

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)

from streamkernel.common.watermark_strategy import MAX_WATERMARK
from streamkernel.datastream.function_base import AggregateFunction
from streamkernel.datastream.function_window import ProcessAllWindowFunction, ProcessWindowFunction
from streamkernel.datastream.window import CountTrigger, CountTumblingWindowAssigner, CountWindow, PurgingTrigger
from streamkernel.datastream.windows import MAX_LONG_VALUE

OperatorHarness = harness.OperatorHarness
first = harness.first
add_counts = harness.add_counts
entries = harness.entries


def window_harness(build, **kwargs) -> OperatorHarness:
    h = harness.window_harness(build, **kwargs)
    assert h.operator.spec.kind == "count_window"
    return h


class Contents(ProcessWindowFunction):
    """(key, window id, values in arrival order)."""

    def process(self, key, context, elements):
        yield key, context.window().id, [v for _, v in elements]


def no_window_state_left(h):
    return entries(h) == [] and entries(h, "count") == []


def test_tumbling_count_window_fires_every_size_elements_per_key():
    h = window_harness(lambda ds: ds.key_by(first).count_window(3).reduce(add_counts))
    h.process([("a", 1), ("b", 10), ("a", 2), ("a", 3), ("b", 20)])
    assert h.output.records == [(("a", 6), MAX_LONG_VALUE)]  # a count window ends at Long.MAX_VALUE
    h.process([("b", 30), ("a", 4), ("a", 5), ("a", 6)])
    assert h.output.values == [("a", 6), ("b", 60), ("a", 15)]
    assert no_window_state_left(h)


def test_incomplete_count_windows_are_not_fired_at_end_of_input():
    h = window_harness(lambda ds: ds.key_by(first).count_window(3).process(Contents()))
    h.process([("a", 1), ("a", 2), ("a", 3), ("a", 4)], [1, 2, 3, 4])
    h.operator.end_input()
    h.watermark(MAX_WATERMARK)
    h.finish()
    assert h.output.values == [("a", 0, [1, 2, 3])]


def test_sliding_count_window_follows_pyflink():
    # PyFlink: window i holds positions [i*slide, i*slide+size) of the key and fires when full
    h = window_harness(lambda ds: ds.key_by(first).count_window(4, 2).process(Contents()))
    h.process([("a", v) for v in range(1, 10)])
    assert h.output.values == [("a", 0, [1, 2, 3, 4]), ("a", 1, [3, 4, 5, 6]), ("a", 2, [5, 6, 7, 8])]
    assert entries(h) == [("a", CountWindow(3)), ("a", CountWindow(4))]  # the open windows


def test_sliding_count_window_with_a_slide_larger_than_the_size_skips_elements():
    h = window_harness(lambda ds: ds.key_by(first).count_window(2, 3).process(Contents()))
    h.process([("a", v) for v in range(7)])
    assert h.output.values == [("a", 0, [0, 1]), ("a", 1, [3, 4])]


def test_count_window_aggregate():
    class Mean(AggregateFunction):
        def create_accumulator(self):
            return 0, 0

        def add(self, value, acc):
            return acc[0] + value[1], acc[1] + 1

        def get_result(self, acc):
            return acc[0] / acc[1]

        def merge(self, a, b):
            return a[0] + b[0], a[1] + b[1]

    h = window_harness(lambda ds: ds.key_by(first).count_window(2).aggregate(Mean()))
    h.process([("a", 1), ("b", 4), ("a", 2), ("b", 8), ("a", 9)])
    assert h.output.values == [1.5, 6.0]


def test_count_windows_with_a_smaller_count_trigger_fire_early():
    h = window_harness(lambda ds: ds.key_by(first).count_window(5).trigger(CountTrigger.of(2)).process(Contents()))
    h.process([("a", v) for v in range(1, 8)])
    assert h.output.values == [("a", 0, [1, 2]), ("a", 0, [1, 2, 3, 4]), ("a", 1, [6, 7])]


def test_count_window_with_purging_trigger():
    h = window_harness(lambda ds: ds.key_by(first).count_window(4)
                       .trigger(PurgingTrigger.of(CountTrigger.of(2))).process(Contents()))
    h.process([("a", v) for v in range(1, 6)])
    assert h.output.values == [("a", 0, [1, 2]), ("a", 0, [3, 4])]


def test_count_window_per_key_counters_are_keyed_state():
    h = window_harness(lambda ds: ds.key_by(first).count_window(2).reduce(add_counts))
    h.process([("a", 1), ("b", 1), ("c", 1), ("a", 1)])
    counters = h.backend.snapshot()["states"]["tumble-count-assigner"]["key_groups"]
    assert sorted((k, v) for group in counters.values() for k, _, v in group) == [("a", 2), ("b", 1), ("c", 1)]


def test_count_window_all():
    class All(ProcessAllWindowFunction):
        def process(self, context, elements):
            yield context.window(), [v for _, v in elements]

    h = window_harness(lambda ds: ds.window_all(CountTumblingWindowAssigner.of(2)).process(All()))
    h.process([("a", 1), ("b", 2), ("c", 3)])
    assert h.output.values == [(CountWindow(0), [1, 2])]
