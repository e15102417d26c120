"""Rich functions: open(RuntimeContext)/close, the runtime context's task name, parallelism, max parallelism, subtask index, attempt number and task name with subtasks, get_job_parameter with set_global_job_parameters, and metric counters, in a map and a keyed process function at parallelism 2."""
from streamkernel.common import Types
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.functions import KeyedProcessFunction, MapFunction, RuntimeContext


class Describe(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        ctx = runtime_context
        self.info = (f"map task={ctx.get_task_name()!r} subtasks={ctx.get_number_of_parallel_subtasks()} "
                     f"max={ctx.get_max_number_of_parallel_subtasks()} index={ctx.get_index_of_this_subtask()} "
                     f"attempt={ctx.get_attempt_number()} with_subtasks={ctx.get_task_name_with_subtasks()!r} "
                     f"unit={ctx.get_job_parameter('unit', 'none')!r} "
                     f"missing={ctx.get_job_parameter('missing', 'fallback')!r}")
        self.seen = ctx.get_metrics_group().counter("seen")

    def map(self, value):
        self.seen.inc()
        return self.info

    def close(self):
        self.info = None


class PerKey(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.index = runtime_context.get_index_of_this_subtask()
        self.name = runtime_context.get_task_name()
        self.records = runtime_context.get_metrics_group().add_group("keys").counter("records")
        self.limit = int(runtime_context.get_job_parameter("limit", "0"))

    def process_element(self, value, ctx):
        self.records.inc(2)
        yield (f"key {ctx.get_current_key()} value {value} on subtask {self.index} of {self.name!r} "
               f"count {self.records.get_count()} over {value > self.limit}")


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.get_config().set_global_job_parameters({"unit": "celsius", "limit": 5})
    numbers = env.from_collection(list(range(10)), type_info=Types.INT())
    numbers.map(Describe(), output_type=Types.STRING()).name("describe")
    described = numbers.map(Describe(), output_type=Types.STRING()).name("describe")
    with described.execute_and_collect() as results:
        for line in sorted(set(results)):
            print(line)
    numbers.key_by(lambda v: v % 4).process(PerKey(), output_type=Types.STRING()).print()
    env.execute("rich")


if __name__ == "__main__":
    main()
