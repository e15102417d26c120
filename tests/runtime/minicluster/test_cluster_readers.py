"""Everything that reads a job (inspection, failure injection, the cockpit, the collect
buffers' watcher) answers from the job's published status snapshot, never from its JobMaster;
and the MiniCluster is composed of its collaborators (issue 14)."""

from __future__ import annotations

import ast
import pathlib
from typing import Any

import pytest

from streamkernel.common import RestartStrategies, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.collect import CollectSink
from streamkernel.runtime.dispatcher.dispatcher import Dispatcher
from streamkernel.runtime.jobmaster.failure_injection import FailureInjectionError
from streamkernel.runtime.minicluster.checkpoints import ClusterCheckpoints
from streamkernel.runtime.minicluster.failures import FailureInjection
from streamkernel.runtime.minicluster.inspection import ClusterInspection
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import Gate, Pause, ScriptedSource, wait_until

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "streamkernel"
#: The only packages that may hold a JobMaster: the JobMaster's own and the Dispatcher's.
OWNERS = {PACKAGE / "runtime" / "jobmaster", PACKAGE / "runtime" / "dispatcher"}

MOVED = {"checkpoints": ("trigger_checkpoint", "trigger_savepoint", "stop_with_savepoint", "checkpoint_stats",
                         "checkpoint_history"),
         "failures": ("kill_taskmanager", "add_taskmanager", "fail_operator"),
         "inspection": ("describe_taskmanager", "peek", "taskmanagers", "snapshot")}


def test_no_module_outside_the_jobmaster_and_the_dispatcher_asks_for_a_job_master() -> None:
    callers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(owner in path.parents for owner in OWNERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "job_master"):
                callers.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert callers == [], f"read the job's published JobDetails (Dispatcher.request_job_details) instead: {callers}"


def test_the_cluster_is_composed_not_mixed_in() -> None:
    assert MiniCluster.__bases__ == (object,)
    for group, methods in MOVED.items():
        assert [m for m in methods if hasattr(MiniCluster, m)] == [], f"MiniCluster still has {group} methods"
    cluster = MiniCluster(1, 1)
    assert cluster.inspection.snapshot()["running"] is False and cluster.inspection.taskmanagers == ()
    with pytest.raises(Exception, match="never started"):
        cluster.checkpoints  # noqa: B018 - the property raises
    with cluster:
        assert isinstance(cluster.checkpoints, ClusterCheckpoints)
        assert isinstance(cluster.failures, FailureInjection)
        assert isinstance(cluster.inspection, ClusterInspection)
        assert [tm.number_of_slots for tm in cluster.inspection.taskmanagers] == [1]
    assert cluster.inspection.snapshot()["running"] is False and cluster.inspection.taskmanagers == ()


def _no_job_master(self: Dispatcher, job_id: Any) -> Any:
    raise AssertionError(f"a reader asked the Dispatcher for the JobMaster of job {job_id}")


def test_readers_answer_from_the_published_snapshot_without_the_job_master(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamkernel.jupyter.widgets.cockpit import results_frame

    gate = Gate()
    words = [f"w{i % 5}" for i in range(60)]
    sink = CollectSink()
    with MiniCluster(1, 2) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.set_restart_strategy(RestartStrategies.fixed_delay_restart(1, 10))
        (env.from_source(ScriptedSource(words + [Pause(10), gate]), WatermarkStrategy.no_watermarks(), "words")
            .map(lambda w: (w, 1)).name("Ones").uid("ones")
            .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).name("Counts").uid("counts")
            .sink_to(sink))
        client = env.execute_async("read from the snapshot")
        job_id = client.get_job_id()
        wait_until(lambda: all(s.state.value == "RUNNING" for s in client.get_job_details().subtasks),
                   message="every subtask RUNNING")
        monkeypatch.setattr(Dispatcher, "job_master", _no_job_master)

        assert cluster.dispatcher.request_job_details(job_id).job_graph is not None
        rows = cluster.inspection.peek(job_id, "counts", limit=5, seconds=0.2)
        assert all(name.startswith("Counts -> Sink") for name, _, _ in rows)
        with pytest.raises(FailureInjectionError, match=r"no operator named 'Nope'.*'counts'"):
            cluster.inspection.peek(job_id, "Nope")
        assert results_frame(cluster, str(job_id)) is not None  # the cockpit found the collect sink
        assert cluster.get_job(job_id).get_job_id() == job_id
        assert cluster.failures.fail_operator(job_id, "counts", subtask=0) == ["Counts -> Sink: Collect Sink (1/2)"]
        wait_until(lambda: client.get_job_details().num_restarts == 1
                   and client.get_job_status().result() is JobStatus.RUNNING, message="the restarted attempt")
        gate.open()
        client.get_job_execution_result().result(30)

        with pytest.raises(ValueError, match="the job is FINISHED"):
            cluster.inspection.peek(job_id, "counts")
        with pytest.raises(FailureInjectionError, match="FINISHED"):
            cluster.failures.fail_operator(job_id, "counts")
    assert list(sink.buffer)  # the watcher closed the buffer with the job: iterating it ends
