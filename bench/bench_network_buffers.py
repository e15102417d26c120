"""Network buffers (issue 19): throughput and backpressure of a keyed W2-like job with few
network buffers per channel vs Flink's defaults vs many.

Run: ``.venv/bin/python bench/bench_network_buffers.py [--records N] [--repeat R] [--backend local|process]
[--batch-size B] [--quick]``

W2 of ``bench/workloads.py`` (records ``("k%d" % ((i*7919) % 10000), 1)``, key_by, running
reduce) at parallelism 2, bounded collection source, a discarding sink; records are batched by
``--batch-size`` (64 by default: small buffers, so the number of them matters). Three settings
of ``taskmanager.network.memory.buffers-per-channel`` / ``floating-buffers-per-gate`` run
alternately, ``R`` times each after a warm-up, on one cluster per setting:

* few: 1 / 0 (one credit per channel: the sender waits for every buffer to be taken),
* Flink's defaults: 2 / 8,
* many: 8 / 32.

Printed side by side: the median throughput (records/s, ratio against the defaults), the
sources' backpressured time share (Flink's ``backPressuredTimeMsPerSecond`` over the run) and
the buffers the job needs on its TaskManager (Flink's requirements: a gate n x
buffers-per-channel + 1, a partition subpartitions + 1). ``--quick``: a smoke run, figures
mean nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workloads import w2_key, w2_record, w2_reduce  # noqa: E402 - W2's definition, shared

from streamkernel.common import Configuration  # noqa: E402
from streamkernel.datastream import StreamExecutionEnvironment  # noqa: E402
from streamkernel.runtime.minicluster.minicluster import MiniCluster  # noqa: E402
from streamkernel.runtime.network.buffer_requirements import NetworkBufferSettings, required_buffers  # noqa: E402

SETTINGS = {"few (1/0)": (1, 0), "defaults (2/8)": (2, 8), "many (8/32)": (8, 32)}
PARALLELISM = 2


def discard(value: Any) -> None:
    """Drops every record (the bench measures the network, not a sink)."""


def run_once(cluster: MiniCluster, records: list, conf: dict) -> tuple[float, float, int]:
    """One run: (records/s, sources' backpressured share, buffers reserved by the job)."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
    env.set_parallelism(PARALLELISM)
    env.from_collection(records).key_by(w2_key).reduce(w2_reduce).add_sink(discard)
    client = env.execute_async("W2 network buffers")
    started = time.perf_counter()
    client.get_job_execution_result().result(600)
    elapsed = time.perf_counter() - started
    details = client.get_job_details()
    shares = [s.metrics["backpressured_ns"] / max(1, s.metrics["uptime_ns"]) for s in details.subtasks
              if s.metrics and s.name.startswith("Source")]
    return len(records) / elapsed, statistics.mean(shares) if shares else 0.0, _reserved(cluster, conf)


def _reserved(cluster: MiniCluster, conf: dict) -> int:
    """The buffers the job's tasks reserve: Flink's requirements over its deployment descriptors
    as the JobMaster deploys them (computed from the graph: sources' partitions + keyed gates)."""
    settings = NetworkBufferSettings.from_configuration(conf)
    sources = 1  # the collection source runs at parallelism 1
    from types import SimpleNamespace as N

    source = N(inputs=[], outputs=[N(channel_ids=tuple(range(PARALLELISM)))])
    keyed = N(inputs=[N(channel_id=N(edge_index=0))] * sources, outputs=[])
    return sources * required_buffers(source, settings) + PARALLELISM * required_buffers(keyed, settings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--backend", default="local", choices=("local", "process"))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.records, args.repeat = 20_000, 1
    records = [w2_record(i) for i in range(args.records)]
    print(f"W2 keyed, {args.records:,} records, parallelism {PARALLELISM}, batch-size {args.batch_size}, "
          f"backend {args.backend}, {args.repeat} runs each (medians)")
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in SETTINGS}
    clusters = {}
    try:
        for name, (per_channel, floating) in SETTINGS.items():
            conf = {"taskmanager.network.memory.buffers-per-channel": str(per_channel),
                    "taskmanager.network.memory.floating-buffers-per-gate": str(floating),
                    "taskmanager.network.batch-size": str(args.batch_size)}
            clusters[name] = (MiniCluster(1, PARALLELISM + 1, backend=args.backend, configuration=conf,
                                          rest=False).start(make_current=False), conf)
        for _ in range(args.repeat + 1):  # the first round warms up
            for name, (cluster, conf) in clusters.items():
                cluster.start()  # already running: becomes the current cluster, the one execute() submits to
                results[name].append(run_once(cluster, records, conf))
    finally:
        for cluster, _ in clusters.values():
            cluster.stop()
    baseline = statistics.median(r[0] for r in results["defaults (2/8)"][1:])
    print(f"{'setting':<16} {'records/s':>12} {'vs defaults':>12} {'backpressured':>14} {'buffers needed':>15}")
    for name, runs in results.items():
        measured = runs[1:]  # the first is the warm-up
        throughput = statistics.median(r[0] for r in measured)
        backpressure = statistics.median(r[1] for r in measured)
        print(f"{name:<16} {throughput:>12,.0f} {throughput / baseline:>11.2f}x {backpressure:>13.0%} "
              f"{measured[0][2]:>15}")


if __name__ == "__main__":
    main()
