"""Event-time session windows with a fixed gap (EventTimeSessionWindows.with_gap(Time.milliseconds)), a ProcessWindowFunction with clear(), connectors imported from streamkernel.datastream.connectors, printed or written with --output; modelled on PyFlink's session_with_gap_window example."""
import argparse
import sys
from typing import Iterable

from streamkernel.common import Encoder, Time, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from streamkernel.datastream.connectors import FileSink, OutputFileConfig, RollingPolicy
from streamkernel.datastream.window import EventTimeSessionWindows, TimeWindow

GAP_MS = 4

# (user, event time in ms), in event-time order
ACTIVITY = [("alice", 1), ("bob", 2), ("alice", 3), ("alice", 5), ("bob", 8), ("bob", 10),
            ("alice", 12), ("bob", 13), ("alice", 19), ("bob", 25)]


class ActivityTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class SessionSummary(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],
                elements: Iterable[tuple]) -> Iterable[tuple]:
        session = context.window()
        return [(key, session.start, session.end, len(list(elements)))]

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", dest="output", required=False)
    output_path = parser.parse_known_args(sys.argv[1:])[0].output

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    sessions = env.from_collection(ACTIVITY, type_info=Types.TUPLE([Types.STRING(), Types.INT()])) \
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ActivityTime())) \
        .key_by(lambda event: event[0], key_type=Types.STRING()) \
        .window(EventTimeSessionWindows.with_gap(Time.milliseconds(GAP_MS))) \
        .process(SessionSummary(), Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.INT()]))

    if output_path is not None:
        sessions.sink_to(
            sink=FileSink.for_row_format(base_path=output_path, encoder=Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("session").with_part_suffix(".log").build())
            .with_rolling_policy(RollingPolicy.default_rolling_policy())
            .build())
    else:
        sessions.print()
    env.execute("session-fixed-gap")
