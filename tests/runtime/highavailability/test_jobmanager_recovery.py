"""What a new leader recovers, and what it refuses to (issue 18): a ZooKeeper restart while a job
runs (leadership revoked, the job suspended, leadership regained, the job recovered), a job graph
file corrupted in storage (that job is listed FAILED, the others recover), and two clusters with
different ids on one ZooKeeper (neither sees the other's jobs)."""

from __future__ import annotations

import pathlib
from typing import Any

from ha_testkit import ha_config, wait_until, zookeeper_server
from test_jobmanager_leadership import completed_checkpoints, gated_job

from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import FileGate


def ha_cluster(conf: dict) -> MiniCluster:
    return MiniCluster(taskmanagers=1, slots_per_taskmanager=4, backend="local", configuration=conf,
                       rest=False).start(make_current=False)


def status_of(cluster: MiniCluster, job_id: Any) -> Any:
    return next((j.status for j in cluster.jobs() if j.job_id == job_id), None)


def test_a_zookeeper_restart_revokes_the_leadership_and_the_regained_leader_recovers_the_job(
        tmp_path: pathlib.Path) -> None:
    zookeeper_server.require_zookeeper()
    server = zookeeper_server.ZooKeeperServer(tmp_path / "zookeeper").start()
    cluster = None
    try:
        cluster = ha_cluster(ha_config(server, tmp_path / "ha"))
        wait_until(lambda: cluster.is_leading, "elected")
        job_id = cluster.submit(gated_job(FileGate(tmp_path, "hold"), tmp_path / "out",
                                          tmp_path / "checkpoints")).get_job_id()
        wait_until(lambda: completed_checkpoints(cluster, job_id) >= 1, "a checkpoint completes")
        server.stop()
        wait_until(lambda: not cluster.is_leading, "the leadership is revoked when ZooKeeper is gone")
        wait_until(lambda: status_of(cluster, job_id) is JobStatus.SUSPENDED, "the job is suspended")
        server.start()
        wait_until(lambda: cluster.is_leading, "the leadership is regained once ZooKeeper is back")
        wait_until(lambda: status_of(cluster, job_id) is JobStatus.RUNNING, "the job is recovered and runs")
        restored = cluster.checkpoints.checkpoint_stats(job_id).latest_restored
        assert restored is not None, "the recovered job started from its checkpoint"
    finally:
        if cluster is not None:
            cluster.stop()
        server.close()


def test_a_corrupted_job_graph_fails_that_job_only(zookeeper: Any, tmp_path: pathlib.Path) -> None:
    conf = ha_config(zookeeper, tmp_path / "ha")
    first = ha_cluster(conf)
    try:
        wait_until(lambda: first.is_leading, "elected")
        good = first.submit(gated_job(FileGate(tmp_path, "a"), tmp_path / "out-a", tmp_path / "cp")).get_job_id()
        bad = first.submit(gated_job(FileGate(tmp_path, "b"), tmp_path / "out-b", tmp_path / "cp")).get_job_id()
    finally:
        first.stop()
    [plan_file] = [p for p in (tmp_path / "ha").rglob(f"submittedExecutionPlan-{bad}-*")]
    plan_file.write_bytes(b"garbage" + plan_file.read_bytes()[7:])
    second = ha_cluster(conf)
    try:
        wait_until(lambda: status_of(second, good) is JobStatus.RUNNING, "the intact job recovers")
        wait_until(lambda: status_of(second, bad) is JobStatus.FAILED, "the corrupt one is listed FAILED")
        cause = second.dispatcher.request_job_details(bad).failure_cause
        assert str(bad) in str(cause) and str(plan_file) in str(cause), cause
    finally:
        second.stop()


def test_two_clusters_on_one_zookeeper_do_not_see_each_others_jobs(zookeeper: Any, tmp_path: pathlib.Path) -> None:
    one = ha_cluster(ha_config(zookeeper, tmp_path / "ha", "/one"))
    two = ha_cluster(ha_config(zookeeper, tmp_path / "ha", "/two"))
    try:
        wait_until(lambda: one.is_leading and two.is_leading, "each cluster elects its own leader")
        job = one.submit(gated_job(FileGate(tmp_path, "g"), tmp_path / "out", tmp_path / "cp")).get_job_id()
        assert one.ha_services.execution_plan_store().get_job_ids() == [str(job)]
        assert two.ha_services.execution_plan_store().get_job_ids() == []
        assert two.jobs() == []
    finally:
        one.stop()
        two.stop()
    again = ha_cluster(ha_config(zookeeper, tmp_path / "ha", "/two"))
    try:
        wait_until(lambda: again.is_leading, "elected")
        assert again.jobs() == [], "cluster /two recovered a job of cluster /one"
    finally:
        again.stop()
