"""The input side of a task: buffers and events from the input gate, handed to the chain head.

Records go straight to the head operator; watermarks pass a watermark valve per input
(the minimum over active channels, as Flink's StatusWatermarkValve); the end of every
channel of an input ends that input; a two-input head receives each input separately.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.tasks.batch_budget import BatchBudget
from streamkernel.runtime.core.records import (
    END_OF_PARTITION,
    CheckpointBarrier,
    DataBuffer,
    EventAnnouncement,
    LatencyMarker,
    Watermark,
    WatermarkStatus,
)

__all__ = ["InputProcessor"]


class InputProcessor:
    """Dispatches what the gate delivers to the head operator; tracks when all input ended.

    A buffer goes to the head in slices of ``budget.size`` records (:mod:`.batch_budget`): a
    whole buffer when the chain is fast, a few records when it is slow. :meth:`process` hands
    the first slice and keeps the rest (:attr:`has_rest`); the task does its mailbox's work and
    checks cancellation, then :meth:`resume` hands the next one. With unaligned checkpoints a
    priority event (a barrier's announcement) that came meanwhile goes first: the rest is put
    back at the head of its channel, where the barrier overtakes it as in-flight data.
    """

    def __init__(self, gate: Any, head: Any, two_input: bool, metrics: TaskMetrics,
                 on_latency_marker: Callable[[LatencyMarker], None], barriers: Any = None,
                 stopping: Callable[[], bool] = lambda: False, budget: "BatchBudget | None" = None) -> None:
        from streamkernel.runtime.network.watermark_valve import StatusWatermarkValve

        self.head = head
        self.gate = gate
        self.two_input = two_input
        self.metrics = metrics
        self._on_latency_marker = on_latency_marker
        self._barriers = barriers
        # True once the task stopped at a stop-with-savepoint: channels end without ending the input
        self._stopping = stopping
        # no budget: whole buffers (a processor driven directly, without a task's loop around it)
        self._budget = budget if budget is not None else BatchBudget(1 << 30, 1 << 62, first=1 << 30)
        # unaligned checkpoints: the slices of a channel being recorded are its in-flight data
        self._unaligned = hasattr(barriers, "on_announcement")
        self._rest: "tuple[Any, DataBuffer, int] | None" = None  # (channel, buffer, next record)
        inputs = 2 if two_input else 1
        # channel index in the gate -> (input index, index among that input's channels)
        self._local: dict[int, tuple[int, int]] = {}
        counts = [0] * inputs
        for channel in gate.channels:
            i = channel.input_index if two_input else 0
            self._local[channel.index] = (i, counts[i])
            counts[i] += 1
        self._valves = [StatusWatermarkValve(max(1, n)) for n in counts]
        self._open_channels = list(counts)
        self._ended = [n == 0 for n in counts]
        self._batch: tuple[Callable[..., None], ...]
        self._watermark: tuple[Callable[..., None], ...]
        if two_input:
            self._batch = (head.process_batch1, head.process_batch2)
            self._watermark = (head.process_watermark1, head.process_watermark2)
        else:
            self._batch = (head.process_batch,)
            self._watermark = (head.process_watermark,)
        for i, ended in enumerate(self._ended):
            if ended:  # an input without channels has ended before it started
                self._end_input(i)

    def process(self, channel: Any, item: Any) -> bool:
        """Handle one item from ``channel``; True when every input has ended."""
        if type(item) is DataBuffer:
            self._slice(channel, item, 0)
            return False
        i, local = self._local[channel.index]
        if type(item) is Watermark:
            self._advance(i, self._valves[i].input_watermark(local, item.timestamp))
        elif item is END_OF_PARTITION:
            if self._barriers is not None:
                self._barriers.on_channel_finished(channel)
            if self._stopping():  # no watermark and no end of input: they stay in the savepoint
                self._open_channels[i] -= 1
                return not any(self._open_channels)
            self._advance(i, self._valves[i].channel_finished(local))
            self._open_channels[i] -= 1
            if self._open_channels[i] == 0:
                self._end_input(i)
                return all(self._ended)
        elif type(item) is WatermarkStatus:
            watermark, status = self._valves[i].input_watermark_status(local, item.idle)
            self._advance(i, watermark)
            if status is not None and not self.two_input:
                self.head.process_watermark_status(status)
        elif type(item) is LatencyMarker:
            self._on_latency_marker(item)
        elif type(item) is CheckpointBarrier:
            self.metrics.barrier_arrived(item.checkpoint_id, item.timestamp)
            if self._barriers is not None:
                self._barriers.on_barrier(channel, item)
        elif type(item) is EventAnnouncement:
            if self._barriers is not None and hasattr(self._barriers, "on_announcement"):
                self._barriers.on_announcement(channel, item.barrier)
        return False

    @property
    def has_rest(self) -> bool:
        """Whether a buffer is only partly processed (:meth:`resume` goes on with it)."""
        return self._rest is not None

    def resume(self) -> None:
        """Hand the next slice of the partly processed buffer; a priority event that came
        meanwhile goes first (the rest back at the head of its channel)."""
        rest = self._rest
        assert rest is not None, "resume() without a partly processed buffer"
        self._rest = None
        channel, buffer, start = rest
        if self.gate.has_announcements():
            values, timestamps = buffer
            self.gate.push_front(channel, DataBuffer(values[start:], None if timestamps is None else timestamps[start:]))
            return
        self._slice(channel, buffer, start)

    def _slice(self, channel: Any, buffer: DataBuffer, start: int) -> None:
        """Process ``budget.size`` records of ``buffer`` from ``start``; keep the rest."""
        values, timestamps = buffer
        size = len(values)
        end = start + self._budget.size
        if start == 0 and end >= size:
            piece, piece_ts = values, timestamps
        else:
            piece = values[start:end]
            piece_ts = None if timestamps is None else timestamps[start:end]
        if self._unaligned:
            recording = self._barriers.recording
            if recording and channel.index in recording:
                recording[channel.index].append(DataBuffer(piece, piece_ts))
        metrics = self.metrics
        metrics.records_in += len(piece)
        backpressured = metrics.backpressured_ns
        began = time.perf_counter_ns()
        self._batch[channel.input_index if self.two_input else 0](piece, piece_ts)
        self._budget.measured(len(piece), time.perf_counter_ns() - began - (metrics.backpressured_ns - backpressured))
        if end < size:
            self._rest = (channel, buffer, end)

    def feed(self, input_index: int, buffer: DataBuffer) -> None:
        """Hand restored in-flight records (an unaligned checkpoint's channel state) to the head."""
        self.metrics.records_in += len(buffer.values)
        self._batch[input_index if self.two_input else 0](buffer.values, buffer.timestamps)

    def _advance(self, input_index: int, watermark: Any) -> None:
        if watermark is not None:
            self.metrics.input_watermark = watermark
            self._watermark[input_index](watermark)

    def end_all_inputs(self) -> None:
        """End every input that has not ended yet (stop-with-savepoint with drain)."""
        for input_index, ended in enumerate(self._ended):
            if not ended:
                self._end_input(input_index)

    def _end_input(self, input_index: int) -> None:
        self._ended[input_index] = True
        if self.two_input:
            self.head.end_input(input_index)
        else:
            self.head.end_input()
