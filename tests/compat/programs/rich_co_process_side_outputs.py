"""KeyedCoProcessFunction with event-time timers (on_timer, ctx.get_current_key(), ctx.timestamp(), current_watermark) and side outputs (yield output_tag, value) from ProcessFunction, KeyedProcessFunction and CoProcessFunction with typed and untyped OutputTags read by get_side_output."""
from streamkernel.common import Duration, Row, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import OutputTag, StreamExecutionEnvironment
from streamkernel.datastream.functions import (CoProcessFunction, KeyedCoProcessFunction,
                                               KeyedProcessFunction, ProcessFunction)

# (account, event time ms, amount); the watermark lags 10 s, longer than the input spans,
# so every timer fires with the final watermark at the end of input
ORDERS = [("acme", 100, 30), ("bolt", 120, 5), ("acme", 150, 12), ("core", 170, 40)]
PAYMENTS = [("bolt", 110, 5), ("acme", 160, 30), ("dusk", 180, 1)]
DUE_AFTER_MS = 50

TUPLE = Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()])
SMALL = OutputTag("small", Types.ROW_NAMED(["account", "amount"], [Types.STRING(), Types.INT()]))
ODD = OutputTag("odd")
UNPAID = OutputTag("unpaid", Types.STRING())
STRAY = OutputTag("stray", Types.TUPLE([Types.STRING(), Types.INT()]))


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class Settle(KeyedCoProcessFunction):
    def process_element1(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1] + DUE_AFTER_MS)
        yield f"order {ctx.get_current_key()} {value[2]} at {ctx.timestamp()}"

    def process_element2(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1] + DUE_AFTER_MS)
        if value[2] < 10:
            yield UNPAID, f"tiny payment {ctx.get_current_key()} {value[2]}"
        yield f"payment {ctx.get_current_key()} {value[2]} at {ctx.timestamp()}"

    def on_timer(self, timestamp, ctx):
        yield (f"due {ctx.get_current_key()} at {timestamp} ts={ctx.timestamp()} "
               f"domain={ctx.time_domain()} watermark={ctx.timer_service().current_watermark()}")
        if ctx.get_current_key() == "acme":
            yield UNPAID, f"reminder {ctx.get_current_key()} {timestamp}"


class Classify(ProcessFunction):
    def process_element(self, value, ctx):
        if value[2] < 20:
            yield SMALL, Row(account=value[0], amount=value[2])
        if value[2] % 2:
            yield ODD, (value[0], value[2], "odd")
        yield value[0], value[2]


class Running(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield ODD, f"keyed {ctx.get_current_key()} {value[1]}"
        yield value[1] * 100


class Pair(CoProcessFunction):
    def process_element1(self, value, ctx):
        yield f"left {value}"

    def process_element2(self, value, ctx):
        yield STRAY, (value[0], value[2])


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    watermarks = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(10)) \
        .with_timestamp_assigner(Ts())
    orders = env.from_collection(ORDERS, type_info=TUPLE).assign_timestamps_and_watermarks(watermarks)
    payments = env.from_collection(PAYMENTS, type_info=TUPLE).assign_timestamps_and_watermarks(watermarks)

    settled = orders.connect(payments).key_by(lambda o: o[0], lambda p: p[0]) \
        .process(Settle(), output_type=Types.STRING())
    settled.print()
    settled.get_side_output(UNPAID).map(lambda s: "side " + s).print()

    classified = orders.process(Classify(), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
    classified.print()
    classified.get_side_output(SMALL).print()
    classified.get_side_output(ODD).print()

    running = classified.key_by(lambda t: t[0]).process(Running())
    running.print()
    running.get_side_output(ODD).map(lambda s: s.upper()).print()

    paired = orders.connect(payments).process(Pair(), output_type=Types.STRING())
    paired.print()
    paired.get_side_output(STRAY).print()
    env.execute("co-process and side outputs")


if __name__ == "__main__":
    main()
