"""Memory of an unbounded job over time: it must stay flat (bounded channels, no leaks).

Run: ``.venv/bin/python bench/memory_unbounded.py [--seconds 60]``

An unbounded DataGeneratorSource at full speed feeds key_by -> running reduce -> a sink
that is slower than the source (so credit-based flow control must hold the source back),
on a local cluster of 2 TaskManagers. The process's resident memory (RSS) and Python's
traced allocations are sampled every few seconds; the baseline is the process before the
job started, measured in the same run. Prints every sample, the growth over the second half
of the run (which should be ~0) and the number of records that went through.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc


def rss_mib() -> float:
    """Resident set size of this process in MiB (Linux /proc)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    """Run the unbounded job for ``--seconds`` and print memory samples."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--interval", type=float, default=5.0)
    args = parser.parse_args()

    from streamkernel.common import WatermarkStrategy
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.datastream.connectors.datagen import DataGeneratorSource
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    seen = [0]

    def slow_sink(value: object) -> None:
        seen[0] += 1
        if seen[0] % 64 == 0:
            time.sleep(0.0001)

    tracemalloc.start()
    baseline_rss, baseline_traced = rss_mib(), tracemalloc.get_traced_memory()[0] / 2**20
    print(f"baseline (before the job): RSS {baseline_rss:.1f} MiB, traced {baseline_traced:.1f} MiB")
    samples = []
    with MiniCluster(taskmanagers=2, slots_per_taskmanager=2):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        (env.from_source(DataGeneratorSource(lambda i: ("k%d" % (i % 1000), i), count=None),
                         WatermarkStrategy.no_watermarks(), "generator")
            .key_by(lambda r: r[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
            .add_sink(slow_sink))
        client = env.execute_async("unbounded")
        start = time.monotonic()
        while time.monotonic() - start < args.seconds:
            time.sleep(args.interval)
            elapsed = time.monotonic() - start
            rss, traced = rss_mib(), tracemalloc.get_traced_memory()[0] / 2**20
            samples.append((elapsed, rss, traced, seen[0]))
            print(f"t={elapsed:5.1f}s  RSS {rss:7.1f} MiB  traced {traced:6.1f} MiB  records {seen[0]:>12,}")
        client.cancel().result(timeout=10)
    half = [s for s in samples if s[0] >= args.seconds / 2]
    if len(half) >= 2:
        print(f"second half: RSS {half[0][1]:.1f} -> {half[-1][1]:.1f} MiB ({half[-1][1] - half[0][1]:+.1f}), "
              f"traced {half[0][2]:.1f} -> {half[-1][2]:.1f} MiB ({half[-1][2] - half[0][2]:+.1f}); "
              f"{seen[0] / args.seconds:,.0f} records/s through the slow sink")


if __name__ == "__main__":
    main()
