"""Application mode on Spark, the client's side: ``streamkernel run --target spark-application job.py``.

Flink's application mode (``flink run-application -t yarn-application``) runs the program's
``main()`` on the cluster, in a JobManager started for that application alone: the cluster
lives and dies with it. Here Spark is the resource provider: the command hands the script to
Spark's own ``spark-submit`` (``<pyspark>/bin/spark-submit``, from the installed pyspark
package; Java 17), whose driver runs :mod:`.spark_application_driver`: it starts the
JobManager (the in-process MiniCluster, backend ``spark``, on the driver's SparkContext) with
its TaskManagers as Spark tasks, prints the REST API's URL, runs the script as ``__main__``
(every ``execute()`` goes to that cluster), then stops the cluster and the Spark application.

* **attached** (the default): spark-submit runs as a child; its output streams through, and the
  command exits with the driver's status (non-zero when the script or a job failed, with a
  last line naming the cause). SIGTERM or Ctrl-C stop the driver (SIGTERM: its cluster stops
  first, then the Spark application), then the command exits with 143 / 130.
* **detached** (``--detached``): Spark supports only the client deploy mode for Python
  applications on a standalone master ("Cluster deploy mode is currently not supported for
  python applications on standalone clusters"), so the driver runs on this machine, in a
  background process of its own session, its output in a log file. The command returns once
  the driver's cluster runs, printing the driver's pid, the REST API, the log file and how to
  stop it (``kill PID``: the cluster stops, then the Spark application and spark-submit end).

A driver whose spark-submit JVM disappears stops itself (the JVM does not end its Python
child), so nothing is left behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Callable, Optional

from streamkernel.common.options import BackendOptions
from streamkernel.errors import StreamKernelError
from streamkernel.runtime.taskmanager.spark_resources import default_local_master, is_local_master

__all__ = ["SPARK_APPLICATION_TARGET", "TARGETS", "DRIVER_MARKER", "SparkApplicationError", "SparkApplication",
           "spark_submit_executable", "run_attached", "run_detached"]

#: ``--target`` of application mode on Spark (Flink's ``yarn-application`` / ``kubernetes-application``).
SPARK_APPLICATION_TARGET = "spark-application"
#: The targets ``streamkernel run`` knows: ``local`` (a cluster in the client's process, the default).
TARGETS = ("local", SPARK_APPLICATION_TARGET)
#: The start of the line the driver prints once its cluster runs (pid, REST API, Spark application).
DRIVER_MARKER = "streamkernel application driver:"
#: How long ``--detached`` waits for the driver's cluster to run before giving up (and stopping it).
DETACHED_STARTUP_TIMEOUT_S = 300.0
#: How long a stopped driver gets to stop its cluster and Spark application before it is killed.
STOP_TIMEOUT_S = 60.0

_DRIVER_LINE = re.compile(re.escape(DRIVER_MARKER) + r" pid (\d+)(?:, JobManager REST API at ([^\s,]+))?")
_CAUSE = re.compile(r"(?:^|\s)((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)\b:.*)$")


class SparkApplicationError(StreamKernelError):
    """Application mode cannot start: no pyspark, or a bad option; the message says what and where."""


def spark_submit_executable() -> str:
    """``<pyspark>/bin/spark-submit`` of the installed pyspark package."""
    try:
        import pyspark
    except ImportError:
        raise SparkApplicationError("--target spark-application needs pyspark (pip install 'streamkernel[spark]'): "
                                    "its bin/spark-submit starts the application") from None
    path = os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "bin", "spark-submit")
    if not os.access(path, os.X_OK):
        raise SparkApplicationError(f"--target spark-application: {path} is missing or not executable")
    return path


def _driver_program() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark_application_driver.py")


@dataclass
class SparkApplication:
    """One application: the script, its arguments, the master, the configuration and the cluster's shape.

    ``configuration`` holds the context configuration of the script's environments; its
    ``spark.*`` keys also go to spark-submit (``--conf``), ``spark.master`` excepted (``master``).
    """

    script: str
    arguments: list[str]
    configuration: dict[str, str]
    taskmanagers: int = 1
    slots: int = 1
    master: Optional[str] = None
    spark_submit: str = field(default_factory=spark_submit_executable)

    def __post_init__(self) -> None:
        self.script = os.path.abspath(self.script)
        if self.master is None:
            self.master = BackendOptions.SPARK_MASTER.get(self.configuration) or default_local_master(
                self.taskmanagers, BackendOptions.SPARK_TASK_MAX_FAILURES.get(self.configuration), os.cpu_count() or 1)

    def spark_conf(self) -> dict[str, str]:
        """What spark-submit gets as ``--conf``: streamkernel's defaults, then the configuration's ``spark.*`` keys."""
        assert self.master is not None
        conf = {"spark.app.name": f"streamkernel: {os.path.basename(self.script)}",
                "spark.ui.showConsoleProgress": "false", "spark.python.worker.reuse": "false",
                "spark.log.level": "WARN", "spark.pyspark.driver.python": sys.executable}
        if is_local_master(self.master):
            conf.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                         "spark.pyspark.python": sys.executable})
        conf.update({k: v for k, v in self.configuration.items() if k.startswith("spark.") and k != "spark.master"})
        return conf

    def command(self) -> list[str]:
        """The spark-submit command line (client deploy mode: the driver runs here)."""
        assert self.master is not None
        command = [self.spark_submit, "--master", self.master, "--deploy-mode", "client"]
        for key, value in self.spark_conf().items():
            command += ["--conf", f"{key}={value}"]
        return command + [_driver_program(), "--taskmanagers", str(self.taskmanagers), "--slots", str(self.slots),
                          "--configuration", json.dumps(self.configuration), self.script, "--", *self.arguments]

    def environment(self) -> dict[str, str]:
        """spark-submit's environment: this one, with the driver's output unbuffered (it streams through)."""
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def describe(self) -> str:
        return f"{os.path.basename(self.script)} on {self.master}"


class _DriverWatch:
    """What the driver's output said so far: its pid, REST URL, and the last line naming an error."""

    def __init__(self) -> None:
        self.pid: Optional[int] = None
        self.rest_url: Optional[str] = None
        self.cause: Optional[str] = None
        self.started = threading.Event()

    def see(self, line: str) -> None:
        found = _DRIVER_LINE.search(line)
        if found:
            self.pid, self.rest_url = int(found.group(1)), found.group(2)
            self.started.set()
            return
        cause = _CAUSE.search(line.rstrip())
        if cause and "py4j" not in line.lower():
            self.cause = cause.group(1).strip()[:400]


