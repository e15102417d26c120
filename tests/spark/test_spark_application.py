"""Application mode on Spark: ``streamkernel run --target spark-application [--master M] job.py``.

Each run is the real command in a subprocess: pyspark's ``bin/spark-submit`` starts a Spark
driver that runs the JobManager and the script, the TaskManagers run as Spark tasks. The
script (application_job.py) is unchanged PyFlink-style code writing to a FileSink; the
expected lines are computed here from its data. Nothing may be left afterwards: the driver's
pid, spark-submit's, the cluster's secret file ($STREAMKERNEL_HOME), its working directory
(io.tmp.dirs), Spark's scratch directories (spark.local.dir), and on the standalone cluster the
Spark application itself. Two tests use a stand-in for spark-submit (a Python script) to check
the client's side alone in about a second: SIGTERM forwarding and a spark-submit that fails early.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import threading
import urllib.request

import pytest

pytest.importorskip("pyspark")

from streamkernel import run_command  # noqa: E402
from streamkernel.runtime.deployment import spark_application  # noqa: E402
from streamkernel.runtime.taskmanager.spark_stop import pid_alive  # noqa: E402
from streamkernel.testing import wait_until  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
JOB = HERE / "application_job.py"
ROOT = HERE.parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


standalone_cluster = _load("standalone_cluster")
kit = _load("spark_test_kit")
EXPECTED = sorted(f"{word} {count}" for word, count in collections.Counter(_load("application_job").WORDS).items())
DRIVER = re.compile(r"streamkernel application driver: pid (\d+), JobManager REST API at (http://[^\s,]+)")
LAUNCHED = re.compile(r"driver pid (\d+) \(spark-submit pid (\d+)\), JobManager REST API at (http://[^\s,]+)")


class Run:
    """Where one application's output, secrets and temporary files go (all under tmp_path)."""

    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.out = tmp_path / "out"
        self.home = tmp_path / "home"
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir()
        self.spark_local = tmp_path / "spark-local"  # Spark's scratch space (spark.local.dir)
        self.spark_local.mkdir()
        self.env = dict(os.environ, STREAMKERNEL_HOME=str(self.home), SPARK_LOCAL_IP="127.0.0.1",
                        PYSPARK_PYTHON=sys.executable,
                        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))

    def command(self, *options: str, mode: str = "count") -> list[str]:
        return [sys.executable, "-m", "streamkernel", "run", "--target", "spark-application", *options,
                "-D", "spark.ui.enabled=false", "-D", "rest.port=0", "-D", f"io.tmp.dirs={self.tmp}",
                "-D", f"spark.local.dir={self.spark_local}",
                str(JOB), str(self.out), mode]

    def run(self, *options: str, mode: str = "count", timeout: float = 240) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(*options, mode=mode), env=self.env, capture_output=True, text=True,
                              timeout=timeout, cwd=self.tmp.parent)

    def lines(self) -> list[str]:
        """Every line of every finished part file under the sink's directory (bucket sub-directories too)."""
        parts = [p for p in self.out.rglob("part-*") if p.is_file()]
        return sorted(line for p in parts for line in p.read_text().splitlines())

    def assert_nothing_left(self, *pids: int) -> None:
        wait_until(lambda: not any(pid_alive(pid) for pid in pids), timeout=60,
                   message=f"processes {list(pids)} (driver, spark-submit) to end")
        clusters = self.home / "clusters"
        assert not clusters.exists() or list(clusters.iterdir()) == [], "the cluster's secret file was left behind"
        assert list(self.tmp.iterdir()) == [], "the cluster's working directory was left behind"
        assert list(self.spark_local.iterdir()) == [], "Spark's scratch directories were left behind"


def _driver(output: str) -> tuple[int, str]:
    found = DRIVER.search(output)
    assert found, f"the driver did not announce its cluster; output:\n{output[-3000:]}"
    return int(found.group(1)), found.group(2)


def test_bad_input_is_one_line_before_spark_submit_starts(tmp_path, monkeypatch, capsys):
    def no_spark_submit(*args, **kwargs):
        raise AssertionError(f"spark-submit was started: {args}")

    monkeypatch.setattr(spark_application.subprocess, "Popen", no_spark_submit)
    script = tmp_path / "job.py"
    script.write_text("print('never runs')\n")
    cases = {
        ("--target", "yarn-application", str(script)):
            "streamkernel run: unknown --target 'yarn-application' (known: local, spark-application)",
        ("--master", "local[2]", str(script)):
            "streamkernel run: --master local[2] needs --target spark-application (the Spark master to submit to)",
        ("--target", "spark-application", str(tmp_path / "missing.py")):
            f"streamkernel run: no such script: {tmp_path / 'missing.py'}",
        ("--target", "spark-application", "-m", "127.0.0.1:1", str(script)):
            "streamkernel run: --target spark-application starts a cluster for the application; -m submits to a "
            "running one (use one or the other)",
        ("--target", "spark-application", "--backend", "process", str(script)):
            "streamkernel run: --target spark-application runs TaskManagers as Spark tasks; --backend process "
            "does not fit",
        ("--target", "spark-application", "-D", "novalue", str(script)):
            "streamkernel run: -D 'novalue': expected KEY=VALUE",
        ("--target", "spark-application", "--master", "local[1]", "--taskmanagers", "2", str(script)): None,
    }
    for argv, message in cases.items():
        assert run_command.main(list(argv)) == 2, argv
        captured = capsys.readouterr()
        if message is None:  # the backend's own message (limits.py)
            assert captured.out == "" and captured.err.count("\n") == 1 and "local[1]" in captured.err, captured.err
        else:
            assert (captured.out, captured.err) == ("", message + "\n"), argv


