"""The TaskExecutorGateway and the messages a TaskManager sends and receives.

The three gateways are the only way the JobManager's parts and the TaskManagers talk to each
other: this one, :mod:`streamkernel.runtime.jobmaster.gateway` and
:mod:`streamkernel.runtime.resourcemanager.gateway`.

Flink's components talk through narrow RPC gateways (``TaskExecutorGateway``,
``JobMasterGateway``, ``ResourceManagerGateway``). Here each is a :class:`typing.Protocol`
with a handful of methods whose arguments and answers are plain, picklable messages (the
dataclasses below, a TaskDeploymentDescriptor, ids). The ``local`` backend passes the
objects themselves; the ``process`` and ``spark`` backends put a TCP proxy with the same
methods behind each protocol, so nothing else changes.

A gateway passed *as an argument* (``submit_task(..., job_master)``,
``register_task_executor(gateway, ...)``) is the one exception to "plain data": an RPC
backend sends the peer's address instead and builds a proxy on the other side, as Flink's
RPC layer does with gateway addresses.

Who calls what::

    TaskExecutor  --register_task_executor-->  ResourceManager
    JobMaster     --request_slots/release_slots--> ResourceManager
    JobMaster     --submit_task/cancel_task/release_job--> TaskExecutor
    JobMaster     --trigger_checkpoint/notify_checkpoint_complete--> TaskExecutor
    TaskExecutor  --update_task_execution_state--> JobMaster
    TaskExecutor  --acknowledge_checkpoint/decline_checkpoint--> JobMaster   (from task threads)
    ResourceManager --heartbeat--> TaskExecutor, --disconnect_taskmanager--> JobMaster
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Optional, Protocol, runtime_checkable

from streamkernel.errors import StreamKernelError
from streamkernel.graph.execution_graph import SlotId
from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.core.deployment import TaskDeploymentDescriptor
    from streamkernel.runtime.jobmaster.gateway import JobMasterGateway

__all__ = [
    "SlotStatus",
    "SlotReport",
    "AllocatedSlot",
    "TaskExecutorRegistration",
    "TaskExecutionState",
    "TaskStatus",
    "TaskExecutorHeartbeat",
    "TaskExecutorGateway",
    "TaskExecutorStoppedError",
    "TaskManagerLostError",
]


# ------------------------------------------------------------------------------- messages
@dataclass(frozen=True)
class SlotStatus:
    """One slot of a TaskManager as the TaskManager sees it: the job and the subtasks in it.

    ``tasks`` are the names (``"Map -> Filter (2/4)"``) of the subtasks running in the slot;
    with slot sharing one slot holds one subtask of several job vertices.
    """

    slot_index: int
    job_id: Optional[str] = None
    tasks: tuple[str, ...] = ()


@dataclass(frozen=True)
class SlotReport:
    """Flink's SlotReport: every slot of one TaskManager, sent at registration and heartbeats."""

    taskmanager_id: str
    slots: tuple[SlotStatus, ...]

    @property
    def number_of_slots(self) -> int:
        """How many slots the TaskManager offers."""
        return len(self.slots)


@dataclass(frozen=True, order=True)
class AllocatedSlot:
    """A task slot the ResourceManager gave to a job (Flink's AllocatedSlot / SlotOffer).

    ``slot_id`` is the cluster-wide, index-based id (``TM1/slot2``, as ExecutionGraphs are
    drawn); ``taskmanager_id`` names the TaskManager that owns the slot and
    ``slot_id.slot_index`` is the slot's number inside it.
    """

    slot_id: SlotId
    taskmanager_id: str
    job_id: str
    allocation_id: str

    def __str__(self) -> str:
        return str(self.slot_id)


@dataclass(frozen=True)
class TaskExecutorRegistration:
    """The ResourceManager's answer to a registration: the TaskManager's index in the cluster."""

    taskmanager_index: int


