"""Nothing of a cluster remains after it stopped or after its process exited normally.

* A SIGKILLed ``process`` TaskManager (no ``finally`` runs in it) leaves no working
  directory (RocksDB files) behind: the cluster owns its TaskManagers' directories and
  removes the whole tree when it stops, the replacement's included.
* A script that exits right after ``execute_and_collect()`` / ``env.execute()`` (or raises)
  leaves nothing in its temp directory: the transient cluster's stop completes before the
  interpreter exits, and so does the stop of a cluster the script started and never stopped.

The scripts run in a subprocess whose ``TMPDIR`` is a fresh directory, and the cluster test
points this process's temp directory at a fresh one, so other tests (and other users of
the machine's /tmp) cannot disturb the assertions.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import textwrap
from typing import Any

import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import FileGate, ScriptedSource, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process backend on Linux")

REPO = pathlib.Path(__file__).resolve().parents[2]




def leftovers(directory: pathlib.Path) -> list[str]:
    """Everything under ``directory`` (relative paths), sorted."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def to_pair(word: str) -> tuple:
    return word, 1


def first(pair: tuple) -> Any:
    return pair[0]


def add_counts(a: tuple, b: tuple) -> tuple:
    return a[0], a[1] + b[1]


def rocksdb_files(directory: pathlib.Path) -> list[pathlib.Path]:
    return [p for p in directory.rglob("CURRENT") if p.is_file()]


# ------------------------------------------------------------------ killed TaskManagers
def test_a_killed_process_taskmanager_leaves_no_directory_after_stop(tmp_path, monkeypatch) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    gates = tmp_path / "gates"
    gates.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # the TaskManager processes' temp directory
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # this process's
    gate = FileGate(gates, "hold")
    words = [f"w{i % 7}" for i in range(200)]
    cluster = MiniCluster(2, 1, backend="process",
                          configuration={"state.backend.type": "rocksdb"}).start(make_current=False)
    try:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration.from_dict({"state.backend.type": "rocksdb", "restart-strategy.type": "none"}))
        env.set_parallelism(2)
        (env.from_source(ScriptedSource(words + [gate]), WatermarkStrategy.no_watermarks(), "words")
            .map(to_pair).key_by(first).reduce(add_counts).print())
        client = cluster.submit(env.get_stream_graph("keyed on rocksdb"))
        wait_until(lambda: gate.reached, message="the source to hold at the gate")
        wait_until(lambda: len(rocksdb_files(temp)) == 2, message="a RocksDB database per keyed subtask")
        pids = dict(cluster.taskmanager_backend.launcher.pids())
        assert cluster.failures.kill_taskmanager("taskmanager-2") == "taskmanager-2"
        wait_until(lambda: "taskmanager-3" in cluster.taskmanager_backend.live_ids(),
                   message="the replacement TaskManager to register")
        assert pids  # the killed one ran, with its database
        client.cancel()
    finally:
        cluster.stop()
    assert leftovers(temp) == []


# ------------------------------------------------------------------ scripts that exit
JOB = """
from streamkernel.datastream import StreamExecutionEnvironment
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
stream = env.from_collection(list(range(100))).map(lambda x: (x % 3, x)).key_by(lambda t: t[0])
"""

SCRIPTS = {
    "execute_and_collect": JOB + "print(sorted(stream.reduce(lambda a, b: (a[0], a[1] + b[1])).execute_and_collect())[-1])",
    "execute": JOB + "stream.print()\nenv.execute('printed')",
    "process backend": JOB.replace("get_execution_environment()", "get_execution_environment("
                                   "__import__('streamkernel.common', fromlist=['Configuration']).Configuration"
                                   ".from_dict({'streamkernel.backend': 'process'}))")
                       + "print(len(list(stream.execute_and_collect())))",
    "raises after execute_and_collect": JOB + "it = stream.execute_and_collect()\nprint(next(it))\n"
                                              "raise SystemExit('script failed after collecting')",
    "partly read iterator": JOB + "print(next(iter(stream.execute_and_collect())))",
    "started cluster never stopped": "from streamkernel.runtime.minicluster.minicluster import MiniCluster\n"
                                     "MiniCluster(1, 2, backend='process').start()\n" + JOB
                                     + "print(len(list(stream.execute_and_collect())))",
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_script_that_exits_leaves_nothing_in_its_temp_directory(script: str, tmp_path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    env.pop("STREAMKERNEL_BACKEND", None)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPTS[script])], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=240, check=False)
    expected_code = 1 if script == "raises after execute_and_collect" else 0
    assert done.returncode == expected_code, done.stderr
    assert leftovers(temp) == [], f"{script}: the cluster left files behind; stderr:\n{done.stderr}"


