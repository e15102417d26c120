"""The stream task: what a Task runs to process one subtask of an operator chain (Flink's
``streaming.runtime.tasks.StreamTask``, the invokable of a streaming Task).

:meth:`StreamTask.restore` builds the chain in the task thread (its input gate, record
writers, operators with their state backends and timer services, restored state:
:mod:`.chain_setup`); :meth:`StreamTask.invoke` runs the task's loop until its input ended
- read batches from the source (:class:`~.source_stream_task.SourceStreamTask`) or take
buffers and events from the input gate (:class:`~.input_stream_task.InputStreamTask`) -,
then finishes and closes the operators. Between two batches the loop does the mailbox's
work (:meth:`StreamTask._between_batches`): actions other threads put into the
:class:`~.mailbox.TaskMailbox`, due processing-time timers, output flushes whose buffer
timeout elapsed. Everything an operator does happens in this thread, so operators need no
locks.

Stop-with-savepoint (Flink's synchronous savepoint): once the task took the snapshot of a
*synchronous* barrier (:class:`StopWithSavepoint`), its loop stops processing - a source
reads nothing more, no processing-time timer fires, the input carries nothing but the end of
partitions - and waits, running only its mailbox, for the savepoint's outcome. Completed
(the notification commits two-phase-commit sinks first), the task finishes *without* ending
its operators' input (FLINK-21132): windows and timers stay in the savepoint. With ``drain``
the operators ended their input before the snapshot (the sources emitted MAX_WATERMARK).
Aborted, the task goes on where it stopped (after a drain it fails: the job fails over).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Optional

from streamkernel.common.options import ExecutionOptions, NettyShuffleEnvironmentOptions
from streamkernel.runtime.core.deployment import TaskDeploymentDescriptor
from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.core.records import END_OF_PARTITION, CheckpointBarrier, LatencyMarker
from streamkernel.runtime.network.buffer_requirements import NetworkBufferSettings
from streamkernel.runtime.operators.base import StreamOperator
from streamkernel.runtime.tasks.batch_budget import BatchBudget, budget_ns
from streamkernel.runtime.tasks.chain import OperatorChain
from streamkernel.runtime.tasks.chain_setup import (
    close_operators,
    create_input_gate,
    create_operator_chain,
    initialize_and_open_operators,
    set_up_operators,
)
from streamkernel.runtime.tasks.mailbox import TaskMailbox
from streamkernel.runtime.tasks.task_checkpoint import TaskCheckpointer

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.tasks.task import TaskServices

__all__ = ["StreamTask", "StopWithSavepoint", "TaskCancelledError", "IDLE_POLL_S", "buffer_timeout_ms"]

IDLE_POLL_S = 0.05  # longest a task blocks without looking at timers and cancellation


def buffer_timeout_ms(tdd: TaskDeploymentDescriptor) -> int:
    """How long (ms) the task's output may wait in a partly filled buffer: the smallest
    ``set_buffer_timeout`` of the chain's operators, else ``execution.buffer-timeout.interval``;
    -1 (only full buffers) when ``execution.buffer-timeout.enabled`` is false. (Flink keeps one
    per output edge; a task here flushes all its outputs together.)"""
    own = [node.buffer_timeout for node in tdd.nodes if node.buffer_timeout is not None]
    if own:
        return min(own)
    config = tdd.configuration
    if not ExecutionOptions.BUFFER_TIMEOUT_ENABLED.get(config):
        return -1
    return ExecutionOptions.BUFFER_TIMEOUT.get(config).to_milliseconds()


class TaskCancelledError(Exception):
    """Raised inside a task's thread to unwind it after cancel()."""


class StopWithSavepoint:
    """The synchronous savepoint a task took and now waits for (``completed`` once notified)."""

    def __init__(self, checkpoint_id: int, drain: bool) -> None:
        self.checkpoint_id = checkpoint_id
        self.drain = drain
        self.completed = False


