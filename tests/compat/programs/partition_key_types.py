"""key_by with key_type (Types.STRING, INT, LONG, SHORT, BOOLEAN, DOUBLE, FLOAT, TUPLE, ROW) at parallelism 4: which subtask gets which key, printed via get_runtime_context().get_index_of_this_subtask() in a keyed map; a keyed reduce with key_type, and connect() of two streams keyed with key_type STRING into a KeyedCoProcessFunction with ValueStates, and connect() of differently typed keys (rejected)."""
from streamkernel.common import Row, Types
from streamkernel.datastream import KeyedCoProcessFunction, MapFunction, StreamExecutionEnvironment
from streamkernel.datastream.state import ValueStateDescriptor

CASES = [
    ("STRING", Types.STRING(), ["apple", "banana", "cherry", "date", "", "Zürich", "東京", "🙂"]),
    ("INT", Types.INT(), [0, 1, 2, 3, 42, -1, -42, 2 ** 31 - 1]),
    ("LONG", Types.LONG(), [0, 1, 7, -1, 2 ** 40, -(2 ** 40)]),
    ("SHORT", Types.SHORT(), [0, 5, -5]),
    ("BOOLEAN", Types.BOOLEAN(), [True, False]),
    ("DOUBLE", Types.DOUBLE(), [0.5, 1.0, -2.25, 1e100]),
    ("FLOAT", Types.FLOAT(), [0.5, -2.25, 3.0]),
    ("TUPLE", Types.TUPLE([Types.STRING(), Types.INT()]), [("a", 1), ("b", 2), ("a", 2), ("", 0)]),
    ("ROW", Types.ROW([Types.STRING(), Types.LONG()]), [Row("a", 1), Row("b", 2), Row("a", 2), Row("", 0)]),
]


class WhereAmI(MapFunction):
    """Tags each key with the subtask that processes it."""

    def __init__(self, label):
        self.label = label

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        return f"{self.label} {value!r} -> subtask {self.index}"

SALES = [("apple", 3), ("kiwi", 1), ("apple", 4), ("fig", 2), ("kiwi", 5), ("fig", 1), ("plum", 7)]
PRICES = [("apple", 10), ("kiwi", 20), ("fig", 30), ("plum", 40)]


class Ledger(KeyedCoProcessFunction):
    """Units sold per fruit and how many prices it got, each in a ValueState of the same key."""

    def open(self, runtime_context):
        self.units = runtime_context.get_state(ValueStateDescriptor("units", Types.LONG()))
        self.prices_seen = runtime_context.get_state(ValueStateDescriptor("prices_seen", Types.LONG()))

    def process_element1(self, value, ctx):
        self.units.update((self.units.value() or 0) + value[1])
        yield f"{ctx.get_current_key()} units so far {self.units.value()}"

    def process_element2(self, value, ctx):
        self.prices_seen.update((self.prices_seen.value() or 0) + 1)
        yield f"{ctx.get_current_key()} price {value[1]}, price #{self.prices_seen.value()}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(4)
    for name, key_type, keys in CASES:
        env.from_collection(keys).key_by(lambda k: k, key_type=key_type) \
            .map(WhereAmI(name), output_type=Types.STRING()).print().set_parallelism(1)
    env.execute("typed key subtasks")

    env.set_parallelism(2)
    sales = env.from_collection(SALES, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    sales.key_by(lambda s: s[0], key_type=Types.STRING()).reduce(lambda a, b: (a[0], a[1] + b[1])) \
        .map(lambda s: f"units {s[0]} {s[1]}", output_type=Types.STRING()).print()
    env.execute("typed key reduce")

    prices = env.from_collection(PRICES)
    sales.key_by(lambda s: s[0], key_type=Types.STRING()).connect(prices.key_by(lambda p: p[0], Types.STRING())) \
        .process(Ledger(), output_type=Types.STRING()).print()
    env.execute("typed keys connected")
    try:
        sales.key_by(lambda s: s[0], key_type=Types.STRING()).connect(prices.key_by(lambda p: p[0])) \
            .process(Ledger(), output_type=Types.STRING())
        print("differently typed keys connected: accepted")
    except Exception:  # PyFlink: UnsupportedOperationException, key types of the input KeyedStreams don't match
        print("differently typed keys connected: rejected")


if __name__ == "__main__":
    main()
