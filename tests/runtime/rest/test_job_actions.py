"""The REST API's actions on a real MiniCluster: cancel, savepoints, stop-with-savepoint,
checkpoints on request (trigger ids, status polling, Flink's errors) and malformed bodies."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from rest_client import RestClient
from rest_counting_job import start_counting_job, wait_for_status  # tests/runtime/ is on sys.path

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing.waiting import wait_until

HEX32 = re.compile(r"^[0-9a-f]{32}$")
UNKNOWN = "0" * 32


@pytest.fixture(scope="module")
def cluster() -> Iterator[MiniCluster]:
    with MiniCluster(1, 8, backend="local", configuration={"rest.port": "0"}) as started:
        yield started


@pytest.fixture
def client(cluster: MiniCluster) -> RestClient:
    assert cluster.rest_url is not None
    return RestClient(cluster.rest_url)


@pytest.fixture
def job(cluster: MiniCluster) -> Iterator[str]:
    """A running count on the module's cluster, cancelled after the test."""
    job_id = start_counting_job(cluster, [])
    yield job_id
    cluster.dispatcher.cancel_job(job_id)
    wait_until(lambda: cluster.dispatcher.request_job_status(job_id).is_globally_terminal_state(),
               message="the test's job to end")


def _post(client: RestClient, path: str, body: Any) -> tuple[int, Any]:
    return client.request("POST", path, json.dumps(body).encode())


def _error(response: tuple[int, Any]) -> tuple[int, str]:
    status, body = response
    assert isinstance(body, dict) and list(body) == ["errors"] and len(body["errors"]) == 1, body
    return status, body["errors"][0]


def _completed(client: RestClient, path: str) -> dict:
    """Poll an operation's status until it is no longer IN_PROGRESS; its last answer."""
    def done() -> Any:
        status, body = client.get(path, b"{}")
        if status == 200 and body == {"status": {"id": "IN_PROGRESS"}}:
            return None
        return (status, body)

    status, body = wait_until(done, message=f"{path} to complete")
    assert status == 200, body
    assert body["status"] == {"id": "COMPLETED"}, body
    return body["operation"]


# ------------------------------------------------------------------ cancel
def test_cancel_a_running_job_then_again(cluster: MiniCluster, client: RestClient) -> None:
    job_id = start_counting_job(cluster, [])
    assert client.request("PATCH", f"/v1/jobs/{job_id}?mode=cancel", b"{}") == (202, {})
    wait_for_status(cluster, job_id, JobStatus.CANCELED)
    assert client.request("PATCH", f"/jobs/{job_id}", b"{}") == (202, {})  # Flink acknowledges a CANCELED job


def test_cancel_errors(cluster: MiniCluster, client: RestClient, job: str) -> None:
    assert _error(client.request("PATCH", f"/jobs/{UNKNOWN}?mode=cancel")) == (404, "Job could not be found.")
    status, message = _error(client.request("PATCH", "/jobs/not-a-job?mode=cancel"))
    assert status == 400 and "jobid" in message
    status, message = _error(client.request("PATCH", f"/jobs/{job}?mode=stop"))
    assert status == 400 and "(mode)" in message and '"stop"' in message
    assert cluster.dispatcher.request_job_status(job) is JobStatus.RUNNING  # nothing happened


def test_cancel_of_a_finished_job_is_a_conflict(cluster: MiniCluster, client: RestClient) -> None:
    job_id = start_counting_job(cluster, [], name="bounded", count=5, rate=None)
    wait_for_status(cluster, job_id, JobStatus.FINISHED)
    assert _error(client.request("PATCH", f"/jobs/{job_id}?mode=cancel")) == (
        409, "Job cancellation failed because the job has already reached another terminal state (FINISHED).")


# ------------------------------------------------------------------ savepoints
def test_savepoint_trigger_and_status(cluster: MiniCluster, client: RestClient, job: str, tmp_path: Path) -> None:
    status, body = _post(client, f"/v1/jobs/{job}/savepoints", {
        "target-directory": str(tmp_path), "cancel-job": False, "formatType": "CANONICAL", "triggerId": None})
    assert status == 202 and list(body) == ["request-id"] and HEX32.match(body["request-id"]), body
    location = _completed(client, f"/v1/jobs/{job}/savepoints/{body['request-id']}")["location"]
    assert Path(location).parent == tmp_path and os.path.isdir(location)
    assert cluster.dispatcher.request_job_status(job) is JobStatus.RUNNING
    # the result stays (rest.async.store-duration): asking again gives the same answer
    assert _completed(client, f"/jobs/{job}/savepoints/{body['request-id']}")["location"] == location


