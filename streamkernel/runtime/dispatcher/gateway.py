"""The DispatcherGateway: what clients of a cluster may ask of its Dispatcher.

Flink's ``DispatcherGateway``: the client of ``execute()``, the notebook's ``%flink`` magics,
the cockpit and the REST handlers talk to a cluster's jobs through these methods only.
Answers are futures or immutable snapshots (:class:`~streamkernel.runtime.jobmaster.job_status.JobDetails`,
:class:`~streamkernel.runtime.jobmaster.job_status.JobResult`); nothing hands out a JobMaster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Protocol, Union, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.common.completable_future import CompletableFuture
    from streamkernel.common.job_status import JobID, JobStatus
    from streamkernel.graph.job_graph import JobGraph
    from streamkernel.graph.stream_graph import StreamGraph
    from streamkernel.runtime.jobmaster.job_status import JobDetails, JobResult

__all__ = ["DispatcherGateway"]

JobIdLike = Union["JobID", str]


@runtime_checkable
class DispatcherGateway(Protocol):
    """Submit jobs, ask about them, steer them (cancel, checkpoints, savepoints)."""

    def submit_job(self, stream_graph: "StreamGraph", *, job_graph: Optional["JobGraph"] = None,
                   job_id: Optional[JobIdLike] = None) -> "JobID":
        """Start the job and return its id at once (the job runs in the background); ``job_id``:
        the id the client chose (a duplicate is refused), None: a new one."""

    def cancel_job(self, job_id: JobIdLike) -> "CompletableFuture[JobResult]":
        """Cancel a job; the future completes with its result once it is terminal."""

    def request_job_status(self, job_id: JobIdLike) -> "JobStatus":
        """The job's current status."""

    def request_job_details(self, job_id: JobIdLike) -> "JobDetails":
        """The job's latest published snapshot (immutable; it carries the job's JobGraph)."""

    def request_job_result(self, job_id: JobIdLike, timeout: Optional[float] = None) -> "JobResult":
        """Wait up to ``timeout`` seconds (None: forever) for the job's result."""

    def job_result_future(self, job_id: JobIdLike) -> "CompletableFuture[JobResult]":
        """A future completed with the job's result when it is terminal."""

    def list_jobs(self) -> "list[JobDetails]":
        """Every job the Dispatcher ran or runs, in submission order."""

    def trigger_checkpoint(self, job_id: JobIdLike) -> "CompletableFuture[str]":
        """Take a checkpoint now; the future gets its directory."""

    def trigger_savepoint(self, job_id: JobIdLike, target_dir: Optional[str] = None) -> "CompletableFuture[str]":
        """Take a savepoint; the future gets its directory."""

    def stop_with_savepoint(self, job_id: JobIdLike, target_dir: Optional[str] = None,
                            drain: bool = False) -> "CompletableFuture[str]":
        """Stop the job with a synchronous savepoint (``drain``: MAX_WATERMARK first); the future
        gets the savepoint's directory once the job ended FINISHED."""

    def add_job_status_listener(self, job_id: JobIdLike, listener: "Callable[[JobDetails], None]") -> None:
        """Call ``listener(details)`` now and whenever the job's status changes."""

    def add_jobs_listener(self, listener: "Callable[[JobDetails], None]") -> None:
        """Call ``listener(details)`` whenever any job, of now or submitted later, is submitted or
        changes status (from the JobMasters' threads: quick, never blocking)."""

    def shutdown(self, timeout: float = 10.0) -> None:
        """Refuse new jobs, cancel the running ones and wait for them to end."""
