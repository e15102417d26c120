"""The cost of the key group ownership check (a keyed subtask refuses keys it does not own).

The same keyed operators run with the check on and off, alternately, in one process. The
operators are subtask 1 of 2 (key groups 0..63 of 128): they get exactly the records the
key_by partitioner sends that subtask, in batches of 1024, called directly (no task, no
network), so the difference is the check and nothing else:

* W2 reduce: records ``("k%d" % ((i*7919) % 10000), 1)``; key_by; running reduce of the
  counts (ReduceOperator's dict fast path: a key is checked when it first enters the dict).
* keyed process: the same records; a KeyedProcessFunction counting per key in a ValueState
  (the general keyed path: a batch's keys checked with one ``set.issuperset``).
* W3 window: records (key ``i % 100``, timestamp ``i`` ms); tumbling 1 s event-time windows,
  sum per key and window (the window fast path: each window's keys of the batch, once).

``--job`` also runs W2 as a whole job at parallelism 2 (local cluster) with the check on
and off; on a busy machine that figure is noisier than the operator-level ones.

Run: ``.venv/bin/python bench/bench_keygroup_check.py [--records N] [--runs R] [--job]``
(prints the best of R runs of each, records/s and the ratio check-on / check-off).
"""

from __future__ import annotations

import argparse
import gc
import time
from types import SimpleNamespace
from typing import Any, Callable

from streamkernel.common.watermark_strategy import MAX_WATERMARK
from streamkernel.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window import TumblingEventTimeWindows
from streamkernel.graph.keygroups import assign_key_to_operator
from streamkernel.runtime.core.clock import SystemClock
from streamkernel.runtime.core.metrics import OperatorMetrics
from streamkernel.runtime.operators import key_group_check
from streamkernel.runtime.operators.base import OperatorContext, TaskInfo
from streamkernel.runtime.operators.factory import create_operator
from streamkernel.runtime.state.heap import HeapKeyedStateBackend
from streamkernel.runtime.state.operator_state import DefaultOperatorStateBackend
from streamkernel.runtime.operators.timers import InternalTimerService, ProcessingTimeService

BATCH = 1024
MAX_PARALLELISM = 128
PARALLELISM = 2
SUBTASK = 0


def w2_record(i: int) -> tuple[str, int]:
    """W2 input record i."""
    return ("k%d" % ((i * 7919) % 10000), 1)


def first(record: tuple) -> Any:
    """The key selector of every workload."""
    return record[0]


def add_counts(a: tuple, b: tuple) -> tuple:
    """W2's running count and W3's window sum."""
    return (a[0], a[1] + b[1])


