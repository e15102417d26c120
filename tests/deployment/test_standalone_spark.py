"""``streamkernel cluster start --backend spark``: the JobManager process runs the spark backend
(its TaskManagers are Spark tasks of a ``local[N]`` Spark application it drives); a job submitted
with ``streamkernel run -m`` runs there, and ``cluster stop`` leaves no process of it, the
JobManager's JVM included. (A JVM start: about half a minute; kept apart from the process tests.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from streamkernel.testing.waiting import wait_until

_spec = importlib.util.spec_from_file_location("standalone_tests", Path(__file__).parent / "test_standalone_cluster.py")
assert _spec is not None and _spec.loader is not None
kit = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = kit  # dataclasses look their module up
_spec.loader.exec_module(kit)

pytestmark = pytest.mark.spark


def _children(pid: int) -> list[int]:
    """Pids of the running processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def test_a_spark_backed_standalone_cluster_runs_a_submitted_job_and_stops_entirely(tmp_path: Path) -> None:
    cluster = kit._start(tmp_path, tmp_path / "home", "--backend", "spark", "--taskmanagers", "1", "--slots", "2",
                         "-D", "spark.master=local[2]")
    try:
        assert len(cluster.pids) == 1, cluster.start_output  # the JobManager: its TaskManagers are Spark tasks
        overview = kit.get_json(cluster.rest_url + "/overview")
        assert (overview["taskmanagers"], overview["slots-total"]) == (1, 2)
        helpers = _children(cluster.pids[0])  # the JVM (and the REST front, where there is one)
        assert helpers, "the JobManager drives a Spark application: its JVM is a child process"

        (tmp_path / "job.py").write_text(kit.BOUNDED_JOB)
        out = tmp_path / "out.txt"
        done = kit.sk(cluster.home, "run", "-m", cluster.address, "job.py", str(out), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert sorted(int(line.split()[0]) for line in out.read_text().splitlines()) == [3, 6, 9, 12]

        stopped = kit.sk(cluster.home, "cluster", "stop", "--dir", str(cluster.directory), cwd=tmp_path)
        assert stopped.returncode == 0, stopped.stderr
        everything = cluster.pids + helpers
        wait_until(lambda: not any(kit._alive(pid) for pid in everything), 60,
                   message=f"the JobManager and its children ({everything}) to be gone")
        assert list((cluster.home / "clusters").glob("*.secret")) == []
    finally:
        kit._kill_all(cluster)
