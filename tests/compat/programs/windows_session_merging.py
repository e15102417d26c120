"""Event-time session windows that merge when an out-of-order element bridges two sessions (EventTimeSessionWindows.with_gap, with_dynamic_gap), ProcessWindowFunction with global_state() and clear(), aggregate(AggregateFunction, ProcessWindowFunction), reduce(ReduceFunction, WindowFunction), allowed_lateness."""
from typing import Iterable

from streamkernel.common import Duration, Time, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import (AggregateFunction, ProcessWindowFunction, StreamExecutionEnvironment,
                                     WindowFunction)
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window import EventTimeSessionWindows, SessionWindowTimeGapExtractor, TimeWindow

GAP = 10
LATENESS = 5
# (user, event time in ms, amount); out of order: a later element bridges two sessions.
# The watermark lags by more than the input's span, so every window fires at end of input.
CLICKS = [("a", 1, 4), ("a", 20, 2), ("b", 3, 1), ("b", 5, 7), ("a", 11, 5), ("b", 40, 3), ("a", 52, 6),
          ("b", 27, 2), ("b", 33, 8), ("a", 60, 1)]
# (user, event time, amount, the gap this click keeps the session open)
VISITS = [("v", 2, 3, 4), ("w", 4, 5, 20), ("v", 12, 1, 3), ("v", 7, 6, 5), ("w", 30, 2, 2), ("w", 26, 4, 5),
          ("v", 40, 9, 1)]


class ClickTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class VisitGap(SessionWindowTimeGapExtractor):
    def extract(self, element) -> int:
        return element[3]


class SessionContents(ProcessWindowFunction):
    """Every click of a session, in the order the window hands them over, and how many sessions came before."""

    def process(self, key, context: ProcessWindowFunction.Context, elements: Iterable[tuple]):
        seen = context.global_state().get_state(ValueStateDescriptor("sessions", Types.INT()))
        before = seen.value() or 0
        seen.update(before + 1)
        window: TimeWindow = context.window()
        yield f"contents {key} [{window.start},{window.end}) {[e[2] for e in elements]} after {before}"


class Average(AggregateFunction):
    def create_accumulator(self):
        return 0, 0

    def add(self, value, accumulator):
        return accumulator[0] + value[2], accumulator[1] + 1

    def get_result(self, accumulator):
        return accumulator[0], accumulator[1]

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]


class AverageReport(ProcessWindowFunction):
    def process(self, key, context: ProcessWindowFunction.Context, elements):
        total, count = next(iter(elements))
        window = context.window()
        yield f"average {key} [{window.start},{window.end}) {total}/{count} at {context.current_watermark() > 100}"


class Largest(WindowFunction):
    def apply(self, key, window: TimeWindow, inputs):
        return [f"largest {key} [{window.start},{window.end}) {[i[2] for i in inputs]}"]


class LateCleanup(ProcessWindowFunction):
    """Sums of sessions with allowed lateness (fired at the end, cleaned up LATENESS ms later); clear() counts the sessions cleaned up so far."""

    def process(self, key, context: ProcessWindowFunction.Context, elements):
        cleared = context.global_state().get_state(ValueStateDescriptor("cleared", Types.INT())).value() or 0
        window = context.window()
        yield f"lateness {key} [{window.start},{window.end}) {sum(e[2] for e in elements)} cleared {cleared}"

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        cleared = context.global_state().get_state(ValueStateDescriptor("cleared", Types.INT()))
        cleared.update((cleared.value() or 0) + 1)


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    watermarks = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(1000)) \
        .with_timestamp_assigner(ClickTime())
    clicks = env.from_collection(CLICKS).assign_timestamps_and_watermarks(watermarks) \
        .key_by(lambda click: click[0], key_type=Types.STRING())
    clicks.window(EventTimeSessionWindows.with_gap(Time.milliseconds(GAP))).process(SessionContents()).print()
    clicks.window(EventTimeSessionWindows.with_gap(Time.milliseconds(GAP))) \
        .reduce(lambda x, y: x if x[2] >= y[2] else y, Largest()).print()
    clicks.window(EventTimeSessionWindows.with_gap(Time.milliseconds(GAP))).allowed_lateness(LATENESS) \
        .process(LateCleanup()).print()
    env.from_collection(VISITS).assign_timestamps_and_watermarks(watermarks) \
        .key_by(lambda visit: visit[0], key_type=Types.STRING()) \
        .window(EventTimeSessionWindows.with_dynamic_gap(VisitGap())) \
        .aggregate(Average(), AverageReport(), accumulator_type=Types.TUPLE([Types.INT(), Types.INT()])).print()
    env.execute("windows-session-merging")
