"""``%flink start --backend process|spark [--master M] [--spark-session NAME]`` through IPython."""

from __future__ import annotations

import os
import sys

import pytest
from IPython.core.error import UsageError

from streamkernel.testing import wait_until

COUNT_CELL = """
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
words = [f"w{i % 7}" for i in range(700)]
with (env.from_collection(words).map(lambda w: (w, 1))
         .key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
         .execute_and_collect("counts")) as results:
    totals = {}
    for word, count in results:
        totals[word] = max(totals.get(word, 0), count)
"""

SETUP = "from streamkernel.datastream import StreamExecutionEnvironment"


def _child_pids() -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == os.getpid():
            found.append(int(entry))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks processes through /proc")
def test_start_with_the_process_backend_runs_jobs_in_child_processes_and_stop_ends_them(shell) -> None:
    ip, shown = shell
    before = set(_child_pids())
    ip.run_line_magic("flink", "start --backend process --taskmanagers 2 --slots 1")
    cluster = ip.user_ns["cluster"]
    assert cluster.backend == "process"
    assert list(shown[-1]["taskmanager"]) == [1, 2]  # the slot table, one slot per TaskManager
    pids = {cluster.inspection.describe_taskmanager(tm)["pid"] for tm in ("taskmanager-1", "taskmanager-2")}
    assert len(pids) == 2 and os.getpid() not in pids and pids <= set(_child_pids())
    ip.run_cell(COUNT_CELL, store_history=False).raise_error()
    assert ip.user_ns["totals"] == {f"w{i}": 100 for i in range(7)}
    ip.run_line_magic("flink", "stop")
    wait_until(lambda: not set(_child_pids()) - before, message="every TaskManager process to end after %flink stop")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks processes through /proc")
def test_kill_taskmanager_on_the_process_backend_kills_its_process_and_a_new_one_registers(shell, capsys) -> None:
    ip, _ = shell
    ip.run_line_magic("flink", "start --backend process --taskmanagers 2 --slots 1")
    cluster = ip.user_ns["cluster"]
    victim = cluster.inspection.describe_taskmanager("taskmanager-1")["pid"]
    capsys.readouterr()
    ip.run_line_magic("flink", "kill-taskmanager 1")
    out = capsys.readouterr().out
    assert "Killed taskmanager-1 (SIGKILL to its process)" in out and "closed connection at once" in out
    assert "a new TaskManager process replaces it" in out and "missed heartbeats" not in out
    wait_until(lambda: len(cluster.taskmanager_backend.live_ids()) == 2
               and "taskmanager-1" not in cluster.taskmanager_backend.live_ids(),
               message="a new TaskManager to replace taskmanager-1")
    live = sorted(cluster.taskmanager_backend.live_ids())
    assert len(live) == 2 and "taskmanager-1" not in live
    assert victim not in {cluster.inspection.describe_taskmanager(tm)["pid"] for tm in live}
    ip.run_cell(COUNT_CELL, store_history=False).raise_error()  # jobs run on the replacement
    assert ip.user_ns["totals"] == {f"w{i}": 100 for i in range(7)}


def test_spark_options_are_refused_with_another_backend_and_a_missing_session_is_named(shell) -> None:
    ip, _ = shell
    with pytest.raises(UsageError, match="--master is for the spark backend, not --backend process"):
        ip.run_line_magic("flink", "start --backend process --master local[2]")
    with pytest.raises(UsageError, match="--spark-session is for the spark backend, not --backend local"):
        ip.run_line_magic("flink", "start --backend local --spark-session spark")
    with pytest.raises(UsageError, match="--spark-session my_spark: no variable 'my_spark'"):
        ip.run_line_magic("flink", "start --spark-session my_spark")
    ip.user_ns["not_spark"] = 42
    with pytest.raises(UsageError, match="'not_spark' is a int, not a SparkSession"):
        ip.run_line_magic("flink", "start --spark-session not_spark")
    from streamkernel.runtime.minicluster.minicluster import current_cluster

    assert current_cluster() is None or not current_cluster().is_running


@pytest.mark.spark
def test_start_with_a_notebook_spark_session_uses_it_and_stop_leaves_it_running(shell) -> None:
    pytest.importorskip("pyspark")
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    ip, _ = shell
    ours = SparkContext._active_spark_context is None  # else another test's session: leave it running
    spark = (SparkSession.builder.master("local[3,4]").appName("streamkernel-magic-test")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
             .config("spark.python.worker.reuse", "false").config("spark.pyspark.python", sys.executable)
             .getOrCreate())
    ip.user_ns["spark"] = spark
    try:
        ip.run_line_magic("flink", "start --spark-session spark --taskmanagers 2 --slots 1")
        cluster = ip.user_ns["cluster"]
        assert cluster.backend == "spark"
        launcher = cluster.taskmanager_backend.launcher
        assert launcher.spark_session.sparkContext is spark.sparkContext  # the notebook's own application
        ip.run_cell(COUNT_CELL, store_history=False).raise_error()
        assert ip.user_ns["totals"] == {f"w{i}": 100 for i in range(7)}
        ip.run_line_magic("flink", "stop")
        tracker = spark.sparkContext.statusTracker()
        assert not tracker.getActiveJobsIds()  # the TaskManagers' Spark job ended
        assert spark.range(5).count() == 5  # a session the user passed in is still theirs to use
    finally:
        if ours:
            spark.stop()
