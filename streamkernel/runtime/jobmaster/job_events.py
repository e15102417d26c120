"""What reaches a JobMaster's thread: the events its driver feeds to the state machines.

Gateway calls from TaskManagers (task threads, RPC threads), the ResourceManager, the
Dispatcher and the checkpoint coordinator's callbacks only *enqueue* one of these events;
:class:`~.jobmaster.JobMaster` takes them from its queue in its own thread, one at a time
(Flink's JobMaster main-thread executor), and dispatches them by type, as it does with the
:mod:`.job_actions` its state machine returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from streamkernel.runtime.checkpoint.checkpoint_metrics import CheckpointMetrics
from streamkernel.runtime.core.deployment import ExecutionAttemptId
from streamkernel.runtime.jobmaster.checkpointing import CheckpointRequest
from streamkernel.runtime.taskmanager.gateway import TaskExecutionState

__all__ = [
    "TaskStateChanged",
    "CheckpointAcknowledged",
    "CheckpointDeclined",
    "CheckpointRequested",
    "GlobalFailure",
    "CancelRequested",
    "TaskManagerLost",
    "JobEvent",
]


@dataclass(frozen=True)
class TaskStateChanged:
    """A subtask changed state (``update_task_execution_state``, or the deployer's own report)."""

    update: TaskExecutionState


@dataclass(frozen=True)
class CheckpointAcknowledged:
    """A subtask stored its state for ``checkpoint_id`` (``acknowledge_checkpoint``), with what it
    measured of its part (None: nothing)."""

    attempt_id: ExecutionAttemptId
    checkpoint_id: int
    state_handle: Any
    checkpoint_metrics: Optional[CheckpointMetrics] = None


@dataclass(frozen=True)
class CheckpointDeclined:
    """A subtask could not take ``checkpoint_id`` (``decline_checkpoint``)."""

    attempt_id: ExecutionAttemptId
    checkpoint_id: int
    reason: str


@dataclass(frozen=True)
class CheckpointRequested:
    """A checkpoint or savepoint asked for by a user (``trigger_checkpoint``, ``trigger_savepoint``, ...)."""

    request: CheckpointRequest


@dataclass(frozen=True)
class GlobalFailure:
    """The whole job fails (e.g. too many failed checkpoints): no restart of single regions."""

    error: BaseException


@dataclass(frozen=True)
class CancelRequested:
    """Cancel the job (``cancel``, or the end of a stop-with-savepoint)."""


@dataclass(frozen=True)
class SuspendRequested:
    """The JobManager lost its leadership: suspend the job (``suspend``)."""


@dataclass(frozen=True)
class TaskManagerLost:
    """A TaskManager with subtasks of the job is gone (``disconnect_taskmanager``)."""

    taskmanager_id: str
    cause: BaseException


JobEvent = Union[TaskStateChanged, CheckpointAcknowledged, CheckpointDeclined, CheckpointRequested,
                 GlobalFailure, CancelRequested, SuspendRequested, TaskManagerLost]
