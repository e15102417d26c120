"""A KeyedProcessFunction that reports a key's click total once it has been idle for 30 s of event time: Types.ROW with SQL_TIMESTAMP, Row fields by position and by f-name, ValueState holding a Row, event-time timers filtered in on_timer; modelled on the CountWithTimeoutFunction of Flink's "Process Function" documentation."""
import datetime

from streamkernel.common import Row, WatermarkStrategy
from streamkernel.common.typeinfo import Types
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.functions import KeyedProcessFunction, RuntimeContext
from streamkernel.datastream.state import ValueStateDescriptor

IDLE_TIMEOUT_MS = 30_000
START = datetime.datetime(2023, 5, 4, 9, 0, 0)

# (when, user, clicks): every event lies within 30 s of the first, so no timeout is due
# before the input ends and each user's last timer is the one that reports
CLICKS = [(START + datetime.timedelta(seconds=2 * i), user, clicks)
          for i, (user, clicks) in enumerate([("ida", 3), ("jon", 1), ("ida", 2), ("kai", 5), ("jon", 4),
                                               ("ida", 1), ("kai", 2), ("jon", 2), ("ida", 6), ("kai", 1)])]


class EventTime(TimestampAssigner):
    EPOCH = datetime.datetime(1970, 1, 1)

    def extract_timestamp(self, value, record_timestamp) -> int:
        return (value[0] - self.EPOCH) // datetime.timedelta(milliseconds=1)


class ReportWhenIdle(KeyedProcessFunction):

    def open(self, runtime_context: RuntimeContext):
        self.summary = runtime_context.get_state(ValueStateDescriptor("summary", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        summary = self.summary.value()
        if summary is None:
            summary = Row(value.f1, 0, 0)  # user, clicks, last seen
        summary[1] += value.f2
        summary[2] = ctx.timestamp()
        self.summary.update(summary)
        ctx.timer_service().register_event_time_timer(summary[2] + IDLE_TIMEOUT_MS)

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        summary = self.summary.value()
        if timestamp == summary[2] + IDLE_TIMEOUT_MS:  # older timers were superseded
            yield summary[0], summary[1]


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    clicks = env.from_collection(CLICKS, type_info=Types.ROW([Types.SQL_TIMESTAMP(), Types.STRING(), Types.INT()]))
    clicks.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())) \
        .key_by(lambda value: value[1]) \
        .process(ReportWhenIdle()) \
        .print()
    env.execute("idle-key-timeout")
