"""What Flink's task metrics (issue 31) cost: on the records' path, and when someone asks.

Run: ``.venv/bin/python bench/bench_task_metrics.py [--baseline REV] [--records N] [--rounds R]``

1. **On the path of records.** The tasks now count buffers per channel (one add per buffer in
   the input gate), a source's last emit time (one clock read per batch), the watermarks that
   pass the chain's links, fired timers (one add per firing round) and their mails' waits. This
   runs ``bench/workloads.py`` (W1-W3 at parallelism 1: a chain; a key_by exchange; event-time
   windows with timers) on this tree and on ``--baseline`` (default: the merge base with
   ``main``, extracted with ``git archive`` into a temporary directory), alternating the two
   ``--rounds`` times in fresh processes, and prints each workload's median time on both and
   the ratio (this tree / baseline).
2. **When asked.** ``TaskMetrics.snapshot()`` (every heartbeat, per running task) of a task
   with 8 input and 8 output channels, and ``task_metric_values()`` of that snapshot (every
   REST request for a subtask's metrics): microseconds per call, best of 5 x 2,000 calls.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

_ROW = re.compile(r"^(W\d)\s+([\d.]+)s\s+([\d.]+)s")


def _workload_times(tree: Path, records: int) -> dict[str, float]:
    """streamkernel's seconds per workload of one ``workloads.py`` run in ``tree`` (a fresh process)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, str(tree / "bench" / "workloads.py"), "--records", str(records),
                           "--repeat", "1"], cwd=tree, env=env, capture_output=True, text=True, check=True)
    return {m.group(1): float(m.group(3)) for m in map(_ROW.match, done.stdout.splitlines()) if m}


def _baseline_tree(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def on_the_path(baseline: str, records: int, rounds: int) -> None:
    """Part 1: the workloads on this tree and on the baseline, alternating."""
    with tempfile.TemporaryDirectory(prefix="bench-task-metrics-") as scratch:
        base = _baseline_tree(baseline, Path(scratch))
        ours: dict[str, list[float]] = {}
        theirs: dict[str, list[float]] = {}
        for _ in range(rounds):
            for tree, into in ((base, theirs), (REPO, ours)):
                for workload, seconds in _workload_times(tree, records).items():
                    into.setdefault(workload, []).append(seconds)
    print(f"1. workloads.py, {records:,} records, median of {rounds} alternating runs (baseline {baseline[:10]})")
    print(f"   {'workload':<9}{'baseline':>10}{'this tree':>11}{'ratio':>8}")
    for workload in sorted(ours):
        before, after = statistics.median(theirs[workload]), statistics.median(ours[workload])
        print(f"   {workload:<9}{before:>9.3f}s{after:>10.3f}s{after / before:>7.2f}x")


def when_asked() -> None:
    """Part 2: a snapshot and Flink's metrics of it, per call."""
    from streamkernel.graph.partitioners import RebalancePartitioner
    from streamkernel.runtime.core.metric_sampler import MetricSampler
    from streamkernel.runtime.core.metrics import TaskMetrics
    from streamkernel.runtime.core.task_metric_values import task_metric_values
    from streamkernel.runtime.network import InputGate, RecordWriter
    from streamkernel.runtime.tasks.mailbox import TaskMailbox

    metrics = TaskMetrics("Keyed", 0)
    gate, downstream = InputGate("in"), InputGate("out")
    metrics.input_channels = [gate.create_channel(0, credits=4) for _ in range(8)]
    metrics.output_channels = [downstream.create_channel(0, credits=4) for _ in range(8)]
    metrics.writers = [RecordWriter(RebalancePartitioner(), metrics.output_channels, 0)]
    metrics.mailbox = TaskMailbox(lambda: None)
    for _ in range(60):
        metrics.mailbox.put(lambda: None)
    metrics.mailbox.run_all()
    for name in ("Source: numbers", "plus one", "count per key", "Sink: discard"):
        metrics.operator(name)
    sampler = MetricSampler()
    snapshot = sampler.with_recent("a", metrics.snapshot())
    calls = 2000
    snap = min(timeit.repeat(metrics.snapshot, number=calls, repeat=5)) / calls * 1e6
    values = min(timeit.repeat(lambda: task_metric_values(snapshot), number=calls, repeat=5)) / calls * 1e6
    print("2. when asked (8 input and 8 output channels, 4 operators, 60 mailbox latencies)")
    print(f"   TaskMetrics.snapshot()   {snap:8.1f} us per call (per running task, every heartbeat)")
    print(f"   task_metric_values()     {values:8.1f} us per call ({len(task_metric_values(snapshot))} metrics; "
          "per subtask, per REST request)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=REPO, capture_output=True,
                             text=True).stdout.strip() or "HEAD"
    parser.add_argument("--baseline", default=default, help="the revision to compare with (default: merge base with main)")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    on_the_path(args.baseline, args.records, args.rounds)
    when_asked()


if __name__ == "__main__":
    main()
