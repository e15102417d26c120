"""The spark backend on a Spark standalone cluster: a Master and a Worker on 127.0.0.1.

The test starts both daemons with pyspark's own ``bin/spark-class`` (standalone_cluster.py)
and a SparkSession against them, which it passes to the MiniClusters as a user's session:
the TaskManagers then run in the Python workers of a real executor JVM (a child of the
Worker, not of this process). Marked ``spark_standalone``: the daemons and the session take
about half a minute to start.
"""

from __future__ import annotations

import collections
import importlib.util
import pathlib
import sys
import threading
import time

import pytest

pytest.importorskip("pyspark")

from streamkernel.common import RestartStrategies  # noqa: E402
from streamkernel.datastream import StreamExecutionEnvironment  # noqa: E402
from streamkernel.runtime.minicluster.minicluster import MiniCluster  # noqa: E402
from streamkernel.runtime.taskmanager.spark_resources import SparkTaskSlotsError  # noqa: E402
from streamkernel.runtime.taskmanager.spark_stop import pid_alive  # noqa: E402


def _load(name):
    spec = importlib.util.spec_from_file_location(name, pathlib.Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kit = _load("spark_test_kit")
standalone_cluster = _load("standalone_cluster")

pytestmark = [pytest.mark.spark, pytest.mark.spark_standalone]

WORDS = [f"w{i % 7}" for i in range(2000)]
EXPECTED = collections.Counter(WORDS)


@pytest.fixture(scope="module")
def standalone():
    cluster = standalone_cluster.StandaloneCluster(cores=2).start()
    yield cluster
    jvms = cluster.pids()
    cluster.stop()
    assert not any(pid_alive(pid) for pid in jvms)


@pytest.fixture(scope="module")
def spark(standalone):
    from pyspark.sql import SparkSession

    started = time.monotonic()
    session = (SparkSession.builder.master(standalone.master_url).appName("streamkernel-standalone-tests")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.pyspark.python", sys.executable).config("spark.executor.memory", "1g")
               .config("spark.task.maxFailures", "8")
               .getOrCreate())
    print(f"\nstandalone: daemons up in {standalone.startup_seconds:.1f} s, session in "
          f"{time.monotonic() - started:.1f} s")
    yield session
    session.stop()
    kit.wait_until(lambda: kit.python_workers(_worker_jvm(standalone)) == [])


def _worker_jvm(standalone) -> int:
    return standalone._processes[1].pid


def test_taskmanagers_run_in_a_standalone_executor_and_survive_a_kill(standalone, spark, tmp_path):
    flag = tmp_path / "open"
    started = time.monotonic()
    with MiniCluster(2, 1, backend="spark", spark_session=spark,
                     configuration={"heartbeat.interval": "500 ms", "heartbeat.timeout": "5 s"}) as cluster:
        registered = time.monotonic() - started
        launcher = cluster._backend.launcher
        assert launcher.jobmanager_bind_host() == "127.0.0.1"  # spark.driver.host of a cluster master
        described = {tm: cluster.inspection.describe_taskmanager(tm) for tm in ("taskmanager-1", "taskmanager-2")}
        pids = {d["pid"] for d in described.values()}
        # hosted by Python workers of the executor JVM that the standalone Worker started
        assert len(pids) == 2 and pids <= set(kit.python_workers(_worker_jvm(standalone)))
        assert {d["spark_master"] for d in described.values()} == {standalone.master_url}

        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.set_restart_strategy(RestartStrategies.fixed_delay_restart(5, 200))

        counts = kit.gated_running_counts(env, WORDS, str(flag))
        latest: dict = {}
        first: list = []

        def run():
            submitted = time.monotonic()
            for word, count in counts.execute_and_collect():
                if not first:
                    first.append(time.monotonic() - submitted)
                latest[word] = max(latest.get(word, 0), count)

        runner = threading.Thread(target=run, name="collect-standalone", daemon=True)
        runner.start()
        kit.wait_until(lambda: latest, timeout=60)
        assert cluster.failures.kill_taskmanager("taskmanager-2") == "taskmanager-2"
        kit.wait_until(lambda: "taskmanager-2.1" in cluster._backend.live_ids(), timeout=60)
        assert not pid_alive(described["taskmanager-2"]["pid"])
        assert cluster.inspection.describe_taskmanager("taskmanager-2.1")["spark_attempt"] == 1
        flag.touch()
        runner.join(90)
        assert not runner.is_alive() and latest == dict(EXPECTED)
        group = launcher.job_group
    print(f"standalone: TaskManagers registered {registered:.1f} s after start, first record {first[0]:.2f} s "
          f"after submission")
    tracker = spark.sparkContext.statusTracker()
    assert [j for j in tracker.getJobIdsForGroup(group) if tracker.getJobInfo(j).status == "RUNNING"] == []
    # (the Python workers themselves may stay as idle pooled workers of this session, which
    # reuses them: spark.python.worker.reuse is on by default; they go with the session)


def test_too_few_executor_cores_fail_the_start_clearly(spark):
    cluster = MiniCluster(3, 1, backend="spark", spark_session=spark,
                          configuration={"taskmanager.spark.executor-registration-timeout": "1 s"})
    with pytest.raises(SparkTaskSlotsError, match=r"cannot host 3 more TaskManagers.*1 executor x 2 cores"):
        cluster.start(make_current=False)
    assert spark.sparkContext.statusTracker().getActiveJobsIds() == []
