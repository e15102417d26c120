"""A Spark standalone cluster on 127.0.0.1 for tests: one Master and one Worker JVM.

pip's pyspark ships ``bin/spark-class`` but not the ``sbin/start-*`` scripts, so the
daemons are started directly (FIELD-NOTES.md)::

    spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 --port P
    spark-class org.apache.spark.deploy.worker.Worker spark://127.0.0.1:P --host 127.0.0.1 --cores C ...

Each runs in its own process group (``spark-class`` execs the JVM, and the Worker's
executor JVMs are its children), so :meth:`StandaloneCluster.stop` ends everything with one
signal per group and waits for it. Not a test module: the test files import it by path.

>>> with StandaloneCluster(cores=2) as cluster:          # doctest: +SKIP
...     spark = SparkSession.builder.master(cluster.master_url).getOrCreate()
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Optional

__all__ = ["StandaloneCluster", "spark_home"]


def spark_home() -> str:
    """The directory of the installed pyspark package (it holds ``bin/spark-class`` and ``jars/``)."""
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class StandaloneCluster:
    """A Spark standalone Master and one Worker with ``cores`` cores, on 127.0.0.1.

    ``start()`` returns once the Worker registered with the Master (or raises with the end
    of their logs after ``timeout`` seconds); ``stop()`` ends both JVMs and the Worker's
    executors. Python workers run ``sys.executable`` (``PYSPARK_PYTHON``).
    """

    def __init__(self, cores: int = 2, memory: str = "2g", timeout: float = 90.0) -> None:
        self.cores = cores
        self.memory = memory
        self.timeout = timeout
        self.port = _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.directory = tempfile.mkdtemp(prefix="streamkernel-spark-standalone-")
        self._processes: list[subprocess.Popen] = []
        self.startup_seconds: Optional[float] = None

    def _spawn(self, name: str, *args: str) -> subprocess.Popen:
        env = dict(os.environ)
        env.update({
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_HOME": spark_home(),
            "SPARK_LOG_DIR": self.directory,
            "SPARK_WORKER_DIR": os.path.join(self.directory, "work"),
        })
        log = open(os.path.join(self.directory, f"{name}.log"), "wb")
        try:
            process = subprocess.Popen([os.path.join(spark_home(), "bin", "spark-class"), *args],
                                       stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=env, start_new_session=True)
        finally:
            log.close()
        self._processes.append(process)
        return process

    def log(self, name: str) -> str:
        """The output of ``master`` or ``worker`` so far."""
        try:
            with open(os.path.join(self.directory, f"{name}.log"), encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return ""

    def _wait_for(self, name: str, text: str, deadline: float) -> None:
        while text not in self.log(name):
            if time.monotonic() > deadline or any(p.poll() is not None for p in self._processes):
                tail = self.log(name)[-3000:]  # read before stop() removes the directory
                self.stop()
                raise RuntimeError(f"Spark standalone {name} did not log {text!r} within {self.timeout:.0f} s; "
                                   f"its log ends with:\n{tail}")
            time.sleep(0.2)

    def start(self) -> "StandaloneCluster":
        """Start the Master, then the Worker; return once the Worker registered."""
        started = time.monotonic()
        deadline = started + self.timeout
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(_free_port()))
        self._wait_for("master", "I have been elected leader", deadline)
        self._spawn("worker", "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                    "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(_free_port()),
                    "--work-dir", os.path.join(self.directory, "work"))
        self._wait_for("worker", "Successfully registered with master", deadline)
        self.startup_seconds = time.monotonic() - started
        return self

    def pids(self) -> list[int]:
        """The pids of the Master's and Worker's JVMs still running."""
        return [p.pid for p in self._processes if p.poll() is None]

    def stop(self, timeout: float = 20.0) -> None:
        """End the Worker (which ends its executors), then the Master; SIGKILL after ``timeout`` seconds.

        Only the daemons get SIGTERM: the Worker's shutdown kills its executor JVMs and
        reaps them. Whatever of a process group is left afterwards gets SIGKILL.
        """
        deadline = time.monotonic() + timeout
        for process in reversed(self._processes):
            if process.poll() is None:
                process.terminate()
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._end_group(process, signal.SIGKILL)
                process.wait(5)
            self._end_group(process, signal.SIGKILL)  # executors that outlived their Worker
        self._processes.clear()
        shutil.rmtree(self.directory, ignore_errors=True)  # logs and the Worker's work dir

    @staticmethod
    def _end_group(process: subprocess.Popen, sig: int) -> None:
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
