"""The source task's loop: read batches from the chain's source (Flink's ``SourceStreamTask``,
and ``SourceOperatorStreamTask`` for FLIP-27 sources).

The head of the chain is a source operator: the loop asks it for the next batch, does the
mailbox's work between two batches (a checkpoint triggered by the JobMaster runs there, so
its barrier goes out between two batches) and emits a latency marker every latency
interval. A source that has nothing to read now (unbounded, idle or rate-limited) names how
long to wait: the task flushes its outputs and sleeps on the source's ``wakeup`` event, set
again by a cancellation or an action put into the mailbox.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from streamkernel.common.options import MetricOptions
from streamkernel.runtime.core.deployment import TaskDeploymentDescriptor
from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.core.records import LatencyMarker
from streamkernel.runtime.tasks.stream_task import IDLE_POLL_S, StreamTask

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.tasks.task import TaskServices

__all__ = ["SourceStreamTask"]


class SourceStreamTask(StreamTask):
    """A stream task whose chain starts with a source (a task without inputs)."""

    def __init__(self, tdd: TaskDeploymentDescriptor, services: "TaskServices", metrics: TaskMetrics,
                 cancelled: threading.Event) -> None:
        super().__init__(tdd, services, metrics, cancelled)
        # Sources emit a LatencyMarker this often (0 disables; see MetricOptions for the default).
        self._latency_interval_ms = MetricOptions.LATENCY_INTERVAL.get(tdd.configuration).to_milliseconds()
        self._last_marker = time.monotonic()

    def _run_loop(self, source: Any) -> None:
        """Read batches from the source until it ends (or the task is cancelled)."""
        budget = self.batch_budget()
        metrics = self.metrics
        emitted = self._head_metrics  # the source operator's records_out: what a batch read
        hold_for_output = self.checkpointer.unaligned
        while not self._cancelled.is_set():
            if self.stopping is not None:  # took a stop-with-savepoint's snapshot: read nothing more
                if self._await_savepoint_outcome():
                    return
                continue  # the savepoint failed: read on
            if hold_for_output:
                self._wait_for_output(source)
                if self.stopping is not None:
                    continue
            backpressured = metrics.backpressured_at_busy_start = metrics.backpressured_ns
            before = emitted.records_out
            start = metrics.busy_since = time.perf_counter_ns()
            more = source.emit_next(budget.size)
            metrics.busy_since = 0
            # busy without the waits for credit (those are backpressured time), as Flink counts
            busy = time.perf_counter_ns() - start - (metrics.backpressured_ns - backpressured)
            metrics.busy_ns += busy
            budget.measured(emitted.records_out - before, busy)
            self._between_batches()
            self._emit_latency_marker()
            if self.stopping is not None:
                continue
            if not more:
                return
            wait = source.idle_wait_seconds()
            if wait > 0:
                self._flush_idle()
                idle_start = time.perf_counter_ns()
                source.wakeup.clear()  # set again by cancel() or a posted action (checkpoint trigger)
                if not self._mail and not self._cancelled.is_set():
                    source.wakeup.wait(min(wait, self._timer_wait(IDLE_POLL_S)))
                self.metrics.idle_ns += time.perf_counter_ns() - idle_start
        self._check_cancelled()

    def drain_for_savepoint(self) -> None:
        """Stop-with-savepoint with drain: the source emits MAX_WATERMARK, then the operators end."""
        self.chain.head.advance_to_end_of_event_time()  # type: ignore[union-attr]
        super().drain_for_savepoint()

    def _wait_for_output(self, source: Any) -> None:
        """Unaligned checkpoints: read the next batch only once every output channel has a
        credit (Flink's output availability), waiting where a checkpoint trigger is seen at
        once, instead of blocking in a send that only the slow receiver can end."""
        if self.outputs_have_credit():
            return
        metrics = self.metrics
        start = metrics.backpressured_since = time.perf_counter_ns()
        wakeup = source.wakeup  # set by a returned credit, a posted action or cancel()
        try:
            while not self._cancelled.is_set():
                if self._mail:  # a checkpoint trigger, a notification: run it while we wait
                    self._between_batches()
                    if self.stopping is not None:
                        return  # stopped at a savepoint's barrier: read nothing more
                    continue
                wakeup.clear()
                waiting = [c for writer in self.writers for c in writer.channels
                           if hasattr(c, "await_credit") and not c.await_credit(wakeup)]
                try:
                    if not waiting:
                        return
                    if not self._mail:
                        wakeup.wait(IDLE_POLL_S)
                finally:
                    for channel in waiting:
                        channel.stop_awaiting()
        finally:
            metrics.backpressured_since = 0
            metrics.backpressured_ns += time.perf_counter_ns() - start

    def _emit_latency_marker(self) -> None:
        """Every latency interval, a marker stamped now travels to the sinks."""
        now = time.monotonic()
        if self._latency_interval_ms <= 0 or (now - self._last_marker) * 1000 < self._latency_interval_ms:
            return
        self._last_marker = now
        self._on_latency_marker(LatencyMarker(self.services.clock.now_ms(), self.tdd.job_vertex.id,
                                              self.tdd.subtask_index))
