"""The JobManager takeover with TaskManagers on Spark (issue 18): the leader's job runs in Spark
tasks; the leader stops leading (it is stopped: its jobs are suspended, its Spark TaskManagers end);
the next JobManager, whose own TaskManagers run in Spark tasks of the same Spark application,
recovers the job from its latest checkpoint, and the exactly-once FileSink's committed output
equals a failure-free run. (The kill -9 of a JobManager process is in test_ha_cluster_processes.py.)"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from ha_testkit import ha_config, wait_until
from test_jobmanager_leadership import RECORDS, committed, completed_checkpoints, gated_job

from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import FileGate

pytest.importorskip("pyspark", reason="the spark backend needs pyspark (the test extra installs it)")


def spark_cluster(conf: dict) -> MiniCluster:
    return MiniCluster(taskmanagers=1, slots_per_taskmanager=2, backend="spark", configuration=conf,
                       rest=False).start(make_current=False)


def test_a_new_leader_recovers_the_job_onto_its_spark_taskmanagers_exactly_once(zookeeper: Any,
                                                                                 tmp_path: pathlib.Path) -> None:
    conf = ha_config(zookeeper, tmp_path / "ha", **{"heartbeat.interval": "500 ms", "heartbeat.timeout": "5 s"})
    gate, out = FileGate(tmp_path, "half"), tmp_path / "out"
    first = spark_cluster(conf)
    try:
        wait_until(lambda: first.is_leading, "elected")
        job_id = first.submit(gated_job(gate, out, tmp_path / "checkpoints")).get_job_id()
        wait_until(lambda: gate.reached and completed_checkpoints(first, job_id) >= 2,
                   "the job holds at its gate in a Spark task with two checkpoints completed", timeout=120)
    finally:
        first.stop()
    second = spark_cluster(conf)
    try:
        wait_until(lambda: any(j.job_id == job_id and j.status is JobStatus.RUNNING for j in second.jobs()),
                   "the new leader runs the job on its Spark TaskManagers", timeout=120)
        gate.open()
        second.get_job(job_id).get_job_execution_result().result(120)
        assert committed(out) == sorted(r.upper() for r in RECORDS)
    finally:
        second.stop()
