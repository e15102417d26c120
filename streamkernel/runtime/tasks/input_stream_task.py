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

import time

from streamkernel.common.options import CheckpointingOptions
from streamkernel.runtime.operators.base import StreamOperator, TwoInputStreamOperator
from streamkernel.runtime.operators.batch_execution import batch_input
from streamkernel.runtime.tasks.barriers import BarrierHandler
from streamkernel.runtime.tasks.stream_task import IDLE_POLL_S, StreamTask
from streamkernel.runtime.tasks.task_input import InputProcessor

__all__ = ["InputStreamTask"]


class InputStreamTask(StreamTask):
    """A stream task whose chain's head reads one input or two (a task with input channels)."""

    def _run_loop(self, head: StreamOperator) -> None:
        """Take buffers and events from the input gate until every channel ended."""
        exactly_once = CheckpointingOptions.CHECKPOINTING_MODE.get(self.tdd.configuration) == "EXACTLY_ONCE"
        barriers = BarrierHandler(self.gate, self.gate.channels, exactly_once, self.checkpointer.perform,
                                  self._decline_aborted)
        two_input = isinstance(head, TwoInputStreamOperator)
        fed = batch_input(head, self.tdd.nodes[0], self.tdd.configuration, two_input)  # the head itself when streaming
        processor = InputProcessor(self.gate, fed, two_input, self.metrics,
                                   self._on_latency_marker, barriers)
        poll = self.gate.poll
        perf = time.perf_counter_ns
        metrics = self.metrics
        while not self._cancelled.is_set():
            idle_start = perf()
            polled = poll(self._timer_wait(IDLE_POLL_S))
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
        """A newer barrier overtook checkpoint ``checkpoint_id`` while it aligned: decline it."""
        responder = self.services.checkpoint_responder
        if responder is not None:
            responder.decline(self.tdd.attempt_id, checkpoint_id, "a newer checkpoint's barrier overtook it")
