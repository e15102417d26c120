"""The JobMaster: runs one job, from its JobGraph to a terminal state (Flink's JobMaster).

Each submitted job gets its own JobMaster. It builds the JobGraph and ExecutionGraph,
asks the ResourceManager for the slots the job needs, deploys a
:class:`~streamkernel.runtime.deployment.TaskDeploymentDescriptor` per subtask to the
TaskManager owning its slot, follows the subtasks' state changes, and ends the job:
FINISHED, FAILED (a subtask failed: the others are cancelled) or CANCELED. When the job's
restart strategy allows it, a failure (a subtask fails, its TaskManager is lost) restarts
the job instead: every subtask is cancelled, and after the strategy's backoff every subtask
is deployed again as attempt + 1, on fresh channels. The state each attempt starts from
comes from one place, :meth:`JobMaster.restored_state_for` (the checkpoint integration point).

Every decision is made by :class:`~.job_state_machine.JobStateMachine` (pure). This class
is the thin driver around it, Flink's "main thread" of a JobMaster: one thread takes
events from a queue (task state updates from TaskManagers, cancel, lost TaskManagers,
restart timers), feeds them to the state machine and carries out the actions it returns.
Gateway calls that arrive from other threads only enqueue, so they never block a task.
After every event the driver publishes an immutable :class:`~.job_status.JobDetails`.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections import deque
from typing import Any, Callable, Mapping, Optional

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.job_status import JobStatus
from streamkernel.graph.execution_graph import build_execution_graph
from streamkernel.graph.job_graph import build_job_graph
from streamkernel.graph.stream_graph import StreamGraph
from streamkernel.runtime.deployment import ExecutionState, TaskDeploymentDescriptor
from streamkernel.runtime.jobmanager.job_state_machine import (
    Action,
    CancelTask,
    DeployTask,
    JobStateMachine,
    JobTerminated,
    ReleaseChannels,
    ReleaseResources,
    ReleaseSlots,
    RequestSlots,
    ScheduleRestart,
)
from streamkernel.runtime.jobmanager.job_status import JobDetails, JobResult
from streamkernel.runtime.jobmanager.resource_manager import SlotRequestCancelledError
from streamkernel.runtime.jobmanager.restart import RestartStrategy, create_restart_strategy
from streamkernel.runtime.jobmanager.scheduler import SubtaskKey, assign_slots, build_deployment_descriptors
from streamkernel.runtime.taskmanager.gateway import ResourceManagerGateway, TaskExecutionState

__all__ = ["JobMaster", "slot_request_timeout_ms", "DEFAULT_SLOT_REQUEST_TIMEOUT_MS"]

_LOG = logging.getLogger(__name__)

#: ``slot.request.timeout`` default. Flink waits 5 minutes (300000 ms) for slots; in a
#: notebook a cell that blocks 5 minutes before saying "the cluster is too small" is
#: useless, while 30 s still covers waiting for another job of the session to end.
DEFAULT_SLOT_REQUEST_TIMEOUT_MS = 30_000


def slot_request_timeout_ms(configuration: Mapping[str, Any]) -> int:
    """``slot.request.timeout`` from a configuration (ms, or Flink duration text like ``"10 s"``)."""
    from streamkernel.common.config_options import parse_duration_ms

    value = configuration.get("slot.request.timeout")
    return DEFAULT_SLOT_REQUEST_TIMEOUT_MS if value is None else parse_duration_ms(value, "slot.request.timeout")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class JobMaster:
    """Runs one job (a JobMasterGateway): deploys it into slots and drives it to a terminal state.

    ``configuration`` is the cluster's configuration with the job's own keys on top.
    ``result_future`` completes with a :class:`~.job_status.JobResult` when the job is
    FINISHED, FAILED or CANCELED (it never completes exceptionally).
    """

    def __init__(self, job_id: str, stream_graph: StreamGraph, resource_manager: ResourceManagerGateway, *,
                 configuration: Optional[Mapping[str, Any]] = None,
                 restart_strategy: Optional[RestartStrategy] = None,
                 on_terminated: Optional[Callable[["JobMaster", JobResult], None]] = None) -> None:
        self._job_id = job_id
        self.configuration = {k: str(v) for k, v in (configuration or stream_graph.configuration).items()}
        self.job_graph = build_job_graph(stream_graph)
        # The graph is placed on one logical TaskManager with exactly the slots it needs;
        # assign_slots maps those logical slots onto the real ones the ResourceManager gives.
        self.execution_graph = build_execution_graph(self.job_graph, 1, None, slot_sharing=True)
        self.job_name = stream_graph.job_name
        self._resource_manager = resource_manager
        self._slot_timeout_ms = slot_request_timeout_ms(self.configuration)
        self._descriptors: dict[SubtaskKey, TaskDeploymentDescriptor] = {}
        self._descriptor_attempt = -1
        self._machine = JobStateMachine(job_id, self.job_name, self.job_graph.vertices,
                                        self.execution_graph.slots_needed,
                                        restart_strategy or create_restart_strategy(self.configuration), _now_ms(),
                                        int(self.configuration.get("web.exception-history-size", 16)))
        self._details = self._machine.details(_now_ms())
        self._events: "queue.SimpleQueue[tuple]" = queue.SimpleQueue()
        self._restart_at: Optional[float] = None
        self._on_terminated = on_terminated
        self._taskmanagers_used: set[str] = set()
        self._listeners: list[Callable[[JobDetails], None]] = []
        self._listeners_lock = threading.Lock()  # guards _listeners (added from any thread)
        self.result_future: CompletableFuture[JobResult] = CompletableFuture()
        self._thread = threading.Thread(target=self._run, name=f"JobMaster {self.job_name!r} {job_id[:8]}",
                                        daemon=True)

    # ------------------------------------------------------------- JobMasterGateway
    @property
    def job_id(self) -> str:
        """The job's id (32 hex digits)."""
        return self._job_id

    def update_task_execution_state(self, update: TaskExecutionState) -> None:
        """A subtask changed state (from its thread): queued for the JobMaster's thread."""
        self._events.put(("task", update))

    def disconnect_taskmanager(self, taskmanager_id: str, cause: BaseException) -> None:
        """A TaskManager is gone: its subtasks are lost (the job fails, or restarts)."""
        self._events.put(("taskmanager_lost", taskmanager_id, cause))

    def cancel(self) -> None:
        """Cancel the job (returns at once; ``result_future`` tells when it is CANCELED)."""
        if self.result_future.done():
            return
        self._events.put(("cancel",))
        self._resource_manager.cancel_slot_request(self._job_id)  # wakes a pending slot wait

    def request_job_details(self) -> JobDetails:
        """The latest published status snapshot (safe from any thread)."""
        return self._details

    def add_status_listener(self, listener: Callable[[JobDetails], None]) -> None:
        """Call ``listener(details)`` now and after every change of the job's status.

        Later calls come from the JobMaster's thread: a listener must be quick and must not
        block (e.g. unblock a collect buffer). It may see the same status twice.
        """
        with self._listeners_lock:
            self._listeners.append(listener)
        self._notify(listener, self._details)

    def _notify(self, listener: Callable[[JobDetails], None], details: JobDetails) -> None:
        try:
            listener(details)
        except Exception:  # noqa: BLE001 - a listener must not break the job
            _LOG.exception("status listener of job %r failed", self.job_name)

    def _publish(self) -> None:
        previous = self._details.status
        self._details = self._machine.details(_now_ms())
        if self._details.status is not previous:
            with self._listeners_lock:
                listeners = list(self._listeners)
            for listener in listeners:
                self._notify(listener, self._details)

    # --------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start the JobMaster's thread: request slots, deploy, run."""
        self._thread.start()

    def join(self, timeout: Optional[float] = None) -> None:
        """Wait for the JobMaster's thread to end (it ends with the job)."""
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def is_alive(self) -> bool:
        """True while the job is not terminal (the thread runs)."""
        return self._thread.is_alive()

    # ------------------------------------------------------------------------ driver
    def _run(self) -> None:
        try:
            self._handle(self._machine.start(_now_ms()))
            while not self._machine.is_terminal:
                timeout = None
                if self._restart_at is not None:
                    timeout = max(0.0, self._restart_at - time.monotonic())
                try:
                    event = self._events.get(timeout=timeout)
                except queue.Empty:
                    self._restart_at = None
                    self._handle(self._machine.restart_due(_now_ms()))
                    continue
                self._dispatch(event)
        except BaseException as exc:  # noqa: BLE001 - a driver bug must still end the job
            _LOG.exception("JobMaster of %r crashed", self.job_name)
            self.result_future.complete(JobResult(self._job_id, self.job_name, JobStatus.FAILED,
                                                  0, {}, exc, None))
            self._release_resources()

    def _dispatch(self, event: tuple) -> None:
        kind, now = event[0], _now_ms()
        machine = self._machine
        if kind == "task":
            update: TaskExecutionState = event[1]
            self._handle(machine.task_state_changed(update.attempt_id, update.state, update.error, now,
                                                    update.metrics))
        elif kind == "cancel":
            self._handle(machine.cancel(now))
        elif kind == "taskmanager_lost":
            self._handle(machine.taskmanager_lost(event[1], event[2], now))

    def _handle(self, actions: list[Action]) -> None:
        """Carry out actions (they may produce more), then publish the new status."""
        pending = deque(actions)
        while pending:
            action = pending.popleft()
            if isinstance(action, RequestSlots):
                pending.extend(self._request_slots(action.count))
            elif isinstance(action, DeployTask):
                self._deploy(action)
            elif isinstance(action, CancelTask):
                self._cancel_task(action)
            elif isinstance(action, ReleaseChannels):
                self._release_channels()
            elif isinstance(action, ReleaseSlots):
                self._resource_manager.release_slots(self._job_id)
            elif isinstance(action, ReleaseResources):
                self._release_resources()
            elif isinstance(action, ScheduleRestart):
                # No sleeping: the event loop waits for this deadline or the next event.
                self._restart_at = time.monotonic() + action.delay_ms / 1000
                _LOG.info("job %r restarts in %d ms (%s)", self.job_name, action.delay_ms,
                          self._machine.restart_strategy.describe())
            elif isinstance(action, JobTerminated):
                self._publish()
                if self._on_terminated is not None:
                    try:
                        self._on_terminated(self, action.result)
                    except Exception:  # noqa: BLE001
                        _LOG.exception("on_terminated callback of job %r failed", self.job_name)
                self.result_future.complete(action.result)
        self._publish()

    def _request_slots(self, count: int) -> list[Action]:
        """Blocks this thread until the slots come (``cancel`` interrupts the wait)."""
        try:
            slots = self._resource_manager.request_slots(self._job_id, count, self._slot_timeout_ms,
                                                         job_name=self.job_name, job_master=self)
        except SlotRequestCancelledError:
            return []  # the queued cancel event follows and ends the job
        except Exception as error:  # noqa: BLE001 - NotEnoughSlotsError, or the cluster stops
            return self._machine.slot_request_failed(error, _now_ms())
        placement = assign_slots(self.execution_graph, slots)
        return self._machine.slots_allocated(placement, _now_ms())

    def restored_state_for(self, attempt: int) -> Optional[Mapping[SubtaskKey, Mapping[str, Any]]]:
        """The state attempt ``attempt`` of the job starts from: subtask -> its restored state.

        THE integration point for checkpoints: called once per attempt (0 for the first
        deployment, then once per restart) before the subtasks are deployed; each subtask's
        entry goes into its ``TaskDeploymentDescriptor.restored_state`` (the shape
        :mod:`streamkernel.runtime.task_checkpoint` restores). None, or a subtask missing,
        means "start from scratch": without checkpoints a restarted job reprocesses its
        sources from the beginning, as Flink does. For now it always returns None; the
        checkpoint coordinator will answer with the latest completed checkpoint (or, for
        attempt 0, the savepoint of ``execution.state-recovery.path``). Runs in the
        JobMaster's thread.
        """
        return None

    def _descriptor(self, key: SubtaskKey, attempt: int) -> TaskDeploymentDescriptor:
        if attempt != self._descriptor_attempt:
            descriptors = build_deployment_descriptors(self._job_id, self.job_graph, attempt_number=attempt,
                                                       configuration=self.configuration)
            restored = self.restored_state_for(attempt) or {}
            self._descriptors = {k: dataclasses.replace(tdd, restored_state=restored[k]) if restored.get(k) else tdd
                                 for k, tdd in descriptors.items()}
            self._descriptor_attempt = attempt
        return self._descriptors[key]

    def _deploy(self, action: DeployTask) -> None:
        tdd = self._descriptor(action.key, action.attempt_number)
        try:
            gateway = self._resource_manager.task_executor_gateway(action.slot.taskmanager_id)
            self._taskmanagers_used.add(action.slot.taskmanager_id)
            gateway.submit_task(tdd, action.slot, self)
        except Exception as error:  # noqa: BLE001 - reported as the subtask's failure
            # Queued, not handled here: the remaining deployments of this batch go out first,
            # then the failure cancels all of them consistently.
            self._events.put(("task", TaskExecutionState(tdd.attempt_id, ExecutionState.FAILED, error)))

    def _cancel_task(self, action: CancelTask) -> None:
        try:
            self._resource_manager.task_executor_gateway(action.slot.taskmanager_id).cancel_task(action.attempt_id)
        except Exception:  # noqa: BLE001 - the TaskManager is gone, and the task with it
            self._events.put(("task", TaskExecutionState(action.attempt_id, ExecutionState.CANCELED)))

    def _release_channels(self) -> None:
        for taskmanager_id in sorted(self._taskmanagers_used):
            try:
                self._resource_manager.task_executor_gateway(taskmanager_id).release_job(self._job_id)
            except Exception:  # noqa: BLE001 - a TaskManager gone has nothing left to release
                _LOG.debug("could not release job %s on %s", self._job_id, taskmanager_id, exc_info=True)

    def _release_resources(self) -> None:
        self._release_channels()
        try:
            self._resource_manager.release_slots(self._job_id)
        except Exception:  # noqa: BLE001
            _LOG.exception("could not release the slots of job %r", self.job_name)

    def __repr__(self) -> str:
        return f"JobMaster({self.job_name!r}, {self._job_id}, {self._details.status.name})"
