"""key_by without key_type at parallelism 2 and 4: which subtask gets which key, printed via get_runtime_context().get_index_of_this_subtask() in a keyed map."""
from streamkernel.common import Types
from streamkernel.datastream import MapFunction, StreamExecutionEnvironment

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "kiwi", "lemon", "mango",
         "", "Zürich", "東京"]
NUMBERS = [0, 1, 2, 3, 7, 42, 100, 255, 256, 1000, -1, -42, 2 ** 31, 2 ** 40]
FLOATS = [0.5, 1.5, -2.25, 1e-100]  # not integral: 3.0 would be keyed as 3 (see keygroups.stable_hash)
PAIRS = [("a", 1), ("b", 2), ("a", 2), (1, 2), (None, 0), ("nested", (0.25, b"x"))]


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
    for parallelism in (2, 4):
        words = env.from_collection(WORDS, type_info=Types.STRING())
        words.key_by(lambda w: w).map(WhereAmI(f"p{parallelism} str"), output_type=Types.STRING()) \
            .set_parallelism(parallelism).print().set_parallelism(1)
        numbers = env.from_collection(NUMBERS)
        numbers.key_by(lambda n: n).map(WhereAmI(f"p{parallelism} int"), output_type=Types.STRING()) \
            .set_parallelism(parallelism).print().set_parallelism(1)
        floats = env.from_collection(FLOATS)
        floats.key_by(lambda x: x).map(WhereAmI(f"p{parallelism} float"), output_type=Types.STRING()) \
            .set_parallelism(parallelism).print().set_parallelism(1)
        pairs = env.from_collection(PAIRS)
        pairs.key_by(lambda p: p).map(WhereAmI(f"p{parallelism} tuple"), output_type=Types.STRING()) \
            .set_parallelism(parallelism).print().set_parallelism(1)
    env.execute("key subtasks")


if __name__ == "__main__":
    main()
