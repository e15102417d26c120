"""MiniClusterJobClient: the JobClient of a job running on a MiniCluster (Flink's name).

``env.execute_async()`` returns one; so does ``MiniCluster.get_job(job_id)``. Every request
answers with a :class:`~streamkernel.common.completable_future.CompletableFuture`, as in
PyFlink: ``client.get_job_status().result()`` is the job's JobStatus now, and
``client.get_job_execution_result().result()`` waits for the end of the job.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Dict, Optional, Union

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.job_client import JobClient
from streamkernel.common.job_execution_result import JobExecutionResult
from streamkernel.common.job_status import JobID, JobStatus
from streamkernel.errors import JobExecutionError
from streamkernel.runtime.dispatcher.dispatcher import Dispatcher
from streamkernel.runtime.jobmaster.job_status import JobDetails, JobResult

__all__ = ["MiniClusterJobClient", "job_execution_error", "to_job_execution_result", "watch_collect_buffers"]

def watch_collect_buffers(dispatcher: Dispatcher, job_id: JobID) -> None:
    """End the job's CollectSink buffers with the job: closed when it FINISHED, failed otherwise.

    A reader iterating over ``sink.buffer`` then stops, or raises the job's
    JobExecutionError, even when no sink subtask ever ran (a job that failed to restore or
    to get slots) or the sink subtasks ran in another process. The sinks are those of the
    job's StreamGraph as its published status snapshot carries it.
    """
    from streamkernel.datastream.connectors.collect import CollectSink

    stream_graph = dispatcher.request_job_details(job_id).require_job_graph().stream_graph
    sinks = [getattr(node.operator, "sink", None) for node in stream_graph.sinks]
    buffers = [sink.buffer for sink in sinks if isinstance(sink, CollectSink)]
    if not buffers:
        return

    def on_status(details: JobDetails) -> None:
        # From the JobMaster's thread: unblock sink writers so cancellation can finish.
        if details.status in (JobStatus.FAILING, JobStatus.FAILED, JobStatus.CANCELLING, JobStatus.CANCELED):
            error = job_execution_error(details)
            error.__cause__ = details.failure_cause
            for buffer in buffers:
                buffer.fail(error)
        elif details.status is JobStatus.FINISHED:
            for buffer in buffers:
                buffer.close()

    dispatcher.add_job_status_listener(job_id, on_status)


def job_execution_error(result: Union[JobResult, JobDetails]) -> JobExecutionError:
    """The error ``env.execute()`` raises for a job that FAILED (or FAILING) or was CANCELED.

    For a failure the message names the failing subtask and repeats the cause's message
    (which names operator, subtask and record); raise it ``from result.failure_cause``.
    """
    job = f"Job {result.job_name!r} ({result.job_id})"
    if result.status in (JobStatus.CANCELED, JobStatus.CANCELLING):
        return JobExecutionError(f"{job} was cancelled.", result.job_id, JobStatus.CANCELED)
    cause = result.failure_cause
    what = f"{type(cause).__name__}: {cause}" if cause is not None else "unknown cause"
    # The runtime's task errors already name the subtask; say where only when they do not.
    named = result.failing_task is None or (cause is not None and result.failing_task.split(" (")[0] in str(cause))
    where = "" if named else f" in {result.failing_task}"
    restarts = result.num_restarts
    after = f" after {restarts} restart{'s' if restarts != 1 else ''}" if restarts else ""
    return JobExecutionError(f"{job} failed{where}{after}: {what}", result.job_id, JobStatus.FAILED)


def to_job_execution_result(result: JobResult) -> JobExecutionResult:
    """A FINISHED job's JobExecutionResult; raises :class:`JobExecutionError` (from the cause) otherwise."""
    if result.status is JobStatus.FINISHED:
        return JobExecutionResult(JobID.from_hex_string(result.job_id), result.net_runtime_ms, result.accumulators,
                                  result.num_restarts)
    raise job_execution_error(result) from result.failure_cause


