"""Fault-tolerance benchmarks of issue 4: checkpoint overhead, checkpoint cost, recovery time.

Run: ``.venv/bin/python bench/bench_checkpoints.py [--records N] [--repeat R] [--keys K] [--quick]``

The three parts run in one process, one after the other, each on local MiniClusters
(TaskManagers are threads of this process); checkpoints go to a temporary directory,
deleted at the end.

* (a) Throughput kept with checkpoints. W2 of ``bench/workloads.py`` (its user functions
  are imported from there): records ``("k%d" % ((i*7919) % 10000), 1)``, key_by, running
  reduce, parallelism 1, bounded collection source. It runs alternately without
  checkpoints and with a checkpoint every second, ``R`` times each after a warm-up, and the
  medians are compared (target: at least 90% of the throughput kept). W2's 1,000,000
  records last under a second here, too short for a 1 s interval to checkpoint at all, so
  the records are scaled (``--records``, 6,000,000 by default) until a run spans several
  checkpoints; how many completed is printed. The input list is frozen out of the garbage
  collector during each run (``gc.freeze``): millions of references it would otherwise
  traverse in every full collection belong to the scaled-up input, not to W2. Because the
  machine is shared, the CPU time the tasks spent on checkpoints (processing nothing) is
  printed too: the direct cost, which other load on the machine hardly changes.
* (b) Checkpoint duration and size for ``K`` keys (100,000) of ValueState on the
  ``hashmap`` and ``rocksdb`` backends: a keyed job puts every key into state, its source
  then idles (the job keeps running), and ``R`` checkpoints are triggered one after the
  other (``MiniCluster.checkpoints.trigger_checkpoint``). Duration (trigger to completion) and size
  (bytes the subtasks stored) come from the job's checkpoint history; the keyed task's
  time on each checkpoint and the checkpoint folder's bytes on disk are printed too.
* (c) Recovery from a killed TaskManager: two TaskManagers of one slot; a paced unbounded
  job (rate-limited generator, key_by, running reduce, sink) runs at parallelism 1 on one
  of them, checkpointing every second; after a checkpoint completed, its TaskManager is
  killed (``MiniCluster.failures.kill_taskmanager``). The clock runs from the kill to the first
  record of the restarted attempt at the sink, with the steps between: detected (missed
  heartbeats -> job RESTARTING), deployed (restart backoff over), running (state restored,
  every subtask RUNNING). The local backend's default heartbeats are used, with two
  restart strategies: fixed-delay with 0 ms delay, and Flink's default with checkpointing
  (exponential-delay from 1 s). Every run is a fresh cluster and job (an exponential
  delay grows with each failure of a job). Target: under 2 s.

``--quick`` runs every part small and once: a smoke run whose figures mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workloads import w2_key, w2_record, w2_reduce  # noqa: E402 - W2's definition, shared

from streamkernel.common import Configuration, Types, WatermarkStrategy  # noqa: E402
from streamkernel.datastream import KeyedProcessFunction, StreamExecutionEnvironment  # noqa: E402
from streamkernel.datastream.connectors.datagen import DataGeneratorSource, RateLimiterStrategy  # noqa: E402
from streamkernel.datastream.functions import MapFunction, RuntimeContext  # noqa: E402
from streamkernel.datastream.state import ValueStateDescriptor  # noqa: E402
from streamkernel.runtime.minicluster.minicluster import LOCAL_HEARTBEAT_DEFAULTS, MiniCluster  # noqa: E402
from streamkernel.runtime.tasks.task_checkpoint import TaskCheckpointer  # noqa: E402
from streamkernel.testing import Pause, ScriptedSource  # noqa: E402

_WAIT_S = 120.0  # the longest any single wait of this script lasts before it gives up

#: Part (c)'s restart strategies (configuration keys); no keys: Flink 2.x's default with checkpoints.
STRATEGIES = {
    "fixed-delay, 10 attempts, 0 ms delay": {
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "10",
        "restart-strategy.fixed-delay.delay": "0 ms"},
    "default: exponential-delay from 1 s": {},
}


def _wait_until(predicate: Callable[[], Any], what: str, step: float = 0.001) -> None:
    deadline = time.monotonic() + _WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"bench_checkpoints: timed out after {_WAIT_S} s waiting for {what}")
        time.sleep(step)


def _dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, files in os.walk(path) for name in files)


def _env(checkpoint_dir: str, **conf: str) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration.from_dict({"execution.checkpointing.dir": checkpoint_dir, **conf}))
    env.set_parallelism(1)
    return env


@dataclass(frozen=True)
class Work:
    """What one task spent on checkpoints: seconds and CPU seconds of its thread, per checkpoint."""

    task: str
    seconds: list[float]
    cpu_seconds: list[float]


class CheckpointWork:
    """Times every ``TaskCheckpointer.perform`` while active: how long a task thread spends on
    a checkpoint (snapshot its operators, write the snapshot, forward the barrier, acknowledge),
    processing no record meanwhile, in wall-clock time and in the thread's CPU time (which
    other load on the machine hardly changes). Bench instrumentation: it wraps the method
    and puts the original back on exit.
    """

    def __init__(self) -> None:
        self._samples: list[tuple[str, float, float]] = []  # (task, seconds, CPU seconds) per checkpoint
        self._original: Any = None

    def __enter__(self) -> "CheckpointWork":
        original = self._original = TaskCheckpointer.perform
        samples = self._samples

        def perform(checkpointer: TaskCheckpointer, barrier: Any) -> None:
            start, cpu_start = time.perf_counter(), time.thread_time()
            try:
                original(checkpointer, barrier)
            finally:
                samples.append((checkpointer.task.tdd.name_with_subtask, time.perf_counter() - start,
                                time.thread_time() - cpu_start))

        TaskCheckpointer.perform = perform  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: Any) -> None:
        TaskCheckpointer.perform = self._original  # type: ignore[method-assign]

    def take(self) -> list[Work]:
        """Each task's work on checkpoints since the last take, the busiest task first; forgets it."""
        per_task: dict[str, Work] = {}
        for task, seconds, cpu in self._samples:
            work = per_task.setdefault(task, Work(task, [], []))
            work.seconds.append(seconds)
            work.cpu_seconds.append(cpu)
        self._samples.clear()
        return sorted(per_task.values(), key=lambda work: -sum(work.cpu_seconds)) or [Work("-", [0.0], [0.0])]


