"""ProcessFunction return styles, one job each: a returned Row or list is iterated (one record per field/item), a generator yields records, a returned None emits nothing; plus a KeyedProcessFunction keeping a Row in ValueState; modelled on a public PyFlink process-function walkthrough."""
from streamkernel.common import Row, Types
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.functions import KeyedProcessFunction, ProcessFunction, RuntimeContext
from streamkernel.datastream.state import ValueStateDescriptor


class Halve(ProcessFunction):
    def process_element(self, value, ctx: "ProcessFunction.Context"):
        return Row(value / 2)


class Bracket(ProcessFunction):
    def process_element(self, value, ctx: "ProcessFunction.Context"):
        return [value - 1, value + 1]


class Syllables(ProcessFunction):
    def process_element(self, value, ctx: "ProcessFunction.Context"):
        for position, part in enumerate(value.split("-")):
            yield part, position


class KeepEven(ProcessFunction):
    def process_element(self, value, ctx: "ProcessFunction.Context"):
        if value % 2 == 0:
            return Row(value)


class RunningMax(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.best = runtime_context.get_state(ValueStateDescriptor("best", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx: "KeyedProcessFunction.Context"):
        best = self.best.value()
        if best is None:
            best = Row(value[0], value[1])
        elif value[1] > best[1]:
            best[1] = value[1]
        self.best.update(best)
        yield best[0], best[1]


def main():
    env = StreamExecutionEnvironment.get_execution_environment()

    print("### halve")
    env.from_collection(collection=[2, 5, 8]).process(Halve()).print()
    env.execute()

    print("### bracket")
    env.from_collection(collection=[10, 20]).process(Bracket()).print()
    env.execute()

    print("### syllables")
    env.from_collection(collection=["stream-ing", "win-dow-ing"]).process(Syllables()).print()
    env.execute()

    print("### keep even")
    env.from_collection(collection=[1, 2, 3, 4, 6, 7]).process(KeepEven()).print()
    env.execute()

    print("### running max")
    scores = env.from_collection(collection=[("ann", 3), ("bo", 7), ("ann", 9), ("ann", 4), ("bo", 8)],
                                 type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    scores.key_by(lambda score: score[0]).process(RunningMax()).print()
    env.execute()


if __name__ == "__main__":
    main()
