"""A Task: one execution attempt of one subtask, run in its own thread (Flink's
``runtime.taskmanager.Task``).

The TaskManager starts a Task per deployed subtask. The Task owns the attempt's lifecycle:
its thread, its state transitions - each reported through ``on_state_change`` (INITIALIZING,
RUNNING, FINISHED, CANCELED, FAILED) -, cancellation and failure. What runs in the thread is
its invokable, a stream task (:class:`~.stream_task.StreamTask`): a
:class:`~.source_stream_task.SourceStreamTask` for a subtask without inputs, an
:class:`~.input_stream_task.InputStreamTask` otherwise. The Task has it restore (build the
operator chain), reports RUNNING, has it invoke its loop, and reports how it ended; a
cancelled task ends within a poll interval and reports CANCELED. Checkpoint triggers,
checkpoint completions and injected failures go to the stream task's mailbox, run by the
task thread between two batches.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from streamkernel.common.options import NettyShuffleEnvironmentOptions
from streamkernel.runtime.core.clock import Clock
from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState, TaskDeploymentDescriptor
from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.tasks.input_stream_task import InputStreamTask
from streamkernel.runtime.tasks.source_stream_task import SourceStreamTask
from streamkernel.runtime.tasks.stream_task import StreamTask, TaskCancelledError

__all__ = ["TaskServices", "Task", "DEFAULT_BATCH_SIZE"]

DEFAULT_BATCH_SIZE: int = NettyShuffleEnvironmentOptions.BATCH_SIZE.default_value()  # type: ignore[assignment]


@dataclass
class TaskServices:
    """What a TaskManager lends its tasks: the shuffle (channels), a clock, its id and directory."""

    shuffle: Any
    clock: Clock
    taskmanager_id: str
    working_dir: str
    #: ``acknowledge(attempt_id, checkpoint_id, handle, metrics)`` (metrics: a CheckpointMetrics) /
    #: ``decline(attempt_id, checkpoint_id, reason)``
    checkpoint_responder: Any = None
    #: ``(job_id, configuration) -> CheckpointStorage`` (None: snapshots are handed over in memory)
    checkpoint_storage: Any = None
    #: the managed memory of the task's slot (a :class:`~streamkernel.runtime.memory.memory_manager.MemoryManager`;
    #: the TaskExecutor sets it per task), None: no managed memory
    memory_manager: Any = None
    #: the resources every slot of the TaskManager shares (a
    #: :class:`~streamkernel.runtime.memory.shared_resources.TaskManagerSharedResources`), None: none
    shared_resources: Any = None
    #: The TaskManager's :class:`~streamkernel.runtime.network.buffer_pool.NetworkBufferPool`
    #: (None: buffers are not accounted, e.g. a test's services)
    network_buffer_pool: Any = None


class Task:
    """One subtask of a job vertex, run in its own thread."""

    def __init__(self, tdd: TaskDeploymentDescriptor, services: TaskServices,
                 on_state_change: Callable[[ExecutionAttemptId, ExecutionState, Optional[BaseException]], None]) -> None:
        self.tdd = tdd
        self.services = services
        self._on_state_change = on_state_change
        self.state = ExecutionState.DEPLOYING
        self.failure_cause: Optional[BaseException] = None
        self.metrics = TaskMetrics(tdd.job_vertex.name, tdd.subtask_index)
        self._cancelled = threading.Event()
        self._thread = threading.Thread(target=self._run, name=tdd.name_with_subtask, daemon=True)
        invokable = InputStreamTask if tdd.inputs else SourceStreamTask
        self.invokable: StreamTask = invokable(tdd, services, self.metrics, self._cancelled)

    def start(self) -> None:
        """Start the task's thread."""
        self._thread.start()

    def cancel(self) -> None:
        """Ask the task to stop; it ends promptly and reports CANCELED."""
        if self.state.is_terminal:
            return
        self._cancelled.set()
        self.invokable.cancel()

    def trigger_checkpoint(self, checkpoint_id: int, timestamp: int, is_savepoint: bool = False,
                           synchronous: bool = False, drain: bool = False) -> None:
        """(Source tasks) take checkpoint ``checkpoint_id`` between two batches and emit its barrier
        (``synchronous``: a stop-with-savepoint's, ``drain``: MAX_WATERMARK first)."""
        self.invokable.trigger_checkpoint(checkpoint_id, timestamp, is_savepoint, synchronous, drain)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: operators may commit (in the task thread)."""
        self.invokable.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` failed: a task waiting at a stop-with-savepoint goes on."""
        self.invokable.notify_checkpoint_aborted(checkpoint_id)

    def peek(self, node_id: int, limit: int, seconds: float) -> list:
        """The last records (with timestamps) operator ``node_id`` of this task emits within
        ``seconds`` (:func:`~streamkernel.runtime.tasks.peek.tap_operator`); empty before it runs."""
        from streamkernel.runtime.tasks.peek import tap_operator

        chain = self.invokable.chain
        if chain is None or node_id not in chain.operators:
            return []
        return tap_operator(chain.operators[node_id], limit, seconds)

    def inject_failure(self, error: BaseException) -> None:
        """Fail this task with ``error``, raised in its own thread between two batches, as if
        its operators had raised it (failure injection: ``MiniCluster.fail_operator``)."""
        def fail() -> None:
            raise error

        self.invokable.mailbox.put(fail)

    def join(self, timeout: Optional[float] = None) -> None:
        """Wait for the thread to end."""
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def is_alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def _report(self, state: ExecutionState, error: Optional[BaseException] = None) -> None:
        if state.is_terminal:
            self._release_network_buffers()  # before the JobMaster hears of it (Flink: releaseResources first)
        self.state = state
        self._on_state_change(self.tdd.attempt_id, state, error)

    def _reserve_network_buffers(self) -> None:
        """Reserve the buffers of the task's gates and partitions from its TaskManager's network
        memory (Flink's ``setupPartitionsAndGates``, while DEPLOYING): too few fails the task."""
        pool = getattr(self.services, "network_buffer_pool", None)
        if pool is None:
            return
        from streamkernel.runtime.network.buffer_requirements import NetworkBufferSettings, required_buffers

        pool.reserve(self.tdd.attempt_id, required_buffers(
            self.tdd, NetworkBufferSettings.from_configuration(self.tdd.configuration)))

    def _release_network_buffers(self) -> None:
        pool = getattr(self.services, "network_buffer_pool", None)
        if pool is not None:
            pool.release(self.tdd.attempt_id)

    def _run(self) -> None:
        try:
            self._run_attempt()
        finally:
            self._release_network_buffers()

    def _run_attempt(self) -> None:
        invokable = self.invokable
        try:
            self._reserve_network_buffers()
            self._report(ExecutionState.INITIALIZING)
            started = self.metrics.initialization_started_ns = time.perf_counter_ns()
            invokable.restore()
            self.metrics.initialization_ns = time.perf_counter_ns() - started
            if self._cancelled.is_set():
                raise TaskCancelledError(self.tdd.name_with_subtask)
            self._report(ExecutionState.RUNNING)
            invokable.invoke()
            self._report(ExecutionState.FINISHED)
        except BaseException as exc:  # noqa: BLE001 - every failure must be reported
            invokable.clean_up()
            if self._cancelled.is_set():
                self._report(ExecutionState.CANCELED)
            else:
                self.failure_cause = exc
                self._report(ExecutionState.FAILED, exc)

    def __repr__(self) -> str:
        return f"Task({self.tdd.name_with_subtask}, {self.state.value})"
