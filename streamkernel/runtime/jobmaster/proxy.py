"""A job's JobMaster seen from a TaskManager process: the JobMasterGateway over RPC."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from streamkernel.runtime.rpc.proxies import RemoteProxy
from streamkernel.runtime.rpc.serialization import portable_exception
from streamkernel.runtime.taskmanager.gateway import TaskExecutionState

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.checkpoint.checkpoint_metrics import CheckpointMetrics
    from streamkernel.runtime.core.deployment import ExecutionAttemptId
    from streamkernel.runtime.jobmaster.job_status import JobDetails

__all__ = ["JobMasterProxy"]


class JobMasterProxy(RemoteProxy):
    """A job's JobMaster (a JobMasterGateway), seen from a TaskManager process."""

    @property
    def job_id(self) -> str:
        """The job's id."""
        return self._attributes["job_id"]

    def update_task_execution_state(self, update: TaskExecutionState) -> None:
        """Report a subtask's state change (a tell: order kept, never blocks on the JobMaster)."""
        error = portable_exception(update.error)
        if error is not update.error:
            update = TaskExecutionState(update.attempt_id, update.state, error, update.metrics)
        self._tell("update_task_execution_state", update)

    def acknowledge_checkpoint(self, attempt_id: "ExecutionAttemptId", checkpoint_id: int, state_handle: Any,
                               checkpoint_metrics: Optional["CheckpointMetrics"] = None) -> None:
        """A subtask stored its state for ``checkpoint_id`` (a tell)."""
        self._tell("acknowledge_checkpoint", attempt_id, checkpoint_id, state_handle, checkpoint_metrics)

    def decline_checkpoint(self, attempt_id: "ExecutionAttemptId", checkpoint_id: int, reason: str) -> None:
        """A subtask could not take ``checkpoint_id`` (a tell)."""
        self._tell("decline_checkpoint", attempt_id, checkpoint_id, reason)

    def disconnect_taskmanager(self, taskmanager_id: str, cause: BaseException) -> None:
        """A TaskManager is gone."""
        self._call("disconnect_taskmanager", taskmanager_id, portable_exception(cause))

    def cancel(self) -> None:
        """Cancel the job."""
        self._call("cancel")

    def request_job_details(self) -> "JobDetails":
        """The job's latest status snapshot."""
        return self._call("request_job_details")
