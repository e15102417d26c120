"""What the notebook cockpit costs a running job: W2 with and without a live dashboard open.

Run: ``.venv/bin/python bench/bench_cockpit.py [--records N] [--repeat R] [--quick]``

W2 of ``bench/workloads.py`` (records ``("k%d" % ((i*7919) % 10000), 1)``, key_by, running
reduce, parallelism 1, a bounded collection source) runs on a local MiniCluster (one
TaskManager, two slots), alternately without any view and with what ``%%flink --submit``
shows: the cluster view and the full job dashboard (JobGraph drawn by graphviz every 2 s,
vertex and subtask tables with sparklines, checkpoint panel, results), both redrawn by the
cluster's refresher 4 times a second from ``MiniCluster.inspection.snapshot()``. The widgets are real
ipywidgets (without a frontend their updates go nowhere, which is also what a closed
browser tab costs). W2's 1,000,000 records last under a second, barely four refreshes, so
the records are scaled (``--records``, 4,000,000 by default). Target: the throughput with
the dashboard open within 5% of without (median of ``R`` alternating runs each).

``--quick`` runs small and once: a smoke run whose figures mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workloads import w2_key, w2_record, w2_reduce  # noqa: E402 - W2's definition, shared

from streamkernel.datastream import StreamExecutionEnvironment  # noqa: E402
from streamkernel.jupyter.widgets.cockpit import JOB_PARTS, ClusterView, JobDashboard  # noqa: E402
from streamkernel.jupyter.widgets.refresher import refresher_for  # noqa: E402
from streamkernel.runtime.minicluster.minicluster import MiniCluster  # noqa: E402


def run_w2(cluster: MiniCluster, records: list, with_dashboard: bool) -> tuple[float, int]:
    """One W2 run; (seconds from submission to the end, refreshes the dashboard made)."""
    count = [0]

    def sink(value: Any) -> None:
        count[0] += 1

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection(records).key_by(w2_key).reduce(w2_reduce).add_sink(sink)
    gc.collect()
    gc.freeze()  # the scaled-up input is not W2's garbage-collection work
    try:
        start = time.perf_counter()
        client = env.execute_async("W2")
        views: list[Any] = []
        if with_dashboard:
            refresher = refresher_for(cluster)
            views = [ClusterView(cluster), JobDashboard(cluster, str(client.get_job_id()), JOB_PARTS)]
            for view in views:
                refresher.add(view)
        client.get_job_execution_result().result(timeout=600)
        seconds = time.perf_counter() - start
    finally:
        gc.unfreeze()
    if count[0] != len(records):
        raise AssertionError(f"bench_cockpit: W2 emitted {count[0]} results for {len(records)} records")
    refreshes = sum(view.refreshes for view in views)
    for view in views:
        view.close()
    return seconds, refreshes


def main(argv: list[str] | None = None) -> int:
    """Alternate runs without and with the dashboard; print the medians and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=4_000_000, help="W2 records per run (default 4,000,000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each kind, alternating (default 5)")
    parser.add_argument("--quick", action="store_true", help="small and once: a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.repeat = 20_000, 1
    print("command:", " ".join([os.path.basename(sys.executable), *sys.argv]))
    print(f"machine: {os.cpu_count()} cores; W2 with {args.records:,} records, parallelism 1, median of {args.repeat}")
    records = [w2_record(i) for i in range(args.records)]
    seconds: dict[bool, list[float]] = {False: [], True: []}
    refreshes: list[int] = []
    with MiniCluster(1, 2) as cluster:
        run_w2(cluster, records[:10_000], True)  # first-use costs (graphviz, widget classes)
        for _ in range(args.repeat):
            for with_dashboard in (False, True):
                took, made = run_w2(cluster, records, with_dashboard)
                seconds[with_dashboard].append(took)
                if with_dashboard:
                    refreshes.append(made)
    without, with_ = statistics.median(seconds[False]), statistics.median(seconds[True])
    print(f"\nwithout a dashboard: {args.records / without:>12,.0f} records/s ({without:.3f} s)")
    print(f"with the dashboard:  {args.records / with_:>12,.0f} records/s ({with_:.3f} s; "
          f"{statistics.median(refreshes):.0f} view refreshes per run)")
    print(f"throughput kept with the dashboard open: {without / with_ * 100:.1f}% (target >= 95%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
