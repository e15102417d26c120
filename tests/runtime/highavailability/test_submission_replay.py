"""A signed job submission replayed to the next JobManager of a highly available cluster (issue 29):
the request is recorded where every JobManager of the cluster reads it (next to the cluster's secret
in ``high-availability.storageDir``), and a job id the cluster ran is refused by any later leader
(Flink's ``DuplicateJobSubmissionException``), so a job never runs twice. One process, two
JobManagers one after the other (MiniClusters with REST on the local backend); the process-level
sequence with kill -9 is test_ha_chaos.py."""

from __future__ import annotations

import pathlib
from typing import Any

from ha_testkit import RecordingProxy, ha_config, send, wait_until
from test_jobmanager_leadership import RECORDS, committed, gated_job

from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.rest.accepted_requests import DIRECTORY_NAME
from streamkernel.runtime.rest.client import RestClusterClient, parse_address
from streamkernel.runtime.rest.job_signature import SIGNATURE_HEADER, signed_headers
from streamkernel.testing import FileGate


def ha_rest_cluster(conf: dict) -> MiniCluster:
    return MiniCluster(taskmanagers=1, slots_per_taskmanager=2, backend="local",
                       configuration={**conf, "rest.port": "0"}).start(make_current=False)


def leads_and_serves(cluster: MiniCluster) -> bool:
    """Elected, and its REST API answers as the leader's (not 503 while the election is published)."""
    return cluster.is_leading and send(cluster.rest_url, "GET", "/overview", {}, b"")[0] == 200


def status_on(cluster: MiniCluster, job_id: str) -> Any:
    return next((j.status for j in cluster.jobs() if str(j.job_id) == job_id), None)


def test_a_submission_replayed_to_the_next_jobmanager_does_not_run_the_job_again(
        zookeeper: Any, tmp_path: pathlib.Path) -> None:
    conf = ha_config(zookeeper, tmp_path / "ha")
    gate, out = FileGate(tmp_path, "half"), tmp_path / "out"
    first = ha_rest_cluster(conf)
    try:
        wait_until(lambda: leads_and_serves(first), "the first JobManager leads")
        proxy = RecordingProxy(first.rest_url)
        try:
            host, port = parse_address(proxy.address)
            secret = next((tmp_path / "ha").rglob("cluster.secret")).read_text().strip()
            client = RestClusterClient(host, port, secret=bytes.fromhex(secret))
            job_id = str(client.submit_job(gated_job(gate, out, tmp_path / "checkpoints")))
        finally:
            proxy.close()
        [(method, path, headers, body)] = proxy.submissions
        # replayed to the same JobManager at once
        status, _, answer = send(first.rest_url, method, path, headers, body)
        assert status == 401 and b"replay" in answer, (status, answer)
        gate.open()
        wait_until(lambda: status_on(first, job_id) is JobStatus.FINISHED, "the job finishes")
    finally:
        first.stop()
    assert committed(out) == sorted(r.upper() for r in RECORDS)
    assert list((tmp_path / "ha").rglob(f"{DIRECTORY_NAME}/*")), "the accepted submission is recorded in storageDir"

    second = ha_rest_cluster(conf)  # the next JobManager of the cluster: nothing of the first in its memory
    try:
        wait_until(lambda: leads_and_serves(second), "the second JobManager leads")
        assert second.jobs() == []  # a finished job is not recovered
        status, _, answer = send(second.rest_url, method, path, headers, body)
        assert status == 401 and b"replay" in answer, (status, answer)
        # the same job signed anew (only a holder of the secret can): refused by its id, which the job
        # result store holds, as Flink's Dispatcher refuses a job that reached a globally terminal state
        fresh = signed_headers(bytes.fromhex(secret), body)
        assert fresh[SIGNATURE_HEADER] != headers[SIGNATURE_HEADER]
        status, _, answer = send(second.rest_url, method, path, {**headers, **fresh}, body)
        assert status == 409 and b"Job has already been submitted" in answer and b"globally terminal" in answer, \
            (status, answer)
        assert second.jobs() == []
    finally:
        second.stop()
    assert committed(out) == sorted(r.upper() for r in RECORDS)  # nothing written twice
