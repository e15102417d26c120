"""Tumbling event-time windows fired early by a ContinuousEventTimeTrigger (.trigger(ContinuousEventTimeTrigger.of(Time.milliseconds))), a ProcessWindowFunction with clear(), printed or written with --output; modelled on PyFlink's tumbling_time_window_with_continuous_trigger example."""
import argparse
import sys
from typing import Iterable

from streamkernel.common import Duration, Encoder, Time, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from streamkernel.datastream.connectors import FileSink, OutputFileConfig, RollingPolicy
from streamkernel.datastream.window import ContinuousEventTimeTrigger, TimeWindow, TumblingEventTimeWindows

WINDOW_MS = 20
FIRE_EVERY_MS = 6

# (meter, event time in ms); the watermark lags 500 ms, longer than the input spans, so every
# early firing happens when the input has ended and sees the whole window
SAMPLES = [("m1", 3), ("m2", 4), ("m1", 7), ("m1", 13), ("m2", 18), ("m2", 21),
           ("m1", 22), ("m2", 26), ("m1", 39), ("m2", 44)]


class SampleTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class SamplesSoFar(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],
                elements: Iterable[tuple]) -> Iterable[tuple]:
        return [(key, context.window().start, context.window().end, len(list(elements)))]

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", dest="output", required=False)
    output_path = parser.parse_known_args(sys.argv[1:])[0].output

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    watermarks = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)) \
        .with_timestamp_assigner(SampleTime())
    fired = env.from_collection(SAMPLES, type_info=Types.TUPLE([Types.STRING(), Types.INT()])) \
        .assign_timestamps_and_watermarks(watermarks) \
        .key_by(lambda sample: sample[0], key_type=Types.STRING()) \
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))) \
        .trigger(ContinuousEventTimeTrigger.of(Time.milliseconds(FIRE_EVERY_MS))) \
        .process(SamplesSoFar(), Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()]))

    if output_path is not None:
        fired.sink_to(
            sink=FileSink.for_row_format(base_path=output_path, encoder=Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("fired").build())
            .with_rolling_policy(RollingPolicy.default_rolling_policy())
            .build())
    else:
        fired.print()
    env.execute("continuous-trigger-window")
