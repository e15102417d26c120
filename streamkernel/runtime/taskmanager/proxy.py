"""A TaskManager in another process, seen from the JobManager: the TaskExecutorGateway over RPC."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from streamkernel.runtime.rpc.connection import RpcConnectionLostError
from streamkernel.runtime.rpc.proxies import RemoteProxy
from streamkernel.runtime.rpc.serialization import portable_exception
from streamkernel.runtime.taskmanager.gateway import AllocatedSlot, TaskExecutorHeartbeat, TaskExecutorStoppedError

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.core.deployment import ExecutionAttemptId, TaskDeploymentDescriptor

__all__ = ["TaskExecutorProxy", "TaskManagerConnectionLostError"]


class TaskManagerConnectionLostError(TaskExecutorStoppedError):
    """The connection to a TaskManager process is gone: the process died or stopped, for good."""


class TaskExecutorProxy(RemoteProxy):
    """A TaskManager in another process (a TaskExecutorGateway), seen from the JobManager.

    ``heartbeat_timeout`` (s) bounds a heartbeat call: a TaskManager that does not answer
    in time counts as silent for this round. A lost connection raises
    :class:`TaskManagerConnectionLostError` (a TaskExecutorStoppedError): the
    ResourceManager then unregisters it at once instead of waiting for ``heartbeat.timeout``.
    """

    heartbeat_timeout: float = 1.0

    @property
    def taskmanager_id(self) -> str:
        """The TaskManager's id."""
        return self._attributes["taskmanager_id"]

    @property
    def data_address(self) -> Optional[tuple[str, int]]:
        """The (host, port) of the TaskManager's data listener (its network shuffle), or None."""
        return self._attributes.get("data_address")

    @property
    def log_file(self) -> Optional[str]:
        """The TaskManager's log file as it reported it at registration (``log.file``), or None."""
        return self._attributes.get("log_file")

    def _lost(self, error: RpcConnectionLostError) -> TaskManagerConnectionLostError:
        return TaskManagerConnectionLostError(f"TaskManager {self.taskmanager_id!r} is unreachable: {error}")

    def submit_task(self, tdd: "TaskDeploymentDescriptor", slot: AllocatedSlot, job_master: Any) -> None:
        """Deploy a subtask (a call: deployment errors are raised here)."""
        self._call("submit_task", tdd, slot, job_master)

    def cancel_task(self, attempt_id: "ExecutionAttemptId") -> None:
        """Cancel a subtask."""
        self._call("cancel_task", attempt_id)

    def release_job(self, job_id: str) -> None:
        """Free the job's channels and forget its tasks."""
        self._call("release_job", job_id)

    def trigger_checkpoint(self, attempt_id: "ExecutionAttemptId", checkpoint_id: int, timestamp: int,
                           is_savepoint: bool = False, synchronous: bool = False, drain: bool = False) -> None:
        """Trigger a checkpoint at a source subtask (a tell)."""
        self._tell("trigger_checkpoint", attempt_id, checkpoint_id, timestamp, is_savepoint, synchronous, drain)

    def notify_checkpoint_complete(self, attempt_id: "ExecutionAttemptId", checkpoint_id: int) -> None:
        """Confirm a completed checkpoint to a subtask (a tell)."""
        self._tell("notify_checkpoint_complete", attempt_id, checkpoint_id)

    def notify_checkpoint_aborted(self, attempt_id: "ExecutionAttemptId", checkpoint_id: int) -> None:
        """Tell a subtask that a checkpoint failed (a tell)."""
        self._tell("notify_checkpoint_aborted", attempt_id, checkpoint_id)

    def heartbeat(self) -> TaskExecutorHeartbeat:
        """The TaskManager's slot report and live task metrics (waits ``heartbeat_timeout`` s at most)."""
        try:
            return self._call("heartbeat", timeout=self.heartbeat_timeout)
        except RpcConnectionLostError as error:
            raise self._lost(error) from error

    def inject_failure(self, attempt_id: "ExecutionAttemptId", error: BaseException) -> bool:
        """Make a running subtask fail with ``error`` (failure injection)."""
        return self._call("inject_failure", attempt_id, portable_exception(error))

    def peek(self, attempt_id: "ExecutionAttemptId", node_id: int, limit: int, seconds: float) -> list:
        """The last records an operator of a running subtask emits (``%flink peek``)."""
        return self._call("peek", attempt_id, node_id, limit, seconds, timeout=seconds + 30)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Cancel every task and stop (the TaskManager's process then exits)."""
        self._call("shutdown", timeout, timeout=timeout + self._rpc.default_timeout)