# ------------------------------------------------------------ (a) W2 with / without checkpoints


def _run_w2(cluster: MiniCluster, records: list, interval_ms: int, checkpoint_dir: str) -> tuple[float, float, int]:
    """W2 on ``cluster``: (seconds from submission to the end, CPU seconds of this process, checkpoints completed)."""
    count = [0]

    def sink(value: Any) -> None:
        count[0] += 1

    env = _env(checkpoint_dir)
    if interval_ms > 0:
        env.enable_checkpointing(interval_ms)
    env.from_collection(records).key_by(w2_key).reduce(w2_reduce).add_sink(sink)
    # The input (the bench's list and the source's copy of it: millions of references) would
    # be traversed by every full garbage collection, ~20 ms per million records here, and
    # checkpoints make full collections more frequent (a snapshot's objects get promoted to
    # the oldest generation). That cost belongs to the scaled-up input, not to W2 or to
    # checkpointing: freeze everything that exists now out of the collector for the run.
    gc.collect()
    gc.freeze()
    try:
        start, cpu_start = time.perf_counter(), time.process_time()
        client = env.execute_async("W2 checkpointed" if interval_ms > 0 else "W2")
        client.get_job_execution_result().result(_WAIT_S)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    finally:
        gc.unfreeze()
    if count[0] != len(records):
        raise AssertionError(f"W2 emitted {count[0]} records, expected {len(records)}")
    stats = client.get_job_details().checkpoints
    return elapsed, cpu, stats.num_completed if stats is not None else 0


