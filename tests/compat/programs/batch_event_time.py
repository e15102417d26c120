"""BATCH execution at parallelism 1 with event time: a KeyedProcessFunction with ValueState and event- and processing-time timers (fired at the end of each key, watermark MIN while processing, MAX in on_timer), tumbling event-time windows with process() and reduce(), window_all, and a non-keyed ProcessFunction."""
from streamkernel.common import Duration, Types, WatermarkStrategy
from streamkernel.common.time import Time
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import (KeyedProcessFunction, ProcessFunction, ProcessWindowFunction,
                                     RuntimeExecutionMode, StreamExecutionEnvironment)
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window import TumblingEventTimeWindows

# (key, amount, event time)
RECORDS = [('bb', 1, 5), (1, 2, 3), ('a', 3, 1), ('c', 4, 7), ('aa', 5, 2), ('b', 6, 9), ('a', 7, 4),
           (1, 8, 1), ('bb', 9, 1000), ('c', 10, 1)]
EVENT_TIMER = 5000  # each key registers one event-time timer ...
PROCESSING_TIMER = 50  # ... and one processing-time timer (long past: due at once when streaming)


class ThirdField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class Totals(KeyedProcessFunction):
    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        previous = self.total.value()
        if previous is None:  # the key's first record registers the key's timers
            ctx.timer_service().register_event_time_timer(EVENT_TIMER)
            ctx.timer_service().register_processing_time_timer(PROCESSING_TIMER)
        total = (previous or 0) + value[1]
        self.total.update(total)
        yield (f"element key={ctx.get_current_key()} value={value} timestamp={ctx.timestamp()} "
               f"watermark={ctx.timer_service().current_watermark()} total={total}")

    def on_timer(self, timestamp, ctx):
        yield (f"timer key={ctx.get_current_key()} at={timestamp} {ctx.time_domain()} "
               f"watermark={ctx.timer_service().current_watermark()} total={self.total.value()}")


class Describe(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield f"window key={key} [{context.window().start},{context.window().end}) amounts={[e[1] for e in elements]}"


class NonKeyed(ProcessFunction):
    def process_element(self, value, ctx):
        yield f"non_keyed {value} timestamp={ctx.timestamp()} watermark={ctx.timer_service().current_watermark()}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(1)) \
        .with_timestamp_assigner(ThirdField())
    events = env.from_collection(RECORDS).assign_timestamps_and_watermarks(strategy)
    events.key_by(lambda r: r[0]).process(Totals()).print()
    events.key_by(lambda r: r[0]).window(TumblingEventTimeWindows.of(Time.milliseconds(4))) \
        .process(Describe()).print()
    events.key_by(lambda r: r[0]).window(TumblingEventTimeWindows.of(Time.milliseconds(4))) \
        .reduce(lambda a, b: (a[0], a[1] + b[1], b[2])) \
        .map(lambda r: f"window_reduce {r}").print()
    events.window_all(TumblingEventTimeWindows.of(Time.milliseconds(4))) \
        .reduce(lambda a, b: (a[0], a[1] + b[1], b[2])) \
        .map(lambda r: f"window_all {r}").print()
    events.process(NonKeyed()).print()
    env.execute("batch event time")


if __name__ == "__main__":
    main()