def test_a_client_chosen_trigger_id_is_used_and_triggers_once(client: RestClient, job: str, tmp_path: Path) -> None:
    trigger = "ab" * 16
    body = {"target-directory": str(tmp_path), "triggerId": trigger}
    assert _post(client, f"/jobs/{job}/savepoints", body) == (202, {"request-id": trigger})
    assert _post(client, f"/jobs/{job}/savepoints", body) == (202, {"request-id": trigger})
    _completed(client, f"/jobs/{job}/savepoints/{trigger}")
    assert len(os.listdir(tmp_path)) == 1  # the repeated trigger started nothing


def test_unknown_and_malformed_trigger_ids(client: RestClient, job: str) -> None:
    assert _error(client.get(f"/jobs/{job}/savepoints/{UNKNOWN}")) == (
        404, f"There is no savepoint operation with triggerId={UNKNOWN} for job {job}.")
    assert _error(client.get(f"/jobs/{job}/checkpoints/{UNKNOWN}")) == (
        404, f"There is no checkpoint operation with triggerId={UNKNOWN} for job {job}.")
    status, message = _error(client.get(f"/jobs/{job}/savepoints/xyz"))
    assert status == 400 and "triggerid" in message
    assert _error(client.get(f"/jobs/{UNKNOWN}/savepoints/{UNKNOWN}"))[0] == 404


def test_without_a_directory_flinks_400_and_with_state_savepoints_dir_it_is_used(
        cluster: MiniCluster, client: RestClient, job: str, tmp_path: Path) -> None:
    assert _error(_post(client, f"/jobs/{job}/savepoints", {})) == (
        400, "Config key [execution.checkpointing.savepoint-dir] is not set. Property [target-directory] must be "
             "provided.")
    assert _error(_post(client, f"/jobs/{job}/stop", {}))[1].endswith("Property [targetDirectory] must be provided.")
    configured = start_counting_job(cluster, [], name="with savepoint dir",
                                    configuration={"state.savepoints.dir": str(tmp_path)})
    try:
        status, body = client.request("POST", f"/jobs/{configured}/savepoints")  # no body at all: the defaults
        assert status == 202, body
        location = _completed(client, f"/jobs/{configured}/savepoints/{body['request-id']}")["location"]
        assert Path(location).parent == tmp_path
    finally:
        cluster.dispatcher.cancel_job(configured)


@pytest.mark.parametrize("raw, field", [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "must be a JSON object"),
    (b'{"target-directory": 7}', '"target-directory"'),
    (b'{"target-directory": "/tmp", "cancel-job": "yes"}', '"cancel-job"'),
    (b'{"target-directory": "/tmp", "formatType": "ZIP"}', '"formatType"'),
    (b'{"target-directory": "/tmp", "triggerId": "xyz"}', '"triggerId"'),
    (b'{"target-directory": "/tmp", "targetDirectory": "/tmp"}', '"targetDirectory"'),
])
def test_malformed_savepoint_bodies_are_400_naming_the_field_and_nothing_happens(
        cluster: MiniCluster, client: RestClient, job: str, raw: bytes, field: str) -> None:
    operations = cluster._rest.context.operations  # type: ignore[union-attr]
    before = len(operations)
    status, message = _error(client.request("POST", f"/jobs/{job}/savepoints", raw))
    assert status == 400 and field in message, message
    assert len(operations) == before


def test_a_failed_savepoint_is_a_500_with_the_reason(cluster: MiniCluster, client: RestClient,
                                                     tmp_path: Path) -> None:
    job_id = start_counting_job(cluster, [], name="bounded", count=5, rate=None)
    wait_for_status(cluster, job_id, JobStatus.FINISHED)
    status, body = _post(client, f"/jobs/{job_id}/savepoints", {"target-directory": str(tmp_path)})
    assert status == 202, body

    def answered() -> Any:
        answer = client.get(f"/jobs/{job_id}/savepoints/{body['request-id']}")
        return answer if answer[0] != 200 else None

    status, message = _error(wait_until(answered, message="the failed savepoint's status"))
    assert status == 500 and message.startswith("Savepoint failed: CheckpointFailedError:") and "FINISHED" in message