class StreamTask:
    """The loops of one subtask and the mailbox work between their batches (Flink's StreamTask).

    ``cancelled`` is the Task's cancellation flag (set before :meth:`cancel` is called);
    subclasses implement :meth:`_run_loop`, Flink's ``runMailboxLoop`` with ``processInput``.
    """

    def __init__(self, tdd: TaskDeploymentDescriptor, services: "TaskServices", metrics: TaskMetrics,
                 cancelled: threading.Event) -> None:
        self.tdd = tdd
        self.services = services
        self.metrics = metrics
        self._cancelled = cancelled
        self.gate: Any = None
        self.writers: list[Any] = []
        self.chain: Optional[OperatorChain] = None
        self._closed = False
        self._last_flush = time.monotonic()
        self.processing_time: Any = None
        self.mailbox = TaskMailbox(self._wake_up)
        self._mail = self.mailbox.queue  # tested directly between batches: no call when empty
        metrics.mailbox = self.mailbox
        metrics.writers = self.writers  # the list the chain's writers are appended to
        self.checkpointer = TaskCheckpointer(self)
        #: the stop-with-savepoint this task took part in and waits for (None: running)
        self.stopping: Optional[StopWithSavepoint] = None
        self._mail_signal = threading.Event()  # set with every mailbox action (for the stop's wait)
        config = tdd.configuration
        self._buffer_timeout_ms = buffer_timeout_ms(tdd)
        self.batch_size = NettyShuffleEnvironmentOptions.BATCH_SIZE.get(config)

    def batch_budget(self) -> BatchBudget:
        """How many records the task takes at a time: as many as fit the time budget that
        ``execution.buffer-timeout`` gives, at most ``taskmanager.network.batch-size``."""
        return BatchBudget(self.batch_size, budget_ns(self._buffer_timeout_ms))

    # ------------------------------------------------------------- the invokable
    def restore(self) -> None:
        """(Task thread) build the operator chain and put restored state back (Flink's
        ``StreamTask.restore``): input gate, record writers, operators set up and opened."""
        from streamkernel.runtime.operators.timers import ProcessingTimeService

        tdd = self.tdd
        self.processing_time = ProcessingTimeService(self.services.clock)
        self.gate = create_input_gate(tdd, self.services.shuffle)
        self.chain = create_operator_chain(self, self._on_output_watermark)
        set_up_operators(self, self.chain)
        self.metrics.input_channels = list(self.gate.channels) if self.gate is not None else []
        self.metrics.exclusive_buffers_per_channel = NetworkBufferSettings.from_configuration(
            tdd.configuration).buffers_per_channel
        self.metrics.output_channels = [channel for writer in self.writers for channel in writer.channels]
        self._head_metrics = self.metrics.operator(tdd.nodes[0].name)
        self.metrics.head_operator = tdd.nodes[0].name
        self._sink_metrics = [self.metrics.operator(n.name) for n in tdd.nodes if n.is_sink]
        self._has_sink = bool(self._sink_metrics)
        initialize_and_open_operators(self, self.chain)

    def invoke(self) -> None:
        """(Task thread) run the loop until the input ended, then finish and close the operators;
        raises :class:`TaskCancelledError` when cancelled."""
        self._run_loop(self.chain.head)  # type: ignore[union-attr]
        if self.stopping is None:
            self._finish()
        else:  # stopped with a savepoint: the operators' input does not end (drain: it ended already)
            self._end_partitions()
        self._close_operators()
        self.mailbox.close()

    def clean_up(self) -> None:
        """(Task thread) after a failure or cancellation: drop the mailbox, close the operators
        quietly and release their state backends."""
        self.mailbox.close()
        self._close_operators(quietly=True)

    def cancel(self) -> None:
        """(Any thread) wake the task thread so that it sees the cancellation flag at once."""
        if self.gate is not None:
            self.gate.cancel()
        source = self.chain.head if self.chain is not None else None
        wakeup = getattr(source, "wakeup", None)
        if wakeup is not None:
            wakeup.set()

    def trigger_checkpoint(self, checkpoint_id: int, timestamp: int, is_savepoint: bool = False,
                           synchronous: bool = False, drain: bool = False) -> None:
        """(Source tasks) take checkpoint ``checkpoint_id`` between two batches and emit its barrier
        (Flink's ``triggerCheckpointAsync``; ``synchronous``: stop-with-savepoint, module docstring)."""
        barrier = CheckpointBarrier(checkpoint_id, timestamp, is_savepoint, synchronous, drain and synchronous)
        self.mailbox.put(lambda: self.checkpointer.perform(barrier))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: operators may commit (in the task thread); a
        task waiting for this stop-with-savepoint finishes."""
        self.mailbox.put(lambda: self._checkpoint_complete(checkpoint_id))

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` failed: a task waiting for it as a stop-with-savepoint goes on."""
        self.mailbox.put(lambda: self._checkpoint_aborted(checkpoint_id))

    def _checkpoint_complete(self, checkpoint_id: int) -> None:
        self.checkpointer.notify_complete(checkpoint_id)
        if self.stopping is not None and checkpoint_id >= self.stopping.checkpoint_id:
            self.stopping.completed = True

    def _checkpoint_aborted(self, checkpoint_id: int) -> None:
        stopping = self.stopping
        if stopping is None or stopping.checkpoint_id != checkpoint_id or stopping.completed:
            return
        if stopping.drain:
            raise RuntimeError(f"stop-with-savepoint {checkpoint_id} with drain failed after {self.tdd.name_with_subtask} "
                               "had ended its input (MAX_WATERMARK): the job fails over to its latest checkpoint")
        self.stopping = None  # the savepoint failed: the job goes on, and this task where it stopped

    def stop_at(self, barrier: CheckpointBarrier) -> None:
        """(Task thread) this task took the snapshot of a synchronous savepoint: stop processing
        and wait for its outcome (module docstring)."""
        self.stopping = StopWithSavepoint(barrier.checkpoint_id, barrier.drain)

    def drain_for_savepoint(self) -> None:
        """(Task thread) a stop-with-savepoint with drain reached this task: end every
        operator's input before the snapshot (sources first emit MAX_WATERMARK)."""
        self._end_operators()

    def _await_savepoint_outcome(self) -> bool:
        """Run only the mailbox until the stop-with-savepoint completed (True) or failed (False)."""
        self._flush_all()
        signal = self._mail_signal
        while not self._cancelled.is_set():
            stopping = self.stopping
            if stopping is None or stopping.completed:
                return stopping is not None
            signal.clear()
            if self._mail:
                self.mailbox.run_all()
            else:
                signal.wait(IDLE_POLL_S)
        self._check_cancelled()
        return False

    def _wake_up(self) -> None:
        """The mailbox got an action: wake the task thread (blocked on its gate or its source)."""
        self._mail_signal.set()
        if self.gate is not None:
            self.gate.wakeup()
        wakeup = getattr(self.chain.head if self.chain is not None else None, "wakeup", None)
        if wakeup is not None:
            wakeup.set()

    def _check_cancelled(self) -> None:
        if self._cancelled.is_set():
            raise TaskCancelledError(self.tdd.name_with_subtask)

    # ----------------------------------------------------------------- loops
    def _run_loop(self, head: StreamOperator) -> None:
        """Process input until it ended (or the task is cancelled); the subclass's loop."""
        raise NotImplementedError

    def _on_output_watermark(self, timestamp: int) -> None:
        self.metrics.output_watermark = timestamp

    def _on_latency_marker(self, marker: LatencyMarker) -> None:
        """A marker reached this task: sinks here record its age; writers pass it on (after
        the records before it, so it measures how long records take to get through)."""
        if self._has_sink:
            self.metrics.latency_ms.append(max(0, self.services.clock.now_ms() - marker.marked_time))
        if self.checkpointer.unaligned and not self.outputs_have_credit(2):
            return  # with unaligned checkpoints a task never blocks for a marker: it is dropped
        for writer in self.writers:
            writer.broadcast_event(marker)

    def outputs_have_credit(self, credits: int = 1) -> bool:
        """Whether every output channel can take ``credits`` items now without waiting."""
        return all(getattr(channel, "available_credits", credits) >= credits
                   for writer in self.writers for channel in writer.channels)

    def _timer_wait(self, longest: float) -> float:
        deadline = self.processing_time.next_deadline()
        if deadline is None:
            return longest
        return max(0.0, min(longest, (deadline - self.processing_time.current_processing_time()) / 1000))

    def _between_batches(self) -> None:
        """Mailbox work between batches: posted actions, due timers, buffer timeout flushes."""
        if self._mail:
            self.mailbox.run_all()
        if self.stopping is None:  # stopped at a savepoint: timers stay in it
            self.processing_time.fire_due()
        if self._buffer_timeout_ms >= 0:
            now = time.monotonic()
            if (now - self._last_flush) * 1000 >= self._buffer_timeout_ms:
                self._flush_all(now)
        metrics = self.metrics
        # FLIP-33: a source task's records in are what it read from outside; a chain that
        # ends in sinks sends what its sinks wrote.
        if self.writers:
            metrics.records_out = sum(w.records_out for w in self.writers)
        else:
            metrics.records_out = sum(m.records_in for m in self._sink_metrics)
        if not self.tdd.inputs:
            metrics.records_in = self._head_metrics.records_out

    def _flush_idle(self) -> None:
        """Nothing to process now: send what the outputs hold, unless the buffer timeout is off
        (-1: only full buffers leave, and the events that follow records, as in Flink)."""
        if self._buffer_timeout_ms >= 0:
            self._flush_all()

    def _flush_all(self, now: Optional[float] = None) -> None:
        unaligned = self.checkpointer.unaligned  # never block in a flush: a barrier may be announced
        for writer in self.writers:
            if unaligned:
                writer.flush_available()
            else:
                writer.flush()
        self._last_flush = time.monotonic() if now is None else now

    def _finish(self) -> None:
        """End of input: finish operators head first, then end every output channel."""
        self._end_operators()
        for writer in self.writers:
            writer.broadcast_event(END_OF_PARTITION)
        self._between_batches()

    def _end_operators(self) -> None:
        """Finish the operators head first (their input ended), and fire the timers now due."""
        for index, (_, operator) in enumerate(self.chain.in_order()):  # type: ignore[union-attr]
            if index > 0:  # the head's input ended already; chained operators' input ends now (Flink)
                operator.end_input()
            operator.finish()
        self.processing_time.fire_due()

    def _end_partitions(self) -> None:
        """Stopped with a savepoint: end every output channel, the operators untouched."""
        for writer in self.writers:
            writer.broadcast_event(END_OF_PARTITION)
        self._flush_all()
        if self._mail:
            self.mailbox.run_all()

    def _close_operators(self, quietly: bool = False) -> None:
        """Close every operator once; after a failure (``quietly``) close errors are ignored."""
        if self.chain is None or self._closed:
            return
        self._closed = True
        close_operators(self.chain, self.checkpointer.contexts, quietly)
