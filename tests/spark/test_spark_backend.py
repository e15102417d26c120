"""Whole jobs on the ``spark`` backend: TaskManagers in Spark tasks of a local[N,F] SparkSession.

One MiniCluster (2 TaskManagers x 2 slots) serves the module: the launcher creates its own
SparkSession (the default master, ``local[2 + cores, 8]``), and stops it with the cluster.
The TaskManagers run in Python workers forked by Spark; records between TaskManagers go
over authenticated TCP. A killed TaskManager is relaunched by Spark as a new one
(``taskmanager-1.1``) and the job recovers by its restart strategy. A file stands in for a
Gate (the test's threading.Event would not reach another process). A TaskManager above its
process size (a second, small cluster on the module's SparkSession) exits 137 explained, and Spark
relaunches it.
"""

from __future__ import annotations

import collections
import importlib.util
import os
import pathlib
import threading
import time

import pytest

pytest.importorskip("pyspark")

from streamkernel.common import Duration, RestartStrategies, Types, WatermarkStrategy  # noqa: E402
from streamkernel.common.watermark_strategy import TimestampAssigner  # noqa: E402
from streamkernel.common.job_status import JobStatus  # noqa: E402
from streamkernel.datastream import StreamExecutionEnvironment  # noqa: E402
from streamkernel.datastream.window import TumblingEventTimeWindows  # noqa: E402
from streamkernel.runtime.minicluster.minicluster import MiniCluster  # noqa: E402
from streamkernel.runtime.taskmanager.spark_stop import pid_alive  # noqa: E402

_spec = importlib.util.spec_from_file_location("spark_test_kit", pathlib.Path(__file__).with_name("spark_test_kit.py"))
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)

pytestmark = pytest.mark.spark

WORDS = [f"w{i % 7}" for i in range(700)]
EXPECTED = collections.Counter(WORDS)
TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def cluster():
    started = time.monotonic()
    cluster = MiniCluster(taskmanagers=2, slots_per_taskmanager=2, backend="spark",
                          configuration={"heartbeat.interval": "500 ms", "heartbeat.timeout": "5 s"})
    cluster.start(make_current=False)
    TIMINGS["cluster start (all TaskManagers registered)"] = time.monotonic() - started
    launcher = cluster._backend.launcher
    TIMINGS["SparkSession start"] = launcher.session_startup_seconds
    TIMINGS["launch -> first TaskManager host up"] = launcher.first_host_seconds()
    yield cluster
    context = launcher.spark_session.sparkContext
    cluster.stop(timeout=20)
    assert context._jsc is None  # the SparkSession the launcher created is stopped with the cluster
    assert kit.python_workers() == []  # and stop() returned only once Spark's Python workers were gone
    print("\nspark backend timings (s):", {k: round(v, 2) for k, v in TIMINGS.items() if v is not None})


def _env(cluster, parallelism=2) -> StreamExecutionEnvironment:
    cluster.start(make_current=True)  # make it the current cluster of this test
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


class _EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def _running_counts(stream):
    return (stream.map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
            .key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])))


def test_taskmanagers_are_spark_tasks_in_python_workers(cluster):
    ids = sorted(cluster._backend.live_ids())
    assert ids == ["taskmanager-1", "taskmanager-2"]
    described = [cluster.inspection.describe_taskmanager(tm) for tm in ids]
    assert {d["backend"] for d in described} == {"spark"}
    assert {d["spark_partition"] for d in described} == {0, 1}
    pids = {d["pid"] for d in described}
    assert len(pids) == 2 and os.getpid() not in pids and pids <= set(kit.python_workers())
    context = cluster._backend.launcher.spark_session.sparkContext
    assert context.master.startswith("local[") and context.master.endswith(",8]")
    assert context.statusTracker().getJobIdsForGroup(cluster._backend.launcher.job_group)
    assert cluster.total_slots == 4


def test_a_keyed_job_across_two_taskmanagers_gives_the_local_results(cluster):
    env = _env(cluster)
    started = time.monotonic()
    final: dict = {}
    for word, count in _running_counts(env.from_collection(WORDS)).execute_and_collect():
        TIMINGS.setdefault("execute -> first record", time.monotonic() - started)
        final[word] = max(final.get(word, 0), count)
    assert final == dict(EXPECTED)


def test_event_time_windows_on_spark_taskmanagers(cluster):
    env = _env(cluster)
    events = [(f"k{i % 3}", i * 100) for i in range(300)]  # 30 s of events, 3 keys
    watermarks = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        _EventTime())
    counts = (env.from_collection(events).assign_timestamps_and_watermarks(watermarks)
              .map(lambda e: (e[0], 1)).key_by(lambda p: p[0])
              .window(TumblingEventTimeWindows.of(Duration.of_seconds(10)))
              .reduce(lambda a, b: (a[0], a[1] + b[1])))
    result = collections.Counter()
    for key, count in counts.execute_and_collect():
        result[key] += 1
        assert count == 34 or count == 33  # 100 events per window, 3 keys round robin
    assert result == {"k0": 3, "k1": 3, "k2": 3}


