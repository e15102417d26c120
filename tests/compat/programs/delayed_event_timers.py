"""Event-time timers in a KeyedProcessFunction (register_event_time_timer, on_timer, get_current_key) over ValueState, with a custom TimestampAssigner and WatermarkStrategy.for_bounded_out_of_orderness(Duration); modelled on PyFlink's event_time_timer example."""
from streamkernel.common import Duration, WatermarkStrategy
from streamkernel.common.typeinfo import Types
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.functions import KeyedProcessFunction, RuntimeContext
from streamkernel.datastream.state import ValueStateDescriptor

# (sensor, event time in ms, reading); the timestamps arrive out of order
READINGS = [
    ("north", 2000, 4),
    ("south", 1000, 9),
    ("north", 1000, 6),
    ("south", 5000, 1),
    ("north", 6000, 3),
    ("south", 3000, 2),
    ("north", 2000, 8),
    ("south", 9000, 5),
]

REPORT_DELAY_MS = 3000
# larger than the spread of the timestamps: no timer is due before the input ends
OUT_OF_ORDERNESS = Duration.of_seconds(8)


class ReadingTime(TimestampAssigner):

    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class DelayedTotal(KeyedProcessFunction):

    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        self.total.update((self.total.value() or 0) + value[2])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + REPORT_DELAY_MS)

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        yield ctx.get_current_key(), timestamp, self.total.value()


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(OUT_OF_ORDERNESS) \
        .with_timestamp_assigner(ReadingTime())
    env.from_collection(READINGS) \
        .assign_timestamps_and_watermarks(strategy) \
        .key_by(lambda reading: reading[0]) \
        .process(DelayedTotal()) \
        .print()
    env.execute("delayed-event-timers")
