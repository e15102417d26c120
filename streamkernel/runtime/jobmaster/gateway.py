"""The JobMasterGateway: what TaskManagers, the ResourceManager and the Dispatcher may ask of a JobMaster.

The messages it takes are the TaskManager's (:mod:`streamkernel.runtime.taskmanager.gateway`);
who calls what is drawn there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Protocol, runtime_checkable

from streamkernel.runtime.core.deployment import ExecutionAttemptId
from streamkernel.runtime.taskmanager.gateway import TaskExecutionState

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.checkpoint.checkpoint_metrics import CheckpointMetrics
    from streamkernel.runtime.jobmaster.job_status import JobDetails

__all__ = ["JobMasterGateway"]


@runtime_checkable
class JobMasterGateway(Protocol):
    """What TaskManagers, the ResourceManager and the Dispatcher may ask of one job's JobMaster."""

    @property
    def job_id(self) -> str:
        """The job this JobMaster runs (32 hex digits)."""

    def update_task_execution_state(self, update: TaskExecutionState) -> None:
        """A subtask changed state (called from the subtask's thread: must not block)."""

    def acknowledge_checkpoint(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, state_handle: Any,
                               checkpoint_metrics: Optional[CheckpointMetrics] = None) -> None:
        """A subtask stored its state for ``checkpoint_id`` (a StateHandle, or the snapshot
        itself when handed over in memory), having measured ``checkpoint_metrics`` (its sync and
        async parts, alignment, start delay). Called from the task's thread: must not block."""

    def decline_checkpoint(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, reason: str) -> None:
        """A subtask could not take ``checkpoint_id`` (its snapshot failed, or a newer barrier
        overtook it). Called from the task's thread: must not block."""

    def disconnect_taskmanager(self, taskmanager_id: str, cause: BaseException) -> None:
        """A TaskManager is gone (stopped, or missed its heartbeats): its subtasks are lost."""

    def cancel(self) -> None:
        """Cancel the job (asynchronously; the job's result tells when it is CANCELED)."""

    def request_job_details(self) -> "JobDetails":
        """The latest published status snapshot of the job."""