@dataclass
class ThroughputResult:
    """Part (a): seconds and CPU seconds of every run of both variants, checkpoints completed
    per checkpointed run, and per checkpointed run the busiest task's time on checkpoints."""

    records: int
    plain: list[tuple[float, float]]
    checkpointed: list[tuple[float, float]]
    completed: list[int]
    busiest_task: str
    #: per checkpointed run: the busiest task's median CPU seconds per checkpoint, and the CPU
    #: seconds of every task's checkpoint work as a share of the run's CPU seconds
    blocked: list[tuple[float, float]]

    def median(self, runs: list[tuple[float, float]], index: int = 0) -> float:
        """Median seconds (index 0) or CPU seconds (index 1) of ``runs``."""
        return statistics.median(run[index] for run in runs)

    def best(self, runs: list[tuple[float, float]]) -> float:
        """The fastest run's seconds (noise only ever adds time)."""
        return min(run[0] for run in runs)


def bench_throughput(records_n: int, repeat: int, interval_ms: int, tmp: str) -> ThroughputResult:
    """Part (a): W2 alternately without and with checkpoints, ``repeat`` times each."""
    records = [w2_record(i) for i in range(records_n)]
    result = ThroughputResult(records_n, [], [], [], "-", [])
    with MiniCluster(1, 1) as cluster, CheckpointWork() as work:
        for warm_up in (0, interval_ms):
            _run_w2(cluster, records[:10_000], warm_up, os.path.join(tmp, "warm-up"))
        for r in range(repeat):
            seconds, cpu, _ = _run_w2(cluster, records, 0, os.path.join(tmp, f"w2-{r}"))
            result.plain.append((seconds, cpu))
            work.take()
            seconds, cpu, done = _run_w2(cluster, records, interval_ms, os.path.join(tmp, f"w2-checkpointed-{r}"))
            result.checkpointed.append((seconds, cpu))
            result.completed.append(done)
            works = work.take()
            result.busiest_task = works[0].task
            result.blocked.append((statistics.median(works[0].cpu_seconds),
                                   sum(sum(w.cpu_seconds) for w in works) / cpu))
            print(f"  run {r + 1}/{repeat}: without {result.plain[-1][0]:.3f} s ({result.plain[-1][1]:.3f} s CPU), "
                  f"with {seconds:.3f} s ({cpu:.3f} s CPU, {done} checkpoints; {result.busiest_task}: "
                  f"{result.blocked[-1][0] * 1000:.0f} ms CPU per checkpoint; checkpoint work "
                  f"{result.blocked[-1][1]:.1%} of the CPU)", flush=True)
    return result


# --------------------------------------------------- (b) checkpoint duration and size, 100k keys


class _CountPerKey(KeyedProcessFunction):
    """Counts records per key in a ValueState; emits a key the first time it is seen."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Any:
        current = self.count.value()
        self.count.update(1 if current is None else current + 1)
        if current is None:
            yield value


@dataclass
class CheckpointCostResult:
    """Part (b), one backend: per triggered checkpoint its duration, size, bytes on disk and
    the keyed task's time on it."""

    backend: str
    durations_ms: list[int]
    sizes: list[int]
    disk_bytes: list[int]
    blocked_ms: list[float]  # the keyed task's thread: wall-clock ms on the checkpoint
    blocked_cpu_ms: list[float]  # and its CPU ms


