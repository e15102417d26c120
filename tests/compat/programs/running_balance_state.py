"""Keyed ValueState (Types.PICKLED_BYTE_ARRAY) in a KeyedProcessFunction opened with a RuntimeContext: a running balance per account; modelled on PyFlink's state_access example."""
from streamkernel.common.typeinfo import Types
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.functions import KeyedProcessFunction, RuntimeContext
from streamkernel.datastream.state import ValueStateDescriptor

MOVEMENTS = [
    ("acc-1", 100.5),
    ("acc-2", 20.25),
    ("acc-1", -30.0),
    ("acc-3", 7.75),
    ("acc-2", 5.5),
    ("acc-1", 12.125),
    ("acc-3", -2.5),
    ("acc-2", -10.0),
    ("acc-1", 0.375),
]


class RunningBalance(KeyedProcessFunction):

    def __init__(self):
        self.balance = None

    def open(self, runtime_context: RuntimeContext):
        self.balance = runtime_context.get_state(
            ValueStateDescriptor("balance", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, movement, ctx: 'KeyedProcessFunction.Context'):
        account, amount = movement
        previous = self.balance.value() or 0.0
        updated = previous + amount
        self.balance.update(updated)
        yield account, updated


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(MOVEMENTS) \
        .key_by(lambda movement: movement[0]) \
        .process(RunningBalance()) \
        .print()
    env.execute("running-balance")


if __name__ == "__main__":
    main()
