"""Scale-out benchmark of issue 5: W1 and W2 at parallelism 2 on TaskManagers in child
processes and in Spark tasks, against parallelism 1 on the in-kernel ``local`` backend.

Run: ``.venv/bin/python bench/bench_scaleout.py [--w1 N] [--w2 N] [--repeat R]
[--backends local,process,spark] [--quick]``

Everything runs in one process, one backend after the other: ``local`` (1 TaskManager x
1 slot, threads of this process, parallelism 1) is the baseline; ``process`` and
``spark`` (2 TaskManagers x 1 slot each, parallelism 2) are compared with it. One slot per
TaskManager puts the two subtasks of a vertex in two Python processes, which is what lets
them use two cores (two slots of one TaskManager share its interpreter and its GIL). The
``spark`` backend creates its own SparkSession (master ``local[N,F]``, as ``%flink start
--backend spark`` does) and stops it with the cluster.

The workloads are those of ``bench/workloads.py`` (their user functions are imported from
there), with a parallel source so that both subtasks have records to work on: every run,
the baseline included, reads ``NumberSequenceSource(0, N-1)`` split across its source
subtasks.

* W1: N integers; map x*3+1; filter even; map x//7; sum. The whole pipeline chains into
  one task per subtask: no record crosses a TaskManager. Each sink subtask sums its records
  and writes its partial sum when it closes; the partial sums are added up and checked
  against the plain loop's sum.
* W2: N integers; map to ("k%d" % ((i*7919) % 10000), 1); key_by; running reduce of the
  counts; count the results. Records are hashed to the reducer that owns their key, so
  half of them cross from one TaskManager to the other over the TCP data plane, where a
  channel holds twice the gate's credits and returns them in batches (docs/architecture.md,
  "The data plane").

Each workload runs once on a small input first (first-use costs), then ``R`` times; the
median wall-clock time from submission to the end of the job is printed with the speedup
over the baseline (target for W1: at least 1.6x on 2 cores), and the median CPU seconds the
run cost this process and every process under it (TaskManagers, Spark's JVM and workers;
needs psutil): less sensitive to other tenants than wall time, it shows what a scale-out
costs beyond the work itself (W2's keyed exchange: routing, marshal, GIL hand-offs).
Start-up is timed per backend: SparkSession start, cluster start (every TaskManager
registered), and from the start call to the first record of a first job at the driver (a
collect of a small sequence), and stop.

``--quick`` runs everything small and once: a smoke run whose figures mean nothing.

The machine's own ceiling is printed too, measured before and after the runs: how much
faster two processes run plain Python work than one process runs it twice. On a shared
or virtual machine (2 vCPUs on one physical core's hyperthreads, other tenants) it can be
far below 2x, and no backend can scale beyond it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloudpickle  # noqa: E402

import workloads  # noqa: E402 - W1's and W2's user functions, shared with bench/workloads.py
from workloads import plain_w1, w1_even, w1_map1, w1_map2, w2_key, w2_record, w2_reduce  # noqa: E402

from streamkernel.common import WatermarkStrategy  # noqa: E402
from streamkernel.datastream import StreamExecutionEnvironment  # noqa: E402
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource  # noqa: E402
from streamkernel.runtime.minicluster.minicluster import MiniCluster  # noqa: E402

# TaskManagers in other processes cannot import bench/: ship the shared functions by value.
cloudpickle.register_pickle_by_value(workloads)

#: backend -> (TaskManagers, slots each, parallelism)
SHAPES = {"local": (1, 1, 1), "process": (2, 1, 2), "spark": (2, 1, 2)}


class PartialResultSink:
    """A sink that folds its subtask's records into one number and writes it to
    ``directory/part-<subtask>`` when it closes (a result the driver can add up, whichever
    process the subtask ran in). ``kind`` is ``"sum"`` (W1) or ``"count"`` (W2)."""

    def __init__(self, directory: str, kind: str) -> None:
        self.directory = directory
        self.kind = kind

    def open(self, runtime_context: Any) -> None:
        """Start from 0; remember which subtask this is."""
        self.value = 0
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.fold = self._count if self.kind == "count" else self._sum

    def _sum(self, x: int) -> None:
        self.value += x

    def _count(self, x: Any) -> None:
        self.value += 1

    def __call__(self, x: Any) -> None:
        self.fold(x)

    def close(self) -> None:
        """Write the partial result."""
        with open(os.path.join(self.directory, f"part-{self.subtask}"), "w") as out:
            out.write(str(self.value))


def _partial_results(directory: str) -> int:
    """The sum of the partial results the sink subtasks wrote (removed after reading)."""
    total = 0
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        with open(path) as part:
            total += int(part.read())
        os.remove(path)
    return total


def _env(parallelism: int) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def _sequence(env: StreamExecutionEnvironment, n: int) -> Any:
    return env.from_source(NumberSequenceSource(0, n - 1), WatermarkStrategy.no_watermarks(), "sequence")


def run_w1(parallelism: int, n: int, directory: str) -> int:
    """W1 at ``parallelism``; returns the sum of the sink subtasks' partial sums."""
    env = _env(parallelism)
    _sequence(env, n).map(w1_map1).filter(w1_even).map(w1_map2).add_sink(PartialResultSink(directory, "sum"))
    env.execute("W1")
    return _partial_results(directory)


