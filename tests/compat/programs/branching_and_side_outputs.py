"""Combining and splitting streams, one env.execute() per pattern: union, connect with CoProcessFunction / CoMapFunction / CoFlatMapFunction, splitting by filters, and side outputs (OutputTag with Types.STRING(), get_side_output); modelled on a public PyFlink branching walkthrough."""
from streamkernel.common import Row, Types
from streamkernel.datastream import OutputTag, StreamExecutionEnvironment
from streamkernel.datastream.functions import CoFlatMapFunction, CoMapFunction, CoProcessFunction, ProcessFunction

env = StreamExecutionEnvironment.get_execution_environment()


def banner(name):
    print(f"[[ {name} ]]")


class Tagging(CoProcessFunction):
    def process_element1(self, value, ctx: "CoProcessFunction.Context"):
        return Row(value + 100)

    def process_element2(self, value, ctx: "CoProcessFunction.Context"):
        return Row(-value)


class Pricing(CoMapFunction):
    def map1(self, value):
        return value[0], round(value[1] * 1.5, 2)

    def map2(self, value):
        return value[0].upper(), value[1]


class Fragments(CoFlatMapFunction):
    def flat_map1(self, value):
        for piece in value.split("/"):
            yield piece

    def flat_map2(self, value):
        for _ in range(value):
            yield "*" * value


OVERSIZED = OutputTag("oversized", Types.STRING())


class SizeCheck(ProcessFunction):
    def process_element(self, value, ctx: "ProcessFunction.Context"):
        if value > 50:
            yield OVERSIZED, f"too big: {value}"
        else:
            yield value


banner("union")
first, second, third = (env.from_collection(collection=c) for c in ([5, 6], [7], [8, 9]))
first.union(second, third).print()
env.execute()

banner("co-process")
env.from_collection(collection=[1, 2]).connect(env.from_collection(collection=[30, 40])) \
    .process(Tagging()).print()
env.execute()

banner("co-map")
env.from_collection(collection=[("apple", 2.0), ("pear", 3.0)]) \
    .connect(env.from_collection(collection=[("kiwi", 9)])) \
    .map(Pricing()).print()
env.execute()

banner("co-flat-map")
env.from_collection(collection=["a/b", "c/d/e"]).connect(env.from_collection(collection=[2, 1])) \
    .flat_map(Fragments()).print()
env.execute()

banner("split by filters")
numbers = env.from_collection(collection=range(1, 13))
small = numbers.filter(lambda n: n <= 4)
large = numbers.filter(lambda n: n > 9)
small.map(lambda n: n * 10).union(large).print()
env.execute()

banner("side outputs")
sizes = env.from_collection(collection=[12, 75, 40, 99, 3])
accepted = sizes.process(SizeCheck(), Types.INT())
rejected = accepted.get_side_output(OVERSIZED)
print("accepted:")
accepted.print()
env.execute()
print("rejected:")
rejected.print()
env.execute()
