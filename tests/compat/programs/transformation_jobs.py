"""One job per basic transformation, each run by its own env.execute(): map(output_type=Types.LONG()), flat_map(output_type=Types.STRING()), filter, printing a KeyedStream (key_by with key_type), and reduce on a Types.TUPLE stream; modelled on a public PyFlink transformations walkthrough."""
from streamkernel.common import Types
from streamkernel.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()


def section(title):
    print(f"--- {title} ---")


section("squares")
env.from_collection(collection=[3, 4, 5, 6]).map(lambda n: n * n, output_type=Types.LONG()).print()
env.execute()

section("letters")
env.from_collection(collection=["ab", "cde"]).flat_map(lambda s: list(s), output_type=Types.STRING()).print()
env.execute()

section("multiples of three")
env.from_collection(collection=list(range(1, 13))).filter(lambda n: n % 3 == 0).print()
env.execute()

section("keyed")
pairs = env.from_collection(collection=[("x", 10), ("y", 20), ("x", 30)])
pairs.key_by(lambda pair: pair[0], key_type=Types.STRING()).print()
env.execute()

section("products")
factors = env.from_collection(collection=[("p", 2), ("q", 5), ("p", 3), ("p", 4), ("q", 2)],
                              type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
factors.key_by(lambda pair: pair[0]).reduce(lambda acc, pair: (acc[0], acc[1] * pair[1])).print()
env.execute()