def test_a_killed_taskmanager_is_relaunched_by_spark_and_the_job_ends_with_failure_free_results(cluster, tmp_path):
    flag = str(tmp_path / "open")
    env = _env(cluster)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(5, 200))
    counts = kit.gated_running_counts(env, WORDS, flag)
    latest: dict = {}

    def run():
        for word, count in counts.execute_and_collect():
            latest[word] = max(latest.get(word, 0), count)

    runner = threading.Thread(target=run, name="collect-results", daemon=True)
    runner.start()
    kit.wait_until(lambda: latest, timeout=60)
    jobs = [j for j in cluster.jobs() if j.status is JobStatus.RUNNING]
    assert len(jobs) == 1
    killed = cluster.inspection.describe_taskmanager("taskmanager-1")
    assert cluster.failures.kill_taskmanager("taskmanager-1") == "taskmanager-1"
    # Spark relaunches the task as attempt 1: a new TaskManager registers its slots
    kit.wait_until(lambda: "taskmanager-1.1" in cluster._backend.live_ids(), timeout=60)
    relaunched = cluster.inspection.describe_taskmanager("taskmanager-1.1")
    assert relaunched["spark_attempt"] == 1 and relaunched["pid"] != killed["pid"]
    assert not pid_alive(killed["pid"])
    pathlib.Path(flag).touch()
    runner.join(90)
    assert not runner.is_alive()
    assert latest == dict(EXPECTED)
    [job] = [j for j in cluster.jobs() if j.job_id == jobs[0].job_id]
    assert job.status is JobStatus.FINISHED


#: A small TaskManager the memory calculation accepts: the fixed parts shrunk to fit 300m.
SMALL_PROCESS = {"taskmanager.memory.process.size": "300m", "taskmanager.memory.framework.heap.size": "16m",
                 "taskmanager.memory.framework.off-heap.size": "16m", "taskmanager.memory.jvm-metaspace.size": "16m",
                 "taskmanager.memory.jvm-overhead.min": "16m", "taskmanager.memory.network.min": "8m"}


def _hog_on_first_attempt(marker: str):
    """A map that, in the job's first attempt only, grows its TaskManager's memory until the watchdog stops it."""
    def run(value: int) -> int:
        if not os.path.exists(marker):
            open(marker, "w").close()
            hog = [bytearray(b"\x01") * (8 << 20) for _ in range(64)]  # 512 MB, written: far above the 300m
            threading.Event().wait(120)  # the watchdog's process exit ends this wait
            raise AssertionError(f"the memory watchdog did not stop this TaskManager ({len(hog)} chunks held)")
        return value * 10
    return run


def test_a_spark_taskmanager_above_its_process_size_fails_explained_and_the_job_recovers(cluster, tmp_path):
    """The RSS watchdog in a Spark task: exit 137 with TaskManagerProcessSizeExceededError as the cause, Spark
    relaunches the task as a new TaskManager, the job restarts there and finishes. A second, small cluster on
    the module's SparkSession (no second Spark start)."""
    from streamkernel.common import Configuration
    from streamkernel.datastream.connectors.collect import CollectSink

    marker = str(tmp_path / "first-attempt")
    sink = CollectSink()
    conf = {**SMALL_PROCESS, "streamkernel.taskmanager.memory.watchdog.interval": "100 ms",
            "heartbeat.interval": "500 ms", "heartbeat.timeout": "5 s"}
    session = cluster._backend.launcher.spark_session
    with MiniCluster(1, 1, backend="spark", spark_session=session, configuration=conf) as small:
        env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({
            "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "3",
            "restart-strategy.fixed-delay.delay": "50 ms"}))
        env.set_parallelism(1)
        env.from_collection(list(range(20))).map(_hog_on_first_attempt(marker)).sink_to(sink)
        client = env.execute_async("grows beyond its process size on spark")
        result = client.get_job_execution_result().result(120)
        history = client.get_job_details().exception_history
        status = client.get_job_status().result()
        live = sorted(small._backend.live_ids())
        relaunched = small.inspection.describe_taskmanager("taskmanager-1.1")
        failure = small._backend.launcher.failure("taskmanager-1")
    assert status is JobStatus.FINISHED
    assert sorted(sink.buffer) == [v * 10 for v in range(20)]
    assert result.get_num_restarts() == 1
    assert live == ["taskmanager-1.1"] and relaunched["spark_attempt"] == 1  # Spark relaunched the task
    [entry] = history
    assert entry.exception_name == "TaskManagerProcessSizeExceededError" and entry.restarted, entry
    assert "'taskmanager-1' exceeded its total process memory: resident set size" in entry.message
    assert "300.000mb (314572800 bytes) ('taskmanager.memory.process.size')" in entry.message
    assert "raise 'taskmanager.memory.process.size'" in entry.message
    # the launcher knows why its Spark task ended (not "its Python worker died")
    assert failure is not None and "failed: TaskManagerProcessSizeExceededError: " in failure, failure
    assert "exceeded its total process memory" in failure and "exits with code 137" in failure, failure
    assert session.sparkContext._jsc is not None  # the module's session runs on (the small cluster did not own it)
