"""A MiniCluster's size is checked against what its backend can host before anything starts.

Every way of sizing a cluster is covered: the Python arguments, the configuration keys
(``minicluster.number-of-taskmanagers``, ``taskmanager.numberOfTaskSlots``, also for the
transient cluster of ``env.execute()``) and ``streamkernel run``; the magics are tested
in tests/jupyter/test_cluster_magics.py. Nothing is started: a refused cluster leaves no
thread, process or directory behind.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from streamkernel import run_command
from streamkernel.common.configuration import Configuration
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.env_settings import CONTEXT_CONFIGURATION_ENV
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.minicluster.limits import (
    MAX_SLOTS_PER_TASKMANAGER,
    MAX_TASKMANAGER_PROCESSES,
    MAX_TASKMANAGERS,
    MAX_TOTAL_SLOTS,
    ClusterSizeError,
    check_cluster_size,
    cluster_limits,
)


@pytest.fixture
def nothing_started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Fails the test if a refused cluster started a process, a thread or made a directory."""
    popen = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: popen.append(a) or pytest.fail("a process started"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    threads = set(threading.enumerate())
    yield
    assert popen == []
    assert set(threading.enumerate()) <= threads
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("backend", ["local", "process", "spark"])
def test_huge_counts_are_refused_at_once_on_every_backend(backend: str, nothing_started) -> None:
    with pytest.raises(ClusterSizeError, match="taskmanagers = 100000 is more than"):
        MiniCluster(100000, 1, backend=backend)
    with pytest.raises(ClusterSizeError, match=f"slots_per_taskmanager = 99999999999999999999 is more than.*"
                                               f"{MAX_SLOTS_PER_TASKMANAGER}"):
        MiniCluster(1, 99999999999999999999, backend=backend)


def test_the_local_limits_name_their_keys_and_are_raised_by_them(nothing_started) -> None:
    with pytest.raises(ClusterSizeError, match=f"at most 256 TaskManagers in this process \\({MAX_TASKMANAGERS}\\)"):
        MiniCluster(257, 1, backend="local")
    with pytest.raises(ClusterSizeError, match=f"8 TaskManagers x 200 slots = 1600 slots .* at most 1024 slots "
                                               f"in all \\({MAX_TOTAL_SLOTS}\\)"):
        MiniCluster(8, 200, backend="local")
    raised = MiniCluster(300, 1, backend="local", configuration={MAX_TASKMANAGERS: "300"})
    assert raised.number_of_taskmanagers == 300 and not raised.is_running
    assert MiniCluster(8, 200, configuration={MAX_TOTAL_SLOTS: 1600}).total_slots == 1600


def test_taskmanager_processes_are_bounded_by_the_cores(nothing_started) -> None:
    cores = os.cpu_count() or 1
    most = max(4, 4 * cores)
    assert cluster_limits("process", {}).taskmanagers == most
    assert MiniCluster(most, 1, backend="process").number_of_taskmanagers == most  # checked, not started
    with pytest.raises(ClusterSizeError, match=f"at most {most} TaskManager processes on this machine .*"
                                               f"{MAX_TASKMANAGER_PROCESSES}"):
        MiniCluster(most + 1, 1, backend="process")
    assert MiniCluster(most + 1, 1, backend="process",
                       configuration={MAX_TASKMANAGER_PROCESSES: most + 1}).number_of_taskmanagers == most + 1
    assert cluster_limits("process", {}, cpu_count=16).taskmanagers == 64


def test_spark_on_a_local_master_hosts_what_the_master_has_threads_for(nothing_started) -> None:
    with pytest.raises(ClusterSizeError, match="Spark cannot host 3 more TaskManagers.*local\\[2\\].*local\\[3,4\\]"):
        MiniCluster(3, 1, backend="spark", spark_master="local[2]")
    with pytest.raises(ClusterSizeError, match="Spark cannot host 3 .* 2 task slots .*spark.task.cpus=2"):
        MiniCluster(3, 1, backend="spark", configuration={"spark.master": "local[4]", "spark.task.cpus": "2"})
    assert MiniCluster(2, 1, backend="spark", spark_master="local[2,4]").number_of_taskmanagers == 2
    # the default master is made for the TaskManagers, which are processes of this machine
    assert check_cluster_size("spark", 8, 1, {}, cpu_count=2) == (8, 1)
    with pytest.raises(ClusterSizeError, match="at most 8 TaskManager processes"):
        check_cluster_size("spark", 9, 1, {}, cpu_count=2)
    # a Spark cluster or a given session: Spark's free task slots are counted when launching
    assert check_cluster_size("spark", 500, 1, {}, spark_master="spark://host:7077") == (500, 1)
    assert check_cluster_size("spark", 500, 1, {}, spark_session=object()) == (500, 1)


def test_counts_from_the_configuration_name_the_key(nothing_started) -> None:
    with pytest.raises(ClusterSizeError, match="configuration key minicluster.number-of-taskmanagers = 100000"):
        MiniCluster(configuration={"minicluster.number-of-taskmanagers": "100000"})
    with pytest.raises(ClusterSizeError, match="configuration key taskmanager.numberOfTaskSlots = "
                                               "9{40}... \\(5000 characters\\) is far too large"):
        MiniCluster(configuration={"taskmanager.numberOfTaskSlots": "9" * 5000})
    with pytest.raises(ClusterSizeError, match="taskmanager.numberOfTaskSlots must be an int >= 1, got 'two'"):
        MiniCluster(configuration={"taskmanager.numberOfTaskSlots": "two"})
    with pytest.raises(ClusterSizeError, match=f"configuration key {MAX_TOTAL_SLOTS} must be an int >= 1"):
        MiniCluster(configuration={MAX_TOTAL_SLOTS: "0"})


def test_the_error_is_both_a_program_and_a_configuration_error() -> None:
    with pytest.raises(InvalidProgramError):
        MiniCluster(0, 1)
    with pytest.raises(IllegalConfigurationError):
        MiniCluster(10**30, 1)


def test_the_transient_cluster_of_execute_is_checked_before_it_starts(nothing_started) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration.from_dict({"minicluster.number-of-taskmanagers": "100000"}))
    env.from_collection([1, 2]).map(lambda x: x).print()
    with pytest.raises(ClusterSizeError, match="100000 is more than the local backend hosts"):
        env.execute("too big")


def test_streamkernel_run_refuses_a_cluster_too_big_in_one_line(tmp_path: Path, nothing_started,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(CONTEXT_CONFIGURATION_ENV, raising=False)
    script = tmp_path.parent / "job_never_runs.py"
    script.write_text(f"open({str(tmp_path.parent / 'ran')!r}, 'w').close()\n")
    code = run_command.main([str(script), "--taskmanagers", "100000", "--backend", "process"])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path.parent / "ran").exists() and CONTEXT_CONFIGURATION_ENV not in os.environ
    assert err.count("\n") == 1 and err.startswith("streamkernel run: MiniCluster: taskmanagers = 100000 is more than "
                                                   "the process backend hosts")
