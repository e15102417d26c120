"""Misuse of the DataStream API: the exception class and message of each (map/key_by/process/reduce arguments, OutputTag, state descriptors, parallelism, union types, side outputs, windows, execute)."""
from streamkernel.common import Time, Types
from streamkernel.datastream import OutputTag, StreamExecutionEnvironment
from streamkernel.datastream.functions import KeyedProcessFunction, ProcessFunction
from streamkernel.datastream.state import AggregatingStateDescriptor, ReducingStateDescriptor
from streamkernel.datastream.window import (EventTimeSessionWindows, SlidingEventTimeWindows,
                                            TumblingEventTimeWindows, TumblingProcessingTimeWindows)


class Forward(ProcessFunction):
    def process_element(self, value, ctx):
        yield value


class KeyedForward(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


def new_env():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    return env


def pairs(env):
    return env.from_collection([(1, "a"), (2, "b")], Types.TUPLE([Types.INT(), Types.STRING()]))


def union_of_types(first, second):
    env = new_env()
    a = env.from_collection([1, 2], first)
    b = env.from_collection(["x"], second)
    return a.union(b)


def side_output_twice():
    s = pairs(new_env()).process(Forward())
    s.get_side_output(OutputTag("side", Types.INT()))
    return s.get_side_output(OutputTag("side", Types.STRING()))


def misuses():
    env = new_env()
    ds = pairs(env)
    keyed = ds.key_by(lambda v: v[0])
    window = TumblingEventTimeWindows.of(Time.seconds(1))
    yield "map(42)", lambda: ds.map(42)
    yield "flat_map('x')", lambda: ds.flat_map("x")
    yield "filter(None)", lambda: ds.filter(None)
    yield "key_by(3)", lambda: ds.key_by(3)
    yield "keyed.process(ProcessFunction)", lambda: keyed.process(Forward())
    yield "keyed.reduce(5)", lambda: keyed.reduce(5)
    yield "keyed.sum(1.5)", lambda: keyed.sum(1.5)
    yield "partition_custom(5, f)", lambda: ds.partition_custom(5, lambda v: v)
    yield "broadcast(5)", lambda: ds.broadcast(5)
    yield "OutputTag('')", lambda: OutputTag("")
    yield "OutputTag(None)", lambda: OutputTag(None)
    yield "OutputTag('x', 5)", lambda: OutputTag("x", 5)
    yield "ReducingStateDescriptor('r', 5, INT)", lambda: ReducingStateDescriptor("r", 5, Types.INT())
    yield "AggregatingStateDescriptor('a', 5, INT)", lambda: AggregatingStateDescriptor("a", 5, Types.INT())
    yield "map.set_parallelism(0)", lambda: ds.map(lambda v: v).set_parallelism(0)
    yield "map.set_parallelism(-1)", lambda: ds.map(lambda v: v).set_parallelism(-1)
    yield "env.set_parallelism(0)", lambda: new_env().set_parallelism(0)
    yield "env.set_parallelism(-1)", lambda: new_env().set_parallelism(-1)
    yield "from_collection.set_parallelism(2)", lambda: pairs(new_env()).set_parallelism(2)
    yield "map.set_max_parallelism(0)", lambda: ds.map(lambda v: v).set_max_parallelism(0)
    yield "map.set_max_parallelism(40000)", lambda: ds.map(lambda v: v).set_max_parallelism(40000)
    yield "env.set_max_parallelism(0)", lambda: new_env().set_max_parallelism(0)
    yield "map.set_buffer_timeout(-2)", lambda: ds.map(lambda v: v).set_buffer_timeout(-2)
    yield "keyed.set_parallelism(2)", lambda: keyed.set_parallelism(2)
    yield "keyed.uid('u')", lambda: keyed.uid("u")
    yield "keyed.rebalance()", lambda: keyed.rebalance()
    yield "project(0) on INT", lambda: env.from_collection([1, 2], Types.INT()).project(0)
    yield "ds.window(...)", lambda: ds.window(window)
    yield "keyed.window().reduce(5)", lambda: keyed.window(window).reduce(5)
    yield "keyed.window().aggregate(5)", lambda: keyed.window(window).aggregate(5)
    yield "Tumbling size 0", lambda: TumblingEventTimeWindows.of(Time.seconds(0))
    yield "Tumbling offset >= size", lambda: TumblingProcessingTimeWindows.of(Time.seconds(1), Time.seconds(2))
    yield "Sliding slide 0", lambda: SlidingEventTimeWindows.of(Time.seconds(2), Time.seconds(0))
    yield "Session gap 0", lambda: EventTimeSessionWindows.with_gap(Time.seconds(0))
    yield "connect.map(lambda)", lambda: ds.connect(pairs(env)).map(lambda v: v)
    yield "connect.process(ProcessFunction)", lambda: ds.connect(pairs(env)).process(Forward())
    yield "union INT with STRING", lambda: union_of_types(Types.INT(), Types.STRING())
    yield "union INT with untyped", lambda: union_of_types(Types.INT(), None)
    yield "get_side_output same id other type", side_output_twice
    yield "execute() without operators", lambda: new_env().execute("empty")


def caught_by(error):
    """The built-in exception classes an `except` clause can catch this error by."""
    names = [c.__name__ for c in (AttributeError, TypeError, ValueError) if isinstance(error, c)]
    return ",".join(names) or "Exception"


def main():
    print("hasattr(DataStream, 'window'):", hasattr(pairs(new_env()), "window"))
    for label, misuse in misuses():
        try:
            misuse()
        except Exception as error:  # the program reports every misuse and goes on
            # Errors raised by Flink's JVM come as Py4JJavaError; their Java exception holds the message.
            message = str(getattr(error, "java_exception", error)).strip().splitlines()[0]
            print(f"{label}: {caught_by(error)} | {message}")
        else:
            print(f"{label}: ok")


if __name__ == "__main__":
    main()