class MiniClusterJobClient(JobClient):
    """The handle of one job on a MiniCluster: status, cancel, result.

    >>> client = env.execute_async("counting")                  # doctest: +SKIP
    >>> client.get_job_status().result()                        # doctest: +SKIP
    <JobStatus.RUNNING: 2>
    >>> client.cancel().result()                                # doctest: +SKIP
    """

    def __init__(self, dispatcher: Dispatcher, job_id: JobID) -> None:
        self._dispatcher = dispatcher
        self._job_id = job_id
        self._result_future = dispatcher.job_result_future(job_id)

    def get_job_id(self) -> JobID:
        """The job's JobID."""
        return self._job_id

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        """The job's status now (an already completed future, as PyFlink's local client answers)."""
        return CompletableFuture.completed_future(self._dispatcher.request_job_status(self._job_id))

    def get_job_details(self) -> JobDetails:
        """The job's latest status snapshot: every subtask's state and slot, timestamps, failure."""
        return self._dispatcher.request_job_details(self._job_id)

    def cancel(self) -> CompletableFuture[None]:
        """Cancel the job; the future completes once every subtask stopped and the job is terminal."""
        done: CompletableFuture[None] = CompletableFuture()
        self._result_future.add_done_callback(lambda _: done.complete(None))
        self._dispatcher.cancel_job(self._job_id)
        return done

    def stop_with_savepoint(self, advance_to_end_of_event_time: bool = False,
                            savepoint_directory: Optional[str] = None) -> CompletableFuture[str]:
        """Stop the job with a synchronous savepoint; the future gets the savepoint's directory once
        the job has ended FINISHED (exceptionally CheckpointFailedError if the savepoint
        failed: the job then keeps running). Restore it by submitting the job with
        ``execution.state-recovery.path`` set to that directory.

        The savepoint is synchronous: sources stop at its barrier, so nothing read after it
        reaches a sink. ``advance_to_end_of_event_time=True`` (Flink's drain) emits
        MAX_WATERMARK first: event-time windows and timers fire before the savepoint.
        ``savepoint_directory`` None: ``execution.checkpointing.savepoint-dir``, else
        ``./savepoints``.
        """
        return self._dispatcher.stop_with_savepoint(self._job_id, savepoint_directory,
                                                    bool(advance_to_end_of_event_time))

    def trigger_savepoint(self, savepoint_directory: Optional[str] = None) -> CompletableFuture[str]:
        """Take a savepoint of the running job; the future gets its directory (exceptionally
        :class:`~streamkernel.errors.CheckpointFailedError` saying why it failed)."""
        return self._dispatcher.trigger_savepoint(self._job_id, savepoint_directory)

    def trigger_checkpoint(self) -> CompletableFuture[str]:
        """Take a checkpoint now (Flink 1.19's ``triggerCheckpoint``); the future gets its directory."""
        return self._dispatcher.trigger_checkpoint(self._job_id)

    def get_accumulators(self) -> CompletableFuture[Dict[str, Any]]:
        """The job's accumulators (final ones once the job ended; none are collected while it runs)."""
        if self._result_future.done():
            return CompletableFuture.completed_future(dict(self._result_future.result().accumulators))
        return CompletableFuture.completed_future({})

    def get_job_execution_result(self) -> CompletableFuture[JobExecutionResult]:
        """Completes with the JobExecutionResult when the job FINISHED; exceptionally with a
        :class:`~streamkernel.errors.JobExecutionError` (cause chained) if it FAILED or was CANCELED."""
        future: CompletableFuture[JobExecutionResult] = CompletableFuture()

        def convert(done: Future[JobResult]) -> None:
            try:
                future.complete(to_job_execution_result(done.result()))
            except BaseException as error:  # noqa: BLE001 - handed to the future
                future.complete_exceptionally(error)

        self._result_future.add_done_callback(convert)
        return future

    def __repr__(self) -> str:
        details = self.get_job_details()
        return f"MiniClusterJobClient({details.job_name!r}, {self._job_id}, {details.status.name})"