def bench_checkpoint_cost(backend: str, keys: int, repeat: int, tmp: str) -> CheckpointCostResult:
    """Part (b): a job holding ``keys`` keys of ValueState; ``repeat`` checkpoints triggered by hand."""
    seen = [0]

    def sink(value: Any) -> None:
        seen[0] += 1

    env = _env(os.path.join(tmp, f"cost-{backend}"), **{"state.backend.type": backend})
    script: list = ["key-%06d" % i for i in range(keys)] + [Pause(3_600_000)]  # then idle, still running
    (env.from_source(ScriptedSource(script), WatermarkStrategy.no_watermarks(), "keys").uid("keys")
        .key_by(lambda k: k).process(_CountPerKey()).uid("count-per-key").add_sink(sink))
    result = CheckpointCostResult(backend, [], [], [], [], [])
    with MiniCluster(1, 1) as cluster, CheckpointWork() as work:
        client = env.execute_async(f"{keys} keys on {backend}")
        job_id = client.get_job_id()
        _wait_until(lambda: seen[0] >= keys, f"{keys} keys in state", step=0.01)
        for _ in range(repeat):
            work.take()
            path = cluster.checkpoints.trigger_checkpoint(job_id)
            [row] = [r for r in cluster.checkpoints.checkpoint_history(job_id) if r["path"] == path]
            result.durations_ms.append(row["duration_ms"])
            result.sizes.append(row["state_size"])
            result.disk_bytes.append(_dir_bytes(path))
            busiest = work.take()[0]
            result.blocked_ms.append(1000 * sum(busiest.seconds))
            result.blocked_cpu_ms.append(1000 * sum(busiest.cpu_seconds))
        client.cancel().result(_WAIT_S)
    return result


# -------------------------------------------------------------- (c) recovery from a killed TM


