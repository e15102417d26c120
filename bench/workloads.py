"""The three benchmark workloads of the runtime issue, on streamkernel and on a plain loop.

Run: ``.venv/bin/python bench/workloads.py [--records N] [--repeat R]``

Every implementation runs once on 1,000 records first (imports and first-use costs are not
part of a workload), then ``R`` times on ``N`` records; the median is printed.

Each workload runs at parallelism 1 on streamkernel's local cluster and as a hand-written
plain-Python loop that calls the same user functions per record with no framework around
them, measured in the same run; the ratio streamkernel / plain loop is printed. Where
streamz or bytewax are installed (``pip install streamkernel[bench]``), their versions run
too, so anyone can reproduce the comparison.

* W1: N integers; map x*3+1; filter even; map x//7; sum (a sink function both sides call).
* W2: N records ("k%d" % ((i*7919) % 10000), 1); key_by; running reduce of the counts.
* W3: N records (key i%100, timestamp i ms, value 1); monotonous watermarks; tumbling
  1 s event-time windows; sum per key and window (N/10 results for N = 1,000,000).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any, Callable

# ----------------------------------------------------------------- user functions
# The same functions are used by every implementation.


def w1_map1(x: int) -> int:
    """W1 first map."""
    return x * 3 + 1


def w1_even(x: int) -> bool:
    """W1 filter."""
    return x % 2 == 0


def w1_map2(x: int) -> int:
    """W1 second map."""
    return x // 7


class W1Total:
    """W1's sum: the sink function both implementations call per record."""

    def __init__(self) -> None:
        self.value = 0

    def add(self, x: int) -> None:
        """Add one record to the total."""
        self.value += x


def w2_record(i: int) -> tuple[str, int]:
    """W2 input record i."""
    return ("k%d" % ((i * 7919) % 10000), 1)


def w2_key(r: tuple[str, int]) -> str:
    """W2 key selector."""
    return r[0]


def w2_reduce(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    """W2 running count."""
    return (a[0], a[1] + b[1])


def w3_record(i: int) -> tuple[int, int, int]:
    """W3 input record i: (key, timestamp ms, value)."""
    return (i % 100, i, 1)


def w3_timestamp(r: tuple[int, int, int]) -> int:
    """W3 timestamp extractor."""
    return r[1]


def w3_key(r: tuple[int, int, int]) -> int:
    """W3 key selector."""
    return r[0]


def w3_reduce(a: tuple[int, int, int], b: tuple[int, int, int]) -> tuple[int, int, int]:
    """W3 sum of values per key and window."""
    return (a[0], a[1], a[2] + b[2])


# ---------------------------------------------------------------- plain loops


def plain_w1(n: int) -> int:
    """W1 as a plain loop: the user functions per record (the sum included), nothing else."""
    total = W1Total()
    add = total.add
    for x in range(n):
        y = w1_map1(x)
        if w1_even(y):
            add(w1_map2(y))
    return total.value


def plain_w2(n: int) -> int:
    """W2 as a plain loop: key, look up, reduce, store, emit."""
    records = [w2_record(i) for i in range(n)]
    start = time.perf_counter()
    state: dict[str, Any] = {}
    out = []
    for r in records:
        k = w2_key(r)
        acc = state.get(k)
        acc = r if acc is None else w2_reduce(acc, r)
        state[k] = acc
        out.append(acc)
    plain_w2.elapsed = time.perf_counter() - start  # type: ignore[attr-defined]
    return len(out)


def plain_w3(n: int) -> int:
    """W3 as a plain loop: timestamp, key, window start, reduce, fire windows at watermark."""
    records = [w3_record(i) for i in range(n)]
    start = time.perf_counter()
    size = 1000
    windows: dict[int, dict[int, Any]] = {}
    out = []
    watermark = -1
    for r in records:
        ts = w3_timestamp(r)
        k = w3_key(r)
        end = ts - ts % size + size
        per_key = windows.get(end)
        if per_key is None:
            per_key = windows[end] = {}
        acc = per_key.get(k)
        per_key[k] = r if acc is None else w3_reduce(acc, r)
        if ts - 1 > watermark:
            watermark = ts - 1
            while windows:
                first = min(windows)
                if first - 1 > watermark:
                    break
                out.extend(windows.pop(first).values())
    for end in sorted(windows):
        out.extend(windows[end].values())
    plain_w3.elapsed = time.perf_counter() - start  # type: ignore[attr-defined]
    return len(out)


# ----------------------------------------------------------------- streamkernel


def streamkernel_w1(n: int) -> int:
    """W1 on streamkernel at parallelism 1."""
    from streamkernel.datastream import StreamExecutionEnvironment

    total = W1Total()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection(range(n)).map(w1_map1).filter(w1_even).map(w1_map2).add_sink(total.add)
    env.execute("W1")
    return total.value


def streamkernel_w2(n: int) -> int:
    """W2 on streamkernel at parallelism 1 (input prepared before the clock starts)."""
    from streamkernel.datastream import StreamExecutionEnvironment

    records = [w2_record(i) for i in range(n)]
    count = [0]

    def sink(value: Any) -> None:
        count[0] += 1

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection(records).key_by(w2_key).reduce(w2_reduce).add_sink(sink)
    start, cpu = time.perf_counter(), time.process_time()
    env.execute("W2")
    streamkernel_w2.elapsed = time.perf_counter() - start  # type: ignore[attr-defined]
    streamkernel_w2.cpu = time.process_time() - cpu  # type: ignore[attr-defined]  # every thread of this process
    return count[0]


def streamkernel_w3(n: int) -> int:
    """W3 on streamkernel at parallelism 1 (input prepared before the clock starts)."""
    from streamkernel.common import Duration, WatermarkStrategy
    from streamkernel.common.watermark_strategy import TimestampAssigner
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.datastream.window import TumblingEventTimeWindows

    class Ts(TimestampAssigner):
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return w3_timestamp(value)

    records = [w3_record(i) for i in range(n)]
    count = [0]

    def sink(value: Any) -> None:
        count[0] += 1

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    (env.from_collection(records)
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts()))
        .key_by(w3_key)
        .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
        .reduce(w3_reduce)
        .add_sink(sink))
    start = time.perf_counter()
    env.execute("W3")
    streamkernel_w3.elapsed = time.perf_counter() - start  # type: ignore[attr-defined]
    return count[0]


