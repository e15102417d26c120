"""What PyFlink conformance costs: typed boundaries and BATCH execution, against their baselines.

Two comparisons, each measured in this run against its baseline, alternately, best of R runs
(whole jobs on the embedded local cluster, parallelism 1, so the figures include the job's
start and stop; N records from a NumberSequenceSource):

* **typed boundaries**: for each kind of record, ``map(f)`` with no declared type (pickled
  records, nothing converted: the baseline) against the same map declaring its type:
  ``Types.FLOAT()`` (values rounded to 32 bits, one array round trip per batch),
  ``Types.TUPLE([STRING, LONG])`` (checked field by field) and ``Types.ROW_NAMED(...)``
  (Rows rebuilt with their field names);
* **BATCH execution**: ``key_by(...).reduce(...)`` over N records and K keys in STREAMING (the
  baseline: a running value per record) and in BATCH (the keyed input gathered, sorted by
  PyFlink's serialized key bytes, fed key by key, one final value per key).

Run: ``.venv/bin/python bench/bench_conformance.py [--records N] [--keys K] [--runs R]``
(prints records/s of each and the ratio to its baseline; a ratio above 1 is slower).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Optional

from streamkernel.common import Row, Types, WatermarkStrategy
from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource


def discard(value: Any) -> None:
    """The sink of every job: drops the record."""


def typed_job(records: int, output_type: Optional[Any], make: Callable[[int], Any]) -> float:
    """Seconds to run sequence -> map(make, output_type) -> discarding sink."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    ds = env.from_source(NumberSequenceSource(1, records), WatermarkStrategy.no_watermarks(), "sequence")
    ds.map(make, output_type=output_type).add_sink(discard)
    start = time.perf_counter()
    env.execute("typed-boundary")
    return time.perf_counter() - start


def reduce_job(records: int, keys: int, mode: RuntimeExecutionMode) -> float:
    """Seconds to run sequence -> (key, 1) -> key_by -> reduce -> discarding sink in ``mode``."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.set_runtime_mode(mode)
    ds = env.from_source(NumberSequenceSource(1, records), WatermarkStrategy.no_watermarks(), "sequence")
    ds.map(lambda i: ("k%d" % (i % keys), 1)).key_by(lambda r: r[0]) \
        .reduce(lambda a, b: (a[0], a[1] + b[1])).add_sink(discard)
    start = time.perf_counter()
    env.execute("keyed-reduce")
    return time.perf_counter() - start


def best_of(runs: int, cases: dict[str, Callable[[], float]]) -> dict[str, float]:
    """The best time of each case over ``runs`` rounds, the cases alternating in each round."""
    best = {name: float("inf") for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            best[name] = min(best[name], case())
    return best


def report(title: str, records: int, best: dict[str, float], baseline: str) -> None:
    """Print records/s per case and its time ratio to the baseline."""
    print(title)
    for name, seconds in best.items():
        print(f"  {name:<34} {records / seconds:>12,.0f} records/s   ratio {seconds / best[baseline]:.2f}")


def main() -> None:
    """Run both comparisons and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    n = options.records
    tuple_type = Types.TUPLE([Types.STRING(), Types.LONG()])
    row_type = Types.ROW_NAMED(["name", "n"], [Types.STRING(), Types.LONG()])
    kinds: list[tuple[str, Any, Callable[[int], Any]]] = [
        ("float", Types.FLOAT(), lambda i: i / 3),
        ("tuple", tuple_type, lambda i: ("k", i)),
        ("row", row_type, lambda i: Row(name="k", n=i)),
    ]
    for kind, type_info, make in kinds:
        typed = best_of(options.runs, {
            f"{kind}, untyped (baseline)": lambda: typed_job(n, None, make),  # noqa: B023 - called in this iteration
            f"{kind}, declared {type_info}": lambda: typed_job(n, type_info, make),  # noqa: B023
        })
        report(f"typed boundary, {kind} records, {n:,} records:", n, typed, f"{kind}, untyped (baseline)")
    batch = best_of(options.runs, {
        "STREAMING reduce (baseline)": lambda: reduce_job(n, options.keys, RuntimeExecutionMode.STREAMING),
        "BATCH reduce (sorted by key)": lambda: reduce_job(n, options.keys, RuntimeExecutionMode.BATCH),
    })
    report(f"keyed reduce, {n:,} records, {options.keys:,} keys:", n, batch, "STREAMING reduce (baseline)")


if __name__ == "__main__":
    main()
