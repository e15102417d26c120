"""The spark backend's pure parts, without a JVM: task slots, master URLs, ids, error messages."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from streamkernel.runtime.taskmanager.spark_host import machine_identity, reachable_address, spark_taskmanager_id
from streamkernel.runtime.taskmanager.spark_resources import (SparkTaskSlotsError, check_task_slots,
                                                              default_local_master, is_local_master,
                                                              local_master_threads, spark_task_slots)
from streamkernel.runtime.taskmanager.spark_session import (explain_job_failure, session_defaults, task_tries,
                                                            taskmanager_python)
from streamkernel.runtime.taskmanager.spark_stop import pid_alive


@pytest.mark.parametrize("master, threads", [
    ("local", 1), ("local[3]", 3), ("local[2,4]", 2), ("local[ 2 , 4 ]", 2), ("local[*]", 8), ("local[*,3]", 8),
    ("spark://127.0.0.1:7077", None), ("yarn", None), ("k8s://https://h:6443", None), ("local-cluster[2,1,1024]", None),
])
def test_local_master_threads(master, threads):
    assert local_master_threads(master, cpu_count=8) == threads


def test_local_masters_are_recognised():
    assert is_local_master("local[2,4]") and is_local_master("local-cluster[2,1,1024]") and is_local_master("local")
    assert not is_local_master("spark://127.0.0.1:7077") and not is_local_master("yarn")


def test_default_local_master_retries_and_keeps_spare_slots():
    assert default_local_master(2, 8, 2) == "local[4,8]"


def test_task_slots_count_executor_cores_over_task_cpus():
    slots = spark_task_slots("spark://h:7077", [4, 4, 3], task_cpus=2, running_tasks=1)
    assert slots.total == 2 + 2 + 1 and slots.free == 4
    assert "executors with 4 + 4 + 3 cores / spark.task.cpus=2" in slots.describe()
    assert spark_task_slots("local[2]", [2], 1, running_tasks=5).free == 0


def test_enough_slots_pass_and_a_shortage_names_need_offer_and_remedy():
    check_task_slots(2, spark_task_slots("local[2,4]", [2], 1))
    with pytest.raises(SparkTaskSlotsError) as local:
        check_task_slots(3, spark_task_slots("local[2,4]", [2], 1))
    message = str(local.value)
    assert "cannot host 3 more TaskManagers" in message and "2 task slots (1 executor x 2 cores" in message
    assert "local[3,4]" in message and "wait for slots silently" in message
    with pytest.raises(SparkTaskSlotsError, match=r"only 0 are free.*spark\.executor\.instances"):
        check_task_slots(1, spark_task_slots("spark://h:7077", [], 1))


def test_a_relaunched_attempt_is_a_new_taskmanager():
    assert spark_taskmanager_id("taskmanager-1", 0) == "taskmanager-1"
    assert spark_taskmanager_id("taskmanager-1", 1) == "taskmanager-1.1"


class _FakeConf:
    def __init__(self, values):
        self._values = values

    def get(self, key, default=None):
        return self._values.get(key, default)


class _FakeContext:
    def __init__(self, master, conf=None, python="python3"):
        self.master = master
        self.pythonExec = python
        self._conf = _FakeConf(conf or {})

    def getConf(self):
        return self._conf


def test_tries_per_task_follow_the_master_or_spark_task_max_failures():
    assert task_tries(_FakeContext("local[2,6]")) == 6
    assert task_tries(_FakeContext("local[2]")) == 1
    assert task_tries(_FakeContext("spark://h:7077")) == 4
    assert task_tries(_FakeContext("yarn", {"spark.task.maxFailures": "9"})) == 9


def test_the_taskmanagers_python(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert taskmanager_python(_FakeContext("local[2,4]")) == sys.executable
    assert taskmanager_python(_FakeContext("spark://h:7077")) == "python3"
    assert taskmanager_python(_FakeContext("spark://h:7077", {"spark.pyspark.python": "/opt/py"})) == "/opt/py"
    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3.11")
    assert taskmanager_python(_FakeContext("local[2]", python="/usr/bin/python3.11")) == "/usr/bin/python3.11"


def test_sessions_we_create_are_quiet_loopback_and_do_not_reuse_workers():
    local = session_defaults("local[4,8]")
    assert local["spark.ui.showConsoleProgress"] == "false" and local["spark.python.worker.reuse"] == "false"
    assert local["spark.driver.host"] == local["spark.driver.bindAddress"] == "127.0.0.1"
    assert local["spark.pyspark.python"] == sys.executable
    assert "spark.driver.host" not in session_defaults("spark://h:7077")


def test_job_failures_are_explained():
    missing = explain_job_failure(RuntimeError("Traceback ...\nModuleNotFoundError: No module named 'streamkernel'"),
                                  ["taskmanager-1"], "/usr/bin/python3", "spark://h:7077", 4)
    assert "cannot import what they need (ModuleNotFoundError: No module named 'streamkernel')" in str(missing)
    assert "spark.pyspark.python" in str(missing) and "/usr/bin/python3" in str(missing)

    class PythonException(Exception):
        pass

    exhausted = explain_job_failure(PythonException("Traceback (most recent call last):\n  File x\n"
                                                    "ValueError: broken TaskManager"),
                                    ["taskmanager-1", "taskmanager-2"], "python3", "local[4,8]", 8)
    text = str(exhausted)
    assert "taskmanager-1, taskmanager-2 (master local[4,8])" in text and "each of the 8 tries" in text
    assert "last error: ValueError: broken TaskManager" in text
    other = explain_job_failure(AttributeError("'NoneType' object has no attribute 'setCallSite'"), ["t"], "p", "m", 4)
    assert "AttributeError" in str(other)


def test_machine_identity_and_pid_liveness():
    assert machine_identity() == machine_identity() and machine_identity()[0]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert pid_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not pid_alive(child.pid)
    assert pid_alive(os.getpid())


def test_a_taskmanager_listens_where_the_jobmanager_is_reached_from():
    assert reachable_address(("127.0.0.1", 6123)) == "127.0.0.1"
