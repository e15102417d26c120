"""Records and priority events never wait behind a batch (issue 31), in one run with the hot path.

    .venv/bin/python bench/bench_latency.py [--records N] [--repeat R] [--seconds S] [--warmup W]

Four parts, on one local cluster (two TaskManager threads of two slots):

1. **First-record latency** behind a map that takes 25 ms a record: ``NumberSequenceSource ->
   map(stamp the wall clock) -> map(25 ms) -> rebalance -> map -> execute_and_collect``; the
   latency of a record is its arrival at the client minus its stamp (so the job's start is not
   part of it). Printed: the first record's and the median of the first 20 (target: the first
   under 150 ms; with ``execution.buffer-timeout`` 100 ms, a record waits for its batch, at most
   one time budget, then for the flush).
2. **Savepoint and cancel** of that job while it runs: how long a savepoint takes (its barrier
   enters the source task between two records of the slow map), and from ``cancel()`` to the job
   CANCELED and no task thread left (target: under 1 s, none left).
3. **Checkpoints completed** in ``S`` seconds at a 300 ms interval behind a keyed operator of
   2 ms a record (``bench_unaligned.py``'s job), aligned / debloated / unaligned, at the default
   batch size (target: unaligned completes at least 80% of those triggered).
4. **The hot path**: W1-W3 of ``workloads.py`` on streamkernel and on the plain loop, their
   ratio (the README's targets, unchanged).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

SLOW_S = 0.025


def slow(value: Any) -> Any:
    """The 25 ms a record map."""
    time.sleep(SLOW_S)
    return value


def stamp(value: int) -> tuple[int, float]:
    """The record and when it entered the job (wall clock)."""
    return value, time.time()


def _slow_job() -> Any:
    from streamkernel.common import WatermarkStrategy
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.datastream.connectors.number_seq import NumberSequenceSource

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    return (env.from_source(NumberSequenceSource(0, 10_000_000), WatermarkStrategy.no_watermarks(), "sequence")
            .map(stamp).map(slow).rebalance().map(lambda pair: pair))


def first_record_latency(records: int = 20) -> tuple[float, float]:
    """(the first record's latency, the median of the first ``records``), in seconds."""
    latencies = []
    with _slow_job().execute_and_collect() as results:
        for _ in range(records):
            _, stamped = next(results)
            latencies.append(time.time() - stamped)
    return latencies[0], statistics.median(latencies)


def _task_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if "(" in t.name and "/" in t.name]


def savepoint_and_cancel_time() -> tuple[float, float, list[str]]:
    """Seconds a savepoint of the running job takes; seconds from cancel() to CANCELED with no task
    thread left; the task threads left then."""
    import tempfile

    from streamkernel.common.job_status import JobStatus
    from streamkernel.testing import wait_until

    stream = _slow_job()
    seen = []
    stream.add_sink(seen.append)
    client = stream.get_execution_environment().execute_async("cancel me")
    wait_until(lambda: len(seen) >= 3, timeout=60, message="the job's first records")
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as directory:
        start = time.perf_counter()
        client.trigger_savepoint(directory).result()
        savepoint_s = time.perf_counter() - start
    start = time.perf_counter()
    client.cancel().result()
    wait_until(lambda: client.get_job_status().result() is JobStatus.CANCELED and not _task_threads(),
               timeout=30, message="the job canceled and its task threads gone")
    return savepoint_s, time.perf_counter() - start, _task_threads()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records of W1-W3")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each workload (median)")
    parser.add_argument("--seconds", type=float, default=6.0, help="window of periodic checkpoints")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before counting checkpoints")
    args = parser.parse_args()

    import bench_unaligned
    import workloads

    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    with MiniCluster(2, 2):
        first, median = first_record_latency()
        print(f"first-record latency behind a 25 ms/record map: first {first * 1000:.0f} ms, median of 20 "
              f"{median * 1000:.0f} ms (target: first < 150 ms)")
        savepoint, took, left = savepoint_and_cancel_time()
        print(f"a savepoint of that job (its barrier enters the source task between two records): "
              f"{savepoint * 1000:.0f} ms")
        print(f"cancel of that job: {took * 1000:.0f} ms to CANCELED with no task thread left "
              f"(target < 1000 ms); threads left: {left or 'none'}")
    with MiniCluster(1, 2) as cluster:
        triggered = int(args.seconds * 1000 // 300)
        for mode in bench_unaligned.MODES:
            r = bench_unaligned.measure(cluster, mode, args.seconds, 0, args.warmup)
            print(f"checkpoints, {mode:<9}: one triggered took {r['checkpoint_s']:6.2f} s; periodic 300 ms: "
                  f"{r['completed_in_window']} of {triggered} completed in {args.seconds:g} s "
                  f"({100 * r['completed_in_window'] / triggered:.0f}%{'; target >= 80%' if mode == 'unaligned' else ''})")
    rows = [("W1", workloads.plain_w1, workloads.streamkernel_w1, 1.5),
            ("W2", workloads.plain_w2, workloads.streamkernel_w2, 3.0),
            ("W3", workloads.plain_w3, workloads.streamkernel_w3, 3.0)]
    for _, plain, engine, _ in rows:
        plain(1000)
        engine(1000)
    for name, plain, engine, target in rows:
        plain_s, plain_result = workloads._timed(plain, args.records, args.repeat)
        engine_s, engine_result = workloads._timed(engine, args.records, args.repeat)
        same = "same result" if engine_result == plain_result else f"DIFFERENT {engine_result} vs {plain_result}"
        print(f"{name}: plain loop {plain_s:.3f} s, streamkernel {engine_s:.3f} s, ratio {engine_s / plain_s:.2f}x "
              f"(target <= {target}x), {same}")


if __name__ == "__main__":
    main()