def test_spark_submit_command_line(tmp_path):
    application = spark_application.SparkApplication(
        str(JOB), ["a", "--b"], {"parallelism.default": "2", "spark.executor.memory": "1g",
                                  "spark.master": "ignored: --master wins"}, taskmanagers=2, slots=3,
        master="spark://127.0.0.1:7077")
    command = application.command()
    assert command[:6] == [application.spark_submit, "--master", "spark://127.0.0.1:7077", "--deploy-mode",
                           "client", "--conf"]
    assert application.spark_submit.endswith(os.path.join("pyspark", "bin", "spark-submit"))
    confs = dict(c.split("=", 1) for c in command[5:command.index(spark_application._driver_program())][1::2])
    assert confs["spark.executor.memory"] == "1g" and "spark.master" not in confs
    assert confs["spark.app.name"] == "streamkernel: application_job.py"
    assert "spark.driver.host" not in confs  # a cluster master: the user's network, not loopback
    driver_args = command[command.index(spark_application._driver_program()) + 1:]
    assert driver_args[:4] == ["--taskmanagers", "2", "--slots", "3"]
    assert driver_args[-4:] == [str(JOB), "--", "a", "--b"]
    local = spark_application.SparkApplication(str(JOB), [], {}, taskmanagers=2)
    assert local.master.startswith("local[") and local.spark_conf()["spark.driver.host"] == "127.0.0.1"


FAKE_DRIVER = """
import os, signal, sys
def stop(*_):
    with open(os.environ["FAKE_STOPPED"], "w") as out:
        out.write("stopped by SIGTERM")
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
print(f"streamkernel application driver: pid {os.getpid()}, JobManager REST API at http://127.0.0.1:1, "
      f"Spark application fake on local[1]", file=sys.stderr, flush=True)
while True:
    signal.pause()
"""


def _fake_spark_submit(tmp_path: pathlib.Path) -> str:
    """A stand-in for bin/spark-submit: runs FAKE_DRIVER as its child and exits with its status (as
    spark-submit's PythonRunner does), or with ``FAKE_MODE=fail-early`` fails before any driver starts."""
    fake = tmp_path / "spark-submit"
    fake.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""
        import os, subprocess, sys
        if os.environ.get("FAKE_MODE") == "fail-early":
            print("Exception in thread main java.lang.IllegalArgumentException: bad master URL", flush=True)
            sys.exit(1)
        sys.exit(subprocess.call([sys.executable, "-c", {FAKE_DRIVER!r}], stderr=subprocess.STDOUT))
    """))
    fake.chmod(0o755)
    return str(fake)


def test_sigterm_to_the_attached_client_stops_the_driver_it_announced(tmp_path):
    stopped = tmp_path / "stopped"
    client_code = textwrap.dedent(f"""
        import sys
        from streamkernel.runtime.deployment.spark_application import SparkApplication, run_attached
        application = SparkApplication({str(JOB)!r}, [], {{}}, master="local[1]",
                                       spark_submit={_fake_spark_submit(tmp_path)!r})
        sys.exit(run_attached(application))
    """)
    client = subprocess.Popen([sys.executable, "-c", client_code], stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, FAKE_STOPPED=str(stopped), PYTHONPATH=str(ROOT)))
    announced: list[str] = []
    reader = threading.Thread(target=lambda: announced.extend(iter(client.stderr.readline, "")), daemon=True)
    reader.start()
    wait_until(lambda: any(DRIVER.search(line) for line in announced), timeout=60,
               message="the client to relay the driver's announcement")
    driver = int(next(DRIVER.search(line) for line in announced if DRIVER.search(line)).group(1))
    client.send_signal(signal.SIGTERM)
    assert client.wait(60) == 143
    assert stopped.read_text() == "stopped by SIGTERM"  # the driver itself got SIGTERM, so it stops its cluster
    wait_until(lambda: not pid_alive(driver), timeout=30, message=f"the driver {driver} to end")


def test_detached_reports_a_spark_submit_that_failed_before_the_driver_started(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_MODE", "fail-early")
    application = spark_application.SparkApplication(str(JOB), [], {}, master="local[1]",
                                                     spark_submit=_fake_spark_submit(tmp_path))
    log = tmp_path / "application.log"
    assert spark_application.run_detached(application, str(log)) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("streamkernel run: application application_job.py on local[1] failed with exit code 1: "
                            f"java.lang.IllegalArgumentException: bad master URL (see {log})\n")


@pytest.mark.spark
def test_local_master_runs_the_script_in_the_driver_and_a_failing_job_exits_non_zero_naming_the_cause(tmp_path):
    run = Run(tmp_path)
    result = run.run("--master", "local[2]", "-p", "2", mode="fail")  # the word count, then a job that fails
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert run.lines() == EXPECTED
    assert "word count done, parallelism 2" in result.stdout  # the script's own print, streamed through
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("streamkernel run: application application_job.py on local[2] failed with exit code 1: ")
    assert "ValueError: the application refuses w3" in last
    pid, rest_url = _driver(result.stderr)
    assert rest_url.startswith("http://127.0.0.1:")
    run.assert_nothing_left(pid)


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
