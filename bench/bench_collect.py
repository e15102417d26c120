"""PyFlink-shaped programs read with ``execute_and_collect``, against a plain loop (issue 15).

Run: ``.venv/bin/python bench/bench_collect.py [--records N] [--repeat R] [--profile W]``

The workloads of ``bench/workloads.py`` written as a PyFlink program would be: typed
streams (``type_info=``, ``output_type=``) and the results read back with
``with ds.execute_and_collect() as it: for x in it: ...``. The clock runs from
``execute_and_collect()`` to the last record read (the input list is built before). Every
workload runs once on 1,000 records first (imports and first-use costs), then ``R`` times
on ``N`` records, alternating with the plain loop calling the same functions; the
medians, streamkernel's records/s and the ratio are printed with the issue's target.

* C1: ``from_collection(range, type_info=LONG)``, map x*3+1 (``output_type=LONG``), filter
  even, map x//7; the reader sums the results.
* C2: records ``("k%d" % ((i*7919) % 10000), 1)`` typed ``TUPLE([STRING, INT])``; key_by;
  running reduce of the counts; the reader counts the results.
* C3: records (key i%100, timestamp i ms, value 1) typed ``TUPLE([INT, LONG, INT])``;
  monotonous watermarks; tumbling 1 s event-time windows; reduce (``output_type=``);
  the reader counts the results.

``--profile C1`` prints a cProfile of one streamkernel run (the reader's thread) instead.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workloads import (  # noqa: E402 - the shared user functions
    plain_w3,
    w1_even,
    w1_map1,
    w1_map2,
    w2_key,
    w2_record,
    w2_reduce,
    w3_key,
    w3_record,
    w3_reduce,
    w3_timestamp,
)

# ---------------------------------------------------------------- plain loops


def plain_c1(n: int) -> tuple[float, Any]:
    """C1 as a plain loop: the user functions per record, the reader's sum."""
    data = list(range(n))
    start = time.perf_counter()
    total = 0
    for x in data:
        y = w1_map1(x)
        if w1_even(y):
            total += w1_map2(y)
    return time.perf_counter() - start, total


def plain_c2(n: int) -> tuple[float, Any]:
    """C2 as a plain loop: key, look up, reduce, store, hand out."""
    records = [w2_record(i) for i in range(n)]
    start = time.perf_counter()
    state: dict[str, Any] = {}
    count = 0
    for r in records:
        k = w2_key(r)
        acc = state.get(k)
        acc = r if acc is None else w2_reduce(acc, r)
        state[k] = acc
        count += 1
    return time.perf_counter() - start, count


def plain_c3(n: int) -> tuple[float, Any]:
    """C3 as the plain loop of ``workloads.plain_w3``."""
    count = plain_w3(n)
    return plain_w3.elapsed, count  # type: ignore[attr-defined]


# ----------------------------------------------------------------- streamkernel


def _env() -> Any:
    from streamkernel.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    return env


