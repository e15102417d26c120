"""BATCH execution (set_runtime_mode(RuntimeExecutionMode.BATCH)) at parallelism 1: key_by + reduce / sum / count_window emit per key in Flink's sorted key order, for pickled keys (no key_type) and key_type=Types.INT() / Types.STRING()."""
from streamkernel.common import Types
from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

RECORDS = [('bb', 1, 5), (1, 2, 3), ('a', 3, 1), ('c', 4, 7), ('aa', 5, 2), ('b', 6, 9), ('a', 7, 4),
           (1, 8, 1), ('bb', 9, 1000), ('c', 10, 1)]
INT_KEYS = [5, -3, 0, 300, -1, 2**31 - 1, -2**31, 70000, 256, -256, 200, 5]
STR_KEYS = ['b', 'ab', '', 'é', 'a', 'B', 'zz', 'aaa', '中', 'Z', 'b']
MIXED_KEYS = [(1, 2), None, True, 1.5, 'x', b'x', 10**20, -5, False, ('a',), 0, 'x']


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)
    records = env.from_collection(RECORDS)
    records.key_by(lambda r: r[0]) \
        .reduce(lambda a, b: (a[0], a[1] + b[1], max(a[2], b[2]))) \
        .map(lambda r: f"reduce {r}").print()
    records.key_by(lambda r: r[0]).sum(1).map(lambda r: f"sum {r}").print()
    records.key_by(lambda r: r[0]).count_window(2) \
        .reduce(lambda a, b: (a[0], a[1] + b[1], b[2])) \
        .map(lambda r: f"count_window {r}").print()
    ints = env.from_collection([(k, 1) for k in INT_KEYS], type_info=Types.TUPLE([Types.INT(), Types.INT()]))
    ints.key_by(lambda r: r[0], key_type=Types.INT()).reduce(lambda a, b: (a[0], a[1] + b[1])) \
        .map(lambda r: f"int_key {r}").print()
    ints.map(lambda r: r).key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])) \
        .map(lambda r: f"pickled_int {r}").print()
    strs = env.from_collection([(k, 1) for k in STR_KEYS])
    strs.key_by(lambda r: r[0], key_type=Types.STRING()).reduce(lambda a, b: (a[0], a[1] + b[1])) \
        .map(lambda r: f"string_key {r}").print()
    strs.key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1])) \
        .map(lambda r: f"pickled_str {r}").print()
    env.from_collection([(k, 1) for k in MIXED_KEYS]).key_by(lambda r: r[0]) \
        .reduce(lambda a, b: (a[0], a[1] + b[1])) \
        .map(lambda r: f"mixed {r}").print()
    env.execute("batch key order")


if __name__ == "__main__":
    main()
