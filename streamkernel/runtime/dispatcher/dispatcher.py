"""The Dispatcher: accepts jobs and starts one JobMaster per job (Flink's Dispatcher).

A cluster runs in *session mode*: the Dispatcher accepts any number of jobs and each runs
while slots last (a job that finds none waits, then fails; see the ResourceManager). It
remembers every job it ran, so the status and result of a finished job can still be asked
for, as Flink's execution graph store keeps them.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping, Optional, Union

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.futures import result_within
from streamkernel.common.job_status import JobID, JobStatus
from streamkernel.common.options import validate_configuration
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.job_graph import JobGraph
from streamkernel.graph.stream_graph import StreamGraph
from streamkernel.runtime.jobmaster.job_status import JobDetails, JobResult
from streamkernel.runtime.jobmaster.jobmaster import JobMaster
from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway

__all__ = ["Dispatcher", "UnknownJobError", "DuplicateJobSubmissionError"]

JobIdLike = Union[JobID, str]


class UnknownJobError(KeyError):
    """No job with this id was submitted to this cluster."""


class DuplicateJobSubmissionError(InvalidProgramError):
    """A job was submitted with the id of a job this cluster already has (Flink's
    ``DuplicateJobSubmissionException``)."""


class Dispatcher:
    """Accepts jobs (``submit_job``), runs each with its own JobMaster, keeps their results.

    ``configuration`` is the cluster's configuration; a job's own keys override it.
    """

    def __init__(self, resource_manager: ResourceManagerGateway,
                 configuration: Optional[Mapping[str, Any]] = None) -> None:
        self._resource_manager = resource_manager
        self.configuration = {k: str(v) for k, v in (configuration or {}).items()}
        # Guards _jobs and _running; JobMasters are started/cancelled outside of it.
        self._lock = threading.Lock()
        self._jobs: dict[str, JobMaster] = {}
        self._jobs_listeners: list[Callable[[JobDetails], None]] = []
        self._running = True

    def submit_job(self, stream_graph: StreamGraph, *, job_graph: Optional[JobGraph] = None,
                   job_id: Optional[JobIdLike] = None) -> JobID:
        """Start a JobMaster for the job and return its id at once (the job runs in the background).

        Raises InvalidProgramError when the dispatcher is shut down, IllegalConfigurationError
        for the first declared key of the (cluster's and job's) configuration whose value does
        not fit its option, and whatever building the job's graphs raises (a cyclic graph ...).
        ``job_graph``: the job's JobGraph if the caller already built it (not built again).
        ``job_id``: the id the client chose (as Flink's client puts it in the JobGraph), so it
        knows the job's id before the answer comes; DuplicateJobSubmissionError if a job of
        this cluster has it already. None: a new random id.
        """
        job_id = JobID() if job_id is None else (job_id if isinstance(job_id, JobID) else JobID.from_hex_string(job_id))
        self._refuse_duplicate(job_id, stream_graph)
        configuration = {**self.configuration, **{k: str(v) for k, v in stream_graph.configuration.items()}}
        validate_configuration(configuration)  # before a JobMaster exists: nothing is deployed
        master = JobMaster(str(job_id), stream_graph, self._resource_manager, configuration=configuration,
                           job_graph=job_graph)
        with self._lock:
            if not self._running:
                raise InvalidProgramError(
                    f"cannot submit job {stream_graph.job_name!r}: the cluster is stopped; start it again "
                    f"(MiniCluster.start() or %flink start) or stop using it as the current cluster")
            self._refuse_duplicate(job_id, stream_graph)
            self._jobs[str(job_id)] = master
            listeners = list(self._jobs_listeners)
        for listener in listeners:
            master.add_status_listener(listener)
        master.start()
        return job_id

    def _refuse_duplicate(self, job_id: JobID, stream_graph: StreamGraph) -> None:
        if str(job_id) in self._jobs:
            raise DuplicateJobSubmissionError(
                f"cannot submit job {stream_graph.job_name!r}: job {job_id} was already submitted to this cluster "
                f"(a job id is used once)")

    def _master(self, job_id: JobIdLike) -> JobMaster:
        with self._lock:
            master = self._jobs.get(str(job_id))
        if master is None:
            raise UnknownJobError(f"no job {job_id} was submitted to this cluster")
        return master

    def cancel_job(self, job_id: JobIdLike) -> CompletableFuture[JobResult]:
        """Cancel a job; the returned future completes with its result once it is terminal."""
        master = self._master(job_id)
        master.cancel()
        return master.result_future

    def request_job_status(self, job_id: JobIdLike) -> JobStatus:
        """The job's current status."""
        return self._master(job_id).request_job_details().status

    def request_job_details(self, job_id: JobIdLike) -> JobDetails:
        """The job's latest published status snapshot (immutable; it carries the job's JobGraph).

        What every reader of a job uses (inspection, failure injection, the cockpit, the
        ``%flink`` magics): none of them touches the JobMaster.
        """
        return self._master(job_id).request_job_details()

    def job_result_future(self, job_id: JobIdLike) -> CompletableFuture[JobResult]:
        """A future that completes with the job's :class:`JobResult` when it is terminal."""
        return self._master(job_id).result_future

    def request_job_result(self, job_id: JobIdLike, timeout: Optional[float] = None) -> JobResult:
        """Wait (up to ``timeout`` seconds; None: forever) for the job's result.

        Raises TimeoutError if the job is still running after ``timeout``.
        """
        return result_within(self._master(job_id).result_future, timeout)

    def trigger_checkpoint(self, job_id: JobIdLike) -> CompletableFuture[str]:
        """Take a checkpoint of a running job now; the future gets its directory."""
        return self._master(job_id).trigger_checkpoint()

    def trigger_savepoint(self, job_id: JobIdLike, target_dir: Optional[str] = None) -> CompletableFuture[str]:
        """Take a savepoint of a running job; the future gets its directory."""
        return self._master(job_id).trigger_savepoint(target_dir)

    def stop_with_savepoint(self, job_id: JobIdLike, target_dir: Optional[str] = None,
                            drain: bool = False) -> CompletableFuture[str]:
        """Stop the job with a synchronous savepoint (``drain``: MAX_WATERMARK first); the future
        gets the savepoint's directory once the job ended FINISHED."""
        return self._master(job_id).stop_with_savepoint(target_dir, drain)

    def add_job_status_listener(self, job_id: JobIdLike, listener: Callable[[JobDetails], None]) -> None:
        """Call ``listener(details)`` now and whenever the job's status changes (see JobMaster)."""
        self._master(job_id).add_status_listener(listener)

    def add_jobs_listener(self, listener: Callable[[JobDetails], None]) -> None:
        """Call ``listener(details)`` whenever any job, of now or submitted later, is submitted or
        changes status (from the JobMasters' threads: quick, never blocking)."""
        with self._lock:
            self._jobs_listeners.append(listener)
            masters = list(self._jobs.values())
        for master in masters:
            master.add_status_listener(listener)

    def list_jobs(self) -> list[JobDetails]:
        """Every job this dispatcher ran or runs, in submission order."""
        with self._lock:
            masters = list(self._jobs.values())
        return [m.request_job_details() for m in masters]

    def job_master(self, job_id: JobIdLike) -> JobMaster:
        """The JobMaster of a job (for tests only: readers use :meth:`request_job_details`)."""
        return self._master(job_id)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Refuse new jobs, cancel the running ones and wait (up to ``timeout`` s) for them to end."""
        with self._lock:
            self._running = False
            masters = list(self._jobs.values())
        for master in masters:
            if not master.result_future.done():
                master.cancel()
        for master in masters:
            master.join(timeout)

    def __repr__(self) -> str:
        jobs = self.list_jobs()
        running = sum(1 for j in jobs if not j.status.is_globally_terminal_state())
        return f"Dispatcher({len(jobs)} jobs, {running} running)"
