"""Flink 2.3's own ``flink`` CLI, unmodified, against a real MiniCluster's REST API.

``flink list`` shows the running job; ``flink savepoint`` prints the savepoint's path, and a
job restored from it resumes the running count where the savepoint left it; ``flink stop
--savepointPath`` stops the job with a savepoint; ``flink cancel`` cancels a job; a failed
savepoint reaches the user as the error's reason. Each CLI call starts a JVM (seconds): five
calls in all. Skipped, saying how to get them, without Java or Flink's tools (``make test``
installs them).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Iterator

import pytest
from rest_counting_job import start_counting_job, wait_for_status  # tests/runtime/ is on sys.path

from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.minicluster.minicluster import MiniCluster

_spec = importlib.util.spec_from_file_location("flink_tools", Path(__file__).parents[2] / "flink_tools.py")
assert _spec is not None and _spec.loader is not None
flink_tools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(flink_tools)

TIMEOUT = 180.0
SAVEPOINT_LINE = re.compile(r"^Savepoint completed\. Path: (\S+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def cluster() -> Iterator[MiniCluster]:
    flink_tools.flink_home()  # skip before starting anything when the tools are missing
    flink_tools.java_executable()
    with MiniCluster(1, 4, backend="local", configuration={"rest.port": "0"}) as started:
        yield started


def _address(cluster: MiniCluster) -> str:
    assert cluster.rest_url is not None
    return cluster.rest_url.removeprefix("http://")


def _flink(cluster: MiniCluster, *args: str) -> str:
    code, out, err = flink_tools.run_flink_cli(list(args), _address(cluster), TIMEOUT)
    assert code == 0, f"flink {' '.join(args)}: exit {code}\nstdout: {out}\nstderr: {err}"
    return out


def test_list_savepoint_restore_and_stop(cluster: MiniCluster, tmp_path: Path) -> None:
    first: list = []
    job_id = start_counting_job(cluster, first, name="cli count")
    lines = _flink(cluster, "list").splitlines()
    assert "------------------ Running/Restarting Jobs -------------------" in lines
    assert any(line.endswith(f" : {job_id} : cli count (RUNNING)") for line in lines), lines

    out = _flink(cluster, "savepoint", job_id, str(tmp_path / "savepoints"))
    found = SAVEPOINT_LINE.search(out)
    assert found is not None, out
    savepoint = found.group(1)
    assert Path(savepoint).parent == tmp_path / "savepoints" and Path(savepoint).is_dir()
    assert cluster.dispatcher.request_job_status(job_id) is JobStatus.RUNNING
    cluster.dispatcher.cancel_job(job_id)
    wait_for_status(cluster, job_id, JobStatus.CANCELED)

    # %flink restore's submission: the same program (same uids) with execution.state-recovery.path
    resumed: list = []
    restored = start_counting_job(cluster, resumed, name="cli count restored",
                                  configuration={"execution.state-recovery.path": savepoint})
    value, count = resumed[0]
    assert first[0] == (0, 1)  # from scratch
    assert value > 0 and count == value + 1, resumed[:3]  # the source's position and the count were restored

    out = _flink(cluster, "stop", "--drain", "--savepointPath", str(tmp_path / "stopped"), restored)
    found = SAVEPOINT_LINE.search(out)
    assert found is not None, out
    assert Path(found.group(1)).parent == tmp_path / "stopped" and Path(found.group(1)).is_dir()
    wait_for_status(cluster, restored, JobStatus.FINISHED)  # Flink's stop-with-savepoint: the job FINISHES


def test_cancel_and_a_failed_savepoint(cluster: MiniCluster, tmp_path: Path) -> None:
    job_id = start_counting_job(cluster, [], name="cli cancel")
    out = _flink(cluster, "cancel", job_id)
    assert f"Cancelled job {job_id}." in out
    wait_for_status(cluster, job_id, JobStatus.CANCELED)

    code, out, err = flink_tools.run_flink_cli(["savepoint", job_id, str(tmp_path)], _address(cluster), TIMEOUT)
    assert code != 0
    assert "Savepoint failed: CheckpointFailedError:" in out + err and "CANCELED" in out + err, out + err