# ------------------------------------------------------- transient clusters in this process
@pytest.mark.parametrize("how", ["read to the end", "limit", "closed early"])
def test_the_transient_cluster_is_gone_when_collecting_returns(how: str, tmp_path) -> None:
    from streamkernel.runtime.minicluster.minicluster import current_cluster
    from streamkernel.runtime.minicluster.exit import running_clusters

    assert current_cluster() is None, "this test needs a transient cluster"
    before = running_clusters()
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration.from_dict({"io.tmp.dirs": str(tmp_path)}))
    env.set_parallelism(2)
    stream = env.from_collection(list(range(50))).map(lambda x: (x % 3, x)).key_by(first).reduce(add_counts)
    if how == "read to the end":
        assert len(list(stream.execute_and_collect())) == 50
    elif how == "limit":
        assert len(stream.execute_and_collect(limit=3)) == 3
    else:
        with stream.execute_and_collect() as records:
            next(records)
    assert running_clusters() == before
    assert leftovers(tmp_path) == []


# ------------------------------------------------------------- spark hosts on other machines
def test_a_spark_host_on_another_machine_removes_what_a_killed_attempt_left(tmp_path) -> None:
    pytest.importorskip("pyspark")  # run_host asks pyspark's TaskContext for its attempt
    from streamkernel.runtime.taskmanager.spark_host import run_host
    from streamkernel.runtime.taskmanager.worker import WORKING_DIR_KEY

    killed = tmp_path / "streamkernel-c1-taskmanager-1" / "taskmanager-1"  # an attempt SIGKILLed mid-job
    (killed / "job" / "db").mkdir(parents=True)
    (killed / "job" / "db" / "CURRENT").write_text("MANIFEST-000001\n")
    seen: dict = {}

    def entry(jobmanager_address, secret, taskmanager_id, slots, configuration):
        seen["base"] = configuration[WORKING_DIR_KEY]
        seen["left by the killed attempt"] = leftovers(tmp_path / "streamkernel-c1-taskmanager-1")
        pathlib.Path(seen["base"], taskmanager_id).mkdir()  # as run_taskmanager makes it

    spec = {"ids": ["taskmanager-1"], "slots": 1, "jobmanager_address": ("127.0.0.1", 9), "secret": b"s",
            "configuration": {"io.tmp.dirs": str(tmp_path)}, "launcher_address": None, "cluster": "c1",
            "worker_entry": entry}
    [(taskmanager_id, attempt, _, outcome)] = run_host(0, spec)
    assert (taskmanager_id, attempt, outcome) == ("taskmanager-1", 0, "finished")
    assert seen == {"base": str(tmp_path / "streamkernel-c1-taskmanager-1"), "left by the killed attempt": []}
    assert leftovers(tmp_path) == []


# ------------------------------------------------------------------ streamkernel run, stopped
ENDLESS = """
import pathlib, sys
from streamkernel.common import WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import DataGeneratorSource
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
(env.from_source(DataGeneratorSource(lambda i: i, None, 200), WatermarkStrategy.no_watermarks(), "endless")
    .key_by(lambda i: i % 3).map(lambda i: i).print())
client = env.execute_async("endless")
pathlib.Path(sys.argv[1]).touch()
client.get_job_execution_result().result()
"""


@pytest.mark.parametrize("backend", ["local", "process"])
def test_a_job_script_stopped_with_sigterm_leaves_nothing_in_its_temp_directory(backend: str, tmp_path) -> None:
    """``streamkernel run --detached`` says: stop it with ``kill PID``; that stops its cluster first."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    script, marker = tmp_path / "endless.py", tmp_path / "running"
    script.write_text(ENDLESS)
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONFAULTHANDLER": "1", "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    run = subprocess.Popen([sys.executable, "-m", "streamkernel", "run", "--backend", backend, str(script), "--",
                            str(marker)], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: marker.exists() or run.poll() is not None, message="the job to run")
        assert run.poll() is None, run.stderr.read().decode() if run.stderr else ""
        assert leftovers(temp), "the cluster should have a working directory while it runs"
        run.terminate()
        try:
            _, stderr = run.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            run.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: every thread's stack to stderr
            raise AssertionError("the run did not end after SIGTERM:\n" + run.communicate()[1].decode()) from None
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 143, stderr.decode()
    assert leftovers(temp) == [], stderr.decode()
