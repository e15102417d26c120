"""Parallel unions: three streams of different parallelisms (1, 2 and 3) unioned and printed at parallelism 2, a stream unioned with itself, and unions of typed and untyped streams."""
from streamkernel.common import Types
from streamkernel.datastream import StreamExecutionEnvironment


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    one = env.from_collection(["a", "b", "c"], type_info=Types.STRING())
    two = env.from_collection(list(range(5)), type_info=Types.INT()) \
        .map(lambda n: f"two-{n}", output_type=Types.STRING()).set_parallelism(2)
    three = env.from_collection([10, 20, 30, 40]) \
        .map(lambda n: f"three-{n}", output_type=Types.STRING()).set_parallelism(3) \
        .filter(lambda s: s != "three-20").set_parallelism(3)
    one.union(two, three).map(lambda s: "u " + s, output_type=Types.STRING()).set_parallelism(2).print() \
        .set_parallelism(2)

    twice = one.map(lambda s: s.upper(), output_type=Types.STRING())
    twice.union(twice).map(lambda s: "self " + s).print()

    pickled = env.from_collection([(1, "x"), (2, "y")])
    pickled.union(pickled.map(lambda t: (t[0] * 10, t[1]))).print()
    env.execute("unions")


if __name__ == "__main__":
    main()
