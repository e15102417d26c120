"""The ResourceManagerGateway: what TaskManagers and JobMasters may ask of the ResourceManager."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Protocol, runtime_checkable

from streamkernel.runtime.taskmanager.gateway import (
    AllocatedSlot,
    SlotReport,
    TaskExecutorGateway,
    TaskExecutorHeartbeat,
    TaskExecutorRegistration,
)

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.jobmaster.gateway import JobMasterGateway

__all__ = ["ResourceManagerGateway", "TaskManagerSnapshot"]


@dataclass(frozen=True)
class TaskManagerSnapshot:
    """What the ResourceManager last learnt about one registered TaskManager (read-only, for the
    REST API and other readers: taking it never calls the TaskManager).

    ``registered_at`` is when it registered (ms since the epoch); ``heartbeat_age_ms`` the
    time since its last heartbeat answer (or its registration); ``last_heartbeat`` that
    answer (its slots and its tasks' live metrics; None before the first heartbeat);
    ``allocated`` the job id holding each of its slots (None: free), slot by slot.
    """

    taskmanager_id: str
    index: int
    number_of_slots: int
    registered_at: int
    heartbeat_age_ms: int
    allocated: tuple[Optional[str], ...]
    last_heartbeat: Optional[TaskExecutorHeartbeat] = None

    @property
    def free_slots(self) -> int:
        """Slots no job holds."""
        return sum(1 for job in self.allocated if job is None)


@runtime_checkable
class ResourceManagerGateway(Protocol):
    """What TaskManagers and JobMasters may ask of the ResourceManager."""

    def register_task_executor(self, gateway: TaskExecutorGateway,
                               slot_report: SlotReport) -> TaskExecutorRegistration:
        """A TaskManager joins the cluster and offers its slots."""

    def unregister_task_executor(self, taskmanager_id: str, cause: Optional[BaseException] = None) -> None:
        """A TaskManager leaves; jobs with slots on it are told (``disconnect_taskmanager``)."""

    def request_slots(self, job_id: str, count: int, timeout_ms: int, *, job_name: str = "",
                      job_master: Optional[JobMasterGateway] = None) -> tuple[AllocatedSlot, ...]:
        """Allocate ``count`` free slots to a job, waiting up to ``timeout_ms`` for them.

        Raises NotEnoughSlotsError naming need, free and total slots after the timeout.
        """

    def cancel_slot_request(self, job_id: str) -> None:
        """Abort the job's pending (or next) slot request: it raises SlotRequestCancelledError."""

    def release_slots(self, job_id: str) -> None:
        """Return every slot of the job to the free pool (idempotent)."""

    def task_executor_gateway(self, taskmanager_id: str) -> TaskExecutorGateway:
        """The gateway of a registered TaskManager."""

    def taskmanager_snapshots(self) -> tuple[TaskManagerSnapshot, ...]:
        """Every registered TaskManager as last seen (slots, allocations, last heartbeat), in index order."""
