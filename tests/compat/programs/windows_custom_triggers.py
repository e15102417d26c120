"""Custom Trigger subclasses (on_element/on_event_time returning FIRE, FIRE_AND_PURGE, PURGE; trigger state through ctx.get_partitioned_state; clear) and CountTrigger, PurgingTrigger, EventTimeTrigger on count windows (count_window(size), count_window(size, slide), CountTumblingWindowAssigner), with ProcessWindowFunction.Context.window_state()/global_state() across firings and clear()."""
from streamkernel.common import Duration, Time, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import ProcessWindowFunction, StreamExecutionEnvironment, WindowFunction
from streamkernel.datastream.state import ReducingStateDescriptor, ValueStateDescriptor
from streamkernel.datastream.window import (CountTrigger, CountTumblingWindowAssigner, EventTimeTrigger,
                                            PurgingTrigger, TimeWindow, Trigger, TriggerResult,
                                            TumblingEventTimeWindows)

SIZE = 100
# (sensor, event time in ms, reading); a negative reading purges its window so far.
# Each window of each sensor ends at its own time (no two keys share an event-time timer).
READINGS = [("x", 5, 1), ("x", 17, 2), ("y", 120, 3), ("x", 30, 4), ("x", 42, -1), ("y", 150, 5),
            ("x", 60, 6), ("y", 101, 7), ("x", 210, 8), ("y", 333, 9), ("x", 250, 10), ("y", 390, 11),
            ("x", 299, 12), ("y", 345, -2), ("y", 360, 13)]
# (product, quantity) for the count windows
ORDERS = [("tea", 1), ("jam", 2), ("tea", 3), ("tea", 4), ("jam", 5), ("tea", 5), ("jam", 6), ("tea", 7),
          ("jam", 8), ("jam", 9), ("tea", 10), ("tea", 11), ("jam", 12), ("tea", 13)]


class ReadingTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class EverySecondOrEnd(Trigger):
    """FIRE every second element, PURGE on a negative reading, FIRE_AND_PURGE at the window's end."""

    def __init__(self):
        self.count = ReducingStateDescriptor("count", lambda a, b: a + b, Types.LONG())

    def on_element(self, element, timestamp, window: TimeWindow, ctx: Trigger.TriggerContext) -> TriggerResult:
        ctx.register_event_time_timer(window.max_timestamp())
        if element[2] < 0:
            ctx.get_partitioned_state(self.count).clear()
            return TriggerResult.PURGE
        count = ctx.get_partitioned_state(self.count)
        count.add(1)
        return TriggerResult.FIRE if count.get() % 2 == 0 else TriggerResult.CONTINUE

    def on_processing_time(self, time, window, ctx) -> TriggerResult:
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window: TimeWindow, ctx) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        return False

    def on_merge(self, window, ctx) -> None:
        pass

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        ctx.delete_event_time_timer(window.max_timestamp())
        ctx.get_partitioned_state(self.count).clear()


class Firings(ProcessWindowFunction):
    """Each firing of a window: its readings, the how-many-th firing of the window, of the key."""

    def process(self, key, context: ProcessWindowFunction.Context, elements):
        of_window = context.window_state().get_state(ValueStateDescriptor("firings", Types.INT()))
        of_key = context.global_state().get_state(ValueStateDescriptor("key-firings", Types.INT()))
        of_window.update((of_window.value() or 0) + 1)
        of_key.update((of_key.value() or 0) + 1)
        window = context.window()
        window_text = f"[{window.start},{window.end})" if isinstance(window, TimeWindow) else f"#{window.id}"
        yield f"{self.tag} {key} {window_text} {[e[-1] for e in elements]} firing {of_window.value()} " \
              f"of key {of_key.value()} cleared {self.cleared(context).value() or 0}"

    def __init__(self, tag):
        self.tag = tag

    def cleared(self, context):
        return context.global_state().get_state(ValueStateDescriptor("cleared", Types.INT()))

    def clear(self, context: ProcessWindowFunction.Context) -> None:
        context.window_state().get_state(ValueStateDescriptor("firings", Types.INT())).clear()
        cleared = self.cleared(context)
        cleared.update((cleared.value() or 0) + 1)


class Totals(WindowFunction):
    def __init__(self, tag):
        self.tag = tag

    def apply(self, key, window, inputs):
        return [f"{self.tag} {key} #{window.id} {[quantity for _, quantity in inputs]}"]


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    watermarks = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(10_000)) \
        .with_timestamp_assigner(ReadingTime())
    env.from_collection(READINGS).assign_timestamps_and_watermarks(watermarks) \
        .key_by(lambda reading: reading[0], key_type=Types.STRING()) \
        .window(TumblingEventTimeWindows.of(Time.milliseconds(SIZE))) \
        .trigger(EverySecondOrEnd()) \
        .process(Firings("custom")).print()

    orders = env.from_collection(ORDERS).key_by(lambda order: order[0], key_type=Types.STRING())
    orders.count_window(3).process(Firings("tumbling")).print()
    orders.count_window(4, 2).apply(Totals("sliding")).print()
    orders.window(CountTumblingWindowAssigner.of(4)).trigger(CountTrigger.of(2)).process(Firings("every-2")).print()
    orders.window(CountTumblingWindowAssigner.of(3)).trigger(PurgingTrigger.of(CountTrigger.of(2))) \
        .apply(Totals("purging")).print()
    orders.count_window(5).trigger(EventTimeTrigger.create()).apply(Totals("at-end")).print()
    env.execute("windows-custom-triggers")
