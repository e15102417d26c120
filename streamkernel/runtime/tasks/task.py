"""A Task: one thread running one subtask of an operator chain.

The TaskManager starts a Task per deployed subtask. The thread builds the chain (operators,
their state backends and timer services), connects its input gate and record writers, and
then loops: take the next buffer or event from the input gate (or read the next batch from
the source), hand it to the head of the chain, fire due processing-time timers, flush
output buffers whose timeout elapsed. Everything an operator does happens in this thread
(Flink's mailbox model), so operators need no locks.

It reports every state change (INITIALIZING, RUNNING, FINISHED, CANCELED, FAILED) through
``on_state_change``; a cancelled task ends within a poll interval and reports CANCELED.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from streamkernel.common.options import (
    CheckpointingOptions,
    ExecutionOptions,
    MetricOptions,
    NettyShuffleEnvironmentOptions,
)
from streamkernel.graph.keygroups import key_group_range_for_operator
from streamkernel.graph.stream_graph import StreamEdge, StreamNode
from streamkernel.runtime.tasks.chain import OperatorChain, RecordWriterOutput
from streamkernel.runtime.core.clock import Clock
from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState, TaskDeploymentDescriptor
from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.operators.base import OperatorContext, StreamOperator, TaskInfo, TwoInputStreamOperator
from streamkernel.runtime.operators.factory import create_operator
from streamkernel.runtime.operators.batch_execution import batch_input, batch_state_configuration
from streamkernel.runtime.tasks.barriers import BarrierHandler
from streamkernel.runtime.core.records import END_OF_PARTITION, CheckpointBarrier, LatencyMarker
from streamkernel.runtime.tasks.task_checkpoint import TaskCheckpointer
from streamkernel.runtime.tasks.task_input import InputProcessor

__all__ = ["TaskServices", "Task", "TaskCancelledError", "DEFAULT_BATCH_SIZE"]

DEFAULT_BATCH_SIZE: int = NettyShuffleEnvironmentOptions.BATCH_SIZE.default_value()  # type: ignore[assignment]
_IDLE_POLL_S = 0.05  # longest a task blocks without looking at timers and cancellation


class TaskCancelledError(Exception):
    """Raised inside a task's thread to unwind it after cancel()."""


