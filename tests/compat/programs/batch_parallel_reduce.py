"""BATCH execution at parallelism 2 (set on each operator: Flink's adaptive batch scheduler would choose 1 for operators that inherit the environment's): key_by + reduce and a tumbling event-time window reduce print one final line per key / window (with the subtask prefix)."""
from streamkernel.common import WatermarkStrategy
from streamkernel.common.time import Time
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from streamkernel.datastream.window import TumblingEventTimeWindows

RECORDS = [(f"k{i % 7}", i, i * 3) for i in range(60)]


class ThirdField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    records = env.from_collection(RECORDS)
    records.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2]))).set_parallelism(2) \
        .map(lambda r: f"reduce {r}").set_parallelism(2).print().set_parallelism(2)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ThirdField())
    records.assign_timestamps_and_watermarks(strategy).key_by(lambda r: r[0]) \
        .window(TumblingEventTimeWindows.of(Time.milliseconds(50))) \
        .reduce(lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2]))).set_parallelism(2) \
        .map(lambda r: f"window {r}").set_parallelism(2).print().set_parallelism(2)
    env.execute("batch parallel reduce")


if __name__ == "__main__":
    main()
