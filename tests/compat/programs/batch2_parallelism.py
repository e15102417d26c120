"""BATCH execution with env.set_parallelism(2): which operators run at 2 (the adaptive batch scheduler decides those whose parallelism was not set: 1 for small data, a source's in its forward group) seen through RuntimeContext.get_number_of_parallel_subtasks and print()'s N> prefixes; set_parallelism on a map, on a print sink, a typed map (output_type), rebalance, key_by + reduce, NumberSequenceSource via from_source."""
from streamkernel.common import Types, WatermarkStrategy
from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
from streamkernel.datastream.functions import MapFunction, RuntimeContext

VALUES = list(range(6))


class Subtasks(MapFunction):
    def __init__(self, name):
        self.name = name

    def open(self, runtime_context: RuntimeContext):
        self.subtasks = runtime_context.get_number_of_parallel_subtasks()

    def map(self, value):
        return f"{self.name} n={self.subtasks} v={value}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)

    def values():
        return env.from_collection(VALUES)

    values().map(Subtasks("env_only")).print()
    values().map(Subtasks("map_set")).set_parallelism(2).print()
    values().map(Subtasks("sink_set")).print().set_parallelism(2)
    values().map(Subtasks("typed_map_set"), output_type=Types.STRING()).set_parallelism(2).print()
    values().map(Subtasks("first")).set_parallelism(2).rebalance().map(Subtasks("after_rebalance")).print()
    values().key_by(lambda v: v % 3).reduce(lambda a, b: a + b).map(Subtasks("reduced")).print()
    env.from_source(NumberSequenceSource(0, 5), WatermarkStrategy.no_watermarks(), "numbers") \
        .map(Subtasks("sequence")).print()
    env.execute("batch parallelism")


if __name__ == "__main__":
    main()
