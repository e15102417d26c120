"""What the application-mode tests share (test_spark_application.py and
test_spark_application_standalone.py): the job script, its expected output, the lines the driver and
the client print, and :class:`Run`, where one application's files go. Not a test module."""

from __future__ import annotations

import collections
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

from streamkernel.runtime.taskmanager.spark_stop import pid_alive
from streamkernel.testing import wait_until

HERE = pathlib.Path(__file__).resolve().parent
JOB = HERE / "application_job.py"
ROOT = HERE.parents[1]


def load(name):
    """The helper module ``tests/spark/<name>.py`` (this directory is not a package nor on sys.path)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXPECTED = sorted(f"{word} {count}" for word, count in collections.Counter(load("application_job").WORDS).items())
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


def driver(output: str) -> tuple[int, str]:
    found = DRIVER.search(output)
    assert found, f"the driver did not announce its cluster; output:\n{output[-3000:]}"
    return int(found.group(1)), found.group(2)