class CountPerKey(KeyedProcessFunction):
    """A count per key in a ValueState; emits (key, count)."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        current = (self.count.value() or 0) + 1
        self.count.update(current)
        yield value[0], current


class _CountingOutput:
    def __init__(self) -> None:
        self.count = 0

    def emit(self, values: list, timestamps: Any) -> None:
        self.count += len(values)

    def emit_watermark(self, timestamp: int) -> None:
        pass

    def emit_watermark_status(self, idle: bool) -> None:
        pass

    def emit_side(self, tag: Any, values: list, timestamps: Any) -> None:
        pass


def _operator(build: Callable[[Any], Any]) -> tuple[Any, _CountingOutput]:
    """The operator of ``build(keyed_stream)`` as subtask SUBTASK of PARALLELISM, opened."""
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = build(env.from_collection([("k", 1)]).key_by(first))
    operator = create_operator(SimpleNamespace(name="bench", operator=stream._transformation.operator))  # type: ignore[arg-type]
    key_groups = range(0, MAX_PARALLELISM // PARALLELISM)  # subtask 0's key groups
    backend = HeapKeyedStateBackend(MAX_PARALLELISM, key_groups)
    processing_time = ProcessingTimeService(SystemClock())

    def timer_service(name: str, triggerable: Any) -> Any:
        service = InternalTimerService(name, backend, triggerable, processing_time)
        operator._timer_services.append(service)
        return service

    name = type(operator).__name__
    context = OperatorContext(
        task_info=TaskInfo("bench", "bench", name, SUBTASK, PARALLELISM, MAX_PARALLELISM),
        node=SimpleNamespace(name=name),  # type: ignore[arg-type]  # only the name is read
        processing_time=processing_time, timer_service=timer_service,
        operator_state=DefaultOperatorStateBackend(), metrics=OperatorMetrics(name), keyed_backend=backend)
    output = _CountingOutput()
    operator.setup(context, output)
    operator.initialize_state()
    operator.open()
    return operator, output


def run(build: Callable[[Any], Any], batches: list, watermarks: bool) -> tuple[float, int]:
    """Seconds to push ``batches`` through a fresh operator; the number of results."""
    operator, output = _operator(build)
    process_batch, process_watermark = operator.process_batch, operator.process_watermark
    gc.collect()
    start = time.perf_counter()
    for values, timestamps in batches:
        process_batch(values, timestamps)
        if watermarks:
            process_watermark(timestamps[-1] - 1)
    if watermarks:
        process_watermark(MAX_WATERMARK)
    return time.perf_counter() - start, output.count


def _mine(records: list) -> list:
    """The records the key_by partitioner sends subtask SUBTASK."""
    owner: dict = {}
    mine = []
    for record in records:
        key = record[0]
        subtask = owner.get(key)
        if subtask is None:
            subtask = owner[key] = assign_key_to_operator(key, MAX_PARALLELISM, PARALLELISM)
        if subtask == SUBTASK:
            mine.append(record)
    return mine


def _batches(records: list, timestamps: Any) -> list:
    return [(records[i:i + BATCH], None if timestamps is None else timestamps[i:i + BATCH])
            for i in range(0, len(records), BATCH)]


def _job_w2(records: list) -> float:
    """W2 as a job at parallelism 2: seconds of env.execute()."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(PARALLELISM)
    env.from_collection(records).key_by(first).reduce(add_counts).add_sink(lambda value: None)
    start = time.perf_counter()
    env.execute("W2 p2")
    return time.perf_counter() - start


def _compare(name: str, n: int, measure: Callable[[], Any], runs: int) -> None:
    """Best of ``runs`` with the check on and off (alternating), printed with the ratio."""
    best = {True: float("inf"), False: float("inf")}
    results: dict = {}
    for _ in range(runs):
        for enabled in (True, False):
            key_group_check._ENABLED = enabled
            try:
                outcome = measure()
            finally:
                key_group_check._ENABLED = True
            seconds, result = outcome if isinstance(outcome, tuple) else (outcome, None)
            best[enabled] = min(best[enabled], seconds)
            results[enabled] = result
    assert results[True] == results[False], results
    on, off = best[True], best[False]
    print(f"{name:<22}{n:>11,}{n / off:>16,.0f}{n / on:>16,.0f}{on / off:>9.3f}")


def main() -> None:
    """Print records/s of each workload with the check off and on, and the ratio on/off."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000, help="records before partitioning")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--job", action="store_true", help="also W2 as a job at parallelism 2")
    args = parser.parse_args()
    n = args.records
    w2 = _mine([w2_record(i) for i in range(n)])
    w3_all = [(i % 100, i) for i in range(n)]
    w3 = _mine(w3_all)
    w3_batches = _batches([(k, 1) for k, _ in w3], [t for _, t in w3])
    window = lambda keyed: keyed.window(TumblingEventTimeWindows.of(1000)).reduce(add_counts)  # noqa: E731
    print(f"subtask {SUBTASK + 1} of {PARALLELISM} (key groups 0..{MAX_PARALLELISM // PARALLELISM - 1}), "
          f"batches of {BATCH}, best of {args.runs}")
    print(f"{'workload':<22}{'records':>11}{'check off r/s':>16}{'check on r/s':>16}{'on/off':>9}")
    _compare("W2 reduce", len(w2), lambda: run(lambda k: k.reduce(add_counts), _batches(w2, None), False), args.runs)
    _compare("keyed process", len(w2), lambda: run(lambda k: k.process(CountPerKey()), _batches(w2, None), False),
             args.runs)
    _compare("W3 window", len(w3), lambda: run(window, w3_batches, True), args.runs)
    if args.job:
        job_records = [w2_record(i) for i in range(n // 2)]
        _compare("W2 job, parallelism 2", len(job_records), lambda: _job_w2(job_records), max(1, args.runs // 2))


if __name__ == "__main__":
    main()
