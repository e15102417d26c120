"""key_by with key_type (Types.STRING, INT, LONG, SHORT, BOOLEAN, DOUBLE, FLOAT, TUPLE, ROW) at parallelism 4: which subtask gets which key, printed via get_runtime_context().get_index_of_this_subtask() in a keyed map."""
from streamkernel.common import Row, Types
from streamkernel.datastream import MapFunction, StreamExecutionEnvironment

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


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(4)
    for name, key_type, keys in CASES:
        env.from_collection(keys).key_by(lambda k: k, key_type=key_type) \
            .map(WhereAmI(name), output_type=Types.STRING()).print().set_parallelism(1)
    env.execute("typed key subtasks")


if __name__ == "__main__":
    main()
