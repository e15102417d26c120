"""SparkTaskManagerLauncher on a local[2,4] SparkSession, with fake TaskManagers (no JobManager).

Each fake TaskManager (spark_test_kit.fake_worker_entry) connects to a fake JobManager with
the cluster secret and registers, as run_taskmanager does. One SparkSession serves the
whole module (Spark starts in 3-10 s); it belongs to the tests, so the launchers use it
as a user's session and never stop it.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pathlib
import tempfile
import threading

import pytest

pytest.importorskip("pyspark")

from streamkernel.runtime.taskmanager.launcher import TaskManagerLauncher  # noqa: E402
from streamkernel.runtime.taskmanager.spark import (SparkHostJobError, SparkTaskManagerLauncher,  # noqa: E402
                                                    SparkTaskSlotsError)
from streamkernel.runtime.taskmanager.spark_stop import pid_alive  # noqa: E402

_spec = importlib.util.spec_from_file_location("spark_test_kit", pathlib.Path(__file__).with_name("spark_test_kit.py"))
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    session = kit.local_session("local[2,4]")
    yield session
    session.stop()


@pytest.fixture
def jobmanager():
    fake = kit.FakeJobManager()
    yield fake
    fake.close()


def _launcher(spark, mode="serve", **conf):
    return SparkTaskManagerLauncher(conf, spark_session=spark, worker_entry=kit.fake_worker_entry(mode))


def _assert_nothing_left(spark, launcher):
    assert spark.sparkContext.statusTracker().getActiveJobsIds() == []
    kit.wait_until(lambda: kit.python_workers() == [])
    assert not [t for t in threading.enumerate() if "spark-taskmanagers" in t.name or "spark-launcher" in t.name]


def test_launcher_follows_the_protocol(spark):
    assert isinstance(_launcher(spark), TaskManagerLauncher)


def test_taskmanagers_start_as_spark_tasks_register_and_stop_through_the_protocol(spark, jobmanager):
    launcher = _launcher(spark)
    launcher.launch(["tm-a", "tm-b"], 3, jobmanager.address, jobmanager.secret, {"k": "v"})
    registered = jobmanager.wait_for("tm-a", "tm-b")
    assert {r["attempt"] for r in registered.values()} == {0}
    assert {r["slots"] for r in registered.values()} == {3}
    # each runs in its own Python worker, a child of this process's Spark JVM
    pids = {r["pid"] for r in registered.values()}
    assert len(pids) == 2 and pids <= set(kit.python_workers())
    kit.wait_until(lambda: launcher.describe("tm-b").get("state") == "running")
    described = launcher.describe("tm-b")
    assert described["backend"] == "spark" and described["pid"] == registered["tm-b"]["pid"]
    assert described["spark_partition"] == 1 and described["spark_attempt"] == 0 and described["host"]
    assert launcher.describe("nobody") == {}
    # one background Spark job in the launcher's group, named for Spark's UI
    jobs = spark.sparkContext.statusTracker().getJobIdsForGroup(launcher.job_group)
    assert len(jobs) == 1 and jobs[0] in spark.sparkContext.statusTracker().getActiveJobsIds()
    description = spark.sparkContext._jsc.sc().statusStore().job(jobs[0]).description().get()
    assert description.startswith("streamkernel TaskManagers tm-a, tm-b (cluster ")
    jobmanager.stop_taskmanagers()
    launcher.stop(timeout=20)
    assert spark.sparkContext.statusTracker().getJobInfo(jobs[0]).status == "SUCCEEDED"
    _assert_nothing_left(spark, launcher)
    assert launcher.last_job_failure is None
    launcher.stop(timeout=1)  # idempotent


def test_a_killed_host_is_relaunched_by_spark_as_a_new_taskmanager(spark, jobmanager):
    launcher = _launcher(spark)
    launcher.launch(["tm-1", "tm-2"], 1, jobmanager.address, jobmanager.secret, {})
    first = jobmanager.wait_for("tm-1", "tm-2")
    kit.wait_until(lambda: launcher.describe("tm-1").get("state") == "running")
    assert launcher.kill("tm-1") is True
    assert launcher.kill("tm-1") is False  # already dead
    assert launcher.kill("nobody") is False
    relaunched = jobmanager.wait_for("tm-1.1")["tm-1.1"]
    assert relaunched["attempt"] == 1 and relaunched["pid"] != first["tm-1"]["pid"]
    assert not pid_alive(first["tm-1"]["pid"])
    kit.wait_until(lambda: launcher.describe("tm-1.1").get("state") == "running")
    assert launcher.describe("tm-1.1")["launched_as"] == "tm-1"
    assert launcher.describe("tm-1")["state"] == "killed"
    assert "was killed (SIGKILL)" in launcher.failure("tm-1")
    assert launcher.failure("tm-1.1") is None and launcher.failure("tm-2") is None
    jobmanager.stop_taskmanagers()
    launcher.stop(timeout=20)
    _assert_nothing_left(spark, launcher)
    assert launcher.last_job_failure is None


def test_stop_cancels_the_job_group_when_taskmanagers_ignore_the_protocol(spark, jobmanager):
    launcher = _launcher(spark, mode="ignore_stop")
    launcher.launch(["tm-x", "tm-y"], 1, jobmanager.address, jobmanager.secret, {})
    pids = [r["pid"] for r in jobmanager.wait_for("tm-x", "tm-y").values()]
    launcher.stop(timeout=0.5)
    assert not any(pid_alive(pid) for pid in pids)
    _assert_nothing_left(spark, launcher)
    assert launcher.last_job_failure is None  # a cancelled job is no failure
    # the cancelled hosts could not remove their own directories: the launcher did
    host_dirs = glob.glob(os.path.join(tempfile.gettempdir(), f"streamkernel-{launcher._cluster}-*"))
    assert host_dirs == []


def test_too_few_spark_task_slots_fail_clearly_before_launching(spark, jobmanager):
    launcher = _launcher(spark)
    with pytest.raises(SparkTaskSlotsError, match=r"cannot host 3 more TaskManagers.*2 task slots.*local\[3,4\]"):
        launcher.launch(["a", "b", "c"], 1, jobmanager.address, jobmanager.secret, {})
    assert spark.sparkContext.statusTracker().getActiveJobsIds() == []
    launcher.launch(["a", "b"], 1, jobmanager.address, jobmanager.secret, {})
    jobmanager.wait_for("a", "b")
    with pytest.raises(SparkTaskSlotsError, match=r"2 taken by running tasks"):
        launcher.launch(["c"], 1, jobmanager.address, jobmanager.secret, {})
    with pytest.raises(Exception, match="already launched"):
        launcher.launch(["a"], 1, jobmanager.address, jobmanager.secret, {})
    jobmanager.stop_taskmanagers()
    launcher.stop(timeout=20)
    _assert_nothing_left(spark, launcher)


def test_a_host_failing_every_attempt_ends_the_job_with_a_clear_error(spark, jobmanager):
    launcher = _launcher(spark, mode="raise")
    launcher.launch(["doomed"], 1, jobmanager.address, jobmanager.secret, {})
    failure = kit.wait_until(lambda: launcher.last_job_failure, timeout=60)
    assert isinstance(failure, SparkHostJobError)
    message = str(failure)
    assert "doomed" in message and "each of the 4 tries" in message and "fails on purpose" in message
    assert launcher.failure("doomed") == str(failure)
    launcher.stop(timeout=5)
    _assert_nothing_left(spark, launcher)


def test_the_secret_is_not_in_sparks_configuration_or_job_properties(spark, jobmanager):
    launcher = _launcher(spark)
    launcher.launch(["tm-s"], 1, jobmanager.address, jobmanager.secret, {})
    jobmanager.wait_for("tm-s")
    context = spark.sparkContext
    shown = " ".join(f"{k}={v}" for k, v in context.getConf().getAll())
    job = context.statusTracker().getJobIdsForGroup(launcher.job_group)[0]
    shown += " " + str(context._jsc.sc().statusStore().job(job).description().get())
    shown += " " + " ".join(f"{k}={v}" for k, v in os.environ.items())
    assert jobmanager.secret.hex() not in shown and str(jobmanager.secret) not in shown
    jobmanager.stop_taskmanagers()
    launcher.stop(timeout=20)
