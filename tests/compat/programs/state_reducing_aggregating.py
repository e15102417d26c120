"""ReducingState and AggregatingState (ReducingStateDescriptor with a lambda and a ReduceFunction, AggregatingStateDescriptor with an AggregateFunction; add/get/clear, add(None), a StateTtlConfig) in a KeyedProcessFunction and in a ProcessWindowFunction's global_state()."""
from streamkernel.common import Time, Types
from streamkernel.datastream import (AggregateFunction, KeyedProcessFunction, ProcessWindowFunction,
                                     RuntimeContext, StreamExecutionEnvironment)
from streamkernel.datastream.functions import ReduceFunction
from streamkernel.datastream.state import AggregatingStateDescriptor, ReducingStateDescriptor, StateTtlConfig

# (account, operation, amount): "add" adds the amount to every state, "clear" clears the
# reducing states, "reset" clears the aggregating one, "none" adds None to the aggregating one
OPERATIONS = [("acc1", "add", 5), ("acc2", "add", 3), ("acc1", "add", -2), ("acc1", "add", 9),
              ("acc2", "clear", 0), ("acc2", "add", 4), ("acc1", "reset", 0), ("acc1", "add", 1),
              ("acc2", "add", 10), ("acc1", "none", 0), ("acc1", "add", 6), ("acc2", "reset", 0),
              ("acc1", "clear", 0), ("acc2", "add", -7)]


class Smallest(ReduceFunction):
    def reduce(self, value1, value2):
        return min(value1, value2)


class MeanAndRange(AggregateFunction):
    def create_accumulator(self):
        return 0, 0, None, None

    def add(self, value, accumulator):
        total, count, low, high = accumulator
        return (total + value, count + 1, value if low is None else min(low, value),
                value if high is None else max(high, value))

    def get_result(self, accumulator):
        total, count, low, high = accumulator
        return f"{total}/{count} in [{low},{high}]"

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1], min(a[2], b[2]), max(a[3], b[3])


class Ledger(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        ttl = StateTtlConfig.new_builder(Time.hours(1)) \
            .set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite) \
            .set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired).build()
        total = ReducingStateDescriptor("total", lambda a, b: a + b, Types.LONG())
        total.enable_time_to_live(ttl)
        self.total = runtime_context.get_reducing_state(total)
        self.smallest = runtime_context.get_reducing_state(
            ReducingStateDescriptor("smallest", Smallest(), Types.LONG()))
        stats = AggregatingStateDescriptor("stats", MeanAndRange(), Types.PICKLED_BYTE_ARRAY())
        stats.enable_time_to_live(ttl)
        self.stats = runtime_context.get_aggregating_state(stats)

    def process_element(self, value, ctx: KeyedProcessFunction.Context):
        account, operation, amount = value
        if operation == "add":
            self.total.add(amount)
            self.smallest.add(amount)
            self.stats.add(amount)
        elif operation == "clear":
            self.total.clear()
            self.smallest.clear()
        elif operation == "reset":
            self.stats.clear()
        elif operation == "none":
            self.stats.add(None)
        yield f"ledger {account} {operation} {amount}: total {self.total.get()} " \
              f"smallest {self.smallest.get()} stats {self.stats.get()}"


class RunningTotals(ProcessWindowFunction):
    """Per count window: its sum, and the key's running sum and stats in global_state()."""

    def process(self, key, context: ProcessWindowFunction.Context, elements):
        store = context.global_state()
        running = store.get_reducing_state(ReducingStateDescriptor("running", lambda a, b: a + b, Types.LONG()))
        stats = store.get_aggregating_state(
            AggregatingStateDescriptor("window-stats", MeanAndRange(), Types.PICKLED_BYTE_ARRAY()))
        amounts = [amount for _, operation, amount in elements]
        for amount in amounts:
            running.add(amount)
        stats.add(sum(amounts))
        yield f"windows {key} {amounts} running {running.get()} sums {stats.get()}"


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    operations = env.from_collection(OPERATIONS).key_by(lambda op: op[0], key_type=Types.STRING())
    operations.process(Ledger(), Types.STRING()).print()
    operations.count_window(2).process(RunningTotals(), Types.STRING()).print()
    env.execute("state-reducing-aggregating")
