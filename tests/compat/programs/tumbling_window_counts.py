"""Tumbling event-time windows (TumblingEventTimeWindows.of(Time.milliseconds)) with a ProcessWindowFunction reading context.window(), key_by(key_type=Types.STRING()), a Types.TUPLE result, printed or written with --output (FileSink); modelled on PyFlink's tumbling_time_window example."""
import argparse
import sys
from typing import Iterable

from streamkernel.common import Encoder, Time, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from streamkernel.datastream.connectors.file_system import FileSink, OutputFileConfig, RollingPolicy
from streamkernel.datastream.window import TimeWindow, TumblingEventTimeWindows

WINDOW_MS = 10

# (channel, event time in ms, visits), in event-time order
VISITS = [("web", 0, 3), ("app", 2, 1), ("web", 4, 2), ("web", 9, 5), ("app", 10, 4),
          ("web", 12, 1), ("app", 17, 2), ("app", 19, 6), ("web", 23, 2), ("app", 31, 1)]


class VisitTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class WindowSummary(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],
                elements: Iterable[tuple]) -> Iterable[tuple]:
        window = context.window()
        visits = [element[2] for element in elements]
        yield key, window.start, window.end, len(visits), sum(visits)


def main(output_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    visits = env.from_collection(VISITS, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]))
    summaries = visits \
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(VisitTime())) \
        .key_by(lambda visit: visit[0], key_type=Types.STRING()) \
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))) \
        .process(WindowSummary(),
                 Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.INT(), Types.INT()]))

    if output_path:
        summaries.sink_to(
            FileSink.for_row_format(base_path=output_path, encoder=Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("tumbling").build())
            .with_rolling_policy(RollingPolicy.default_rolling_policy())
            .build())
    else:
        summaries.print()
    env.execute("tumbling-window-counts")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", dest="output", required=False, help="write part files here")
    known, _ = parser.parse_known_args(sys.argv[1:])
    main(known.output)