@dataclass
class TaskServices:
    """What a TaskManager lends its tasks: the shuffle (channels), a clock, its id and directory."""

    shuffle: Any
    clock: Clock
    taskmanager_id: str
    working_dir: str
    #: ``acknowledge(attempt_id, checkpoint_id, handle)`` / ``decline(attempt_id, checkpoint_id, reason)``
    checkpoint_responder: Any = None
    #: ``(job_id, configuration) -> CheckpointStorage`` (None: snapshots are handed over in memory)
    checkpoint_storage: Any = None


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
        self._gate: Any = None
        self._writers: list[Any] = []
        self._chain: Optional[OperatorChain] = None
        self._closed = False
        self._last_flush = time.monotonic()
        self.processing_time: Any = None
        # Actions other threads ask the task thread to run between batches (Flink's mailbox).
        self._mailbox: collections.deque = collections.deque()
        self.checkpointer = TaskCheckpointer(self)
        config = tdd.configuration
        # -1: flush only when full (execution.buffer-timeout.enabled false)
        self._buffer_timeout_ms = (ExecutionOptions.BUFFER_TIMEOUT.get(config).to_milliseconds()
                                   if ExecutionOptions.BUFFER_TIMEOUT_ENABLED.get(config) else -1)
        # Sources emit a LatencyMarker this often (0 disables; see MetricOptions for the default).
        self._latency_interval_ms = MetricOptions.LATENCY_INTERVAL.get(config).to_milliseconds()
        self._last_marker = time.monotonic()
        self._batch_size = NettyShuffleEnvironmentOptions.BATCH_SIZE.get(config)

    # ------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start the task's thread."""
        self._thread.start()

    def cancel(self) -> None:
        """Ask the task to stop; it ends promptly and reports CANCELED."""
        if self.state.is_terminal:
            return
        self._cancelled.set()
        if self._gate is not None:
            self._gate.cancel()
        source = self._chain.head if self._chain is not None else None
        wakeup = getattr(source, "wakeup", None)
        if wakeup is not None:
            wakeup.set()

    def trigger_checkpoint(self, checkpoint_id: int, timestamp: int, is_savepoint: bool = False) -> None:
        """(Source tasks) take checkpoint ``checkpoint_id`` between two batches and emit its barrier."""
        barrier = CheckpointBarrier(checkpoint_id, timestamp, is_savepoint)
        self._post(lambda: self.checkpointer.perform(barrier))

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Checkpoint ``checkpoint_id`` completed: operators may commit (in the task thread)."""
        self._post(lambda: self.checkpointer.notify_complete(checkpoint_id))

    def peek(self, node_id: int, limit: int, seconds: float) -> list:
        """The last records (with timestamps) operator ``node_id`` of this task emits within
        ``seconds`` (:func:`~streamkernel.runtime.tasks.peek.tap_operator`); empty before it runs."""
        from streamkernel.runtime.tasks.peek import tap_operator

        chain = self._chain
        if chain is None or node_id not in chain.operators:
            return []
        return tap_operator(chain.operators[node_id], limit, seconds)

    def inject_failure(self, error: BaseException) -> None:
        """Fail this task with ``error``, raised in its own thread between two batches, as if
        its operators had raised it (failure injection: ``MiniCluster.fail_operator``)."""
        def fail() -> None:
            raise error

        self._post(fail)

    def _post(self, action: Callable[[], None]) -> None:
        self._mailbox.append(action)
        if self._gate is not None:
            self._gate.wakeup()
        wakeup = getattr(self._chain.head if self._chain is not None else None, "wakeup", None)
        if wakeup is not None:
            wakeup.set()

    def _run_mailbox(self) -> None:
        mailbox = self._mailbox
        while mailbox:
            mailbox.popleft()()

    def join(self, timeout: Optional[float] = None) -> None:
        """Wait for the thread to end."""
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def is_alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def _report(self, state: ExecutionState, error: Optional[BaseException] = None) -> None:
        self.state = state
        self._on_state_change(self.tdd.attempt_id, state, error)

    def _run(self) -> None:
        try:
            self._report(ExecutionState.INITIALIZING)
            self._build()
            self._check_cancelled()
            self._report(ExecutionState.RUNNING)
            head = self._chain.head  # type: ignore[union-attr]
            if self.tdd.inputs:
                self._run_input(head)
            else:
                self._run_source(head)
            self._finish()
            self._close_operators()
            self._report(ExecutionState.FINISHED)
        except BaseException as exc:  # noqa: BLE001 - every failure must be reported
            self._close_operators(quietly=True)
            if self._cancelled.is_set():
                self._report(ExecutionState.CANCELED)
            else:
                self.failure_cause = exc
                self._report(ExecutionState.FAILED, exc)

    def _check_cancelled(self) -> None:
        if self._cancelled.is_set():
            raise TaskCancelledError(self.tdd.name_with_subtask)

    # ---------------------------------------------------------------- set-up
    def _build(self) -> None:
        from streamkernel.runtime.network.record_writer import RecordWriter
        from streamkernel.runtime.operators.timers import ProcessingTimeService

        tdd = self.tdd
        shuffle = self.services.shuffle
        self.processing_time = ProcessingTimeService(self.services.clock)
        if tdd.inputs:
            self._gate = shuffle.create_input_gate(
                tdd.name_with_subtask, [(d.channel_id, d.input_index) for d in tdd.inputs],
                NettyShuffleEnvironmentOptions.CREDITS_PER_CHANNEL.get(tdd.configuration))
        outputs: dict[int, RecordWriterOutput] = {}
        network_edges: list[StreamEdge] = []
        addresses = tdd.shuffle_addresses  # consumers in other TaskManager processes: their data listeners
        for descriptor in tdd.outputs:
            channels = [shuffle.output_channel(cid, addresses[cid]) if cid in addresses else shuffle.output_channel(cid)
                        for cid in descriptor.channel_ids]
            writer = RecordWriter(descriptor.stream_edge.partitioner, channels, tdd.subtask_index,
                                  buffer_size=self._batch_size, metrics=self.metrics)
            self._writers.append(writer)
            outputs[id(descriptor.stream_edge)] = RecordWriterOutput(writer, self._on_output_watermark)
            network_edges.append(descriptor.stream_edge)
        self._chain = OperatorChain(tdd.nodes, tdd.chain_edges, network_edges, create_operator,
                                    lambda edge: outputs[id(edge)])
        for node, operator in self._chain.in_order():
            context = self._operator_context(node, operator)
            self.checkpointer.contexts[node.id] = context
            operator.setup(context, self._chain.outputs[node.id])
            self.checkpointer.restore_before_open(node, context)
        self._head_metrics = self.metrics.operator(tdd.nodes[0].name)
        self._sink_metrics = [self.metrics.operator(n.name) for n in tdd.nodes if n.is_sink]
        self._has_sink = bool(self._sink_metrics)
        for _, operator in self._chain.in_order():
            operator.initialize_state()
        for _, operator in reversed(self._chain.in_order()):  # successors first, as Flink opens
            operator.open()
        for node, operator in self._chain.in_order():
            self.checkpointer.restore_after_open(node, operator)

    def _operator_context(self, node: StreamNode, operator: StreamOperator) -> OperatorContext:
        from streamkernel.runtime.state.factory import create_keyed_backend
        from streamkernel.runtime.state.operator_state import DefaultOperatorStateBackend
        from streamkernel.runtime.operators.timers import InternalTimerService

        tdd = self.tdd
        info = TaskInfo(tdd.job_id, tdd.job_name, tdd.job_vertex.name, tdd.subtask_index, tdd.parallelism,
                        node.max_parallelism, tdd.attempt_number, tdd.job_vertex.pyflink_name)
        keyed = None
        if node.is_keyed:
            key_groups = key_group_range_for_operator(node.max_parallelism, node.parallelism, tdd.subtask_index)
            keyed = create_keyed_backend(
                batch_state_configuration(tdd.configuration), node.max_parallelism, key_groups,
                clock=self.services.clock,
                working_dir=os.path.join(self.services.working_dir, str(tdd.job_id),
                                         f"{tdd.job_vertex.id}-{tdd.subtask_index}-{node.id}"))
            keyed.key_type = node.state_key_type  # keys hash to key groups as key_by's partitioner hashes them
        processing_time = self.processing_time

        def timer_service(name: str, triggerable: Any) -> Any:
            service = InternalTimerService(name, keyed, triggerable, processing_time)
            operator._timer_services.append(service)
            return service

        restored = self.checkpointer.restored_for(node) or {}
        raw = restored.get("raw")
        if raw is None and restored.get("raw_all") is not None:
            raw = {"raw_all": restored["raw_all"]}  # parallelism changed: every old subtask's raw state
        return OperatorContext(
            task_info=info, node=node, processing_time=processing_time, timer_service=timer_service,
            operator_state=DefaultOperatorStateBackend(), metrics=self.metrics.operator(node.name),
            keyed_backend=keyed, configuration=tdd.configuration, job_parameters=tdd.job_parameters,
            restored_state=raw)

    def _on_output_watermark(self, timestamp: int) -> None:
        self.metrics.output_watermark = timestamp

    # ----------------------------------------------------------------- loops
    def _run_source(self, source: Any) -> None:
        """Read batches from the source until it ends (or the task is cancelled)."""
        batch = self._batch_size
        metrics = self.metrics
        while not self._cancelled.is_set():
            backpressured = metrics.backpressured_at_busy_start = metrics.backpressured_ns
            start = metrics.busy_since = time.perf_counter_ns()
            more = source.emit_next(batch)
            metrics.busy_since = 0
            # busy without the waits for credit (those are backpressured time), as Flink counts
            metrics.busy_ns += time.perf_counter_ns() - start - (metrics.backpressured_ns - backpressured)
            self._between_batches()
            self._emit_latency_marker()
            if not more:
                return
            wait = source.idle_wait_seconds()
            if wait > 0:
                self._flush_all()
                idle_start = time.perf_counter_ns()
                source.wakeup.clear()  # set again by cancel() or a posted action (checkpoint trigger)
                if not self._mailbox and not self._cancelled.is_set():
                    source.wakeup.wait(min(wait, self._timer_wait(_IDLE_POLL_S)))
                self.metrics.idle_ns += time.perf_counter_ns() - idle_start
        self._check_cancelled()

    def _run_input(self, head: StreamOperator) -> None:
        """Take buffers and events from the input gate until every channel ended."""
        exactly_once = CheckpointingOptions.CHECKPOINTING_MODE.get(self.tdd.configuration) == "EXACTLY_ONCE"
        barriers = BarrierHandler(self._gate, self._gate.channels, exactly_once, self.checkpointer.perform,
                                  self._decline_aborted)
        two_input = isinstance(head, TwoInputStreamOperator)
        fed = batch_input(head, self.tdd.nodes[0], self.tdd.configuration, two_input)  # the head itself when streaming
        processor = InputProcessor(self._gate, fed, two_input, self.metrics,
                                   self._on_latency_marker, barriers)
        poll = self._gate.poll
        perf = time.perf_counter_ns
        metrics = self.metrics
        while not self._cancelled.is_set():
            idle_start = perf()
            polled = poll(self._timer_wait(_IDLE_POLL_S))
            busy_start = perf()
            metrics.idle_ns += busy_start - idle_start
            if polled is None:
                self._flush_all()
                self._between_batches()
                continue
            backpressured = metrics.backpressured_at_busy_start = metrics.backpressured_ns
            metrics.busy_since = busy_start
            ended = processor.process(*polled)
            metrics.busy_since = 0
            metrics.busy_ns += perf() - busy_start - (metrics.backpressured_ns - backpressured)
            if ended:
                return
            self._between_batches()
        self._check_cancelled()

    def _decline_aborted(self, checkpoint_id: int) -> None:
        responder = self.services.checkpoint_responder
        if responder is not None:
            responder.decline(self.tdd.attempt_id, checkpoint_id, "a newer checkpoint's barrier overtook it")

    def _emit_latency_marker(self) -> None:
        """Sources: every latency interval, a marker stamped now travels to the sinks."""
        now = time.monotonic()
        if self._latency_interval_ms <= 0 or (now - self._last_marker) * 1000 < self._latency_interval_ms:
            return
        self._last_marker = now
        self._on_latency_marker(LatencyMarker(self.services.clock.now_ms(), self.tdd.job_vertex.id,
                                              self.tdd.subtask_index))

    def _on_latency_marker(self, marker: LatencyMarker) -> None:
        """A marker reached this task: sinks here record its age; writers pass it on (after
        the records before it, so it measures how long records take to get through)."""
        if self._has_sink:
            self.metrics.latency_ms.append(max(0, self.services.clock.now_ms() - marker.marked_time))
        for writer in self._writers:
            writer.broadcast_event(marker)

    def _timer_wait(self, longest: float) -> float:
        deadline = self.processing_time.next_deadline()
        if deadline is None:
            return longest
        return max(0.0, min(longest, (deadline - self.processing_time.current_processing_time()) / 1000))

    def _between_batches(self) -> None:
        """Mailbox work between batches: posted actions, due timers, buffer timeout flushes."""
        if self._mailbox:
            self._run_mailbox()
        self.processing_time.fire_due()
        if self._buffer_timeout_ms >= 0:
            now = time.monotonic()
            if (now - self._last_flush) * 1000 >= self._buffer_timeout_ms:
                self._flush_all(now)
        metrics = self.metrics
        # FLIP-33: a source task's records in are what it read from outside; a chain that
        # ends in sinks sends what its sinks wrote.
        if self._writers:
            metrics.records_out = sum(w.records_out for w in self._writers)
        else:
            metrics.records_out = sum(m.records_in for m in self._sink_metrics)
        if not self.tdd.inputs:
            metrics.records_in = self._head_metrics.records_out

    def _flush_all(self, now: Optional[float] = None) -> None:
        for writer in self._writers:
            writer.flush()
        self._last_flush = time.monotonic() if now is None else now

    def _finish(self) -> None:
        """End of input: finish operators head first, then end every output channel."""
        for index, (_, operator) in enumerate(self._chain.in_order()):  # type: ignore[union-attr]
            if index > 0:  # the head's input ended already; chained operators' input ends now (Flink)
                operator.end_input()
            operator.finish()
        self.processing_time.fire_due()
        for writer in self._writers:
            writer.broadcast_event(END_OF_PARTITION)
        self._between_batches()

    def _close_operators(self, quietly: bool = False) -> None:
        """Close every operator once; after a failure (``quietly``) close errors are ignored."""
        if self._chain is None or self._closed:
            return
        self._closed = True
        try:
            for _, operator in self._chain.in_order():
                try:
                    operator.close()
                except BaseException:  # noqa: BLE001
                    if not quietly:
                        raise
        finally:
            self._dispose_keyed_backends()

    def _dispose_keyed_backends(self) -> None:
        """Release every operator's keyed state backend (RocksDB closes and deletes its files)."""
        for context in self.checkpointer.contexts.values():
            if context.keyed_backend is not None:
                try:
                    context.keyed_backend.dispose()
                except Exception:  # noqa: BLE001 - the task is ending; a leftover directory is harmless
                    pass

    def __repr__(self) -> str:
        return f"Task({self.tdd.name_with_subtask}, {self.state.value})"
