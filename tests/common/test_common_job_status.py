"""JobStatus, JobID, JobExecutionResult, CompletableFuture and the JobClient interface."""

from __future__ import annotations

import pickle
import threading

import pytest

from streamkernel.common import CompletableFuture, JobClient, JobExecutionResult, JobID, JobStatus
from streamkernel.errors import InvalidProgramError


def test_terminal_states_follow_flink():
    globally = {s for s in JobStatus if s.is_globally_terminal_state()}
    terminal = {s for s in JobStatus if s.is_terminal_state()}
    assert globally == {JobStatus.FINISHED, JobStatus.CANCELED, JobStatus.FAILED}
    assert terminal == globally | {JobStatus.SUSPENDED}
    assert not JobStatus.RESTARTING.is_terminal_state()


def test_job_id_hex_round_trip_uniqueness_and_pickling():
    job_id = JobID()
    text = str(job_id)
    assert len(text) == 32 and int(text, 16) >= 0
    assert JobID.from_hex_string(text) == job_id and JobID(text) == job_id
    assert job_id.to_hex_string() == text and len(job_id.to_bytes()) == 16
    assert JobID.generate() != job_id
    assert pickle.loads(pickle.dumps(job_id)) == job_id
    assert len({job_id, JobID(text)}) == 1
    with pytest.raises(InvalidProgramError):
        JobID("abc")
    with pytest.raises(InvalidProgramError):
        JobID("zz" * 16)


def test_job_execution_result():
    job_id = JobID()
    accumulators = {"count": 3}
    result = JobExecutionResult(job_id, 1500, accumulators)
    accumulators["count"] = 99  # the result keeps its own copy
    assert result.get_job_id() == job_id
    assert result.get_net_runtime() == 1500
    assert result.get_accumulator_result("count") == 3
    assert result.get_accumulator_result("missing") is None
    everything = result.get_all_accumulator_results()
    everything.clear()
    assert result.get_all_accumulator_results() == {"count": 3}
    assert result.is_job_execution_result() and result.get_job_execution_result() is result
    assert str(job_id) in result.to_string()


def test_completable_future_is_completed_once():
    future: CompletableFuture[int] = CompletableFuture()
    assert not future.done()
    assert future.complete(1) is True
    assert future.complete(2) is False
    assert future.complete_exceptionally(RuntimeError()) is False
    assert future.done() and future.result() == 1 and future.exception() is None


def test_completable_future_exception_cancel_and_helpers():
    failed = CompletableFuture.failed_future(ValueError("boom"))
    assert isinstance(failed.exception(), ValueError)
    with pytest.raises(ValueError, match="boom"):
        failed.result()
    assert CompletableFuture.completed_future("x").result() == "x"
    pending: CompletableFuture[None] = CompletableFuture()
    assert pending.cancel() and pending.cancelled()
    assert pending.complete(None) is False


def test_completable_future_completed_from_another_thread():
    future: CompletableFuture[str] = CompletableFuture()
    threading.Timer(0.01, future.complete, args=("done",)).start()
    assert future.result(timeout=5) == "done"


def test_job_client_is_an_interface_with_pyflinks_methods():
    with pytest.raises(TypeError):
        JobClient()  # type: ignore[abstract]

    class Finished(JobClient):
        def __init__(self):
            self._id = JobID()

        def get_job_id(self):
            return self._id

        def get_job_status(self):
            return CompletableFuture.completed_future(JobStatus.FINISHED)

        def cancel(self):
            return CompletableFuture.completed_future(None)

        def stop_with_savepoint(self, advance_to_end_of_event_time=False, savepoint_directory=None):
            return CompletableFuture.completed_future("/sp")

        def trigger_savepoint(self, savepoint_directory=None):
            return CompletableFuture.completed_future("/sp")

        def get_accumulators(self):
            return CompletableFuture.completed_future({})

        def get_job_execution_result(self):
            return CompletableFuture.completed_future(JobExecutionResult(self._id, 0))

    client = Finished()
    assert client.get_job_status().result().is_globally_terminal_state()
    assert client.get_job_execution_result().result().get_job_id() == client.get_job_id()
