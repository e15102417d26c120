"""What the Dispatcher of a highly available cluster persists, recovers and cleans up.

Flink's Dispatcher writes every submitted job's graph to the ``ExecutionPlanStore`` before it runs
it, and when a job reaches a globally terminal state it records the result in the
``JobResultStore`` (*dirty*) first, then removes the job's data (its graph, its checkpoint id
counter and completed checkpoint pointers, its checkpoints as the retention says), then marks the
result *clean*. A new leader recovers every persisted job without a result; the order guarantees
that a job whose data is gone is never recovered (it would start from scratch and write its
output again), and a dirty result tells the new leader the clean-up still has to be finished.

:class:`JobPersistence` is that part of the Dispatcher, on the cluster's
:class:`~streamkernel.runtime.highavailability.HighAvailabilityServices`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.highavailability.stores import JobResult as StoredJobResult
from streamkernel.runtime.highavailability.stores import JobResultEntry
from streamkernel.runtime.jobmaster.checkpoint_services import JobCheckpointServices
from streamkernel.runtime.jobmaster.job_status import JobDetails, JobResult

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.graph.stream_graph import StreamGraph
    from streamkernel.runtime.highavailability import HighAvailabilityServices
    from streamkernel.runtime.jobmaster.jobmaster import JobMaster

__all__ = ["ExecutionPlan", "JobPersistence", "UnrecoverableJob", "CHECKPOINT_DIR_KEY"]

_LOG = logging.getLogger(__name__)

#: The job's checkpoint directory, resolved by the JobManager that accepted it, is part of its plan:
#: the next leader (another process, another working directory) reads the same one.
CHECKPOINT_DIR_KEY = "execution.checkpointing.dir"


@dataclass
class ExecutionPlan:
    """What is persisted of a submitted job: its id, name and StreamGraph (with the user's code),
    and its checkpoint directory as the JobManager that accepted it resolved it."""

    job_id: str
    job_name: str
    stream_graph: "StreamGraph"
    checkpoint_dir: str
    submitted_at: int = field(default_factory=lambda: time.time_ns() // 1_000_000)

    def recovered_stream_graph(self) -> "StreamGraph":
        """The StreamGraph to run again, reading and writing the checkpoints it used."""
        import dataclasses

        configuration = {**self.stream_graph.configuration, CHECKPOINT_DIR_KEY: self.checkpoint_dir}
        return dataclasses.replace(self.stream_graph, configuration=configuration)


class UnrecoverableJob:
    """A persisted job a new leader could not read back (its graph file is gone or corrupt): it is
    listed FAILED with the reason, so the user sees it, and the other jobs recover. It stands where
    the Dispatcher keeps JobMasters (the same reading methods)."""

    def __init__(self, job_id: str, error: BaseException) -> None:
        now = time.time_ns() // 1_000_000
        self.job_id = job_id
        self.job_name = f"(job {job_id[:8]}: failed to recover)"
        self._details = JobDetails(job_id, self.job_name, JobStatus.FAILED, now, now, 0, (),
                                   {JobStatus.FAILED.name: now}, error)
        self.result_future: CompletableFuture[JobResult] = CompletableFuture()
        self.result_future.complete(JobResult(job_id, self.job_name, JobStatus.FAILED, 0, {}, error))

    def request_job_details(self) -> JobDetails:
        """FAILED, with the recovery error as its cause."""
        return self._details

    def add_status_listener(self, listener: Callable[[JobDetails], None]) -> None:
        """Called once: the status never changes."""
        listener(self._details)

    def cancel(self) -> None:
        """Nothing runs."""

    def suspend(self) -> None:
        """Nothing runs."""

    def join(self, timeout: Optional[float] = None) -> None:
        """Nothing runs."""


class JobPersistence:
    """The Dispatcher's use of the HA stores (see the module)."""

    def __init__(self, services: "HighAvailabilityServices") -> None:
        self.services = services
        self.plans = services.execution_plan_store()
        self.results = services.job_result_store()
        self.checkpoint_recovery = services.checkpoint_recovery_factory()

    def persist(self, plan: ExecutionPlan) -> None:
        """Write the job's plan before it runs (raises when it cannot be written: the submission fails)."""
        self.plans.put_execution_plan(plan.job_id, plan)

    def recoverable(self) -> tuple[list[ExecutionPlan], list[UnrecoverableJob]]:
        """The persisted jobs without a result, read back; those that cannot be read, as failed entries.
        Jobs whose clean-up a previous leader left unfinished (dirty results) are cleaned up first."""
        self.finish_cleanups()
        plans: list[ExecutionPlan] = []
        failed: list[UnrecoverableJob] = []
        for job_id in self.plans.get_job_ids():
            if self.results.has_job_result_entry(job_id):
                continue
            try:
                plan = self.plans.recover_execution_plan(job_id)
            except Exception as error:  # noqa: BLE001 - ExecutionPlanRecoveryError: corrupt or missing file
                _LOG.error("job %s cannot be recovered: %s", job_id, error)
                failed.append(UnrecoverableJob(job_id, error))
                continue
            if isinstance(plan, ExecutionPlan):
                plans.append(plan)
            elif plan is not None:
                failed.append(UnrecoverableJob(job_id, TypeError(
                    f"the execution plan of job {job_id} holds a {type(plan).__name__}, not an ExecutionPlan")))
        plans.sort(key=lambda p: p.submitted_at)
        return plans, failed

    def job_terminated(self, master: "JobMaster", result: JobResult) -> None:
        """A job ended (called in its JobMaster's thread before its result is published). Globally
        terminal: result dirty, data removed, result clean. SUSPENDED: nothing (the next leader
        recovers it)."""
        if not result.status.is_globally_terminal_state():
            return
        failure = None if result.failure_cause is None else f"{type(result.failure_cause).__name__}: " \
                                                            f"{result.failure_cause}"
        entry = JobResultEntry(StoredJobResult.from_job_status(result.job_id, result.status.name,
                                                               result.net_runtime_ms, {}, failure))
        try:
            self.results.create_dirty_result(entry)
        except Exception as error:  # noqa: BLE001 - no longer leading: the next leader recovers the job
            _LOG.warning("the result of job %s could not be recorded (%s); its data stays for the next leader",
                         result.job_id, error)
            return
        master.cleanup_checkpoints(result.status)
        self._clean(result.job_id)

    def finish_cleanups(self) -> None:
        """Finish the clean-up of jobs a previous leader recorded as terminated but did not clean."""
        for stored in self.results.get_dirty_results():
            status = {"SUCCEEDED": "FINISHED", "CANCELED": "CANCELED"}.get(stored.application_status, "FAILED")
            JobCheckpointServices.create(self.checkpoint_recovery, stored.job_id, 1).shutdown(status)
            self._clean(stored.job_id)

    def _clean(self, job_id: str) -> None:
        try:
            self.plans.global_cleanup(job_id)
            self.results.mark_result_as_clean(job_id)
        except Exception as error:  # noqa: BLE001 - the next leader finishes it (the result stays dirty)
            _LOG.warning("the clean-up of job %s is left to the next leader: %s", job_id, error)