class _Attempt(MapFunction):
    """Replaces every record by the attempt number of the subtask that processed it."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.attempt = runtime_context.get_attempt_number()

    def map(self, value: Any) -> int:
        return self.attempt


@dataclass
class RecoveryResult:
    """Part (c), one kill: seconds from the kill to each step of the recovery."""

    detected: float      # job RESTARTING: the lost TaskManager was noticed
    deployed: float      # the restarted attempt's first subtask deployed (backoff over)
    running: float       # every subtask of the restarted attempt RUNNING (state restored)
    first_record: float  # the restarted attempt's first record reached the sink
    restored_checkpoint: Optional[int]
    strategy: str        # the job's restart strategy, as the JobMaster describes it
    cause: str           # the failure that started the failover (exception history)


def bench_recovery(strategy: dict, interval_ms: int, tmp: str, rate: int = 2000) -> RecoveryResult:
    """Part (c): kill the TaskManager running a paced checkpointed job; time the way back.

    Times are wall-clock, the clock of the job's published state timestamps (job
    RESTARTING, each subtask's DEPLOYING and RUNNING, in milliseconds).
    """
    arrivals: list[tuple[float, int]] = []  # (time.time(), attempt) per record at the sink
    env = _env(os.path.join(tmp, "recovery"), **strategy)
    env.enable_checkpointing(interval_ms)
    source = DataGeneratorSource(w2_record, None, RateLimiterStrategy.per_second(rate))
    (env.from_source(source, WatermarkStrategy.no_watermarks(), "paced W2").uid("source")
        .key_by(w2_key).reduce(w2_reduce).uid("counts").map(_Attempt()).uid("attempt")
        .add_sink(lambda attempt: arrivals.append((time.time(), attempt))))
    with MiniCluster(2, 1) as cluster:
        client = env.execute_async("recovery")
        checkpoints = lambda: client.get_job_details().checkpoints  # noqa: E731
        _wait_until(lambda: arrivals and checkpoints() is not None and checkpoints().num_completed >= 1,
                    "the first completed checkpoint", step=0.01)
        [taskmanager] = {s.taskmanager_id for s in client.get_job_details().subtasks}
        killed_at = time.time()
        cluster.failures.kill_taskmanager(taskmanager)
        _wait_until(lambda: arrivals[-1][1] >= 1, "the restarted attempt's first record")
        first = min(t for t, attempt in list(arrivals) if attempt >= 1)
        _wait_until(lambda: all(s.state.value == "RUNNING" for s in client.get_job_details().subtasks),
                    "every restarted subtask RUNNING")
        details = client.get_job_details()
        client.cancel().result(_WAIT_S)
    subtasks = details.subtasks
    restored = details.checkpoints.latest_restored if details.checkpoints is not None else None
    return RecoveryResult(details.status_timestamps["RESTARTING"] / 1000 - killed_at,
                          min(s.state_timestamps["DEPLOYING"] for s in subtasks) / 1000 - killed_at,
                          max(s.state_timestamps["RUNNING"] for s in subtasks) / 1000 - killed_at,
                          first - killed_at, restored.checkpoint_id if restored is not None else None,
                          details.restart_strategy,
                          details.exception_history[0].exception if details.exception_history else "?")


# ------------------------------------------------------------------------------------- main


def _verdict(ok: bool, quick: bool) -> str:
    return "no verdict in --quick" if quick else ("met" if ok else "MISSED")


def _part_a(records: int, repeat: int, interval_ms: int, quick: bool, tmp: str) -> None:
    print(f"\n(a) W2 throughput with a checkpoint every {interval_ms} ms vs without: {records:,} records, "
          f"parallelism 1, hashmap backend, runs alternating, median of {repeat}", flush=True)
    result = bench_throughput(records, repeat, interval_ms, tmp)
    plain_s, ckpt_s = result.median(result.plain), result.median(result.checkpointed)
    plain_cpu, ckpt_cpu = result.median(result.plain, 1), result.median(result.checkpointed, 1)
    plain_best, ckpt_best = result.best(result.plain), result.best(result.checkpointed)
    print(f"{'variant (medians)':<30}{'seconds':>9}{'records/s':>12}{'CPU s':>8}{'best s':>8}  checkpoints per run")
    print(f"{'without checkpoints':<30}{plain_s:>9.3f}{records / plain_s:>12,.0f}{plain_cpu:>8.3f}{plain_best:>8.3f}  -")
    print(f"{f'checkpoint every {interval_ms} ms':<30}{ckpt_s:>9.3f}{records / ckpt_s:>12,.0f}{ckpt_cpu:>8.3f}"
          f"{ckpt_best:>8.3f}  " + " / ".join(map(str, result.completed)))
    if min(result.completed) < 2:
        print(f"WARNING: a checkpointed run completed fewer than 2 checkpoints; raise --records (now {records:,})")
    per_checkpoint = statistics.median(b[0] for b in result.blocked)
    share = statistics.median(b[1] for b in result.blocked)
    print(f"throughput kept: {plain_s / ckpt_s:.1%} (target >= 90%: {_verdict(plain_s / ckpt_s >= 0.9, quick)}); "
          f"by CPU time {plain_cpu / ckpt_cpu:.1%}; best runs {plain_best / ckpt_best:.1%}")
    print(f"direct cost (thread CPU time, insensitive to other load): {result.busiest_task} spends "
          f"{per_checkpoint * 1000:.0f} ms per checkpoint; the tasks' checkpoint work is {share:.1%} of the "
          f"run's CPU time (about {1 - share:.0%} kept)", flush=True)


def _part_b(keys: int, repeat: int, tmp: str) -> None:
    print(f"\n(b) checkpoint duration (trigger to completion) and size: {keys:,} keys ('key-NNNNNN') of ValueState "
          f"(an int each), parallelism 1, source idle, {repeat} checkpoints one after another", flush=True)
    print(f"{'backend':<9}{'duration median':>16}{'min':>9}{'max':>9}{'task blocked':>14}{'(CPU)':>9}  "
          f"{'size (history)':<26}{'bytes/key':>10}{'on disk':>12}")
    for backend in ("hashmap", "rocksdb"):
        cost = bench_checkpoint_cost(backend, keys, repeat, tmp)
        size = statistics.median(cost.sizes)
        print(f"{backend:<9}{statistics.median(cost.durations_ms):>13.0f} ms{min(cost.durations_ms):>6} ms"
              f"{max(cost.durations_ms):>6} ms{statistics.median(cost.blocked_ms):>11.0f} ms"
              f"{statistics.median(cost.blocked_cpu_ms):>6.0f} ms  "
              f"{f'{size:,.0f} B ({size / 2**20:.2f} MiB)':<26}{size / keys:>10.1f}"
              f"{statistics.median(cost.disk_bytes):>12,.0f}", flush=True)


def _part_c(repeat: int, interval_ms: int, quick: bool, tmp: str) -> None:
    heartbeat = ", ".join(f"{k} {v}" for k, v in LOCAL_HEARTBEAT_DEFAULTS.items())
    print(f"\n(c) recovery from a killed TaskManager: local backend, default heartbeats ({heartbeat}); "
          f"2 TaskManagers x 1 slot; generator (2,000 records/s) -> key_by -> running reduce -> sink at "
          f"parallelism 1, a checkpoint every {interval_ms} ms; a fresh cluster and job per run, median of {repeat}")
    print("seconds after the kill until: detected = job RESTARTING (heartbeat timed out); deployed = restarted "
          "subtasks deploying (backoff over);\nrunning = all RUNNING (state restored); 1st record = the restarted "
          "attempt's first record at the sink", flush=True)
    print(f"{'restart strategy':<40}{'detected':>10}{'deployed':>10}{'running':>10}{'1st record':>12}  target < 2 s")
    for name, strategy in STRATEGIES.items():
        runs = [bench_recovery(strategy, interval_ms, tmp) for _ in range(repeat)]
        med = [statistics.median(getattr(r, f) for r in runs) for f in ("detected", "deployed", "running", "first_record")]
        print(f"{name:<40}" + "".join(f"{m:>9.3f}s" for m in med[:3]) + f"{med[3]:>11.3f}s  "
              + _verdict(med[3] < 2.0, quick))
        print("    runs: " + "; ".join(f"{r.detected:.3f}/{r.deployed:.3f}/{r.running:.3f}/{r.first_record:.3f}"
                                    for r in runs)
              + f" (restored checkpoint {', '.join(sorted({str(r.restored_checkpoint) for r in runs}))})")
        print(f"    strategy: {runs[0].strategy}\n    cause: {runs[0].cause}", flush=True)


def main(argv: Optional[list[str]] = None) -> None:
    """Run parts (a), (b) and (c); print a table per part with the ratios and the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, help="W2 records in (a) (default 6,000,000: several checkpoints)")
    parser.add_argument("--repeat", type=int, help="runs per variant in (a), checkpoints in (b) (default 7)")
    parser.add_argument("--keys", type=int, help="keys in state in (b) (default 100,000)")
    parser.add_argument("--parts", default="abc", help="which parts to run (default abc: all)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: every part small and once")
    args = parser.parse_args(argv)
    quick = args.quick
    repeat = args.repeat or (1 if quick else 7)
    print("command: " + " ".join([os.path.relpath(sys.executable)] + sys.argv))
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {sys.platform}, "
          f"load average {os.getloadavg()[0]:.2f} (other work on the machine makes wall-clock figures noisy)")
    if quick:
        print("--quick: a smoke run; its figures mean nothing (short intervals, few records)")
    # The ResourceManager logs every lost TaskManager; part (c) prints the failure cause itself.
    logging.getLogger("streamkernel.runtime.resourcemanager.resource_manager").setLevel(logging.ERROR)
    tmp = tempfile.mkdtemp(prefix="bench-checkpoints-")
    try:
        if "a" in args.parts:
            _part_a(args.records or (400_000 if quick else 6_000_000), repeat, 100 if quick else 1000, quick, tmp)
        if "b" in args.parts:
            _part_b(args.keys or (5_000 if quick else 100_000), repeat, tmp)
        if "c" in args.parts:
            _part_c(1 if quick else max(3, repeat // 2 + 1), 200 if quick else 1000, quick, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
