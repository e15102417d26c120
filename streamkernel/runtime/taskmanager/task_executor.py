"""The TaskExecutor: Flink's TaskManager, the worker that runs subtasks in its task slots.

A TaskExecutor offers a fixed number of task slots. After it registered them with the
ResourceManager, JobMasters deploy subtasks into the slots allocated to their job
(``submit_task``); each subtask runs as a :class:`~streamkernel.runtime.tasks.task.Task`, one
thread. The TaskExecutor forwards every state change of its tasks to the task's JobMaster
and answers heartbeats with its slot report and the live metrics of its tasks.

Checkpoints: the JobMaster triggers them at source tasks (``trigger_checkpoint``) and
confirms completed ones to every task (``notify_checkpoint_complete``); tasks answer through
the ``checkpoint_responder`` of the services they get, which forwards to their JobMaster
(:mod:`.checkpoint_responder`), and write their state through its ``checkpoint_storage``.

It is the same object for every backend: ``local`` creates it in the kernel's process
(:mod:`.local`), ``process``/``spark`` in a worker process behind a TCP gateway.

:meth:`TaskExecutor.kill` plays the death of a TaskManager's process for failure
injection: its tasks stop without a word to their JobMasters and it answers nothing any
more, so the ResourceManager only notices through missed heartbeats, as in Flink.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Optional

from streamkernel.runtime.core.engine_log import CONCERNS_USER
from streamkernel.errors import StreamKernelError
from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState, TaskDeploymentDescriptor
from streamkernel.runtime.taskmanager.checkpoint_responder import TaskCheckpointResponder, task_checkpoint_storage
from streamkernel.runtime.taskmanager.gateway import (
    AllocatedSlot,
    SlotReport,
    SlotStatus,
    TaskExecutionState,
    TaskExecutorHeartbeat,
    TaskExecutorStoppedError,
    TaskStatus,
)

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.jobmaster.gateway import JobMasterGateway
    from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway

__all__ = ["TaskExecutor", "TaskFactory", "TaskExecutorUnreachableError", "TASKMANAGER_WIDE"]

#: the key of :meth:`TaskExecutor.memory_metrics` under which the resources all slots share are reported
TASKMANAGER_WIDE = "taskmanager"

_LOG = logging.getLogger(__name__)

#: Builds a runnable task: ``factory(tdd, services, on_state_change)``; the default is
#: :class:`streamkernel.runtime.tasks.task.Task`.
TaskFactory = Callable[[TaskDeploymentDescriptor, Any, Callable[..., None]], Any]


class TaskExecutorUnreachableError(StreamKernelError):
    """A TaskManager does not answer: its process died (or, locally, it was killed)."""


@dataclass
class _Deployed:
    """A task this TaskExecutor started: the task object, its slot and its JobMaster."""

    task: Any
    name: str
    slot_index: int
    job_master: JobMasterGateway
    state: ExecutionState = ExecutionState.DEPLOYING


class TaskExecutor:
    """A TaskManager with ``number_of_slots`` task slots (Flink's TaskExecutor).

    ``services`` is what its tasks share (a :class:`~streamkernel.runtime.tasks.task.TaskServices`:
    shuffle environment, clock, id, working directory); a checkpoint responder (forwarding
    to each task's JobMaster) and the checkpoint storage factory are filled in when the
    services leave them unset. ``task_factory`` builds a task from a deployment descriptor
    (the runtime's Task unless given, e.g. by tests). ``managed_memory_per_slot`` (bytes) is
    each slot's share of the managed memory: every slot has a
    :class:`~streamkernel.runtime.memory.memory_manager.MemoryManager` of that size, lent to
    the tasks deployed into it; :meth:`memory_metrics` reports what they use.

    >>> tm = TaskExecutor("taskmanager-1", 2, services=None)     # doctest: +SKIP
    >>> tm.register_at(resource_manager)                          # doctest: +SKIP
    """

    def __init__(self, taskmanager_id: str, number_of_slots: int, services: Any,
                 task_factory: Optional[TaskFactory] = None, managed_memory_per_slot: int = 0,
                 configuration: Optional[Mapping[str, Any]] = None) -> None:
        if isinstance(number_of_slots, bool) or not isinstance(number_of_slots, int) or number_of_slots < 1:
            raise ValueError(f"TaskManager {taskmanager_id!r}: number_of_slots must be an int >= 1, "
                             f"got {number_of_slots!r}")
        self._taskmanager_id = taskmanager_id
        self.number_of_slots = number_of_slots
        self.services = _with_checkpoint_services(services, TaskCheckpointResponder(self._job_master_of))
        self._task_factory = task_factory
        from streamkernel.runtime.memory.memory_manager import MemoryManager

        #: each slot's managed memory (Flink: the MemoryManager of each TaskSlot)
        self.memory_managers = [MemoryManager(managed_memory_per_slot, slot) for slot in range(number_of_slots)]
        from streamkernel.runtime.memory.shared_resources import TaskManagerSharedResources
        from streamkernel.runtime.state.rocksdb_memory import taskmanager_shared_memory_size

        taskmanager_shared_memory_size(configuration or {})  # a wrong fixed-per-tm fails here, naming the key
        #: what every slot's tasks share (Flink's SharedResources; RocksDB's fixed-per-tm memory)
        self.shared_resources = TaskManagerSharedResources(configuration)
        self.index: Optional[int] = None
        #: The process's log file (Flink's ``log.file``), reported at registration; None: no file of its own.
        self.log_file: Optional[str] = None
        #: Measures (and, in a TaskManager process, enforces) the process size: a ProcessMemoryWatchdog; None: not measured.
        self.memory_watchdog: Any = None
        # The lock guards _tasks and _running; nothing calls out (to a JobMaster, a task)
        # while holding it, so task threads reporting states never wait on a busy caller.
        self._lock = threading.Lock()
        self._tasks: dict[ExecutionAttemptId, _Deployed] = {}
        self._running = True
        self._killed = False

    @property
    def taskmanager_id(self) -> str:
        """This TaskManager's id (Flink's ResourceID)."""
        return self._taskmanager_id

    @property
    def is_running(self) -> bool:
        """False once :meth:`shutdown` (or :meth:`kill`) was called."""
        return self._running

    @property
    def is_killed(self) -> bool:
        """True once :meth:`kill` was called: the TaskManager plays dead."""
        return self._killed

    def _check_reachable(self) -> None:
        if self._killed:
            raise TaskExecutorUnreachableError(
                f"TaskManager {self._taskmanager_id!r} does not answer: its process is dead (killed)")

    # ---------------------------------------------------------------- registration
    def register_at(self, resource_manager: ResourceManagerGateway) -> int:
        """Register with the ResourceManager, offering every slot; returns the TaskManager index."""
        registration = resource_manager.register_task_executor(self, self.slot_report())
        self.index = registration.taskmanager_index
        return registration.taskmanager_index

    def slot_report(self) -> SlotReport:
        """Every slot with the job and the live (non-terminal) subtasks it holds."""
        with self._lock:
            deployed = [(d.slot_index, attempt.job_id, d.name) for attempt, d in self._tasks.items()
                        if not d.state.is_terminal]
        slots = []
        for index in range(self.number_of_slots):
            here = [(job, name) for slot, job, name in deployed if slot == index]
            slots.append(SlotStatus(index, here[0][0] if here else None, tuple(sorted(name for _, name in here))))
        return SlotReport(self._taskmanager_id, tuple(slots))

    # ----------------------------------------------------------- TaskExecutorGateway
    def submit_task(self, tdd: TaskDeploymentDescriptor, slot: AllocatedSlot, job_master: JobMasterGateway) -> None:
        """Start the subtask ``tdd`` in ``slot``; its state changes go to ``job_master``."""
        self._check_reachable()
        if slot.taskmanager_id != self._taskmanager_id:
            raise ValueError(f"slot {slot} belongs to TaskManager {slot.taskmanager_id!r}, "
                             f"not to {self._taskmanager_id!r}")
        slot_index = slot.slot_id.slot_index
        if not 0 <= slot_index < self.number_of_slots:
            raise ValueError(f"TaskManager {self._taskmanager_id!r} has {self.number_of_slots} slots, "
                             f"no slot {slot_index + 1}")
        attempt_id = tdd.attempt_id
        task = self._create_task(tdd, slot_index)
        with self._lock:
            if not self._running:
                raise TaskExecutorStoppedError(
                    f"TaskManager {self._taskmanager_id!r} is stopped; cannot deploy {tdd.name_with_subtask}")
            if attempt_id in self._tasks:
                raise ValueError(f"{tdd.name_with_subtask} (attempt {attempt_id.attempt_number}) is already "
                                 f"deployed on TaskManager {self._taskmanager_id!r}")
            self._tasks[attempt_id] = _Deployed(task, tdd.name_with_subtask, slot_index, job_master)
        task.start()

    def _create_task(self, tdd: TaskDeploymentDescriptor, slot_index: int = 0) -> Any:
        factory = self._task_factory
        if factory is None:
            from streamkernel.runtime.tasks.task import Task  # lazy: keeps the gateway layer light

            factory = Task
        services = self.services
        if dataclasses.is_dataclass(services) and hasattr(services, "memory_manager"):
            services = dataclasses.replace(services, memory_manager=self.memory_managers[slot_index])  # type: ignore[type-var]
        if dataclasses.is_dataclass(services) and hasattr(services, "shared_resources"):
            services = dataclasses.replace(services, shared_resources=self.shared_resources)  # type: ignore[type-var]
        return factory(tdd, services, self._on_task_state)

    def memory_metrics(self) -> dict[Any, dict[str, dict[str, int]]]:
        """Per slot index: its managed memory ``size`` and what each shared consumer of it uses
        now (``{"rocksdb": {"capacity", "used", "write_buffer_usage", ..., "leases"}}``, bytes);
        under ``"taskmanager"`` (when any is used) what the slots share TaskManager-wide (RocksDB's
        fixed-per-tm memory), counted once."""
        report: dict[Any, dict[str, dict[str, int]]] = {
            m.slot_index: {"managed": {"size": m.size}, **m.metrics()} for m in self.memory_managers}
        shared = self.shared_resources.metrics()
        if shared:
            report[TASKMANAGER_WIDE] = shared
        return report

    def _on_task_state(self, attempt_id: ExecutionAttemptId, state: ExecutionState,
                       error: Optional[BaseException] = None) -> None:
        """Called by a task's own thread on every state change: forward to its JobMaster."""
        with self._lock:
            deployed = self._tasks.get(attempt_id)
            if deployed is None:
                return
            deployed.state = state
            if self._killed:
                return  # a dead process reports nothing
        metrics = _metrics_of(deployed.task) if state.is_terminal else None
        try:
            deployed.job_master.update_task_execution_state(TaskExecutionState(attempt_id, state, error, metrics))
        except Exception:  # noqa: BLE001 - a JobMaster gone must not kill the task's thread
            _LOG.exception("could not report %s of %s to its JobMaster", state.value, attempt_id)

    def _job_master_of(self, attempt_id: ExecutionAttemptId) -> Optional[JobMasterGateway]:
        """The JobMaster a task reports to (None if unknown, or if this TaskManager plays dead)."""
        with self._lock:
            deployed = self._tasks.get(attempt_id)
            return None if deployed is None or self._killed else deployed.job_master

    def _live_task(self, attempt_id: ExecutionAttemptId) -> Any:
        with self._lock:
            deployed = self._tasks.get(attempt_id)
        return None if deployed is None or deployed.state.is_terminal else deployed.task

    def trigger_checkpoint(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, timestamp: int,
                           is_savepoint: bool = False, synchronous: bool = False, drain: bool = False) -> None:
        """Tell a source subtask to take checkpoint ``checkpoint_id`` (it runs between two batches
        in the task's thread; ``synchronous``: a stop-with-savepoint's); unknown or ended attempts
        are ignored."""
        self._check_reachable()
        trigger = getattr(self._live_task(attempt_id), "trigger_checkpoint", None)
        if trigger is not None:
            trigger(checkpoint_id, timestamp, is_savepoint, synchronous, drain)

    def notify_checkpoint_complete(self, attempt_id: ExecutionAttemptId, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: the subtask's operators may commit now (in its
        thread); unknown or ended attempts are ignored."""
        self._check_reachable()
        notify = getattr(self._live_task(attempt_id), "notify_checkpoint_complete", None)
        if notify is not None:
            notify(checkpoint_id)

    def notify_checkpoint_aborted(self, attempt_id: ExecutionAttemptId, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` failed: a subtask waiting at a stop-with-savepoint's
        barrier goes on (in its thread); unknown or ended attempts are ignored."""
        self._check_reachable()
        notify = getattr(self._live_task(attempt_id), "notify_checkpoint_aborted", None)
        if notify is not None:
            notify(checkpoint_id)

    def cancel_task(self, attempt_id: ExecutionAttemptId) -> None:
        """Cancel a subtask; unknown or finished attempts are ignored."""
        self._check_reachable()
        with self._lock:
            deployed = self._tasks.get(attempt_id)
        if deployed is not None and not deployed.state.is_terminal:
            deployed.task.cancel()

    def release_job(self, job_id: str) -> None:
        """Free the job's channels and forget its (ended) tasks, joining their threads."""
        self._check_reachable()
        with self._lock:
            ended = [a for a, d in self._tasks.items() if a.job_id == job_id and d.state.is_terminal]
            tasks = [self._tasks.pop(a).task for a in ended]
        for task in tasks:
            task.join(1.0)
        release = getattr(getattr(self.services, "shuffle", None), "release", None)
        if release is not None:
            release(job_id)

    def heartbeat(self) -> TaskExecutorHeartbeat:
        """The slot report and the live state and metrics of every task still known."""
        self._check_reachable()
        if not self._running:
            raise TaskExecutorStoppedError(f"TaskManager {self._taskmanager_id!r} is stopped")
        with self._lock:
            deployed = list(self._tasks.items())
        tasks = tuple(TaskStatus(attempt, d.name, d.slot_index, d.state, _metrics_of(d.task))
                      for attempt, d in deployed)
        memory_metrics, metrics = self.memory_metrics(), self.metrics()
        watchdog = self.memory_watchdog
        usage = None
        if watchdog is not None:  # the task heap estimate subtracts the managed memory and buffers in use now
            from streamkernel.runtime.taskmanager.memory_watchdog import managed_memory_in_use, network_memory_in_use

            usage = watchdog.usage((managed_memory_in_use(memory_metrics), network_memory_in_use(metrics)))
        memory = usage.to_dict() if usage is not None else None
        if memory is not None and watchdog is not None:  # Flink's memoryConfiguration, for the REST API
            memory["configuration"] = watchdog.memory_configuration
        return TaskExecutorHeartbeat(self._taskmanager_id, self.slot_report(), tasks, memory, memory_metrics, metrics)

    def running_tasks(self) -> list[Any]:
        """The task objects of the subtasks deployed here that have not ended (metric reporters read
        their deployment descriptor and live metrics; nothing is asked of their threads)."""
        with self._lock:
            return [d.task for d in self._tasks.values() if not d.state.is_terminal]

    def metrics(self) -> dict:
        """The TaskManager's own metrics: its network buffers (total, reserved by tasks, holding data)."""
        pool = getattr(self.services, "network_buffer_pool", None)
        if pool is None:
            return {}
        from streamkernel.runtime.network.buffer_pool import network_buffer_metrics

        with self._lock:
            live = [d.task for d in self._tasks.values() if not d.state.is_terminal]
        return network_buffer_metrics(pool, live)

    def inject_failure(self, attempt_id: ExecutionAttemptId, error: BaseException) -> bool:
        """Make a running subtask fail with ``error``, raised in its own thread between two
        batches (failure injection). False if the attempt is unknown here or has ended."""
        self._check_reachable()
        with self._lock:
            deployed = self._tasks.get(attempt_id)
        if deployed is None or deployed.state.is_terminal:
            return False
        inject = getattr(deployed.task, "inject_failure", None)
        if inject is None:
            raise TypeError(f"task {deployed.name} ({type(deployed.task).__name__}) cannot take injected failures")
        inject(error)
        return True

    def peek(self, attempt_id: ExecutionAttemptId, node_id: int, limit: int, seconds: float) -> list:
        """The last records operator ``node_id`` of a running subtask emits within ``seconds``
        (``%flink peek``); empty if the attempt is unknown here or has ended."""
        self._check_reachable()
        with self._lock:
            deployed = self._tasks.get(attempt_id)
        if deployed is None or deployed.state.is_terminal:
            return []
        peek = getattr(deployed.task, "peek", None)
        return [] if peek is None else peek(node_id, limit, seconds)

    def kill(self) -> None:
        """Die as if the TaskManager's process was killed (failure injection).

        Every task gets a :class:`TaskExecutorUnreachableError` raised in its thread between
        two batches (Python threads cannot be killed) and ends without a word to its
        JobMaster; from now on every call, heartbeats included, raises that error, so the
        ResourceManager notices once ``heartbeat.timeout`` passed without an answer. The
        channels of the dead tasks are left as they are, like the connections of a dead
        process: their peers on other TaskManagers simply get no more data (or no more
        credit) until the JobMaster cancels them. :meth:`shutdown` still joins the threads.
        """
        with self._lock:
            self._killed = True
            self._running = False
            deployed = list(self._tasks.values())
        death = TaskExecutorUnreachableError(f"TaskManager {self._taskmanager_id!r} was killed")
        for d in deployed:
            if d.state.is_terminal:
                continue
            inject = getattr(d.task, "inject_failure", None)
            if inject is not None:
                inject(death)
            else:
                d.task.cancel()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop accepting tasks, cancel the running ones and wait (up to ``timeout`` s) for their threads."""
        with self._lock:
            self._running = False
            deployed = list(self._tasks.values())
        for d in deployed:
            if not d.state.is_terminal:
                d.task.cancel()
        for d in deployed:
            d.task.join(timeout)
            alive = getattr(d.task, "is_alive", False)
            if alive:
                _LOG.warning("task %s did not stop within %.1f s of its cancellation; its thread is left "
                             "behind (a user function that never returns?)", d.task, timeout, extra=CONCERNS_USER)
        with self._lock:
            self._tasks.clear()

    def __repr__(self) -> str:
        with self._lock:
            busy = sum(1 for d in self._tasks.values() if not d.state.is_terminal)
        state = ", killed" if self._killed else "" if self._running else ", stopped"
        return f"TaskExecutor({self._taskmanager_id!r}, {self.number_of_slots} slots, {busy} running tasks{state})"


def _with_checkpoint_services(services: Any, responder: TaskCheckpointResponder) -> Any:
    """``services`` with the checkpoint responder and storage factory filled in where unset
    (services that are not TaskServices, e.g. a test's None, are left alone)."""
    if not dataclasses.is_dataclass(services) or isinstance(services, type) \
            or not hasattr(services, "checkpoint_responder"):
        return services
    changes: dict[str, Any] = {}
    if services.checkpoint_responder is None:
        changes["checkpoint_responder"] = responder
    if getattr(services, "checkpoint_storage", None) is None:
        changes["checkpoint_storage"] = task_checkpoint_storage
    return dataclasses.replace(services, **changes) if changes else services


def _metrics_of(task: Any) -> dict:
    """A task's metrics snapshot (an empty dict for tasks without metrics, e.g. test fakes)."""
    metrics = getattr(task, "metrics", None)
    snapshot = getattr(metrics, "snapshot", None)
    return snapshot() if snapshot is not None else {}
