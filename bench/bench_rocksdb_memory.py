"""RocksDB under managed memory (issue 19): a keyed job's RSS while its state grows to 10x the block cache.

Run: ``.venv/bin/python bench/bench_rocksdb_memory.py [--managed 32m] [--value-bytes 1024] [--quick]``

Each run is a fresh Python process (so one run's heap and allocator arenas do not count in
the other's RSS) with a local MiniCluster of one TaskManager with one slot, on the ``rocksdb``
state backend. The job: a sequence ``0 .. 2N-1`` -> key ``i % N`` -> a KeyedProcessFunction
that reads its ValueState and writes a fresh incompressible value of ``--value-bytes``
(seeded random bytes) -> discard. ``N`` is chosen so that the state holds ~10x the shared
block cache's capacity; the second pass over the keys reads every value back through the cache.

* managed: ``taskmanager.memory.managed.size`` = ``--managed`` (the slot's share,
  ``state.backend.rocksdb.memory.managed: true``, Flink's default): one cache of
  ``(3 - 0.5) * M / 3`` with the memtables charged to it.
* baseline: the same job with ``state.backend.rocksdb.memory.managed: false`` (RocksDB's own
  defaults: a block cache per instance, 64 MiB memtables, index and filter blocks outside the cache).

Printed: RSS over time (a sample every 0.5 s, from /proc/self/statm), the RSS when the job
starts (cluster up, a 100-record warm-up job done so every module is loaded, nothing in
state), the peak, the growth (peak - start), the slot's RocksDB usage as the TaskManager
reports it, and the bound: growth <= ``M + margin``. The margin
(``--margin``, 32 MiB by default) covers what the managed share does not: RocksDB's LRU cache
is not strict (Flink creates it non-strict too) and blocks pinned by open iterators and table
readers' metadata may exceed it briefly; glibc's allocator keeps freed pages of its arenas.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import random
import threading
import time
from typing import Any

from streamkernel.datastream import KeyedProcessFunction
from streamkernel.datastream.state import ValueStateDescriptor

MB = 1 << 20


class KeyOf:
    """``i % keys``: the key of record ``i``."""

    def __init__(self, keys: int) -> None:
        self.keys = keys

    def __call__(self, i: int) -> int:
        return i % self.keys


class Grow(KeyedProcessFunction):
    """Reads its key's value, then stores a fresh incompressible one of ``value_bytes``; emits nothing."""

    def __init__(self, value_bytes: int) -> None:
        self.value_bytes = value_bytes

    def open(self, runtime_context):  # noqa: ANN001
        self.state = runtime_context.get_state(ValueStateDescriptor("v"))

    def process_element(self, value, ctx):  # noqa: ANN001
        self.state.value()
        self.state.update(random.Random(value).randbytes(self.value_bytes))
        return iter(())


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _child(managed: bool, managed_size: str, keys: int, value_bytes: int) -> None:
    """One run, in this (child) process: prints one JSON line of figures."""
    from streamkernel.common import Configuration, WatermarkStrategy
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    conf = {"state.backend.type": "rocksdb", "taskmanager.memory.managed.size": managed_size,
            "state.backend.rocksdb.memory.managed": str(managed).lower()}
    cluster = MiniCluster(1, 1, configuration=conf).start(make_current=False)
    [taskmanager] = cluster.taskmanager_backend.taskmanagers
    samples: list = []
    usage: list = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            samples.append((round(time.monotonic() - start, 1), _rss()))
            rocks = taskmanager.memory_metrics()[0].get("rocksdb")
            if rocks:
                usage.append(rocks["used"])

    def job(count: int, name: str) -> Any:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration.from_dict({**conf, "restart-strategy.type": "none"}))
        env.set_parallelism(1)
        (env.from_source(NumberSequenceSource(0, 2 * count - 1), WatermarkStrategy.no_watermarks(), "seq")
            .key_by(KeyOf(count)).process(Grow(value_bytes)).print())
        return env.get_stream_graph(name)

    try:
        cluster.submit(job(100, "warm-up")).get_job_execution_result().result(timeout=600)  # loads every module
        graph = job(keys, "rocksdb grows")
        start_rss = _rss()
        start = time.monotonic()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        client = cluster.submit(graph)
        client.get_job_execution_result().result(timeout=3600)
        elapsed = time.monotonic() - start
        stop.set()
        sampler.join()
    finally:
        cluster.stop()
    print(json.dumps({"start_rss": start_rss, "samples": samples, "elapsed": elapsed,
                      "peak_used": max(usage, default=0)}))


def _run(managed: bool, args: argparse.Namespace, keys: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", "managed" if managed else "unmanaged",
                          "--managed", args.managed, "--value-bytes", str(args.value_bytes), "--keys", str(keys)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _parse_size(text: str) -> int:
    from streamkernel.common.memory_size import MemorySize

    return MemorySize.parse(text).get_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--managed", default="32m", help="the slot's managed memory (taskmanager.memory.managed.size)")
    parser.add_argument("--value-bytes", type=int, default=1024)
    parser.add_argument("--margin", default="32m", help="documented margin over the managed share")
    parser.add_argument("--keys", type=int, default=0, help="distinct keys (default: state = 10x the block cache)")
    parser.add_argument("--child", choices=("managed", "unmanaged"), help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1x the cache, figures mean nothing")
    args = parser.parse_args()
    if args.child:
        _child(args.child == "managed", args.managed, args.keys, args.value_bytes)
        return
    from streamkernel.runtime.state.rocksdb_memory import calculate_actual_cache_capacity

    share, margin = _parse_size(args.managed), _parse_size(args.margin)
    cache = calculate_actual_cache_capacity(share, 0.5)
    keys = args.keys or (1 if args.quick else 10) * cache // args.value_bytes
    print(f"slot managed share {share / MB:.1f} MiB -> block cache {cache / MB:.1f} MiB; "
          f"{keys} keys x {args.value_bytes} B = {keys * args.value_bytes / MB:.0f} MiB of state "
          f"({keys * args.value_bytes / cache:.1f}x the cache), {2 * keys} records")
    results = {}
    for managed in (True, False):
        name = "managed" if managed else "baseline (managed: false)"
        r = results[managed] = _run(managed, args, keys)
        peak = max(rss for _, rss in r["samples"]) if r["samples"] else r["start_rss"]
        r["growth"] = peak - r["start_rss"]
        series = " ".join(f"{t:g}s:{rss / MB:.0f}" for t, rss in r["samples"][::max(1, len(r["samples"]) // 16)])
        print(f"\n{name}: {r['elapsed']:.1f} s; RSS MiB over time: {series}")
        print(f"  start {r['start_rss'] / MB:.0f} MiB, peak {peak / MB:.0f} MiB, growth {r['growth'] / MB:.0f} MiB"
              + (f"; slot's RocksDB usage reported (peak) {r['peak_used'] / MB:.1f} MiB" if managed else ""))
    bound = share + margin
    managed_growth, baseline_growth = results[True]["growth"], results[False]["growth"]
    print(f"\nbound: growth <= managed share {share / MB:.0f} MiB + margin {margin / MB:.0f} MiB = {bound / MB:.0f} MiB:"
          f" managed growth {managed_growth / MB:.0f} MiB -> {'WITHIN' if managed_growth <= bound else 'EXCEEDED'}")
    print(f"managed / baseline growth: {managed_growth / max(1, baseline_growth):.2f}")


if __name__ == "__main__":
    main()
