"""The Dispatcher: accepts jobs and starts one JobMaster per job (Flink's Dispatcher).

A cluster runs in *session mode*: the Dispatcher accepts any number of jobs and each runs
while slots last (a job that finds none waits, then fails; see the ResourceManager). It
remembers every job it ran, so the status and result of a finished job can still be asked
for, as Flink's execution graph store keeps them.

With high availability (``ha_services``) the Dispatcher acts only while its JobManager leads
(:meth:`Dispatcher.grant_leadership` / :meth:`~Dispatcher.revoke_leadership`, called by the
cluster's leader contender): it persists every job before running it, recovers the persisted
jobs when it is granted the leadership, suspends its jobs when it loses it, and records and
cleans up the jobs that end (:mod:`.job_persistence`). A standby refuses submissions, naming
the leader.
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
from streamkernel.runtime.dispatcher.job_persistence import (
    CHECKPOINT_DIR_KEY,
    ExecutionPlan,
    JobPersistence,
    UnrecoverableJob,
)
from streamkernel.runtime.jobmaster.job_status import JobDetails, JobResult
from streamkernel.runtime.jobmaster.jobmaster import JobMaster
from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway

__all__ = ["Dispatcher", "UnknownJobError", "DuplicateJobSubmissionError", "NotLeaderError"]

JobIdLike = Union[JobID, str]


class UnknownJobError(KeyError):
    """No job with this id was submitted to this cluster."""


class DuplicateJobSubmissionError(InvalidProgramError):
    """A job was submitted with the id of a job this cluster already has (Flink's
    ``DuplicateJobSubmissionException``); ``terminated``: that job has already finished."""

    def __init__(self, message: str, terminated: bool = False) -> None:
        super().__init__(message)
        self.terminated = terminated

    def __reduce__(self) -> tuple:  # picklable across processes despite the keyword argument
        return (type(self), (str(self), self.terminated))


class NotLeaderError(InvalidProgramError):
    """A job was submitted to a standby JobManager of a highly available cluster."""


class Dispatcher:
    """Accepts jobs (``submit_job``), runs each with its own JobMaster, keeps their results.

    ``configuration`` is the cluster's configuration; a job's own keys override it.
    ``ha_services``: the cluster's high-availability services (None: no high availability; the
    Dispatcher leads from the start and persists nothing).
    """

    def __init__(self, resource_manager: ResourceManagerGateway,
                 configuration: Optional[Mapping[str, Any]] = None, ha_services: Any = None) -> None:
        self._resource_manager = resource_manager
        self.configuration = {k: str(v) for k, v in (configuration or {}).items()}
        # Guards _jobs, _running and _leading; JobMasters are started/cancelled outside of it.
        self._lock = threading.Lock()
        self._jobs: dict[str, Any] = {}  # JobMaster, or UnrecoverableJob
        self._jobs_listeners: list[Callable[[JobDetails], None]] = []
        self._running = True
        self._persistence = JobPersistence(ha_services) if ha_services is not None else None
        self._leading = ha_services is None
        #: who leads instead, for the error a standby answers a submission with
        self.leader_hint = ""

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
        self._refuse_standby(stream_graph)
        master = self._create_master(str(job_id), stream_graph, job_graph, recovered=False)
        if self._persistence is not None:  # durable before it runs: the next leader recovers it
            self._persistence.persist(ExecutionPlan(str(job_id), stream_graph.job_name, stream_graph,
                                                    master.configuration[CHECKPOINT_DIR_KEY]))
        self._run(master, stream_graph)
        return job_id

    def _create_master(self, job_id: str, stream_graph: StreamGraph, job_graph: Optional[JobGraph],
                       recovered: bool) -> JobMaster:
        configuration = {**self.configuration, **{k: str(v) for k, v in stream_graph.configuration.items()}}
        validate_configuration(configuration)  # before a JobMaster exists: nothing is deployed
        persistence = self._persistence
        return JobMaster(job_id, stream_graph, self._resource_manager, configuration=configuration,
                         job_graph=job_graph, recovered=recovered,
                         checkpoint_recovery=persistence.checkpoint_recovery if persistence is not None else None,
                         on_terminated=persistence.job_terminated if persistence is not None else None)

    def _run(self, master: Any, stream_graph: Optional[StreamGraph], replace: bool = False) -> None:
        with self._lock:
            if not self._running:
                name = stream_graph.job_name if stream_graph is not None else master.job_id
                raise InvalidProgramError(
                    f"cannot submit job {name!r}: the cluster is stopped; start it again "
                    f"(MiniCluster.start() or %flink start) or stop using it as the current cluster")
            if not replace and stream_graph is not None:  # a submission of the same id raced this one
                self._refuse_duplicate(JobID.from_hex_string(master.job_id), stream_graph, stored=False)
            self._jobs[master.job_id] = master
            listeners = list(self._jobs_listeners)
        for listener in listeners:
            master.add_status_listener(listener)
        if isinstance(master, JobMaster):
            master.start()

    def _refuse_standby(self, stream_graph: StreamGraph) -> None:
        if not self._leading:
            leader = f"; the leader's REST API is at {self.leader_hint}" if self.leader_hint else \
                " (no leader is elected right now: retry in a moment)"
            raise NotLeaderError(f"cannot submit job {stream_graph.job_name!r}: this JobManager is a standby of a "
                                 f"highly available cluster{leader}")

    # ------------------------------------------------------------- high availability
    @property
    def is_leading(self) -> bool:
        """Whether this Dispatcher acts (always, without high availability)."""
        return self._leading

    def grant_leadership(self) -> list[str]:
        """This JobManager leads now: recover every persisted job that has no result (from its latest
        completed checkpoint), list the ones that cannot be read FAILED; returns the recovered job ids."""
        assert self._persistence is not None, "grant_leadership: the Dispatcher has no HA services"
        plans, failed = self._persistence.recoverable()
        recovered = []
        with self._lock:
            self._leading = True
        for broken in failed:
            self._run(broken, None, replace=True)
        for plan in plans:
            previous = self._jobs.get(plan.job_id)
            if previous is not None and not previous.result_future.done():
                continue  # still ours and running (a leadership confirmed again)
            try:
                master = self._create_master(plan.job_id, plan.recovered_stream_graph(), None, recovered=True)
            except Exception as error:  # noqa: BLE001 - its configuration no longer validates ...
                self._run(UnrecoverableJob(plan.job_id, error), None, replace=True)
                continue
            self._run(master, None, replace=True)
            recovered.append(plan.job_id)
        return recovered

    def revoke_leadership(self) -> None:
        """This JobManager no longer leads: refuse submissions and suspend every running job (their
        data stays for the next leader)."""
        with self._lock:
            self._leading = False
            masters = list(self._jobs.values())
        for master in masters:
            master.suspend()

    def _refuse_duplicate(self, job_id: JobID, stream_graph: StreamGraph, stored: bool = True) -> None:
        """Flink's ``Dispatcher.isDuplicateJob``: a job id this cluster runs or ran, or (with high
        availability, ``stored``) one its job result store holds (a job that reached a globally
        terminal state, under any leader) or its execution plan store holds (submitted before,
        recovered by the leader) is refused: a job is never run twice, whichever JobManager a
        submission reaches."""
        key = str(job_id)
        terminated = False
        if key in self._jobs:
            known, terminated = True, self._jobs[key].request_job_details().status.is_globally_terminal_state()
        elif stored and self._persistence is not None:
            terminated = self._persistence.results.has_job_result_entry(key)
            known = terminated or key in self._persistence.plans.get_job_ids()
        else:
            known = False
        if known:
            state = "has already reached a globally terminal state" if terminated else "was already submitted"
            raise DuplicateJobSubmissionError(
                f"Job has already been submitted. Cannot submit job {stream_graph.job_name!r}: job {job_id} {state} "
                f"on this cluster (a job id is used once)", terminated=terminated)

    def _master(self, job_id: JobIdLike) -> Any:
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
