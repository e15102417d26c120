"""Application mode on Spark: ``streamkernel run --target spark-application [--master M] job.py``.

Each run is the real command in a subprocess: pyspark's ``bin/spark-submit`` starts a Spark
driver that runs the JobManager and the script, the TaskManagers run as Spark tasks. The
script (application_job.py) is unchanged PyFlink-style code writing to a FileSink; the
expected lines are computed here from its data. Nothing may be left afterwards: the driver's
pid, spark-submit's, the cluster's secret file ($STREAMKERNEL_HOME), its working directory
(io.tmp.dirs), Spark's scratch directories (spark.local.dir), and on a standalone cluster the
Spark application itself (test_spark_application_standalone.py: a file of its own, so that its
Master and Worker start on one pytest-xdist worker while this file runs on the other). Two tests
use a stand-in for spark-submit (a Python script) to check the client's side alone in about a
second: SIGTERM forwarding and a spark-submit that fails early.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

pytest.importorskip("pyspark")

from streamkernel import run_command  # noqa: E402
from streamkernel.runtime.deployment import spark_application  # noqa: E402
from streamkernel.runtime.taskmanager.spark_stop import pid_alive  # noqa: E402
from streamkernel.testing import wait_until  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def _load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


app = _load("application_kit")  # the job, its expected output, Run: shared with test_spark_application_standalone.py
JOB, ROOT, EXPECTED, DRIVER, Run, _driver = app.JOB, app.ROOT, app.EXPECTED, app.DRIVER, app.Run, app.driver


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
