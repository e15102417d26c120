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
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Optional

from streamkernel.common.options import ExecutionOptions, NettyShuffleEnvironmentOptions
from streamkernel.runtime.core.deployment import TaskDeploymentDescriptor
from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.core.records import END_OF_PARTITION, CheckpointBarrier, LatencyMarker
from streamkernel.runtime.operators.base import StreamOperator
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

__all__ = ["StreamTask", "TaskCancelledError", "IDLE_POLL_S"]

IDLE_POLL_S = 0.05  # longest a task blocks without looking at timers and cancellation


class TaskCancelledError(Exception):
    """Raised inside a task's thread to unwind it after cancel()."""


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
        self.checkpointer = TaskCheckpointer(self)
        config = tdd.configuration
        # -1: flush only when full (execution.buffer-timeout.enabled false)
        self._buffer_timeout_ms = (ExecutionOptions.BUFFER_TIMEOUT.get(config).to_milliseconds()
                                   if ExecutionOptions.BUFFER_TIMEOUT_ENABLED.get(config) else -1)
        self.batch_size = NettyShuffleEnvironmentOptions.BATCH_SIZE.get(config)

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
        self._head_metrics = self.metrics.operator(tdd.nodes[0].name)
        self._sink_metrics = [self.metrics.operator(n.name) for n in tdd.nodes if n.is_sink]
        self._has_sink = bool(self._sink_metrics)
        initialize_and_open_operators(self, self.chain)

    def invoke(self) -> None:
        """(Task thread) run the loop until the input ended, then finish and close the operators;
        raises :class:`TaskCancelledError` when cancelled."""
        self._run_loop(self.chain.head)  # type: ignore[union-attr]
        self._finish()
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

    def trigger_checkpoint(self, checkpoint_id: int, timestamp: int, is_savepoint: bool = False) -> None:
        """(Source tasks) take checkpoint ``checkpoint_id`` between two batches and emit its barrier
        (Flink's ``triggerCheckpointAsync``)."""
        barrier = CheckpointBarrier(checkpoint_id, timestamp, is_savepoint)
        self.mailbox.put(lambda: self.checkpointer.perform(barrier))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: operators may commit (in the task thread)."""
        self.mailbox.put(lambda: self.checkpointer.notify_complete(checkpoint_id))

    def _wake_up(self) -> None:
        """The mailbox got an action: wake the task thread (blocked on its gate or its source)."""
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
        for writer in self.writers:
            writer.broadcast_event(marker)

    def _timer_wait(self, longest: float) -> float:
        deadline = self.processing_time.next_deadline()
        if deadline is None:
            return longest
        return max(0.0, min(longest, (deadline - self.processing_time.current_processing_time()) / 1000))

    def _between_batches(self) -> None:
        """Mailbox work between batches: posted actions, due timers, buffer timeout flushes."""
        if self._mail:
            self.mailbox.run_all()
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

    def _flush_all(self, now: Optional[float] = None) -> None:
        for writer in self.writers:
            writer.flush()
        self._last_flush = time.monotonic() if now is None else now

    def _finish(self) -> None:
        """End of input: finish operators head first, then end every output channel."""
        for index, (_, operator) in enumerate(self.chain.in_order()):  # type: ignore[union-attr]
            if index > 0:  # the head's input ended already; chained operators' input ends now (Flink)
                operator.end_input()
            operator.finish()
        self.processing_time.fire_due()
        for writer in self.writers:
            writer.broadcast_event(END_OF_PARTITION)
        self._between_batches()

    def _close_operators(self, quietly: bool = False) -> None:
        """Close every operator once; after a failure (``quietly``) close errors are ignored."""
        if self.chain is None or self._closed:
            return
        self._closed = True
        close_operators(self.chain, self.checkpointer.contexts, quietly)
