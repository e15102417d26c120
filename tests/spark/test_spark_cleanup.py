"""A ``spark`` cluster on a local master leaves no TaskManager directory, even after a kill.

Spark SIGKILLs the Python worker of a killed TaskManager (no ``finally`` runs in it) and
relaunches the task as a new TaskManager; the cluster owns both TaskManagers' directories
(under its own, in ``io.tmp.dirs``) and removes them when it stops.
"""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

pytest.importorskip("pyspark")

from streamkernel.runtime.minicluster.minicluster import MiniCluster

_spec = importlib.util.spec_from_file_location("spark_test_kit", pathlib.Path(__file__).with_name("spark_test_kit.py"))
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)

pytestmark = pytest.mark.spark


def taskmanager_dirs(directory: pathlib.Path) -> list[pathlib.Path]:
    return [p for p in directory.rglob("*taskmanager-1*") if p.is_dir()]


def test_a_killed_spark_taskmanager_leaves_no_directory_after_stop(tmp_path) -> None:
    cluster = MiniCluster(1, 1, backend="spark", spark_master="local[2,4]",
                          configuration={"io.tmp.dirs": str(tmp_path)}).start(make_current=False)
    try:
        kit.wait_until(lambda: len(taskmanager_dirs(tmp_path)) == 1, timeout=60)
        assert cluster.failures.kill_taskmanager("taskmanager-1") == "taskmanager-1"
        kit.wait_until(lambda: "taskmanager-1.1" in cluster.taskmanager_backend.live_ids(), timeout=60)
        kit.wait_until(lambda: len(taskmanager_dirs(tmp_path)) == 2, timeout=60)  # the killed one's stays
    finally:
        cluster.stop(timeout=20)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == []
