"""env.get_execution_plan() for several pipelines: chained Python maps, key_by + reduce, rebalance/shuffle/broadcast, union, connect + co_map, side outputs, typed and untyped sinks, set_parallelism and names."""
import sys

from streamkernel.common import Time, Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import OutputTag, StreamExecutionEnvironment
from streamkernel.datastream.functions import CoMapFunction, ProcessFunction
from streamkernel.datastream.window import TumblingEventTimeWindows

LATE = OutputTag("late", Types.INT())


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        if value % 2:
            yield LATE, value
        else:
            yield value


class Both(CoMapFunction):
    def map1(self, value):
        return value

    def map2(self, value):
        return -value


def linear(env):
    ds = env.from_collection([1, 2, 3], type_info=Types.INT())
    ds.map(lambda x: x + 1).filter(lambda x: x > 1).map(lambda x: x * 2, output_type=Types.INT()).print()


def keyed(env):
    ds = env.from_collection([("a", 1), ("b", 2)], type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    ds.key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).set_parallelism(2).print()


def partitions(env):
    ds = env.from_collection([1, 2, 3])
    ds.rebalance().map(lambda x: x).set_parallelism(3).shuffle().map(lambda x: x).set_parallelism(2) \
        .broadcast().map(lambda x: x).name("after broadcast").print().set_parallelism(1)


def unions(env):
    a = env.from_collection([1, 2], type_info=Types.INT())
    b = env.from_collection([3], type_info=Types.INT()).map(lambda x: x, output_type=Types.INT()).set_parallelism(2)
    a.union(b).map(lambda x: x * 10).print()


def connected(env):
    a = env.from_collection([1, 2], type_info=Types.INT())
    b = env.from_collection([3], type_info=Types.INT())
    a.connect(b).map(Both(), output_type=Types.INT()).print()


def side_outputs(env):
    ds = env.from_collection([1, 2, 3], type_info=Types.INT())
    main = ds.process(Split(), output_type=Types.INT())
    main.print()
    main.get_side_output(LATE).map(lambda x: x + 100).print()


def keyed_then_map(env):
    ds = env.from_collection([("a", 1), ("b", 2)])
    ds.key_by(lambda t: t[0]).map(lambda t: t[1]).map(lambda v: v + 1).print()


def two_consumers(env):
    ds = env.from_collection([1, 2], type_info=Types.INT()).map(lambda x: x, output_type=Types.INT())
    ds.map(lambda x: x + 1, output_type=Types.INT()).print()
    ds.filter(lambda x: x > 1).print()


def parallel_keyed(env):
    env.set_parallelism(2)
    ds = env.from_collection([("a", 1), ("b", 2)])
    ds.map(lambda t: t).set_parallelism(3).key_by(lambda t: t[0]).map(lambda t: t[1]) \
        .flat_map(lambda v: [v, v]).print()


def unchained(env):
    ds = env.from_collection([1, 2], type_info=Types.INT())
    ds.map(lambda x: x, output_type=Types.INT()).map(lambda x: x, output_type=Types.INT()).disable_chaining() \
        .map(lambda x: x, output_type=Types.INT()).set_parallelism(2).print()


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def event_time(env):
    pairs = env.from_collection([("a", 1), ("b", 2)], type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    stamped = pairs.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(SecondField()))
    stamped.key_by(lambda t: t[0]).window(TumblingEventTimeWindows.of(Time.milliseconds(5))) \
        .reduce(lambda a, b: (a[0], a[1] + b[1])).map(lambda t: t[1]).print()
    pairs.key_by(lambda t: t[0]).sum(1).map(lambda t: t[1]).print()


def main():
    for build in (linear, keyed, partitions, unions, connected, side_outputs, keyed_then_map, two_consumers,
                  parallel_keyed, unchained, event_time):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
        build(env)
        print(f"== {build.__name__}")
        print(env.get_execution_plan())


if __name__ == "__main__":
    main()
