"""Timers registered and deleted in KeyedProcessFunction.on_timer (TimerService.register_event_time_timer / delete_event_time_timer, bounded chains, current_watermark) and a ContinuousEventTimeTrigger window with allowed_lateness, all fired by the watermark at the end of bounded input."""
from typing import Iterable

from streamkernel.common import Duration, Time, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import KeyedProcessFunction, ProcessWindowFunction, StreamExecutionEnvironment
from streamkernel.datastream.window import ContinuousEventTimeTrigger, TimeWindow, TumblingEventTimeWindows

# (key, event time, the event-time timers the element registers); the watermark lags 10 s,
# longer than the input spans, so every timer fires with the final watermark at end of input
ELEMENTS = [("a", 100, [100]), ("b", 150, [150]), ("c", 300, [300]), ("d", 400, [400, 401]),
            ("e", 500, [500, 501]), ("f", 160, [160])]

# what on_timer does for (key, timer timestamp), in order: ("register" | "delete", timestamp)
ON_TIMER = {
    ("a", 100): [("register", 101)], ("a", 101): [("register", 102)],     # a chain
    ("b", 150): [("register", 151)], ("b", 151): [("register", 152)],     # another, interleaved
    ("c", 300): [("register", 120)],                                     # earlier than pending ones
    ("d", 400): [("register", 401)],                                     # 401 is due as well
    ("e", 500): [("delete", 501), ("register", 502), ("delete", 502), ("register", 503)],
    ("e", 501): [("delete", 503)],                                       # deletes one made meanwhile
    **{("f", ts): [("register", ts + 2)] for ts in range(160, 170, 2)},  # a chain of six
}

WINDOW_MS = 20
FIRE_EVERY_MS = 7
LATENESS_MS = 5
# (meter, event time in ms)
SAMPLES = [("x", 2), ("x", 9), ("y", 19), ("x", 25), ("y", 33), ("x", 38), ("y", 40), ("y", 41)]


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class ScriptedTimers(KeyedProcessFunction):
    def process_element(self, value, ctx: KeyedProcessFunction.Context):
        for timestamp in value[2]:
            ctx.timer_service().register_event_time_timer(timestamp)

    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext):
        key = ctx.get_current_key()
        timers = ctx.timer_service()
        yield f"timer {key} {timestamp} watermark={timers.current_watermark()}"
        for action, at in ON_TIMER.get((key, timestamp), []):
            if action == "register":
                timers.register_event_time_timer(at)
            else:
                timers.delete_event_time_timer(at)


class SamplesSoFar(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],
                elements: Iterable[tuple]) -> Iterable[tuple]:
        return [(key, context.window().start, context.window().end, len(list(elements)))]


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    lag = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(10_000))
    env.from_collection([(k, t, ",".join(map(str, ts))) for k, t, ts in ELEMENTS],
                        type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.STRING()])) \
        .assign_timestamps_and_watermarks(lag.with_timestamp_assigner(SecondField())) \
        .map(lambda e: (e[0], e[1], [int(t) for t in e[2].split(",")])) \
        .key_by(lambda e: e[0], key_type=Types.STRING()) \
        .process(ScriptedTimers(), Types.STRING()) \
        .print()
    env.from_collection(SAMPLES, type_info=Types.TUPLE([Types.STRING(), Types.INT()])) \
        .assign_timestamps_and_watermarks(lag.with_timestamp_assigner(SecondField())) \
        .key_by(lambda sample: sample[0], key_type=Types.STRING()) \
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS))) \
        .allowed_lateness(LATENESS_MS) \
        .trigger(ContinuousEventTimeTrigger.of(Time.milliseconds(FIRE_EVERY_MS))) \
        .process(SamplesSoFar(), Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()])) \
        .print()
    env.execute("timers-in-rounds")
