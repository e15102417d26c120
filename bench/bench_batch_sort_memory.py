"""BATCH sorting under managed memory (issue 19): a keyed BATCH job's RSS, its sorter bounded by
its slot's managed share (spilling to disk) against the same job with managed memory to spare.

Run: ``.venv/bin/python bench/bench_batch_sort_memory.py [--records 500000] [--managed 16m] [--quick]``

Each run is a fresh Python process with a local MiniCluster of one TaskManager with one slot
(``taskmanager.memory.process.size: 8g`` so that both runs fit Flink's calculation). The job, in
``execution.runtime-mode: BATCH``: a sequence ``0 .. N-1`` -> ``(i % 1000, 100-character
text)`` -> ``key_by`` -> ``reduce`` (keeps the longer text) -> discard. In BATCH mode the reduce's
input is sorted by key first (Flink's SortingDataInput): the whole input passes through the sorter.

* bounded: ``taskmanager.memory.managed.size`` = ``--managed``: the sorter's share is the whole
  slot (the only sorter), it spills sorted runs of ``sort-spilling-threshold`` (0.8) of its sort
  memory and merges them at the end;
* baseline: ``taskmanager.memory.managed.size: 4g``: the sorter never spills, everything is held.

Printed: elapsed time, RSS at the start (cluster up, a warm-up job done), the peak (sampled every
0.2 s), the growth (peak - start), and the ratio of the bounded growth to the baseline's. The
bound checked: growth <= managed share + margin (``--margin``, 48 MiB: the records in flight in
the network buffers and the operator chain, the merge's read chunks, one run being written, and
what glibc's allocator keeps of freed pages).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

MB = 1 << 20


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Keyed:
    """``i -> (i % 1000, a 100-character text)``."""

    def __call__(self, i: int) -> tuple:
        return i % 1000, str(i).rjust(100, "x")


def _longer(a: tuple, b: tuple) -> tuple:
    return a if a[1] >= b[1] else b


def _discard(value: tuple) -> None:
    """The sink: drops what it gets."""


def _child(managed: str, records: int) -> None:
    """One run, in this (child) process: prints one JSON line of figures."""
    from streamkernel.common import Configuration, WatermarkStrategy
    from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
    from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
    from streamkernel.runtime.minicluster.minicluster import MiniCluster
    from streamkernel.runtime.operators import external_sorter

    spills = []
    write = external_sorter.SpillingRuns.write

    def counting_write(self, entries):  # noqa: ANN001, ANN202
        spills.append(1)
        return write(self, entries)

    external_sorter.SpillingRuns.write = counting_write  # type: ignore[method-assign]
    conf = {"taskmanager.memory.process.size": "8g", "taskmanager.memory.managed.size": managed,
            "restart-strategy.type": "none"}
    cluster = MiniCluster(1, 1, configuration=conf).start(make_current=False)
    samples: list = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            samples.append(_rss())

    def job(count: int, name: str):  # noqa: ANN202
        env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
        env.set_runtime_mode(RuntimeExecutionMode.BATCH)
        env.set_parallelism(1)
        (env.from_source(NumberSequenceSource(0, count - 1), WatermarkStrategy.no_watermarks(), "seq")
            .map(Keyed()).key_by(lambda t: t[0]).reduce(_longer).add_sink(_discard))
        return env.get_stream_graph(name)

    try:
        cluster.submit(job(2000, "warm-up")).get_job_execution_result().result(timeout=600)
        spills.clear()
        graph = job(records, "batch sort")
        start_rss = _rss()
        start = time.monotonic()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        cluster.submit(graph).get_job_execution_result().result(timeout=3600)
        elapsed = time.monotonic() - start
        stop.set()
        sampler.join()
    finally:
        cluster.stop()
    print(json.dumps({"start_rss": start_rss, "peak": max(samples + [start_rss]), "elapsed": elapsed,
                      "spills": len(spills)}))


def _run(managed: str, records: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", managed, "--records", str(records)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--managed", default="16m", help="the slot's managed memory in the bounded run")
    parser.add_argument("--margin", default="48m", help="documented margin over the managed share")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20000 records, figures mean nothing")
    args = parser.parse_args()
    records = 20_000 if args.quick else args.records
    if args.child:
        _child(args.child, records)
        return
    from streamkernel.common.memory_size import MemorySize

    share, margin = MemorySize.parse(args.managed).get_bytes(), MemorySize.parse(args.margin).get_bytes()
    print(f"{records} records through a BATCH keyed reduce; bounded run: slot managed share {share / MB:.0f} MiB")
    results = {}
    for name, managed in (("bounded", args.managed), ("baseline (managed 4g, no spill)", "4g")):
        r = results[name] = _run(managed, records)
        r["growth"] = r["peak"] - r["start_rss"]
        print(f"{name}: {r['elapsed']:.1f} s, {r['spills']} spilled runs; RSS start {r['start_rss'] / MB:.0f} MiB, "
              f"peak {r['peak'] / MB:.0f} MiB, growth {r['growth'] / MB:.0f} MiB")
    bounded, baseline = results["bounded"], results["baseline (managed 4g, no spill)"]
    bound = share + margin
    print(f"\nbound: growth <= managed share {share / MB:.0f} MiB + margin {margin / MB:.0f} MiB = {bound / MB:.0f} MiB:"
          f" bounded growth {bounded['growth'] / MB:.0f} MiB -> {'WITHIN' if bounded['growth'] <= bound else 'EXCEEDED'}")
    print(f"bounded / baseline: growth {bounded['growth'] / max(1, baseline['growth']):.2f}, "
          f"time {bounded['elapsed'] / baseline['elapsed']:.2f}")


if __name__ == "__main__":
    main()