@dataclass(frozen=True)
class TaskExecutionState:
    """Flink's TaskExecutionState: a subtask attempt changed state (sent by its TaskManager).

    ``error`` is set for FAILED. ``metrics`` carries the task's final
    :meth:`~streamkernel.runtime.core.metrics.TaskMetrics.snapshot` with a terminal state (as
    Flink ships final IO metrics with the last update), so finished jobs keep their figures.
    An RPC backend replaces an unpicklable ``error`` by a description of it.
    """

    attempt_id: ExecutionAttemptId
    state: ExecutionState
    error: Optional[BaseException] = None
    metrics: Optional[Mapping[str, Any]] = None


@dataclass(frozen=True)
class TaskStatus:
    """One deployed subtask in a heartbeat: where it runs, its state and live metrics."""

    attempt_id: ExecutionAttemptId
    name: str
    slot_index: int
    state: ExecutionState
    metrics: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskExecutorHeartbeat:
    """A TaskManager's answer to a heartbeat: its slots and the live state of its tasks."""

    taskmanager_id: str
    slot_report: SlotReport
    tasks: tuple[TaskStatus, ...] = ()
    #: The process's memory now (bytes: ``rss``, ``process_size``, ``task_heap``, ``task_heap_used_estimate``,
    #: ``baseline_rss``, ``managed_used``, ``network_used``; ``enforced``), see :mod:`.memory_watchdog`; None
    #: when not measured.
    memory: Optional[dict] = None
    #: per slot index, its managed memory and what uses it now (:meth:`TaskExecutor.memory_metrics`)
    slot_memory: dict = field(default_factory=dict, hash=False)
    #: The TaskManager's own metrics by Flink's names (``Status.Shuffle.Netty.TotalMemorySegments``, ...:
    #: :func:`streamkernel.runtime.network.buffer_pool.network_buffer_metrics`)
    metrics: Mapping[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------- gateways
class TaskManagerLostError(StreamKernelError):
    """A TaskManager left the cluster (stopped, or missed its heartbeats) while running subtasks
    (raised by the ResourceManager; here, below it, so that a TaskManager can name its own end)."""


class TaskExecutorStoppedError(StreamKernelError):
    """A TaskManager was asked to do something after it stopped: it is gone for good."""


@runtime_checkable
class TaskExecutorGateway(Protocol):
    """What the JobManager may ask of a TaskManager (Flink's TaskExecutorGateway)."""

    @property
    def taskmanager_id(self) -> str:
        """The TaskManager's id (Flink's ResourceID), unique in the cluster."""

    def submit_task(self, tdd: "TaskDeploymentDescriptor", slot: AllocatedSlot,
                    job_master: "JobMasterGateway") -> None:
        """Start a subtask in ``slot``; its state changes go to ``job_master``.

        Raises if the slot is not this TaskManager's or the TaskManager is shutting down.
        """

    def cancel_task(self, attempt_id: ExecutionAttemptId) -> None:
        """Cancel a subtask (cooperatively); it reports CANCELED when its thread ended.

        Unknown or already finished attempts are ignored.
        """

    def release_job(self, job_id: str) -> None:
        """The job ended: free its channels (``shuffle.release(job_id)``) and forget its tasks."""

    def trigger_checkpoint(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, timestamp: int,
                           is_savepoint: bool = False, synchronous: bool = False, drain: bool = False) -> None:
        """Tell a source subtask to take checkpoint ``checkpoint_id`` between two batches and
        send its barrier downstream (Flink's ``triggerCheckpoint``); returns at once.
        ``synchronous``: a stop-with-savepoint's savepoint (``drain``: MAX_WATERMARK first).

        Unknown or ended attempts are ignored: the JobMaster learns of their end anyway.
        """

    def notify_checkpoint_complete(self, attempt_id: ExecutionAttemptId, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: the subtask's operators may commit
        (Flink's ``confirmCheckpoint``); returns at once, ignores unknown or ended attempts."""

    def notify_checkpoint_aborted(self, attempt_id: ExecutionAttemptId, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` failed (Flink's ``abortCheckpoint``): a subtask waiting at
        a stop-with-savepoint's barrier goes on; returns at once, ignores unknown or ended attempts."""

    def heartbeat(self) -> TaskExecutorHeartbeat:
        """Answer a heartbeat with the slot report and live task metrics; raises once stopped."""

    def shutdown(self) -> None:
        """Cancel every task, wait for their threads, stop answering."""
