"""Sliding event-time windows (SlidingEventTimeWindows.of(size, slide)) with a ProcessWindowFunction reporting window bounds and sizes, printed or written with --output (FileSink, part suffix); modelled on PyFlink's sliding_time_window example."""
import argparse
import sys
from typing import Iterable

from streamkernel.common import Encoder, Time, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from streamkernel.datastream.connectors.file_system import FileSink, OutputFileConfig, RollingPolicy
from streamkernel.datastream.window import SlidingEventTimeWindows, TimeWindow

SIZE_MS, SLIDE_MS = 6, 3

PINGS = [("eu", 1), ("us", 2), ("eu", 3), ("eu", 7), ("us", 8), ("us", 9), ("eu", 14), ("us", 20)]


class PingTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return int(value[1])


class CountPerWindow(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],
                elements: Iterable[tuple]) -> Iterable[tuple]:
        return [(key, context.window().start, context.window().end, sum(1 for _ in elements))]


def build(env, output_path):
    pings = env.from_collection(PINGS, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    counted = pings \
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(PingTime())) \
        .key_by(lambda ping: ping[0], key_type=Types.STRING()) \
        .window(SlidingEventTimeWindows.of(Time.milliseconds(SIZE_MS), Time.milliseconds(SLIDE_MS))) \
        .process(CountPerWindow(), Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()]))
    if output_path is None:
        counted.print()
        return
    counted.sink_to(
        sink=FileSink.for_row_format(base_path=output_path, encoder=Encoder.simple_string_encoder())
        .with_output_file_config(OutputFileConfig.builder().with_part_suffix(".csv").build())
        .with_rolling_policy(RollingPolicy.default_rolling_policy())
        .build())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", dest="output", required=False)
    args, _ = parser.parse_known_args(sys.argv[1:])
    environment = StreamExecutionEnvironment.get_execution_environment()
    environment.set_parallelism(1)
    build(environment, args.output)
    environment.execute("sliding-window-counts")
