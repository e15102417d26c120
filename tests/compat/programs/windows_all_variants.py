"""Non-keyed windows (DataStream.window_all) with reduce(ReduceFunction, AllWindowFunction), aggregate(AggregateFunction, ProcessAllWindowFunction), process(ProcessAllWindowFunction) with window_state()/global_state(), over tumbling event-time, session, tumbling and sliding count windows (CountTumblingWindowAssigner, CountSlidingWindowAssigner)."""
from streamkernel.common import Duration, Time, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import AggregateFunction, StreamExecutionEnvironment
from streamkernel.datastream.functions import AllWindowFunction, ProcessAllWindowFunction, ReduceFunction
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window import (CountSlidingWindowAssigner, CountTumblingWindowAssigner,
                                            EventTimeSessionWindows, TimeWindow, TumblingEventTimeWindows)

SIZE = 50
GAP = 8
# (station, event time in ms, litres), slightly out of order
FILLS = [("s1", 3, 10), ("s2", 12, 4), ("s1", 9, 7), ("s3", 55, 2), ("s2", 61, 9), ("s1", 48, 1),
         ("s3", 120, 6), ("s1", 130, 3), ("s2", 58, 5), ("s3", 126, 8)]


class FillTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class MostLitres(ReduceFunction):
    def reduce(self, value1, value2):
        return value1 if value1[2] >= value2[2] else value2


class Labelled(AllWindowFunction):
    def __init__(self, tag):
        self.tag = tag

    def apply(self, window, inputs):
        span = f"[{window.start},{window.end})" if isinstance(window, TimeWindow) else f"#{window.id}"
        return [f"{self.tag} {span} {list(inputs)}"]


class Stats(AggregateFunction):
    def create_accumulator(self):
        return [0, 0, []]

    def add(self, value, accumulator):
        return [accumulator[0] + value[2], accumulator[1] + 1, accumulator[2] + [value[0]]]

    def get_result(self, accumulator):
        return accumulator[0], accumulator[1], sorted(set(accumulator[2]))

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1], a[2] + b[2]]


class Report(ProcessAllWindowFunction):
    """Each firing with the number of earlier firings (global_state) and of this window (window_state)."""

    def __init__(self, tag, per_window=True):
        self.tag = tag
        self.per_window = per_window

    def process(self, context: ProcessAllWindowFunction.Context, elements):
        earlier = context.global_state().get_state(ValueStateDescriptor("earlier", Types.INT()))
        before = earlier.value() or 0
        earlier.update(before + 1)
        this_window = 0
        if self.per_window:
            fired = context.window_state().get_state(ValueStateDescriptor("fired", Types.INT()))
            this_window = fired.value() or 0
            fired.update(this_window + 1)
        window = context.window()
        span = f"[{window.start},{window.end})" if isinstance(window, TimeWindow) else f"#{window.id}"
        yield f"{self.tag} {span} {list(elements)} after {before} window {this_window}"


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    watermarks = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(5_000)) \
        .with_timestamp_assigner(FillTime())
    fills = env.from_collection(FILLS).assign_timestamps_and_watermarks(watermarks)
    fills.window_all(TumblingEventTimeWindows.of(Time.milliseconds(SIZE))) \
        .reduce(MostLitres(), Labelled("most")).print()
    fills.window_all(TumblingEventTimeWindows.of(Time.milliseconds(SIZE))) \
        .aggregate(Stats(), Report("stats")).print()
    fills.window_all(EventTimeSessionWindows.with_gap(Time.milliseconds(GAP))) \
        .process(Report("sessions", per_window=False)).print()
    fills.window_all(CountTumblingWindowAssigner.of(3)).reduce(lambda a, b: (a[0], a[1], a[2] + b[2])).print()
    fills.window_all(CountSlidingWindowAssigner.of(4, 3)).process(Report("sliding")).print()
    env.execute("windows-all-variants")
