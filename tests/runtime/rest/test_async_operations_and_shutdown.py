"""The store of triggered operations (``rest.async.store-duration``) and ``DELETE /cluster``."""

from __future__ import annotations

import threading

import pytest
from rest_client import RestClient
from rest_counting_job import start_counting_job, wait_for_status  # tests/runtime/ is on sys.path

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.job_status import JobStatus
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.rest.async_operations import AsyncOperations, OperationStatus, new_trigger_id
from streamkernel.runtime.rest.context import RestContext
from streamkernel.runtime.rest.handlers.shutdown import SHUTDOWN_THREAD_NAME
from streamkernel.testing.waiting import wait_until

JOB, TRIGGER = "1" * 32, "a" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_completed_result_is_kept_for_the_store_duration_after_it_completed() -> None:
    clock = Clock()
    operations = AsyncOperations(300.0, clock)
    future: CompletableFuture[str] = CompletableFuture()
    assert operations.register("savepoint", JOB, TRIGGER, lambda: future)
    clock.now += 10_000  # in progress: kept however long it takes
    assert operations.status("savepoint", JOB, TRIGGER) == OperationStatus(done=False)
    future.complete("/sp")
    clock.now += 300
    assert operations.status("savepoint", JOB, TRIGGER) == OperationStatus(done=True, result="/sp")
    clock.now += 1
    assert operations.status("savepoint", JOB, TRIGGER) is None and len(operations) == 0


def test_keys_are_per_kind_and_job_and_registering_twice_starts_once() -> None:
    operations = AsyncOperations()
    started: list[int] = []

    def start() -> CompletableFuture[str]:
        started.append(1)
        return CompletableFuture.failed_future(RuntimeError("no"))

    assert operations.register("savepoint", JOB, TRIGGER, start)
    assert not operations.register("savepoint", JOB, TRIGGER, start)
    assert started == [1]
    status = operations.status("savepoint", JOB, TRIGGER)
    assert status is not None and status.done and isinstance(status.error, RuntimeError)
    assert operations.status("checkpoint", JOB, TRIGGER) is None
    assert operations.status("savepoint", "2" * 32, TRIGGER) is None
    assert len(new_trigger_id()) == 32 and new_trigger_id() != new_trigger_id()


def test_a_start_that_raises_registers_nothing() -> None:
    operations = AsyncOperations()

    def start() -> CompletableFuture[str]:
        raise KeyError("no job")

    with pytest.raises(KeyError):
        operations.register("savepoint", JOB, TRIGGER, start)
    assert len(operations) == 0


def test_the_store_duration_is_flinks_key_and_a_bad_value_fails_before_anything_starts() -> None:
    context = RestContext(None, None, {"rest.async.store-duration": "2 s"})  # type: ignore[arg-type]
    assert context.operations is not None and context.operations.store_duration_s == 2.0
    assert RestContext(None, None, {}).operations.store_duration_s == 300.0  # type: ignore[arg-type,union-attr]
    with pytest.raises(IllegalConfigurationError, match="rest.async.store-duration"):
        MiniCluster(1, 1, backend="local", configuration={"rest.async.store-duration": "soon"})


def _new_threads(before: set[threading.Thread]) -> list[str]:
    return [t.name for t in threading.enumerate() if t not in before]


def test_delete_cluster_answers_then_stops_the_cluster_leaving_no_thread() -> None:
    before = set(threading.enumerate())
    cluster = MiniCluster(1, 2, backend="local", configuration={"rest.port": "0", "web.cancel.enable": "false"})
    cluster.start(make_current=False)
    try:
        assert cluster.rest_url is not None
        client = RestClient(cluster.rest_url)
        # web.cancel.enable only hides the Web UI's cancel button (Flink's DashboardConfigHandler): the API cancels
        assert client.ok("/config")["features"]["web-cancel"] is False
        cancelled = start_counting_job(cluster, [], name="cancelled")
        assert client.request("PATCH", f"/jobs/{cancelled}?mode=cancel", b"{}") == (202, {})
        wait_for_status(cluster, cancelled, JobStatus.CANCELED)
        running = start_counting_job(cluster, [], name="running at shutdown")
        assert client.request("DELETE", "/v1/cluster", b"{}") == (200, {})
        wait_until(lambda: not cluster.is_running and cluster.rest_url is None and not _new_threads(before),
                   message="the cluster to stop and every thread it started (the endpoint's, "
                           f"'{SHUTDOWN_THREAD_NAME}') to end")
        wait_for_status(cluster, running, JobStatus.CANCELED)
    finally:
        cluster.stop()


def test_stopping_the_endpoint_from_its_own_loop_is_refused_instead_of_deadlocking() -> None:
    import asyncio

    from streamkernel.runtime.rest.endpoint import RestEndpointError

    with MiniCluster(1, 1, backend="local", configuration={"rest.port": "0"}) as cluster:
        endpoint = cluster._rest
        assert endpoint is not None and endpoint._loop is not None
        outcome = asyncio.run_coroutine_threadsafe(_stop_here(endpoint), endpoint._loop).result(30)
        assert isinstance(outcome, RestEndpointError) and "its own thread" in str(outcome)
        assert RestClient(cluster.rest_url or "").ok("/jobs") == {"jobs": []}  # still serving


async def _stop_here(endpoint: object) -> BaseException | None:
    try:
        endpoint.stop()  # type: ignore[attr-defined]
    except BaseException as error:  # noqa: BLE001 - returned to the test
        return error
    return None
