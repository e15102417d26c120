"""The input side of a task: buffers and events from the input gate, handed to the chain head.

Records go straight to the head operator; watermarks pass a watermark valve per input
(the minimum over active channels, as Flink's StatusWatermarkValve); the end of every
channel of an input ends that input; a two-input head receives each input separately.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.core.records import (
    END_OF_PARTITION,
    CheckpointBarrier,
    DataBuffer,
    EventAnnouncement,
    LatencyMarker,
    Watermark,
    WatermarkStatus,
)

__all__ = ["InputProcessor", "UNALIGNED_SLICE"]

UNALIGNED_SLICE = 16
"""With unaligned checkpoints on, a buffer is processed in slices and the task looks for a
priority event (a barrier's announcement) between two: Flink reacts between two records, and
a whole buffer of a slow operator takes seconds. The first slice has this many records; then
a slice is as many records as the operator processes in :data:`SLICE_TARGET_NS`, so a fast
operator processes whole buffers (no cost) and a slow one reacts within a few milliseconds."""
SLICE_TARGET_NS = 5_000_000


class InputProcessor:
    """Dispatches what the gate delivers to the head operator; tracks when all input ended."""

    def __init__(self, gate: Any, head: Any, two_input: bool, metrics: TaskMetrics,
                 on_latency_marker: Callable[[LatencyMarker], None], barriers: Any = None,
                 stopping: Callable[[], bool] = lambda: False) -> None:
        from streamkernel.runtime.network.watermark_valve import StatusWatermarkValve

        self.head = head
        self.gate = gate
        self.two_input = two_input
        self.metrics = metrics
        self._on_latency_marker = on_latency_marker
        self._barriers = barriers
        # True once the task stopped at a stop-with-savepoint: channels end without ending the input
        self._stopping = stopping
        # unaligned checkpoints: a buffer is processed in slices, a priority event may come between
        self._slice = UNALIGNED_SLICE if hasattr(barriers, "on_announcement") else 0
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
            values = item.values
            if self._slice:  # unaligned checkpoints: slices (a whole buffer when the operator is fast)
                self._process_in_slices(channel, item)
                return False
            self.metrics.records_in += len(values)
            self._batch[channel.input_index if self.two_input else 0](values, item.timestamps)
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
            if self._barriers is not None:
                self._barriers.on_barrier(channel, item)
        elif type(item) is EventAnnouncement:
            if self._barriers is not None and hasattr(self._barriers, "on_announcement"):
                self._barriers.on_announcement(channel, item.barrier)
        return False

    def _process_in_slices(self, channel: Any, buffer: DataBuffer) -> None:
        """Process ``buffer`` slice by slice; when a priority event (a barrier's announcement)
        comes meanwhile, put the rest back at the head of the channel and return."""
        values, timestamps = buffer
        size, start = len(values), 0
        process = self._batch[channel.input_index if self.two_input else 0]
        while start < size:
            if start and self.gate.has_announcements():
                self.gate.push_front(channel, DataBuffer(values[start:],
                                                         None if timestamps is None else timestamps[start:]))
                return
            end = start + self._slice
            piece = values if start == 0 and end >= size else values[start:end]
            piece_ts = timestamps if piece is values or timestamps is None else timestamps[start:end]
            recording = self._barriers.recording
            if recording and channel.index in recording:
                recording[channel.index].append(DataBuffer(piece, piece_ts))
            self.metrics.records_in += len(piece)
            began = time.perf_counter_ns()
            process(piece, piece_ts)
            elapsed = time.perf_counter_ns() - began
            # as many records as take SLICE_TARGET_NS (at least one)
            self._slice = max(1, int(SLICE_TARGET_NS * len(piece) / elapsed)) if elapsed > 0 else size
            start += len(piece)

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
