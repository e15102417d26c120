"""Task names seen by rich functions (RuntimeContext.get_task_name / get_task_name_with_subtasks) in chains of merged Python operators, keyed operators and co-operators, and job parameters set through a Configuration (pipeline.global-job-parameters)."""
from streamkernel.common import Configuration, Types
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.functions import (CoMapFunction, FilterFunction, KeyedProcessFunction, MapFunction,
                                               RuntimeContext)


def describe(label, ctx: RuntimeContext):
    return (f"{label}: {ctx.get_task_name()!r} {ctx.get_task_name_with_subtasks()!r} "
            f"{ctx.get_number_of_parallel_subtasks()} {ctx.get_job_parameter('site', '?')} "
            f"{ctx.get_job_parameter('rounds', '?')}")


class Tag(MapFunction):
    def __init__(self, label):
        self.label = label

    def open(self, runtime_context: RuntimeContext):
        self.text = describe(self.label, runtime_context)

    def map(self, value):
        return f"{self.text} <- {value}"


class Keep(FilterFunction):
    def open(self, runtime_context: RuntimeContext):
        self.name = runtime_context.get_task_name()

    def filter(self, value):
        return self.name != ""


class Keyed(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.text = describe("keyed", runtime_context)

    def process_element(self, value, ctx):
        yield f"{self.text} <- {value}"


class Both(CoMapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.text = describe("co", runtime_context)

    def map1(self, value):
        return f"{self.text} <- {value}"

    def map2(self, value):
        return f"{self.text} <- {value}"


def main():
    config = Configuration()
    config.set_string("pipeline.global-job-parameters", "site:lab,rounds:3")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    words = env.from_collection(["x", "y"], type_info=Types.STRING())
    words.map(Tag("first")).name("first").filter(Keep()).map(Tag("second"), output_type=Types.STRING()).print()
    words.key_by(lambda w: w).process(Keyed()).map(lambda s: s.upper()).print()
    words.connect(words.map(lambda w: w * 2, output_type=Types.STRING())).map(Both()).print()
    words.map(lambda w: w, output_type=Types.STRING()).map(Tag("alone"), output_type=Types.STRING()).name("alone") \
        .set_parallelism(2).map(lambda s: s.split(" <- ")[0], output_type=Types.STRING()).set_parallelism(2).print()
    env.execute("task names")


if __name__ == "__main__":
    main()
