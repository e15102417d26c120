"""Event-time session windows whose gap comes from each element (EventTimeSessionWindows.with_dynamic_gap with a SessionWindowTimeGapExtractor), a ProcessWindowFunction with clear(), printed or written with --output; modelled on PyFlink's session_with_dynamic_gap_window example."""
import argparse
import sys
from typing import Iterable

from streamkernel.common import Encoder, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from streamkernel.datastream.connectors import FileSink, OutputFileConfig, RollingPolicy
from streamkernel.datastream.window import EventTimeSessionWindows, SessionWindowTimeGapExtractor, TimeWindow

# (user, event time in ms, how long in ms this event keeps the session open)
EVENTS = [("alice", 1, 3), ("bob", 2, 10), ("alice", 3, 2), ("alice", 7, 5), ("bob", 9, 1),
          ("alice", 10, 1), ("bob", 14, 4), ("alice", 15, 3), ("bob", 16, 2)]


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class GapOfEvent(SessionWindowTimeGapExtractor):
    def extract(self, element: tuple) -> int:
        return element[2]


class SessionSize(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],
                elements: Iterable[tuple]) -> Iterable[tuple]:
        yield key, context.window().start, context.window().end, len([e for e in elements])

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        return None


def sessions_of(env):
    events = env.from_collection(EVENTS, type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()]))
    return events \
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())) \
        .key_by(lambda event: event[0], key_type=Types.STRING()) \
        .window(EventTimeSessionWindows.with_dynamic_gap(GapOfEvent())) \
        .process(SessionSize(), Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.INT()]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", dest="output", required=False)
    output_path = parser.parse_known_args(sys.argv[1:])[0].output

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    result = sessions_of(env)
    if output_path:
        result.sink_to(
            FileSink.for_row_format(output_path, Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("dyn").build())
            .with_rolling_policy(RollingPolicy.default_rolling_policy())
            .build())
    else:
        result.print()
    env.execute("session-dynamic-gap")
