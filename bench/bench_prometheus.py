"""What does Flink's Prometheus reporter cost a job that is scraped? (issue 31)

Run: ``.venv/bin/python bench/bench_prometheus.py [--records N] [--repeat R] [--interval 0.1] [--quick]``

W2 (``bench/workloads.py``: records keyed by one of 10,000 keys, a running reduce, parallelism 1, a
sink counting records) runs on two local clusters of this process (one TaskManager thread, one slot),
``R`` times in each of three variants, in rotating order (so that a drift of the machine falls on all alike):

* **none**: a cluster without a reporter;
* **idle**: a cluster with ``metrics.reporter.prom.factory.class: ...PrometheusReporterFactory``, not scraped;
* **scraped**: the same cluster, its ``/metrics`` fetched every ``--interval`` seconds (default 0.1 s, 150
  times Prometheus' default rate) by another process, as a Prometheus server would, for the whole run.

Printed: each variant's median time, throughput and CPU time (every thread of this process during the run:
the tasks, the cluster, the reporter's server), the cost of being scraped in both (against the idle
reporter and against no reporter; target under 2%), how many scrapes each run answered and their median
time (mostly waiting for the GIL the task holds). On a machine shared with other work the wall clock
moves by tens of percent between identical runs (two identical clusters differed by 8% in medians of
8 runs); the CPU time moves much less.
Wall-clock figures of a shared 2-core machine move by tens of percent from run to run; so the bench also
measures what a scrape itself takes: the CPU time of each answer while W2 runs (the reporter counts it:
``PrometheusReporter.answers``; the request, the groups, the text), and of building one answer in this
process, and what that is per second at the scrape interval. That is time the reporter's thread holds the
GIL the task needs; the hand-overs of the GIL cost the task a little more, which no figure here isolates.
The local backend is the worst case: the reporter's endpoint runs in the process of the task it reads
(each scrape takes the GIL from it); a TaskManager process of the ``process`` backend serves its own in
the same way, and a JobManager's reporter competes with no task at all.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import threading
import time
import urllib.request
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from workloads import streamkernel_w2  # noqa: E402

from streamkernel.runtime.minicluster.minicluster import MiniCluster, set_current_cluster  # noqa: E402

PROM = {"metrics.reporter.prom.factory.class": "org.apache.flink.metrics.prometheus.PrometheusReporterFactory",
        "metrics.reporter.prom.port": "0"}


TASK_METRIC = b"flink_taskmanager_job_task_numRecordsIn"


def scraper(url: str, interval: float, ready: Any, stop: Any, results: Any, count: int = 0) -> None:
    """The other process: fetch ``url`` every ``interval`` s until ``stop`` (or ``count`` times); report
    (scrapes, median ms, largest answer in bytes, scrapes whose answer had a running task's metrics)."""
    ready.set()
    times: list[float] = []
    largest = with_tasks = 0
    next_at = time.monotonic()
    while not stop.is_set() and (not count or len(times) < count):
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = answer.read()
        times.append((time.perf_counter() - start) * 1000)
        largest = max(largest, len(body))
        with_tasks += TASK_METRIC in body
        next_at += interval
        stop.wait(max(0.0, next_at - time.monotonic()))
    results.put((len(times), statistics.median(times) if times else 0.0, largest, with_tasks))


def scrape_cpu_ms(reporter: Any, samples: list[float], stop: threading.Event) -> None:
    """In this process, while W2 runs: the CPU milliseconds one answer takes to build, until ``stop``."""
    while not stop.wait(0.05):
        start = time.thread_time()
        reporter.render()
        samples.append((time.thread_time() - start) * 1000)


def run(cluster: MiniCluster, records: int, scrape: tuple[str, float] | None) -> tuple[float, float, Any]:
    """One W2 run on ``cluster`` (scraped at ``scrape`` = (url, interval) by another process): (seconds, CPU
    seconds of this process, scrapes)."""
    process = None
    context = multiprocessing.get_context("spawn")
    stop, ready, results = context.Event(), context.Event(), context.Queue()
    if scrape is not None:
        process = context.Process(target=scraper, args=(scrape[0], scrape[1], ready, stop, results), daemon=True)
        process.start()
        ready.wait(60)
    set_current_cluster(cluster)
    try:
        count = streamkernel_w2(records)
    finally:
        set_current_cluster(None)
    assert count == records, (count, records)
    scraped = None
    if process is not None:
        stop.set()
        scraped = results.get(timeout=60)
        process.join(60)
    return streamkernel_w2.elapsed, streamkernel_w2.cpu, scraped  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=8)
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between two scrapes (default 0.1)")
    parser.add_argument("--quick", action="store_true", help="a smoke run (figures mean nothing)")
    args = parser.parse_args()
    if args.quick:
        args.records, args.repeat = 20_000, 1
    plain = MiniCluster(1, 1, backend="local").start(make_current=False)
    reporting = MiniCluster(1, 1, backend="local", configuration=PROM).start(make_current=False)
    registry = reporting.metric_registry
    assert registry is not None
    reporter = registry.reporter("prom")
    assert reporter is not None and reporter.url is not None
    variants = {"none": (plain, None), "idle": (reporting, None), "scraped": (reporting, (reporter.url, args.interval))}
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    answering: list[float] = []  # CPU seconds of each answer with a running task's metrics (the reporter's own count)
    scrapes: list[Any] = []
    cpu: list[float] = []
    try:
        for cluster, _ in variants.values():  # warm-up: imports, first deployments
            run(cluster, min(args.records, 20_000), None)
        names = list(variants)
        for index in range(args.repeat):
            order = names[index % 3:] + names[:index % 3]  # each variant first, second and last alike
            for name in order:
                cluster, scrape = variants[name]
                reporter.answers.clear()
                seconds, cpu_seconds, scraped = run(cluster, args.records, scrape)
                if scraped is not None:  # the answers while W2 ran: those with its tasks' metrics
                    answering.extend(cpu for cpu, size in reporter.answers if size > 10_000)
                times[name].append(seconds)
                cpus[name].append(cpu_seconds)
                if scraped is not None:
                    scrapes.append(scraped)
                print(f"  run {index + 1} {name:7}: {seconds:.3f} s, CPU {cpu_seconds:.3f} s" +
                      (f"  ({scraped[0]} scrapes, median {scraped[1]:.1f} ms, up to {scraped[2]:,} bytes)" if scraped else ""),
                      flush=True)
        stop = threading.Event()
        measuring = threading.Thread(target=scrape_cpu_ms, args=(reporter, cpu, stop), daemon=True)
        measuring.start()
        run(reporting, args.records, None)  # measured apart: the thread's polls would weigh on the runs above
        stop.set()
        measuring.join()
    finally:
        reporting.stop()
        plain.stop()
    median = {name: statistics.median(values) for name, values in times.items()}
    cpu_median = {name: statistics.median(values) for name, values in cpus.items()}
    print(f"W2, {args.records:,} records, parallelism 1, local backend, {args.repeat} runs of each (rotating order)")
    labels = {"none": "no reporter", "idle": "reporter, not scraped", "scraped": f"scraped every {args.interval:g} s"}
    for name, label in labels.items():
        print(f"  {label:24}: {median[name]:.3f} s median ({args.records / median[name]:,.0f} records/s), "
              f"CPU {cpu_median[name]:.3f} s median")
    for what, figures in (("wall clock", median), ("CPU time", cpu_median)):
        print(f"  cost of being scraped ({what}): {(figures['scraped'] / figures['idle'] - 1) * 100:+.2f}% against the "
              f"idle reporter, {(figures['scraped'] / figures['none'] - 1) * 100:+.2f}% against no reporter "
              f"(target: under 2%)")
    if answering:
        each = statistics.median(answering)
        print(f"  answering one scrape while W2 ran took {each * 1000:.2f} ms of CPU (median of {len(answering)}; the "
              f"request, the groups, the text): every {args.interval:g} s that is {each / args.interval * 100:.2f}% "
              f"of the time, time it holds the GIL the task needs (target: under 2%)")
    if scrapes:
        print(f"  scrapes per run: {statistics.median(s[0] for s in scrapes):.0f} (median), answered in "
              f"{statistics.median(s[1] for s in scrapes):.1f} ms (median of medians), up to {max(s[2] for s in scrapes):,} bytes each")
    if cpu:
        per = statistics.median(cpu)
        print(f"  CPU to build one answer while W2 runs: {per:.2f} ms (median of {len(cpu)}); every {args.interval:g} s "
              f"that is {per / args.interval / 10:.2f}% of a core, every 15 s (Prometheus' default) "
              f"{per / 15 / 10:.4f}%")


if __name__ == "__main__":
    main()
