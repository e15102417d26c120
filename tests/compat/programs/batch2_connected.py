"""BATCH execution of two-input operators at parallelism 1: connect(...).key_by(k1, k2) with a KeyedCoProcessFunction (keyed state shared by both inputs, event- and processing-time timers), CoMapFunction and CoFlatMapFunction; keyed and non-keyed broadcast (BroadcastProcessFunction, KeyedBroadcastProcessFunction with MapStateDescriptor broadcast state); non-keyed connect with CoMapFunction and CoProcessFunction."""
from streamkernel.common import Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from streamkernel.datastream.functions import (
    BroadcastProcessFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
)
from streamkernel.datastream.state import MapStateDescriptor, ValueStateDescriptor

# (key, value, timestamp); input 1 is one record longer than input 2
S1 = [('b', 1, 5), ('a', 2, 3), ('c', 3, 1), ('a', 4, 1), ('b', 5, 5), ('d', 6, 2), ('a', 7, 3)]
S2 = [('a', 10, 3), ('b', 20, 5), ('e', 30, 1), ('a', 40, 0), ('c', 50, 9), ('b', 60, 1)]
# no timestamps: every record of a key ties; the smallest key ('0') is in input 1 only, so that the
# first two heads differ (which input's head enters Flink's queue first depends on timing)
N1 = S1 + [('0', 8, 0)]
N2 = S2
EVENT_TIMER, PROCESSING_TIMER = 100, 200  # + the record's value
RULES = MapStateDescriptor("rules", Types.PICKLED_BYTE_ARRAY(), Types.PICKLED_BYTE_ARRAY())


class Third(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class CountBoth(KeyedCoProcessFunction):
    def __init__(self, name):
        self.name = name

    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("n", Types.PICKLED_BYTE_ARRAY()))

    def _element(self, i, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        ctx.timer_service().register_event_time_timer(EVENT_TIMER + value[1])
        ctx.timer_service().register_processing_time_timer(PROCESSING_TIMER + value[1])
        yield (f"{self.name} in{i} key={ctx.get_current_key()} v={value} ts={ctx.timestamp()} "
               f"wm={ctx.timer_service().current_watermark()} n={n}")

    def process_element1(self, value, ctx):
        yield from self._element(1, value, ctx)

    def process_element2(self, value, ctx):
        yield from self._element(2, value, ctx)

    def on_timer(self, timestamp, ctx):
        yield (f"{self.name} timer key={ctx.get_current_key()} at={timestamp} {ctx.time_domain()} "
               f"wm={ctx.timer_service().current_watermark()} n={self.count.value()}")


class Tag(CoMapFunction):
    def __init__(self, name):
        self.name = name

    def map1(self, value):
        return f"{self.name} m1 {value}"

    def map2(self, value):
        return f"{self.name} m2 {value}"


class TagFlat(CoFlatMapFunction):
    def flat_map1(self, value):
        yield f"coflat f1 {value}"

    def flat_map2(self, value):
        yield f"coflat f2 {value}"


class KeyedRules(KeyedBroadcastProcessFunction):
    def open(self, ctx):
        self.count = ctx.get_state(ValueStateDescriptor("n", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        ctx.timer_service().register_event_time_timer(EVENT_TIMER + value[1])
        rules = sorted(ctx.get_broadcast_state(RULES).keys())
        yield f"kbc el key={ctx.get_current_key()} v={value} ts={ctx.timestamp()} n={n} rules={rules}"

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(value[1], value[0])
        yield f"kbc bc v={value}"

    def on_timer(self, timestamp, ctx):
        yield f"kbc timer key={ctx.get_current_key()} at={timestamp} n={self.count.value()}"


class Rules(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        yield f"nbc el v={value} rules={sorted(ctx.get_broadcast_state(RULES).keys())}"

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(value[1], value[0])
        yield f"nbc bc v={value}"


class Both(CoProcessFunction):
    def process_element1(self, value, ctx):
        yield f"cop p1 {value} ts={ctx.timestamp()}"

    def process_element2(self, value, ctx):
        yield f"cop p2 {value} ts={ctx.timestamp()}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)
    stamped = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Third())
    s1 = env.from_collection(S1).assign_timestamps_and_watermarks(stamped)
    s2 = env.from_collection(S2).assign_timestamps_and_watermarks(stamped)
    s1.connect(s2).key_by(lambda r: r[0], lambda r: r[0]).process(CountBoth("kcp")).print()
    # without timestamps every record of a key ties: the merge order alone decides
    env.from_collection(N1).connect(env.from_collection(N2)).key_by(lambda r: r[0], lambda r: r[0]) \
        .process(CountBoth("nots")).print()
    s1.connect(s2).key_by(lambda r: r[0], lambda r: r[0]).map(Tag("comap")).print()
    s1.connect(s2).key_by(lambda r: r[0], lambda r: r[0]).flat_map(TagFlat()).print()
    s1.key_by(lambda r: r[0]).connect(s2.broadcast(RULES)).process(KeyedRules()).print()
    s1.connect(s2.broadcast(RULES)).process(Rules()).print()
    s1.connect(s2).map(Tag("plain")).print()
    s1.connect(s2).process(Both()).print()
    env.execute("batch connected")


if __name__ == "__main__":
    main()