def run_w2(parallelism: int, n: int, directory: str) -> int:
    """W2 at ``parallelism``; returns how many running counts the reducers emitted."""
    env = _env(parallelism)
    (_sequence(env, n).map(w2_record).key_by(w2_key).reduce(w2_reduce)
     .add_sink(PartialResultSink(directory, "count")))
    env.execute("W2")
    return _partial_results(directory)


@dataclass
class BackendFigures:
    """What one backend measured."""

    backend: str
    shape: tuple[int, int, int]
    startup: dict[str, Optional[float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    cpu_seconds: dict[str, Optional[float]] = field(default_factory=dict)


def _spin(n: int) -> float:
    """Plain Python work (a loop), seconds it took."""
    start = time.perf_counter()
    total = 0
    for i in range(n):
        total += i % 7
    return time.perf_counter() - start


def machine_ceiling(n: int = 3_000_000, repeat: int = 3) -> float:
    """How much faster two processes do two units of plain Python work than one process
    doing both (median of ``repeat``): the best speedup any parallelism-2 run can show here."""
    from concurrent.futures import ProcessPoolExecutor

    ratios = []
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_spin, [1000, 1000]))  # the processes are started before the clock
        for _ in range(repeat):
            start = time.perf_counter()
            _spin(n), _spin(n)
            serial = time.perf_counter() - start
            start = time.perf_counter()
            list(pool.map(_spin, [n, n]))
            ratios.append(serial / (time.perf_counter() - start))
    return statistics.median(ratios)


def _cpu_seconds() -> Optional[float]:
    """User + system CPU seconds of this process and every process under it (the TaskManagers,
    Spark's JVM and workers); None without psutil."""
    try:
        import psutil
    except ImportError:
        return None
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:  # ended meanwhile
            pass
    return total


def _timed(run: Callable[[], int], expected: int, what: str, repeat: int) -> tuple[float, Optional[float]]:
    """Median seconds and median CPU seconds (see _cpu_seconds) of ``repeat`` runs; each result
    is checked against ``expected``."""
    times, cpus = [], []
    for _ in range(repeat):
        cpu = _cpu_seconds()
        start = time.perf_counter()
        got = run()
        times.append(time.perf_counter() - start)
        if cpu is not None:
            cpus.append(_cpu_seconds() - cpu)  # type: ignore[operator]
        if got != expected:
            raise AssertionError(f"bench_scaleout: {what} returned {got}, expected {expected}")
    return statistics.median(times), statistics.median(cpus) if cpus else None


def _start(backend: str) -> tuple[MiniCluster, dict[str, Optional[float]]]:
    """Start the backend's cluster and a first job; the start-up figures."""
    taskmanagers, slots, parallelism = SHAPES[backend]
    started = time.perf_counter()
    cluster = MiniCluster(taskmanagers, slots, backend=backend).start()
    registered = time.perf_counter() - started
    env = _env(parallelism)
    with _sequence(env, 10).execute_and_collect("first record") as records:
        next(records)
        first_record = time.perf_counter() - started
        rest = list(records)
    assert len(rest) == 9, rest
    figures: dict[str, Optional[float]] = {"cluster started (TaskManagers registered)": registered,
                                           "start -> first record of a first job": first_record}
    if backend == "spark":
        launcher = cluster.taskmanager_backend.launcher
        figures = {"SparkSession start": launcher.session_startup_seconds, **figures}
    return cluster, figures


