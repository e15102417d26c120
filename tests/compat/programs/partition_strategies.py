"""Physical partitioning from a parallelism-1 source into 3 subtasks: partition_custom, broadcast() without descriptor, rescale, forward, rebalance, shuffle; each record tagged with get_index_of_this_subtask()."""
from streamkernel.common import Types
from streamkernel.datastream import MapFunction, StreamExecutionEnvironment


class WhereAmI(MapFunction):
    """Tags each record with the subtask that maps it."""

    def __init__(self, label):
        self.label = label

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        return f"{self.label} {value} -> subtask {self.index}"


class CountPerSubtask(MapFunction):
    """Numbers the records each subtask sees (rebalance starts at a random subtask in Flink)."""

    def __init__(self, label):
        self.label = label

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()
        self.count = 0

    def map(self, value):
        self.count += 1
        return f"{self.label} record #{self.count} of a subtask"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(3)
numbers = env.from_collection(list(range(10)), type_info=Types.INT())
numbers.partition_custom(lambda key, n: key % n, lambda x: x * 7) \
    .map(WhereAmI("custom"), output_type=Types.STRING()).print().set_parallelism(1)
numbers.broadcast().map(WhereAmI("broadcast"), output_type=Types.STRING()).print().set_parallelism(1)
numbers.rescale().map(WhereAmI("rescale"), output_type=Types.STRING()).print().set_parallelism(1)
numbers.rebalance().map(CountPerSubtask("rebalance"), output_type=Types.STRING()).print().set_parallelism(1)
numbers.shuffle().map(lambda x: x * 10, output_type=Types.INT()).print().set_parallelism(1)
numbers.map(lambda x: x, output_type=Types.INT()).set_parallelism(1).forward() \
    .map(WhereAmI("forward"), output_type=Types.STRING()).set_parallelism(1).print().set_parallelism(1)
env.execute("partitioning")