def test_a_savepoint_in_progress_never_blocks_the_endpoint(cluster: MiniCluster, client: RestClient, job: str,
                                                           monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pending: CompletableFuture[str] = CompletableFuture()
    monkeypatch.setattr(cluster.dispatcher, "trigger_savepoint", lambda job_id, target_dir=None: pending)
    status, body = _post(client, f"/jobs/{job}/savepoints", {"target-directory": str(tmp_path)})
    assert status == 202
    path = f"/jobs/{job}/savepoints/{body['request-id']}"
    assert client.get(path) == (200, {"status": {"id": "IN_PROGRESS"}})
    assert client.ok("/jobs")["jobs"]  # the endpoint answers meanwhile
    pending.complete(str(tmp_path / "savepoint-x"))
    assert _completed(client, path) == {"location": str(tmp_path / "savepoint-x")}


# ------------------------------------------------------------------ stop
def test_stop_with_savepoint(cluster: MiniCluster, client: RestClient, tmp_path: Path) -> None:
    job_id = start_counting_job(cluster, [])
    status, body = _post(client, f"/v1/jobs/{job_id}/stop", {
        "targetDirectory": str(tmp_path), "drain": False, "formatType": "CANONICAL", "triggerId": None})
    assert status == 202 and HEX32.match(body["request-id"]), body
    location = _completed(client, f"/v1/jobs/{job_id}/savepoints/{body['request-id']}")["location"]
    assert Path(location).parent == tmp_path
    assert cluster.dispatcher.request_job_status(job_id) is JobStatus.FINISHED  # the future completes once it ended


def test_a_savepoint_with_cancel_job_cancels_the_job_after_it(cluster: MiniCluster, client: RestClient,
                                                               tmp_path: Path) -> None:
    job_id = start_counting_job(cluster, [])
    status, body = _post(client, f"/jobs/{job_id}/savepoints", {"target-directory": str(tmp_path), "cancel-job": True})
    assert status == 202, body
    location = _completed(client, f"/jobs/{job_id}/savepoints/{body['request-id']}")["location"]
    assert Path(location).parent == tmp_path
    assert cluster.dispatcher.request_job_status(job_id) is JobStatus.CANCELED  # the future completes once it ended


def test_stop_with_drain_passes_drain_through(cluster: MiniCluster, client: RestClient, job: str,
                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list = []
    stop = cluster.dispatcher.stop_with_savepoint
    monkeypatch.setattr(cluster.dispatcher, "stop_with_savepoint",
                        lambda job_id, directory, drain=False: calls.append(drain) or stop(job_id, directory, drain))
    status, body = _post(client, f"/jobs/{job}/stop", {"targetDirectory": str(tmp_path), "drain": True})
    assert status == 202, body
    location = _completed(client, f"/jobs/{job}/savepoints/{body['request-id']}")["location"]
    assert Path(location).parent == tmp_path and calls == [True]
    assert cluster.dispatcher.request_job_status(job) is JobStatus.FINISHED


# ------------------------------------------------------------------ checkpoints
def test_checkpoint_trigger_and_status(cluster: MiniCluster, client: RestClient, tmp_path: Path) -> None:
    job_id = start_counting_job(cluster, [], name="checkpointed",
                                configuration={"execution.checkpointing.dir": f"file://{tmp_path}"})
    try:
        status, body = _post(client, f"/jobs/{job_id}/checkpoints", {"checkpointType": "FULL", "triggerId": None})
        assert status == 202 and HEX32.match(body["request-id"]), body
        checkpoint_id = _completed(client, f"/jobs/{job_id}/checkpoints/{body['request-id']}")["checkpointId"]
        assert isinstance(checkpoint_id, int) and checkpoint_id >= 1
        history = client.ok(f"/jobs/{job_id}/checkpoints")["history"]
        assert any(entry["id"] == checkpoint_id and entry["status"] == "COMPLETED" for entry in history)
        # the GET resources under /checkpoints are routed as before
        assert client.ok(f"/jobs/{job_id}/checkpoints/details/{checkpoint_id}")["id"] == checkpoint_id
        status, message = _error(_post(client, f"/jobs/{job_id}/checkpoints", {"checkpointType": "INCREMENTAL"}))
        assert status == 400 and '"checkpointType"' in message
        status, message = _error(_post(client, f"/jobs/{job_id}/checkpoints", {"checkpointType": 3}))
        assert status == 400 and '"checkpointType"' in message
    finally:
        cluster.dispatcher.cancel_job(job_id)


def test_the_actions_of_an_unknown_job_are_404(client: RestClient) -> None:
    for path in ("savepoints", "stop", "checkpoints"):
        assert _error(_post(client, f"/jobs/{UNKNOWN}/{path}", {"targetDirectory": "/tmp"} if path == "stop"
                            else {}))[0] == 404
