"""The leading JobManager (issue 18): a MiniCluster with ZooKeeper high availability persists its
jobs, suspends them when it stops leading, and a JobManager elected after it recovers them from the
latest completed checkpoint, with an exactly-once FileSink's committed output equal to a run
without failures. In one process (clusters on the local backend); the process-level takeover
(kill -9 of a JobManager process) is in ``tests/deployment/test_ha_cluster.py``."""

from __future__ import annotations

import json
import pathlib
import urllib.error
import urllib.request
from typing import Any

import pytest
from ha_testkit import ha_config, wait_until

from streamkernel.common import Types, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.common.serialization import Encoder
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import FileSink, RollingPolicy
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.dispatcher.dispatcher import NotLeaderError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import FileGate, ScriptedSource

RECORDS = [f"r{i:03d}" for i in range(60)]


def gated_job(gate: FileGate, out: pathlib.Path, checkpoints: pathlib.Path) -> Any:
    """Half the records, a gate, the other half, into an exactly-once FileSink (checkpoints every 200 ms)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage_dir(str(checkpoints))
    half = len(RECORDS) // 2
    source = ScriptedSource([*RECORDS[:half], gate, *RECORDS[half:]])
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "records", type_info=Types.STRING()).set_parallelism(1)
    sink = (FileSink.for_row_format(str(out), Encoder.simple_string_encoder())
            .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=64)).build())
    stream.map(lambda r: r.upper(), output_type=Types.STRING()).sink_to(sink)
    return env.get_stream_graph("gated job")


def committed(out: pathlib.Path) -> list[str]:
    return sorted(line for f in out.rglob("*") if f.is_file() and not f.name.startswith(".")
                  for line in f.read_text().splitlines())


def completed_checkpoints(cluster: MiniCluster, job_id: Any) -> int:
    """Checkpoints the job completed on ``cluster`` (0 while the cluster has not recovered it yet)."""
    try:
        stats = cluster.checkpoints.checkpoint_stats(job_id)
    except KeyError:
        return 0
    return stats.num_completed if stats is not None else 0


def test_a_new_leader_recovers_the_job_from_its_latest_checkpoint_and_the_output_is_exactly_once(
        zookeeper: Any, tmp_path: pathlib.Path) -> None:
    conf = ha_config(zookeeper, tmp_path / "ha")
    gate, out = FileGate(tmp_path, "half"), tmp_path / "out"
    first = MiniCluster(taskmanagers=1, slots_per_taskmanager=2, backend="local", configuration=conf, rest=False)
    first.start(make_current=False)
    try:
        wait_until(lambda: first.is_leading, "the only JobManager is elected")
        client = first.submit(gated_job(gate, out, tmp_path / "checkpoints"))
        job_id = client.get_job_id()
        wait_until(lambda: gate.reached and completed_checkpoints(first, job_id) >= 2,
                   "the job holds at the gate with two checkpoints completed after it")
        assert first.ha_services.execution_plan_store().get_job_ids() == [str(job_id)]
        last_id = first.checkpoints.checkpoint_stats(job_id).latest_completed.checkpoint_id
    finally:
        first.stop()  # with HA: the job is suspended, its data stays
    assert first.jobs()[0].status is JobStatus.SUSPENDED

    second = MiniCluster(taskmanagers=1, slots_per_taskmanager=2, backend="local", configuration=conf, rest=False)
    second.start(make_current=False)
    try:
        wait_until(lambda: any(j.job_id == job_id and j.status is JobStatus.RUNNING for j in second.jobs()),
                   "the new leader recovers the job and runs it")
        stats = second.checkpoints.checkpoint_stats(job_id)
        assert stats.latest_restored is not None and stats.latest_restored.checkpoint_id >= last_id
        gate.open()
        second.get_job(job_id).get_job_execution_result().result(60)  # raises unless FINISHED
        assert second.dispatcher.request_job_status(job_id) is JobStatus.FINISHED
        assert committed(out) == sorted(r.upper() for r in RECORDS)
        wait_until(lambda: second.ha_services.execution_plan_store().get_job_ids() == [],
                   "the finished job's plan is removed")
        assert second.ha_services.job_result_store().has_clean_job_result_entry(str(job_id))
    finally:
        second.stop()


def test_checkpoint_ids_continue_across_leaders(zookeeper: Any, tmp_path: pathlib.Path) -> None:
    conf = ha_config(zookeeper, tmp_path / "ha")
    gate = FileGate(tmp_path, "never")
    ids = []
    for _ in range(2):
        cluster = MiniCluster(taskmanagers=1, slots_per_taskmanager=2, backend="local", configuration=conf,
                              rest=False).start(make_current=False)
        try:
            if not ids:
                wait_until(lambda c=cluster: c.is_leading, "elected")
                job_id = cluster.submit(gated_job(gate, tmp_path / "out", tmp_path / "checkpoints")).get_job_id()
            wait_until(lambda c=cluster, j=job_id: completed_checkpoints(c, j) >= 2, "two checkpoints complete")
            ids.append([row["id"] for row in cluster.checkpoints.checkpoint_history(job_id)
                        if row["status"] == "COMPLETED"])
        finally:
            cluster.stop()
    assert min(ids[1]) > max(ids[0]), f"ids reused after the takeover: {ids}"


def rest_get(url: str, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url + path, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_standby_answers_rest_with_the_leaders_view_and_refuses_submissions(zookeeper: Any,
                                                                              tmp_path: pathlib.Path) -> None:
    conf = ha_config(zookeeper, tmp_path / "ha")
    leader = MiniCluster(taskmanagers=1, slots_per_taskmanager=1, backend="local", configuration=conf).start(
        make_current=False)
    standby = MiniCluster(taskmanagers=1, slots_per_taskmanager=1, backend="local", configuration=conf).start(
        make_current=False)
    try:
        wait_until(lambda: leader.is_leading, "the first JobManager leads")
        wait_until(lambda: standby.leadership.leader is not None, "the standby knows the leader")
        assert not standby.is_leading
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).print()
        with pytest.raises(NotLeaderError, match=f"standby.*{leader.rest_url}"):
            standby.submit(env.get_stream_graph("refused"))
        job_id = leader.submit(gated_job(FileGate(tmp_path, "hold"), tmp_path / "out",
                                         tmp_path / "checkpoints")).get_job_id()
        wait_until(lambda: [j["jid"] for j in rest_get(standby.rest_url, "/jobs/overview")[1].get("jobs", [])]
                   == [str(job_id)], "the standby's REST API shows the leader's job")
    finally:
        leader.stop()
        wait_until(lambda: standby.is_leading, "the standby leads once the leader stopped")
        standby.stop()


def test_an_unwritable_storage_dir_fails_at_construction_naming_the_key(zookeeper: Any,
                                                                         tmp_path: pathlib.Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(IllegalConfigurationError, match="high-availability.storageDir"):
        MiniCluster(configuration=ha_config(zookeeper, blocker / "ha"))


def test_a_checkpoint_is_deleted_only_after_zookeeper_points_past_it(zookeeper: Any, tmp_path: pathlib.Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The leader dies between writing checkpoint N+1 and recording it in ZooKeeper (here: recording
    fails): the checkpoint ZooKeeper points to must still be on disk for the next leader."""
    from streamkernel.runtime.jobmaster.checkpoint_services import JobCheckpointServices

    record = JobCheckpointServices.add

    def add_until_the_third(self: JobCheckpointServices, completed: Any) -> Any:
        if completed.checkpoint_id >= 3:
            raise ConnectionError("ZooKeeper is gone (the leader is being killed)")
        return record(self, completed)

    monkeypatch.setattr(JobCheckpointServices, "add", add_until_the_third)
    conf = ha_config(zookeeper, tmp_path / "ha")
    cluster = MiniCluster(taskmanagers=1, slots_per_taskmanager=2, backend="local", configuration=conf,
                          rest=False).start(make_current=False)
    try:
        wait_until(lambda: cluster.is_leading, "elected")
        job_id = cluster.submit(gated_job(FileGate(tmp_path, "hold"), tmp_path / "out",
                                          tmp_path / "checkpoints")).get_job_id()
        wait_until(lambda: (cluster.checkpoints.checkpoint_stats(job_id).num_failed or 0) >= 2,
                   "checkpoints 3 and later fail to be recorded")
        store = cluster.ha_services.checkpoint_recovery_factory().create_completed_checkpoint_store(str(job_id), 1)
        [pointer] = store.get_all_checkpoints()
        assert pointer.checkpoint_id == 2
        assert (pathlib.Path(pointer.external_pointer) / "_metadata").exists(), "ZooKeeper points to a deleted checkpoint"
    finally:
        cluster.stop()