def _read(ds: Any, reader: Callable[[Any], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    with ds.execute_and_collect() as it:
        result = reader(it)
    return time.perf_counter() - start, result


def _sum(it: Any) -> int:
    total = 0
    for x in it:
        total += x
    return total


def _count(it: Any) -> int:
    count = 0
    for _ in it:
        count += 1
    return count


def streamkernel_c1(n: int) -> tuple[float, Any]:
    """C1 on streamkernel, read with execute_and_collect."""
    from streamkernel.common.typeinfo import Types

    ds = (_env().from_collection(list(range(n)), type_info=Types.LONG())
          .map(w1_map1, output_type=Types.LONG()).filter(w1_even).map(w1_map2))
    return _read(ds, _sum)


def streamkernel_c2(n: int) -> tuple[float, Any]:
    """C2 on streamkernel, read with execute_and_collect."""
    from streamkernel.common.typeinfo import Types

    records = [w2_record(i) for i in range(n)]
    ds = (_env().from_collection(records, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
          .key_by(w2_key).reduce(w2_reduce))
    return _read(ds, _count)


def streamkernel_c3(n: int) -> tuple[float, Any]:
    """C3 on streamkernel, read with execute_and_collect."""
    from streamkernel.common import Duration, WatermarkStrategy
    from streamkernel.common.typeinfo import Types
    from streamkernel.common.watermark_strategy import TimestampAssigner
    from streamkernel.datastream.window import TumblingEventTimeWindows

    class Ts(TimestampAssigner):
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return w3_timestamp(value)

    row = Types.TUPLE([Types.INT(), Types.LONG(), Types.INT()])
    records = [w3_record(i) for i in range(n)]
    ds = (_env().from_collection(records, type_info=row)
          .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts()))
          .key_by(w3_key)
          .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
          .reduce(w3_reduce, output_type=row))
    return _read(ds, _count)


ROWS = [("C1", plain_c1, streamkernel_c1, 1.5), ("C2", plain_c2, streamkernel_c2, 3.0),
        ("C3", plain_c3, streamkernel_c3, 3.0)]


def _medians(plain: Callable[[int], tuple[float, Any]], engine: Callable[[int], tuple[float, Any]], n: int,
             repeat: int) -> tuple[float, Any, float, Any]:
    """Median times and results of ``plain`` and ``engine``, run alternately (both see the same load)."""
    plain_times, engine_times = [], []
    plain_result = engine_result = None
    for _ in range(repeat):
        gc.collect()
        elapsed, plain_result = plain(n)
        plain_times.append(elapsed)
        gc.collect()
        elapsed, engine_result = engine(n)
        engine_times.append(elapsed)
    return statistics.median(plain_times), plain_result, statistics.median(engine_times), engine_result


def _profile(name: str, n: int) -> None:
    """cProfile of one run in every thread (the reader's and the job's), by total time."""
    import cProfile
    import pstats
    import threading

    engine = {row[0]: row[2] for row in ROWS}[name]
    engine(1000)
    profilers = [cProfile.Profile()]

    def start_in_thread(*_: Any) -> None:  # the first event of a new thread switches cProfile on
        profiler = cProfile.Profile()
        profilers.append(profiler)
        profiler.enable()

    threading.setprofile(start_in_thread)
    profilers[0].enable()
    engine(n)
    profilers[0].disable()
    threading.setprofile(None)  # type: ignore[arg-type]
    stats = pstats.Stats(profilers[0])
    for profiler in profilers[1:]:
        stats.add(profiler)
    stats.sort_stats("tottime").print_stats(25)


def main() -> None:
    """Print, per workload, the plain loop's and streamkernel's medians, records/s and ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", choices=[row[0] for row in ROWS], default=None)
    args = parser.parse_args()
    n = args.records
    if args.profile:
        _profile(args.profile, n)
        return
    print(f"{n:,} records, median of {args.repeat}")
    cold = ROWS[0][2](1000)[0]  # the first execute_and_collect of the process imports the runtime
    for _, plain, engine, _ in ROWS:  # warm-up: imports and first-use costs are not the workload's
        plain(1000)
        engine(1000)
    print(f"(first execute_and_collect of the process, 1,000 records: {cold:.3f}s; "
          f"warm: {ROWS[0][2](1000)[0]:.3f}s)")
    print(f"{'workload':<9}{'plain loop':>12}{'streamkernel':>14}{'records/s':>14}{'ratio':>8}{'target':>8}  result")
    for name, plain, engine, target in ROWS:
        plain_s, plain_result, engine_s, engine_result = _medians(plain, engine, n, args.repeat)
        ok = "same" if engine_result == plain_result else f"DIFFERENT: {engine_result} vs {plain_result}"
        print(f"{name:<9}{plain_s:>11.3f}s{engine_s:>13.3f}s{n / engine_s:>14,.0f}{engine_s / plain_s:>7.2f}x"
              f"{'<=' + str(target) + 'x':>8}  {ok}")


if __name__ == "__main__":
    main()
