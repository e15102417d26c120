"""TimestampsAndWatermarksOperator: timestamp assignment, periodic watermarks, idleness, end of input."""

from __future__ import annotations

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common.time import Duration
from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK, TimestampAssigner, WatermarkStrategy
from streamkernel.errors import UserFunctionError
from streamkernel.graph.operator_specs import TimestampsWatermarksSpec

OperatorHarness = harness.OperatorHarness


def operator(strategy, **kwargs):
    return OperatorHarness(TimestampsWatermarksSpec(watermark_strategy=strategy), **kwargs)


def test_assigns_timestamps_and_emits_periodic_watermarks_when_they_advance():
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5)) \
        .with_timestamp_assigner(lambda event, ts: event[1])
    h = operator(strategy)
    h.process([("a", 100), ("b", 90), ("c", 120)])
    assert h.output.records == [(("a", 100), 100), (("b", 90), 90), (("c", 120), 120)]
    assert h.output.watermarks == []  # only on the periodic callback
    h.advance_time(199)
    assert h.output.watermarks == []
    h.advance_time(1)
    assert h.output.watermarks == [114]  # max 120 - bound 5 - 1
    h.advance_time(200)  # nothing new: the watermark did not advance, nothing emitted
    assert h.output.watermarks == [114]
    h.process([("d", 110)])  # out of order: the watermark does not go back
    h.advance_time(200)
    assert h.output.watermarks == [114]
    h.process([("e", 300)])
    h.advance_time(200)
    assert h.output.watermarks == [114, 294]
    assert h.metrics.records_in == 5 and h.metrics.records_out == 5


def test_interval_comes_from_the_configuration():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, ts: e)
    h = operator(strategy, configuration={"pipeline.auto-watermark-interval": "50 ms"})
    h.process([10, 20])
    h.advance_time(50)
    assert h.output.watermarks == [19]


def test_zero_interval_disables_periodic_watermarks_but_finish_emits_the_last():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, ts: e)
    h = operator(strategy, configuration={"pipeline.auto-watermark-interval": "0"})
    h.process([10, 20])
    h.advance_time(10_000)
    assert h.output.watermarks == []
    h.finish()
    assert h.output.watermarks == [19]


def test_record_timestamp_argument_is_the_incoming_timestamp_or_min_watermark():
    seen = []

    class Assigner(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            seen.append(record_timestamp)
            return value

    h = operator(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Assigner()))
    h.process([1, 2], [100, 200]).process([3])
    assert seen == [100, 200, MIN_WATERMARK]
    assert h.output.timestamps == [1, 2, 3]


def test_one_argument_assigner_function():
    h = operator(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e: e * 10))
    h.process([1, 2])
    assert h.output.timestamps == [10, 20]


def test_without_assigner_records_keep_their_timestamps():
    h = operator(WatermarkStrategy.for_monotonous_timestamps())
    h.process(["a", "b"], [5, 7])
    h.advance_time(200)
    assert h.output.records == [("a", 5), ("b", 7)]
    assert h.output.watermarks == [6]


def test_upstream_watermarks_are_ignored_except_the_final_one():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, ts: e)
    h = operator(strategy)
    h.process([10])
    h.watermark(1_000_000)
    h.operator.process_watermark_status(True)
    assert h.output.events == [("records", [10], [10])]
    h.watermark(MAX_WATERMARK)
    h.watermark(MAX_WATERMARK)
    assert h.output.watermarks == [MAX_WATERMARK]
    h.advance_time(200)  # nothing after the end of event time
    assert h.output.watermarks == [MAX_WATERMARK]


def test_no_watermarks_strategy_emits_none_but_forwards_the_final_one():
    h = operator(WatermarkStrategy.no_watermarks().with_timestamp_assigner(lambda e, ts: e))
    h.process([1, 2])
    h.advance_time(1000)
    h.finish()
    assert h.output.watermarks == []
    h.watermark(MAX_WATERMARK)
    assert h.output.watermarks == [MAX_WATERMARK]


def test_idleness_marks_idle_after_the_timeout_and_active_on_the_next_record():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, ts: e) \
        .with_idleness(Duration.of_millis(1000))
    h = operator(strategy)
    h.process([10])
    h.advance_time(200)
    assert h.output.watermarks == [9] and h.output.statuses == []
    h.advance_time(800)  # 1000 ms without records
    assert h.output.statuses == [True]
    h.advance_time(1000)
    assert h.output.statuses == [True]  # stays idle, no repeated status, no watermarks
    h.process([50])
    assert h.output.statuses == [True, False]
    assert h.output.events[-1] == ("records", [50], [50])
    h.advance_time(200)
    assert h.output.watermarks == [9, 49]


def test_idle_from_the_start_when_no_record_ever_arrives():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_millis(500))
    h = operator(strategy)
    h.advance_time(600)
    assert h.output.statuses == [True]


def test_bad_timestamps_fail_with_the_record():
    h = operator(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, ts: e["ts"]),
                 name="Timestamps/Watermarks")
    with pytest.raises(UserFunctionError, match=r"'Timestamps/Watermarks'.*record \{'x': 1\}.*KeyError"):
        h.process([{"ts": 1}, {"x": 1}])
    with pytest.raises(UserFunctionError, match="must be int epoch milliseconds.*returned None"):
        h.process([{"ts": 1}, {"ts": None}])


def test_close_stops_the_periodic_callback():
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, ts: e)
    h = operator(strategy)
    h.process([10])
    h.close()
    h.advance_time(1000)
    assert h.output.watermarks == []


def test_a_punctuated_watermark_follows_the_records_it_came_from():
    from streamkernel.common.watermark_strategy import WatermarkGenerator

    class Punctuated(WatermarkGenerator):
        def on_event(self, event, event_timestamp):
            return event_timestamp

        def on_periodic_emit(self):
            return None

    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, ts: e)
    strategy.create_watermark_generator = Punctuated
    h = operator(strategy)
    h.process([3, 8, 5])
    assert h.output.events == [("records", [3, 8, 5], [3, 8, 5]), ("watermark", 8)]