def _timed(fn: Callable[[int], Any], n: int, repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn(n)
        elapsed = getattr(fn, "elapsed", None)
        times.append(elapsed if elapsed is not None else time.perf_counter() - start)
        if hasattr(fn, "elapsed"):
            del fn.elapsed  # type: ignore[attr-defined]
    return statistics.median(times), result


def main() -> None:
    """Run W1-W3 on the plain loop, streamkernel and, where installed, streamz and bytewax.

    Prints seconds, streamkernel's records/s and ratio to the plain loop against the issue's
    target, a column per other engine (seconds and ratio to the plain loop, or "not
    installed"), and whether every engine's result equals the plain loop's.
    """
    import os
    import sys

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.records
    # bench/other_engines.py imports the user functions from ``workloads``: when this file
    # runs as a script, let that name be this module so every engine calls the same objects.
    sys.modules.setdefault("workloads", sys.modules[__name__])
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import other_engines

    others = ["streamz", "bytewax"]
    installed = {name: other_engines.available(name) for name in others}
    rows = [("W1", plain_w1, streamkernel_w1, 1.5), ("W2", plain_w2, streamkernel_w2, 3.0),
            ("W3", plain_w3, streamkernel_w3, 3.0)]
    print(f"{'workload':<9}{'plain loop':>12}{'streamkernel':>14}{'records/s':>14}{'ratio':>8}{'target':>8}"
          + "".join(f"{name:>18}" for name in others) + "  result check")
    for _, plain, engine, _ in rows:  # warm-up: imports and first-use costs are not the workload's
        plain(1000)
        engine(1000)
    for name, plain, engine, target in rows:
        plain_s, plain_result = _timed(plain, n, args.repeat)
        engine_s, engine_result = _timed(engine, n, args.repeat)
        results = {"streamkernel": engine_result}
        columns = ""
        for other in others:
            if not installed[other]:
                columns += f"{'not installed':>18}"
                continue
            other_s, results[other] = _timed(getattr(other_engines, f"{other}_{name.lower()}"), n, args.repeat)
            columns += f"{other_s:>9.3f}s{other_s / plain_s:>8.2f}x"
        different = [f"{who} {result} vs {plain_result}" for who, result in results.items() if result != plain_result]
        ok = "same" if not different else "DIFFERENT: " + "; ".join(different)
        print(f"{name:<9}{plain_s:>11.3f}s{engine_s:>13.3f}s{n / engine_s:>14,.0f}{engine_s / plain_s:>7.2f}x"
              f"{'<=' + str(target) + 'x':>8}{columns}  {ok}")


if __name__ == "__main__":
    main()
