"""Application mode on a Spark standalone cluster: ``streamkernel run --target spark-application
--master spark://... --detached job.py``, stopped with SIGTERM to its driver; afterwards nothing is
left: the driver's pid, spark-submit's, the TaskManager's Python workers in the Worker's executor,
whatever the driver started, the cluster's files, and the Spark application (the master removes it).
The other application-mode tests are in test_spark_application.py (see there).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import signal
import subprocess
import urllib.request

import pytest

pytest.importorskip("pyspark")

from streamkernel.runtime.taskmanager.spark_stop import pid_alive  # noqa: E402
from streamkernel.testing import wait_until  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def _load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


standalone_cluster = _load("standalone_cluster")
kit = _load("spark_test_kit")
app = _load("application_kit")  # the job, its expected output, Run: shared with test_spark_application.py
EXPECTED, LAUNCHED, Run = app.EXPECTED, app.LAUNCHED, app.Run


@pytest.fixture(scope="module")
def standalone():
    cluster = standalone_cluster.StandaloneCluster(cores=2).start()
    yield cluster
    jvms = cluster.pids()
    cluster.stop()
    assert not any(pid_alive(pid) for pid in jvms)


def _descendants(pid: int) -> list[int]:
    tree = kit._children()
    found, todo = [], list(tree.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(tree.get(child, []))
    return found


def _job_states(rest_url: str) -> list[str]:
    with urllib.request.urlopen(f"{rest_url}/jobs/overview", timeout=10) as response:
        return [job["state"] for job in json.load(response)["jobs"]]


def _applications_removed(cluster) -> list[str]:
    return re.findall(r"Removing app (app-\S+)", cluster.log("master"))


STANDALONE_OPTIONS = ("-D", "spark.driver.host=127.0.0.1", "-D", "spark.driver.bindAddress=127.0.0.1",
                      "-D", "spark.executor.memory=1g")


def _launched(result: subprocess.CompletedProcess, log: pathlib.Path) -> tuple[int, int, str, str]:
    """The driver's and spark-submit's pids and the REST URL a --detached run printed, and the Spark application."""
    assert result.returncode == 0, result.stdout + result.stderr
    launched = LAUNCHED.search(result.stdout)
    assert launched, result.stdout
    driver = int(launched.group(1))
    assert f"output in {log}" in result.stdout and f"stop it with: kill {driver}" in result.stdout
    application = re.search(r"Spark application (app-\S+) on spark://", log.read_text())
    assert application, log.read_text()[-3000:]
    return driver, int(launched.group(2)), launched.group(3), application.group(1)


@pytest.mark.spark
@pytest.mark.spark_standalone
def test_detached_on_a_standalone_master_runs_and_sigterm_stops_the_cluster_then_the_application(
        standalone, tmp_path):
    run = Run(tmp_path)
    log = tmp_path / "application.log"
    result = run.run("--master", standalone.master_url, "-p", "2", "--detached", "--log", str(log),
                     *STANDALONE_OPTIONS, mode="forever", timeout=180)  # the word count, then an unbounded job
    driver, submit, rest_url, application = _launched(result, log)
    wait_until(lambda: sorted(_job_states(rest_url)) == ["FINISHED", "RUNNING"], timeout=90,
               message="the word count to finish and the unbounded job to run (the driver's REST API)")
    assert run.lines() == EXPECTED
    assert "word count done, parallelism 2" in log.read_text()
    workers = kit.python_workers(standalone._processes[1].pid)  # the TaskManager's, in the Worker's executor
    assert workers and pid_alive(submit)
    helpers = _descendants(driver)  # whatever the driver started (e.g. the REST front process)
    os.kill(driver, signal.SIGTERM)
    run.assert_nothing_left(driver, submit, *workers, *helpers)
    wait_until(lambda: application in _applications_removed(standalone), timeout=30,
               message=f"the standalone master to remove application {application}")
