"""The window operator alone on the W3 shape, against the plain Python loop.

W3: 1,000,000 records (key ``i % 100``, timestamp ``i`` ms, value 1), monotonous watermarks,
tumbling 1 s event-time windows, sum per key and window (100,000 results). The operator is
called directly (no task, no network) with batches of 1024 records and a watermark after
every batch, as a task would; the plain loop calls the same key selector and reduce
function per record, computes the window start, accumulates in a dict per window and
fires a window once the stream passed its end.

Run: ``.venv/bin/python bench/bench_window_operator.py`` (prints the best of 7 runs of each).
"""

from __future__ import annotations

import gc
import time
from types import SimpleNamespace

from streamkernel.common.watermark_strategy import MAX_WATERMARK
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.datastream.window import TumblingEventTimeWindows
from streamkernel.runtime.core.clock import SystemClock
from streamkernel.runtime.core.metrics import OperatorMetrics
from streamkernel.runtime.operators.base import OperatorContext, TaskInfo
from streamkernel.runtime.operators.window import WindowOperator
from streamkernel.runtime.state.heap import HeapKeyedStateBackend
from streamkernel.runtime.state.operator_state import DefaultOperatorStateBackend
from streamkernel.runtime.operators.timers import InternalTimerService, ProcessingTimeService

N = 1_000_000
BATCH = 1024
RUNS = 7


def key_selector(record):
    return record[0]


def reduce_function(a, b):
    return a[0], a[1] + b[1]


class _CountingOutput:
    def __init__(self) -> None:
        self.count = 0

    def emit(self, values, timestamps):
        self.count += len(values)

    def emit_watermark(self, timestamp):
        pass

    def emit_side(self, tag, values, timestamps):
        pass


def plain(values: list, timestamps: list) -> int:
    """The hand-written loop: per record key, window start, dict accumulate; fire passed windows."""
    size = 1000
    windows: dict = {}
    out = []
    last_start = None
    pane: dict = {}
    for record, timestamp in zip(values, timestamps):
        key = key_selector(record)
        start = timestamp - timestamp % size
        if start != last_start:
            for done in sorted(windows):
                if done + size <= timestamp:
                    out.extend(windows.pop(done).values())
            last_start = start
            pane = windows.setdefault(start, {})
        acc = pane.get(key)
        pane[key] = record if acc is None else reduce_function(acc, record)
    for done in sorted(windows):
        out.extend(windows.pop(done).values())
    return len(out)


def window_operator(batches: list) -> tuple[float, int]:
    """Seconds to run the batches (and their watermarks) through a WindowOperator; results."""
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = (env.from_collection([(0, 1)]).key_by(key_selector)
              .window(TumblingEventTimeWindows.of(1000)).reduce(reduce_function))
    operator = WindowOperator(stream._transformation.operator)
    backend = HeapKeyedStateBackend(128, range(128))
    processing_time = ProcessingTimeService(SystemClock())

    def timer_service(name, triggerable):
        service = InternalTimerService(name, backend, triggerable, processing_time)
        operator._timer_services.append(service)
        return service

    context = OperatorContext(
        task_info=TaskInfo("bench", "bench", "Window", 0, 1, 128), node=SimpleNamespace(name="Window"),
        processing_time=processing_time, timer_service=timer_service,
        operator_state=DefaultOperatorStateBackend(), metrics=OperatorMetrics("Window"), keyed_backend=backend)
    output = _CountingOutput()
    operator.setup(context, output)
    operator.initialize_state()
    operator.open()
    process_batch, process_watermark = operator.process_batch, operator.process_watermark
    start = time.perf_counter()
    for values, timestamps in batches:
        process_batch(values, timestamps)
        process_watermark(timestamps[-1] - 1)  # monotonous timestamps: watermark = max - 1
    process_watermark(MAX_WATERMARK)
    return time.perf_counter() - start, output.count


def main() -> None:
    """Print the best time of each and the ratio operator / plain loop."""
    values = [(i % 100, 1) for i in range(N)]
    timestamps = list(range(N))
    batches = [(values[i:i + BATCH], timestamps[i:i + BATCH]) for i in range(0, N, BATCH)]
    plain_times, operator_times = [], []
    for _ in range(RUNS):
        gc.collect()
        begin = time.perf_counter()
        results = plain(values, timestamps)
        plain_times.append(time.perf_counter() - begin)
        gc.collect()
        seconds, emitted = window_operator(batches)
        operator_times.append(seconds)
        assert results == emitted == N // 1000 * 100, (results, emitted)
    best_plain, best_operator = min(plain_times), min(operator_times)
    print(f"W3 window operator: plain loop {best_plain:.3f} s, WindowOperator {best_operator:.3f} s "
          f"({N / best_operator:,.0f} records/s), ratio {best_operator / best_plain:.2f}")


if __name__ == "__main__":
    main()