def _relay(stream: IO[bytes], watch: _DriverWatch, write: Callable[[str, bool], None]) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace")
        watch.see(line)
        write(line, line.startswith(DRIVER_MARKER))
    stream.close()


def _write_through(line: str, to_stderr: bool) -> None:
    target = sys.stderr if to_stderr else sys.stdout
    target.write(line)
    target.flush()


def _signal(pid: int, sig: int, group: bool = False) -> None:
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(process: subprocess.Popen, watch: _DriverWatch, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM to the driver (it stops its cluster and Spark application; spark-submit follows), else to
    spark-submit's session; SIGKILL to whatever of that session is left after ``timeout`` seconds."""
    if watch.pid is not None:
        _signal(watch.pid, signal.SIGTERM)
    else:
        _signal(process.pid, signal.SIGTERM, group=True)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    _signal(process.pid, signal.SIGKILL, group=True)
    process.wait()


def _failure_line(application: SparkApplication, code: int, cause: Optional[str], where: str) -> str:
    reason = f": {cause}" if cause else ""
    return f"streamkernel run: application {application.describe()} failed with exit code {code}{reason} (see {where})"


def run_attached(application: SparkApplication) -> int:
    """Run the application through spark-submit and follow it; returns the driver's exit status."""
    from streamkernel.sigterm import exit_on_sigterm  # an entry point's helper: imported where it is used

    watch = _DriverWatch()
    restore = exit_on_sigterm()
    process = subprocess.Popen(application.command(), env=application.environment(), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, start_new_session=True)
    assert process.stdout is not None
    relay = threading.Thread(target=_relay, args=(process.stdout, watch, _write_through),
                             name="spark-submit output", daemon=True)
    relay.start()
    try:
        code = process.wait()
    except (SystemExit, KeyboardInterrupt) as stop:
        _stop(process, watch)
        relay.join(5.0)
        return 130 if isinstance(stop, KeyboardInterrupt) else 143
    finally:
        if restore is not None:
            restore()
    relay.join(5.0)
    if code != 0:
        print(_failure_line(application, code, watch.cause, "the output above"), file=sys.stderr)
    return code


def _read_log(log: str, offset: int, watch: _DriverWatch, whole: bool) -> int:
    """Show ``watch`` the complete lines of ``log`` after ``offset`` (and an unfinished last one when
    ``whole``); returns the offset to read from next."""
    with open(log, "rb") as handle:
        handle.seek(offset)
        text = handle.read()
    end = len(text) if whole else text.rfind(b"\n") + 1
    for line in text[:end].decode("utf-8", errors="replace").splitlines():
        watch.see(line)
    return offset + end


def run_detached(application: SparkApplication, log: str, timeout: float = DETACHED_STARTUP_TIMEOUT_S) -> int:
    """Start spark-submit in a session of its own, its output in ``log``; return once the driver's cluster runs."""
    log = os.path.abspath(log)
    with open(log, "ab") as out:
        start = out.tell()
        process = subprocess.Popen(application.command(), env=application.environment(), stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    watch = _DriverWatch()
    deadline = time.monotonic() + timeout
    seen = start
    while True:
        code = process.poll()  # before reading: all it wrote before it ended is in the log then
        seen = _read_log(log, seen, watch, whole=code is not None)
        if watch.started.is_set():
            break
        if code is not None:
            print(_failure_line(application, code, watch.cause, log), file=sys.stderr)
            return code or 1
        if time.monotonic() > deadline:
            _stop(process, watch)
            print(f"streamkernel run: the driver of {application.describe()} did not start its cluster within "
                  f"{timeout:.0f} s; stopped it (output in {log})", file=sys.stderr)
            return 1
        time.sleep(0.2)
    print(f"Application {application.describe()} runs in the background: driver pid {watch.pid} (spark-submit pid "
          f"{process.pid}), JobManager REST API at {watch.rest_url}, output in {log} (stop it with: kill {watch.pid})")
    return 0
