"""What the JobMaster's state machine decides, and what it tracks per subtask.

The *actions* (:data:`Action`: request slots, deploy or cancel a task, release resources,
schedule a restart, report the end) are what :class:`~.job_state_machine.JobStateMachine`
returns from each event for its driver, :class:`~.jobmaster.JobMaster`, to carry out;
:class:`Execution` is the current attempt of one subtask (Flink's Execution).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Union

from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState
from streamkernel.runtime.jobmaster.job_status import JobResult
from streamkernel.runtime.jobmaster.scheduler import SubtaskKey
from streamkernel.runtime.taskmanager.gateway import AllocatedSlot

__all__ = [
    "Execution",
    "RequestSlots",
    "DeployTask",
    "CancelTask",
    "ReleaseChannels",
    "ReleaseSlots",
    "ReleaseResources",
    "ScheduleRestart",
    "JobTerminated",
    "Action",
]


# --------------------------------------------------------------------------------- actions
@dataclass(frozen=True)
class RequestSlots:
    """Ask the ResourceManager for ``count`` slots (answer: ``slots_allocated`` or ``slot_request_failed``)."""

    count: int


@dataclass(frozen=True)
class DeployTask:
    """Deploy attempt ``attempt_number`` of subtask ``key`` (vertex id, index) into ``slot``."""

    key: SubtaskKey
    attempt_number: int
    slot: AllocatedSlot


@dataclass(frozen=True)
class CancelTask:
    """Cancel a deployed subtask attempt on the TaskManager owning ``slot``."""

    attempt_id: ExecutionAttemptId
    slot: AllocatedSlot


@dataclass(frozen=True)
class ReleaseChannels:
    """Free the job's channels on its TaskManagers: after cancelling its tasks, before a restart."""


@dataclass(frozen=True)
class ReleaseSlots:
    """Give the job's slots back to the ResourceManager (before asking for new ones)."""


@dataclass(frozen=True)
class ReleaseResources:
    """The job ended: free its channels and its slots."""


@dataclass(frozen=True)
class ScheduleRestart:
    """Call ``restart_due`` after ``delay_ms``."""

    delay_ms: int


@dataclass(frozen=True)
class JobTerminated:
    """The job reached a globally terminal state: report ``result``."""

    result: JobResult


Action = Union[RequestSlots, DeployTask, CancelTask, ReleaseChannels, ReleaseSlots, ReleaseResources,
               ScheduleRestart, JobTerminated]


# ------------------------------------------------------------------------------ executions
@dataclass
class Execution:
    """The current attempt of one subtask (Flink's Execution): its state, slot, failure."""

    key: SubtaskKey
    name: str
    state: ExecutionState = ExecutionState.CREATED
    attempt_number: int = 0
    slot: Optional[AllocatedSlot] = None
    failure: Optional[BaseException] = None
    reached_running: bool = False
    cancel_requested: bool = False
    state_timestamps: dict[str, int] = field(default_factory=dict)
    metrics: Optional[Mapping[str, Any]] = None

    def set_state(self, state: ExecutionState, now_ms: int) -> None:
        """Move to ``state`` at ``now_ms``."""
        self.state = state
        self.state_timestamps[state.value] = now_ms
        if state in (ExecutionState.RUNNING, ExecutionState.FINISHED):
            self.reached_running = True
