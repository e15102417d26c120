"""The loop of a task with inputs: buffers and events from the input gate to the chain's head
(Flink's ``OneInputStreamTask`` and ``TwoInputStreamTask`` in one class: the head decides).

The loop polls the gate (at most until the next processing-time timer is due, and never
longer than the idle poll interval, so cancellation and timers are seen promptly), hands
what arrived to the :class:`~.task_input.InputProcessor` (records to the head, watermarks
through the valves, barriers to the :class:`~.barriers.BarrierHandler`, end of input), and
does the mailbox's work between two batches. In BATCH execution mode the processor feeds
Flink's sorting batch input in front of the head instead of the head itself.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from streamkernel.common.options import CheckpointingOptions, TaskManagerOptions
from streamkernel.runtime.operators.base import StreamOperator, TwoInputStreamOperator
from streamkernel.runtime.operators.batch_execution import batch_input
from streamkernel.runtime.tasks.barriers import BarrierHandler
from streamkernel.runtime.tasks.stream_task import IDLE_POLL_S, StreamTask
from streamkernel.runtime.tasks.task_input import InputProcessor
from streamkernel.runtime.tasks.unaligned_barriers import UnalignedBarrierHandler

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.network.buffer_debloater import TaskDebloater

__all__ = ["InputStreamTask"]


def _wall_ms() -> int:
    """Wall-clock ms, the clock of a barrier's timestamp (the coordinator's trigger time)."""
    return time.time_ns() // 1_000_000


class InputStreamTask(StreamTask):
    """A stream task whose chain's head reads one input or two (a task with input channels)."""

    def _run_loop(self, head: StreamOperator) -> None:
        """Take buffers and events from the input gate until every channel ended."""
        barriers = self._barrier_handler()
        timeout_checks = isinstance(barriers, UnalignedBarrierHandler) and barriers.timeout_ms > 0
        two_input = isinstance(head, TwoInputStreamOperator)
        fed = batch_input(head, self.tdd.nodes[0], self.tdd.configuration, two_input,
                          self._sort_buffers)  # the head itself when streaming
        try:
            self._process_inputs(head, fed, barriers, two_input, timeout_checks)
        finally:
            close = getattr(fed, "close", None) if fed is not head else None
            if close is not None:
                close()  # a sorter's spill files and managed memory, also after a failure

    def _sort_buffers(self, sorted_inputs: int) -> "list | None":
        """The managed memory of the head's ``sorted_inputs`` sorted inputs (BATCH mode), from its
        slot's memory manager by the fraction the job graph gave it; None without either."""
        from streamkernel.runtime.operators.external_sorter import open_sort_buffers

        tdd = self.tdd
        vertex, head_id = tdd.job_vertex, tdd.nodes[0].id
        if not any(n == head_id and u == "OPERATOR" for n, u, _ in vertex.managed_memory_fractions):
            return None  # a job graph without managed memory fractions: unbounded, as before
        return open_sort_buffers(
            getattr(self.services, "memory_manager", None), vertex.managed_memory_fraction(head_id, "OPERATOR"),
            sorted_inputs, tdd.configuration,
            os.path.join(self.services.working_dir, str(tdd.job_id), f"{vertex.id}-{tdd.subtask_index}-sort"),
            tdd.name_with_subtask)

    def _process_inputs(self, head: StreamOperator, fed: Any, barriers: "BarrierHandler | UnalignedBarrierHandler",
                        two_input: bool,
                        timeout_checks: bool) -> None:
        """The loop proper: poll the gate, feed the processor, until every input ended."""
        processor = self._processor = InputProcessor(self.gate, fed, two_input, self.metrics,
                                                     self._on_latency_marker, barriers,
                                                     stopping=lambda: self.stopping is not None,
                                                     budget=self.batch_budget())
        for input_index, buffer in self.checkpointer.restored_in_flight():  # before any new record
            processor.feed(input_index, buffer)
        poll = self.gate.poll
        perf = time.perf_counter_ns
        metrics = self.metrics
        debloater = self._buffer_debloater()  # None unless buffer debloating is on
        while not self._cancelled.is_set():
            if processor.has_rest:  # the next slice of a buffer before anything else of the gate
                busy_start = perf()
                polled = None
            else:
                idle_start = perf()
                polled = poll(self._timer_wait(IDLE_POLL_S))
                busy_start = perf()
                metrics.idle_ns += busy_start - idle_start
                if timeout_checks and barriers.aligning is not None:
                    barriers.check_timeout()  # type: ignore[union-attr]
                if polled is None:
                    self._flush_idle()
                    self._between_batches()
                    continue
            backpressured = metrics.backpressured_at_busy_start = metrics.backpressured_ns
            metrics.busy_since = busy_start
            if polled is None:
                processor.resume()
                ended = False
            else:
                ended = processor.process(*polled)
            metrics.busy_since = 0
            metrics.busy_ns += perf() - busy_start - (metrics.backpressured_ns - backpressured)
            if ended:
                if self.stopping is not None:  # stopped with a savepoint: finish once it completed
                    self._await_savepoint_outcome()
                return
            if debloater is not None:  # Flink's periodic debloat(), between two buffers
                now = perf()
                if now >= debloater.next_ns:
                    debloater.debloat(now)
            self._between_batches()
        self._check_cancelled()

    def drain_for_savepoint(self) -> None:
        """Stop-with-savepoint with drain (MAX_WATERMARK came before the barrier): every input ends."""
        self._processor.end_all_inputs()
        super().drain_for_savepoint()

    def _buffer_debloater(self) -> "TaskDebloater | None":
        """The periodic buffer debloating of this task's input gate, when it is on."""
        config = self.tdd.configuration
        if not TaskManagerOptions.BUFFER_DEBLOAT_ENABLED.get(config):
            return None
        from streamkernel.runtime.network.buffer_debloater import BufferDebloatConfiguration, TaskDebloater

        from streamkernel.runtime.network.buffer_requirements import NetworkBufferSettings, credits_per_channel

        return TaskDebloater(BufferDebloatConfiguration.from_configuration(config), self.gate.channels,
                             credits_per_channel(self.tdd, NetworkBufferSettings.from_configuration(config)),
                             self.metrics)

    def _barrier_handler(self) -> "BarrierHandler | UnalignedBarrierHandler":
        """Aligned (or counting) barrier handling, or unaligned checkpoints when they are on."""
        config = self.tdd.configuration
        checkpointer = self.checkpointer
        if checkpointer.unaligned:
            timeout = CheckpointingOptions.ALIGNED_CHECKPOINT_TIMEOUT.get(config).to_milliseconds()
            return UnalignedBarrierHandler(self.gate, self.gate.channels, timeout, _wall_ms,
                                           checkpointer.perform, checkpointer.start_unaligned,
                                           checkpointer.finish_unaligned, self._decline_aborted)
        exactly_once = CheckpointingOptions.CHECKPOINTING_MODE.get(config) == "EXACTLY_ONCE"
        return BarrierHandler(self.gate, self.gate.channels, exactly_once, checkpointer.perform,
                              self._decline_aborted)

    def _decline_aborted(self, checkpoint_id: int) -> None:
        """A newer barrier overtook checkpoint ``checkpoint_id`` while it aligned: decline it."""
        self.checkpointer.abort_unaligned(checkpoint_id)
        responder = self.services.checkpoint_responder
        if responder is not None:
            responder.decline(self.tdd.attempt_id, checkpoint_id, "a newer checkpoint's barrier overtook it")