def measure(backend: str, w1: int, w2: int, repeat: int, directory: str,
            expected: dict[str, int]) -> BackendFigures:
    """Start the backend, run W1 and W2 ``repeat`` times each after a warm-up, stop it."""
    figures = BackendFigures(backend, SHAPES[backend])
    parallelism = SHAPES[backend][2]
    cluster, figures.startup = _start(backend)
    try:
        run_w1(parallelism, 1000, directory), run_w2(parallelism, 1000, directory)  # first-use costs
        figures.seconds["W1"], figures.cpu_seconds["W1"] = _timed(
            lambda: run_w1(parallelism, w1, directory), expected["W1"], f"W1 on {backend}", repeat)
        figures.seconds["W2"], figures.cpu_seconds["W2"] = _timed(
            lambda: run_w2(parallelism, w2, directory), expected["W2"], f"W2 on {backend}", repeat)
    finally:
        stopping = time.perf_counter()
        cluster.stop(timeout=30)
        figures.startup["stop"] = time.perf_counter() - stopping
    return figures


def report(results: list[BackendFigures], sizes: dict[str, int]) -> None:
    """Print the throughput table and the start-up figures."""
    base = next(r for r in results if r.backend == "local")
    print(f"\n{'backend':<9} {'TMs x slots':<12} {'p':>2} {'workload':<9} {'records':>10} "
          f"{'seconds':>8} {'records/s':>12} {'speedup':>8} {'CPU s':>6}")
    for r in results:
        tms, slots, p = r.shape
        for w in ("W1", "W2"):
            seconds = r.seconds[w]
            speedup = base.seconds[w] / seconds
            cpu = r.cpu_seconds.get(w)
            print(f"{r.backend:<9} {f'{tms} x {slots}':<12} {p:>2} {w:<9} {sizes[w]:>10,} "
                  f"{seconds:>8.3f} {sizes[w] / seconds:>12,.0f} {speedup:>7.2f}x "
                  f"{'n/a' if cpu is None else f'{cpu:.2f}':>6}")
    print("\nstart-up and stop (seconds):")
    for r in results:
        for what, seconds in r.startup.items():
            shown = "n/a" if seconds is None else f"{seconds:.2f}"
            print(f"  {r.backend:<8} {what:<45} {shown:>6}")
    others = [r for r in results if r is not base]
    if others:
        best = max(base.seconds["W1"] / r.seconds["W1"] for r in others)
        print(f"\nW1 speedup at parallelism 2 over parallelism 1 on local: best {best:.2f}x (target 1.6x)")


def main(argv: Optional[list[str]] = None) -> int:
    """Parse arguments, run every backend, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--w1", type=int, default=4_000_000, help="W1 records (default 4,000,000)")
    parser.add_argument("--w2", type=int, default=1_000_000, help="W2 records (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per workload (median)")
    parser.add_argument("--backends", default="local,process,spark",
                        help="comma-separated backends; local is the baseline and always runs")
    parser.add_argument("--quick", action="store_true", help="small and once: a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.w1, args.w2, args.repeat = 20_000, 10_000, 1
    backends = ["local"] + [b.strip() for b in args.backends.split(",") if b.strip() and b.strip() != "local"]
    unknown = [b for b in backends if b not in SHAPES]
    if unknown:
        parser.error(f"--backends: unknown backend(s) {unknown}; known: {sorted(SHAPES)}")
    print("command:", " ".join([os.path.basename(sys.executable), *sys.argv]))
    print(f"machine: {os.cpu_count()} cores; W1 {args.w1:,} records, W2 {args.w2:,} records, "
          f"median of {args.repeat}")
    sizes = {"W1": args.w1, "W2": args.w2}
    expected = {"W1": plain_w1(args.w1), "W2": args.w2}
    directory = tempfile.mkdtemp(prefix="bench-scaleout-")
    ceiling = [machine_ceiling()]
    try:
        results = []
        for backend in backends:
            print(f"running {backend} ...", flush=True)
            results.append(measure(backend, args.w1, args.w2, args.repeat, directory, expected))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    ceiling.append(machine_ceiling())
    report(results, sizes)
    print(f"machine ceiling: plain Python in 2 processes vs 1: {ceiling[0]:.2f}x before the runs, "
          f"{ceiling[1]:.2f}x after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
