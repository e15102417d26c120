"""Deploying the attempts of a job: the JobMaster's hands on the TaskManagers (Flink's ``ExecutionDeployer``).

Each attempt of a job (0 at submission, then one per restart) is deployed afresh: the
:class:`ExecutionDeployer` builds one
:class:`~streamkernel.runtime.core.deployment.TaskDeploymentDescriptor` per subtask, carrying
the state the attempt starts from (:meth:`ExecutionDeployer.restored_state_for`), asks the
ResourceManager for the slots (``slot.request.timeout``), submits each descriptor to the
TaskManager owning the slot the JobStateMachine chose, cancels subtasks, and releases the
job's channels and slots on every TaskManager it used.

It decides nothing: the JobMaster calls it for the ``DeployTask``, ``CancelTask``,
``ReleaseChannels`` and ``ReleaseResources`` actions of its
:class:`~.job_state_machine.JobStateMachine`, always in the JobMaster's thread. A
TaskManager that cannot be reached is reported back through ``report`` as the subtask's
failure (when deploying) or cancellation (when cancelling): queued like any task update,
so the rest of a batch of deployments goes out first and the state machine handles the
failure consistently afterwards.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable, Mapping, Optional

from streamkernel.runtime.core.engine_log import CONCERNS_USER
from streamkernel.common.options import JobManagerOptions
from streamkernel.errors import CheckpointCorruptedError
from streamkernel.graph.job_graph import JobGraph
from streamkernel.runtime.core.deployment import ExecutionState, TaskDeploymentDescriptor
from streamkernel.runtime.jobmaster.checkpointing import JobCheckpointing
from streamkernel.runtime.jobmaster.gateway import JobMasterGateway
from streamkernel.runtime.jobmaster.job_actions import CancelTask, DeployTask
from streamkernel.runtime.jobmaster.scheduler import SubtaskKey, build_deployment_descriptors, shuffle_addresses
from streamkernel.runtime.jobmaster.state_recovery import StateRecovery
from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway
from streamkernel.runtime.taskmanager.gateway import AllocatedSlot, TaskExecutionState

__all__ = ["ExecutionDeployer", "slot_request_timeout_ms", "DEFAULT_SLOT_REQUEST_TIMEOUT_MS"]

_LOG = logging.getLogger(__name__)

#: ``slot.request.timeout`` default. Flink waits 5 minutes (300000 ms) for slots; in a
#: notebook a cell that blocks 5 minutes before saying "the cluster is too small" is
#: useless, while 30 s still covers waiting for another job of the session to end.
DEFAULT_SLOT_REQUEST_TIMEOUT_MS = JobManagerOptions.SLOT_REQUEST_TIMEOUT.default_value().to_milliseconds()  # type: ignore[union-attr]


def slot_request_timeout_ms(configuration: Mapping[str, Any]) -> int:
    """``slot.request.timeout`` from a configuration (ms, or Flink duration text like ``"10 s"``)."""
    return JobManagerOptions.SLOT_REQUEST_TIMEOUT.get(configuration).to_milliseconds()


class ExecutionDeployer:
    """Deploys, cancels and releases the subtasks of one job's attempts (see the module docstring).

    ``recovery`` and ``checkpointing`` are the job's; ``report(update)`` queues a subtask's
    state change for the JobMaster's thread; ``report_warning(error, now_ms)`` records a
    warning in the job's exception history (a corrupt checkpoint skipped at recovery);
    ``now_ms()`` is the JobMaster's clock.
    """

    def __init__(self, job_id: str, job_name: str, job_graph: JobGraph, configuration: Mapping[str, str],
                 resource_manager: ResourceManagerGateway, *, recovery: StateRecovery,
                 checkpointing: JobCheckpointing, report: Callable[[TaskExecutionState], None],
                 report_warning: Callable[[BaseException, int], Any], now_ms: Callable[[], int]) -> None:
        self._job_id = job_id
        self._job_name = job_name
        self._job_graph = job_graph
        self._configuration = configuration
        self._resource_manager = resource_manager
        self._recovery = recovery
        self._checkpointing = checkpointing
        self._report = report
        self._report_warning = report_warning
        self._now_ms = now_ms
        self.slot_timeout_ms = slot_request_timeout_ms(configuration)
        """How long a slot request waits (``slot.request.timeout``)."""
        self._descriptors: dict[SubtaskKey, TaskDeploymentDescriptor] = {}
        self._placement: dict[SubtaskKey, str] = {}  # subtask -> TaskManager id, of the slots allocated last
        self._taskmanagers_used: set[str] = set()
        self.prepared_attempt = -1
        """The attempt whose deployment descriptors are ready (-1: none yet)."""

    # ------------------------------------------------------------- one attempt's state
    def restored_state_for(self, attempt: int) -> Optional[Mapping[SubtaskKey, Mapping[str, Any]]]:
        """The state attempt ``attempt`` of the job starts from: subtask -> its restored state.

        Each subtask's entry goes into its ``TaskDeploymentDescriptor.restored_state`` (the
        shape :mod:`streamkernel.runtime.tasks.task_checkpoint` restores). Attempt 0 starts from ``execution.state-recovery.path`` (1.x
        ``execution.savepoint.path``) if set; a restart from the latest valid completed
        checkpoint (corrupt ones are skipped and reported in the exception history and the
        log), else from the first attempt's checkpoint. None means "start from scratch" (only
        for a job that completed no checkpoint): the sources read from the beginning, as in
        Flink. Raises when the state cannot be restored: a missing or corrupt savepoint, state
        without a matching uid, a parallelism above the max parallelism (the job fails), or
        no restorable checkpoint left at a restart (the restart strategy decides).
        """
        choice = self._recovery.choose(attempt, self._checkpointing.completed_ids)
        now = self._now_ms()
        for skipped in choice.skipped:
            message = choice.describe_skipped(skipped)
            _LOG.warning("job %r: %s", self._job_name, message, extra=CONCERNS_USER)
            self._report_warning(CheckpointCorruptedError(skipped.path, message), now)
        if choice.checkpoint is None:
            return None
        restored = self._recovery.assign(choice.checkpoint)
        self._checkpointing.restored(choice.checkpoint, now)
        _LOG.info("job %r attempt %d restores %r", self._job_name, attempt, choice.checkpoint)
        return restored

    def prepare_attempt(self, attempt: int) -> None:
        """Build the deployment descriptors of attempt ``attempt``, each with the state its
        subtask starts from (:meth:`restored_state_for`). Raises as that method does."""
        descriptors = build_deployment_descriptors(self._job_id, self._job_graph, attempt_number=attempt,
                                                   configuration=self._configuration)
        restored = self.restored_state_for(attempt) or {}
        self._descriptors = {k: dataclasses.replace(tdd, restored_state=restored[k]) if restored.get(k) else tdd
                             for k, tdd in descriptors.items()}
        self.prepared_attempt = attempt

    # ------------------------------------------------------- ResourceManager, TaskManagers
    def request_slots(self, count: int, job_master: JobMasterGateway) -> tuple[AllocatedSlot, ...]:
        """``count`` slots from the ResourceManager, all at once; blocks the caller until they
        come. Raises NotEnoughSlotsError after ``slot.request.timeout``, and
        SlotRequestCancelledError when the job is cancelled meanwhile."""
        return self._resource_manager.request_slots(self._job_id, count, self.slot_timeout_ms,
                                                    job_name=self._job_name, job_master=job_master)

    def set_placement(self, placement: Mapping[SubtaskKey, AllocatedSlot]) -> None:
        """Where the next deployments go (subtask -> slot): channels to subtasks in other
        TaskManager processes then get those TaskManagers' data-listener addresses."""
        self._placement = {key: slot.taskmanager_id for key, slot in placement.items()}

    def _with_shuffle_addresses(self, key: SubtaskKey, tdd: TaskDeploymentDescriptor) -> TaskDeploymentDescriptor:
        addresses: dict[str, Any] = {}
        for taskmanager_id in set(self._placement.values()):
            try:
                gateway = self._resource_manager.task_executor_gateway(taskmanager_id)
            except Exception:  # noqa: BLE001 - gone: its channels fail when used
                continue
            addresses[taskmanager_id] = getattr(gateway, "data_address", None)  # None: in this process
        if not any(addresses.values()):
            return tdd
        consumers = {index: edge.target_vertex_id for index, edge in enumerate(self._job_graph.edges)}
        remote = shuffle_addresses(tdd.outputs, self._placement.get(key), self._placement, consumers, addresses)
        return dataclasses.replace(tdd, shuffle_addresses=remote)

    def deploy(self, action: DeployTask, job_master: JobMasterGateway) -> None:
        """Submit the prepared subtask of ``action`` to the TaskManager owning its slot."""
        tdd = self._with_shuffle_addresses(action.key, self._descriptors[action.key])
        try:
            gateway = self._resource_manager.task_executor_gateway(action.slot.taskmanager_id)
            self._taskmanagers_used.add(action.slot.taskmanager_id)
            gateway.submit_task(tdd, action.slot, job_master)
        except Exception as error:  # noqa: BLE001 - reported as the subtask's failure
            # Queued, not handled here: the remaining deployments of this batch go out first,
            # then the failure cancels all of them consistently.
            self._report(TaskExecutionState(tdd.attempt_id, ExecutionState.FAILED, error))

    def cancel(self, action: CancelTask) -> None:
        """Ask the subtask's TaskManager to cancel it (gone: the subtask is reported CANCELED)."""
        try:
            self._resource_manager.task_executor_gateway(action.slot.taskmanager_id).cancel_task(action.attempt_id)
        except Exception:  # noqa: BLE001 - the TaskManager is gone, and the task with it
            self._report(TaskExecutionState(action.attempt_id, ExecutionState.CANCELED))

    def release_channels(self) -> None:
        """Drop the job's channels on every TaskManager it used (before a restart, at the end)."""
        for taskmanager_id in sorted(self._taskmanagers_used):
            try:
                self._resource_manager.task_executor_gateway(taskmanager_id).release_job(self._job_id)
            except Exception:  # noqa: BLE001 - a TaskManager gone has nothing left to release
                _LOG.debug("could not release job %s on %s", self._job_id, taskmanager_id, exc_info=True)

    def release_resources(self) -> None:
        """The job is over: release its channels, then give its slots back to the ResourceManager."""
        self.release_channels()
        try:
            self._resource_manager.release_slots(self._job_id)
        except Exception:  # noqa: BLE001
            _LOG.exception("could not release the slots of job %r", self._job_name)
