"""Does reading the REST API slow a job down? (issue 16)

Run: ``.venv/bin/python bench/bench_rest.py [--backend local|process] [--records N] [--repeat R]
[--rate 50] [--quick]``

The default cluster is the worst case for the endpoint: the ``local`` backend, whose tasks are
threads of the same process as the JobManager and its REST endpoint, so every request the
endpoint answers takes the GIL from the job (tornado's loop runs about 8 iterations per
request and waits on the sockets between them; each time, the endpoint's thread must get the
GIL back from a busy task thread). With ``--backend process`` the task runs in a TaskManager process
and the endpoint only competes with it for the machine's cores. W2 (``bench/workloads.py``: records keyed by
one of 10,000 keys, a running reduce, parallelism 1, a sink counting records) runs ``R``
times without readers and ``R`` times with them, alternately; the median throughputs are
compared (target: at least 95% kept).

The readers run in another process (as a browser and ``curl`` would), for the whole of each
loaded run:

* ``curl``: ``--rate`` requests a second (default 50), round-robin over the resources a
  client polls (``/overview``, ``/jobs/overview``, ``/jobs/:id``, ``/jobs/:id/checkpoints``,
  a vertex, its backpressure and subtask metrics, ``/taskmanagers``);
* the Web UI: every 3 s (Flink's ``web.refresh-interval``) the calls the dashboard's job page
  makes on each refresh (``/config``, ``/overview``, ``/jobs/overview``, ``/jobs/:id``,
  and per vertex its watermarks and the subtask metrics it plots).

Each loaded run reports how many requests were answered and their median latency.

Two figures per configuration: the wall-clock throughput kept (on a shared 2-core VM it moves
with whatever else runs: the readers' own process takes CPU from the job whichever server
answers, and the quiet figure alone varied 2x within ten minutes), and the CPU time the REST
endpoint's thread (tornado's loop, under the GIL) took in the JobManager's process during the
loaded run: what the endpoint takes from tasks in its process, whatever the machine does.

``--front both`` (the default) measures the cluster as configured by default, with the REST
front process (:mod:`streamkernel.runtime.rest.front`) answering HTTP, then the same without
it (``streamkernel.rest.front-process: false``, every request answered in the JobManager's
process), in the same run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_scaleout  # noqa: E402 - W2 on a parallel sequence, with a counting sink

from streamkernel.runtime.minicluster.minicluster import MiniCluster  # noqa: E402

UI_REFRESH_S = 3.0
UI_METRICS = "backPressuredTimeMsPerSecond,busyTimeMsPerSecond,numRecordsInPerSecond"


def _get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=10) as answer:
        return json.loads(answer.read())


def _running_job(base: str) -> Optional[tuple[str, list[str]]]:
    """(job id, vertex ids) of the running job, or None."""
    running = [j for j in _get(base, "/jobs/overview")["jobs"] if j["state"] == "RUNNING"]
    if not running:
        return None
    jid = running[0]["jid"]
    return jid, [v["id"] for v in _get(base, f"/jobs/{jid}")["vertices"]]


def readers(base: str, rate: float, ready: Any, stop: Any, results: Any) -> None:
    """The other process: poll as curl and the Web UI would until ``stop`` is set."""
    _get(base, "/overview")
    ready.set()
    latencies: list[float] = []
    job: Optional[tuple[str, list[str]]] = None
    next_ui = time.monotonic()
    k = 0
    period = 1.0 / rate
    next_request = time.monotonic()
    while not stop.is_set():
        if job is None:
            try:
                job = _running_job(base)
            except OSError:
                job = None
            if job is None:
                stop.wait(0.005)  # the loaded run has not started its job yet
                continue
        jid, vertices = job
        curl = ["/overview", "/jobs/overview", f"/jobs/{jid}", f"/jobs/{jid}/checkpoints", "/taskmanagers"]
        for v in vertices:
            curl += [f"/jobs/{jid}/vertices/{v}", f"/jobs/{jid}/vertices/{v}/backpressure",
                     f"/jobs/{jid}/vertices/{v}/subtasks/metrics?get={UI_METRICS}"]
        paths = [curl[k % len(curl)]]
        k += 1
        if time.monotonic() >= next_ui:
            next_ui += UI_REFRESH_S
            paths += ["/config", "/overview", "/jobs/overview", f"/jobs/{jid}"]
            for v in vertices:
                paths += [f"/jobs/{jid}/vertices/{v}/watermarks",
                          f"/jobs/{jid}/vertices/{v}/subtasks/metrics?get={UI_METRICS}"]
        for path in paths:
            started = time.perf_counter()
            try:
                _get(base, path)
            except OSError:
                job = None  # the job ended: find the next one
                break
            latencies.append(time.perf_counter() - started)
        next_request += period
        delay = next_request - time.monotonic()
        if delay > 0:
            stop.wait(delay)
        else:
            next_request = time.monotonic()
    results.put((len(latencies), statistics.median(latencies) if latencies else 0.0))


def _endpoint_cpu_s() -> float:
    """CPU seconds the JobManager's REST endpoint thread (tornado's loop) used so far (Linux /proc)."""
    import threading

    for thread in threading.enumerate():
        if thread.name.startswith("streamkernel REST endpoint") and thread.native_id is not None:
            with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


def measure(backend: str, front: bool, args: argparse.Namespace, directory: str) -> dict[str, Any]:
    """W2's median throughput without and with readers on a cluster with or without the REST front."""
    configuration = {"streamkernel.rest.front-process": "true" if front else "false"}
    cluster = MiniCluster(1, 1, backend=backend, rest=True, configuration=configuration).start()
    base = cluster.rest_url
    context = multiprocessing.get_context("spawn")
    quiet: list[float] = []
    loaded: list[float] = []
    answered: list[tuple[int, float]] = []
    endpoint_share: list[float] = []
    try:
        bench_scaleout.run_w2(1, 10_000, directory)  # first-use costs
        for _ in range(args.repeat):
            started = time.perf_counter()
            assert bench_scaleout.run_w2(1, args.records, directory) == args.records
            quiet.append(args.records / (time.perf_counter() - started))
            ready, stop, results = context.Event(), context.Event(), context.Queue()
            reader = context.Process(target=readers, args=(base, args.rate, ready, stop, results), daemon=True)
            reader.start()
            if not ready.wait(60):
                raise SystemExit("bench_rest: the reader process did not reach the REST API within 60 s")
            cpu_before, started = _endpoint_cpu_s(), time.perf_counter()
            assert bench_scaleout.run_w2(1, args.records, directory) == args.records
            seconds = time.perf_counter() - started
            loaded.append(args.records / seconds)
            endpoint_share.append((_endpoint_cpu_s() - cpu_before) / seconds)
            stop.set()
            answered.append(results.get(timeout=60))
            reader.join(30)
    finally:
        cluster.stop()
    requests = sum(n for n, _ in answered)
    return {"quiet": statistics.median(quiet), "loaded": statistics.median(loaded),
            "kept": statistics.median(loaded) / statistics.median(quiet),
            "rate": requests / sum(args.records / r for r in loaded),
            "latency_ms": 1000 * statistics.median(m for _, m in answered),
            "endpoint_share": statistics.median(endpoint_share)}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rate", type=float, default=50.0, help="curl's requests per second (default 50)")
    parser.add_argument("--backend", choices=("local", "process"), default="local",
                        help="where the job's task runs (default local: in the endpoint's process)")
    parser.add_argument("--front", choices=("both", "on", "off"), default="both",
                        help="with the REST front process (on: the default configuration), without it (off: "
                             "the JobManager's process answers HTTP itself), or both (default), in this order")
    parser.add_argument("--quick", action="store_true", help="a smoke run (figures mean nothing)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.repeat = 50_000, 1
    print(f"command: python bench/bench_rest.py --backend {args.backend} --records {args.records} "
          f"--repeat {args.repeat} --rate {args.rate:g} --front {args.front}")
    modes = {"both": (True, False), "on": (True,), "off": (False,)}[args.front]
    directory = tempfile.mkdtemp(prefix="bench-rest-")
    try:
        figures = {front: measure(args.backend, front, args, directory) for front in modes}
    finally:
        os.rmdir(directory)
    print(f"W2, {args.records:,d} records, {args.backend} backend, parallelism 1, median of {args.repeat}:")
    for front, f in figures.items():
        name = "REST front process (default)" if front else "no front: HTTP in the JobManager's process"
        print(f"  {name}:")
        print(f"    without readers  {f['quiet']:12,.0f} records/s")
        print(f"    with readers     {f['loaded']:12,.0f} records/s  ({f['rate']:.0f} requests/s answered, "
              f"median latency {f['latency_ms']:.1f} ms)")
        print(f"    throughput kept: {100 * f['kept']:.1f}% (wall clock)")
        print(f"    the REST endpoint's thread in the JobManager's process: {1000 * f['endpoint_share']:.1f} ms "
              f"of CPU a second, so the job keeps {100 * (1 - f['endpoint_share']):.1f}% of the process"
              + ("  (target >= 95%)" if front else ""))
    if len(figures) == 2:
        print(f"  kept with the front / kept without: {figures[True]['kept'] / figures[False]['kept']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
