"""A keyed FlatMapFunction with ValueState that emits the average of every three readings of a key and then clears its state; modelled on the CountWindowAverage example of Flink's "Working with State" documentation."""
from streamkernel.common.typeinfo import Types
from streamkernel.datastream import FlatMapFunction, RuntimeContext, StreamExecutionEnvironment
from streamkernel.datastream.state import ValueStateDescriptor

GROUP_SIZE = 3

READINGS = [("pump", 10), ("fan", 4), ("pump", 14), ("fan", 6), ("pump", 19),
            ("fan", 9), ("pump", 2), ("fan", 1), ("fan", 30), ("pump", 5), ("fan", 2)]


class AverageOfThree(FlatMapFunction):

    def open(self, runtime_context: RuntimeContext):
        self.pending = runtime_context.get_state(ValueStateDescriptor("pending", Types.PICKLED_BYTE_ARRAY()))

    def flat_map(self, reading):
        count, total = self.pending.value() or (0, 0)
        count, total = count + 1, total + reading[1]
        if count < GROUP_SIZE:
            self.pending.update((count, total))
            return
        self.pending.clear()
        yield reading[0], total // count


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(READINGS) \
        .key_by(lambda reading: reading[0]) \
        .flat_map(AverageOfThree()) \
        .print()
    env.execute()


if __name__ == "__main__":
    main()
