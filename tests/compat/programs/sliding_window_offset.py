"""Sliding event-time windows with an offset (SlidingEventTimeWindows.of(size, slide, offset)) and a ProcessWindowFunction that overrides clear(), typed Types.TUPLE([STRING, LONG, INT]); modelled on PyFlink's sliding_windowing example."""
import logging
import sys
from typing import Iterable

from streamkernel.common import Time, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from streamkernel.datastream.window import SlidingEventTimeWindows, TimeWindow

TAPS = [("door", 0), ("gate", 1), ("door", 2), ("door", 5), ("gate", 6), ("door", 9),
        ("gate", 13), ("door", 14), ("gate", 22)]


class TapTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class TapsInWindow(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key: str, context: ProcessWindowFunction.Context,
                elements: Iterable[tuple]) -> Iterable[tuple]:
        yield key, context.window().start, len(list(elements))

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        logging.debug("window %s of %s is done", context.window(), "taps")


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(message)s")
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    taps = env.from_collection(TAPS, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    taps.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(TapTime())) \
        .key_by(lambda tap: tap[0], key_type=Types.STRING()) \
        .window(SlidingEventTimeWindows.of(Time.milliseconds(8), Time.milliseconds(4), Time.milliseconds(1))) \
        .process(TapsInWindow(), Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])) \
        .print()
    env.execute("sliding-window-offset")
