"""The sending side of one output edge: partition batches to channels, buffer, send.

Flink's ``RecordWriter`` (the ``ChannelSelector`` parts that pick channels by key are in
:mod:`.channel_selection`): the tail of an operator chain hands every
batch of one non-chained out edge to a :class:`RecordWriter`, which splits it by the edge's
partitioner, appends each channel's share to that channel's pending buffer, and sends a
buffer (:class:`~streamkernel.runtime.core.records.DataBuffer`) once it holds ``buffer_size``
records. ``flush`` sends whatever is pending (the task calls it when its buffer timeout
expires, and before it blocks or ends); events (watermarks, barriers, END_OF_PARTITION)
are broadcast after a flush, so they stay exactly in order with the records.

Hot path (per batch): the routing is chosen once, at construction; FORWARD/GLOBAL pass the
batch on whole, REBALANCE/RESCALE slice it (``values[k::n]``, C speed), BROADCAST shares
the list, HASH does one key call and one cached dict lookup per record and appends
straight into the pending buffers. No per-record objects, locks or method dispatch.

Ownership: lists handed to ``emit`` are never modified, but they may be sent downstream
as they are (no copy when a batch fills a buffer on its own; BROADCAST shares one list
between channels). Lists inside a DataBuffer are therefore read-only for receivers.

A buffer holds at least ``buffer_size`` records when sent for being full, and at most
``buffer_size - 1`` plus one batch's share (a batch is never split to fit: that would cost
a copy while the upstream batch size already bounds it). Records with and without
timestamps never share a buffer.

Buffer debloating (``debloat=True``, :mod:`.buffer_debloater`): the receiver announces a
smaller size per channel (``channel.buffer_size``, in records); the writer then sends a
channel's buffer once it holds that many records, splitting a batch into chunks of exactly
that size (a copy per batch, paid only with debloating on). Off, nothing of this runs.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Optional, Sequence

from streamkernel.graph.keygroups import default_max_parallelism
from streamkernel.graph.partitioners import (
    BroadcastPartitioner,
    CustomPartitionerWrapper,
    ForwardPartitioner,
    GlobalPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
    StreamPartitioner,
)
from streamkernel.runtime.core.keys import key_function
from streamkernel.runtime.core.records import DataBuffer
from streamkernel.runtime.network.channel_selection import (
    KeyChannelCache,
    PartitioningError,
    custom_channels,
    hash_channels,
)

__all__ = ["RecordWriter", "PartitioningError"]


class RecordWriter:
    """Routes the batches of one output edge to its channels (Flink's RecordWriter).

    ``channels`` are the edge's channels of this subtask, ordered by target subtask (for
    RESCALE and FORWARD: only this subtask's pointwise subset). ``metrics`` (optional, e.g.
    the task's TaskMetrics) gets every wait for credit added to its ``backpressured_ns``
    as it happens; ``backpressured_ns`` here accumulates the same waits for this writer.
    ``records_out`` counts records emitted (once per record, even when broadcast) and
    ``buffers_out`` the DataBuffers sent. Used by one thread (its task's): no locks.

    >>> from streamkernel.graph.partitioners import RebalancePartitioner
    >>> from streamkernel.runtime.network.input_gate import InputGate
    >>> gate = InputGate("Sink (1/1)")
    >>> writer = RecordWriter(RebalancePartitioner(), [gate.create_channel(0), gate.create_channel(0)], 0)
    >>> writer.emit([1, 2, 3, 4, 5], None); writer.flush()
    >>> sorted(tuple(gate.poll(0)[1].values) for _ in range(2))
    [(1, 3, 5), (2, 4)]
    """

    def __init__(self, partitioner: StreamPartitioner, channels: Sequence[Any], subtask_index: int, *,
                 buffer_size: int = 1024, metrics: Any = None, debloat: bool = False) -> None:
        if not channels:
            raise ValueError(f"a RecordWriter for a {partitioner} edge needs at least one channel")
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be >= 1, got {buffer_size}")
        self.partitioner = partitioner
        self.channels = list(channels)
        self.subtask_index = subtask_index
        self.buffer_size = buffer_size
        self.metrics = metrics
        self.backpressured_ns = 0
        self.records_out = 0
        self.buffers_out = 0
        n = self._n = len(self.channels)
        # Pending buffer of channel c: _values[c] / _timestamps[c] (owned by the writer).
        self._values: list[list] = [[] for _ in range(n)]
        self._timestamps: list[list] = [[] for _ in range(n)]
        self._with_ts = False  # do the pending buffers carry timestamps?
        self._next = 0  # round-robin: the channel of the next record
        self._key_fn: Callable[[Any], Any] = None  # type: ignore[assignment]
        self.emit = self._select_route(partitioner, n, subtask_index)  # type: ignore[method-assign]
        if debloat:  # buffers of each channel's announced size: the routes call these instead
            self._add_chunk = self._add_chunk_debloated  # type: ignore[method-assign]
            self._send_full = self._send_full_debloated  # type: ignore[method-assign]

    def _select_route(self, partitioner: StreamPartitioner, n: int, subtask_index: int) -> Callable:
        if isinstance(partitioner, BroadcastPartitioner):
            return self._emit_broadcast if n > 1 else self._emit_single
        if isinstance(partitioner, CustomPartitionerWrapper):
            self._key_fn = key_function(partitioner.key_selector)
            self._partition_fn = getattr(partitioner.partitioner, "partition", partitioner.partitioner)
            return self._emit_custom
        if n == 1 or isinstance(partitioner, (ForwardPartitioner, GlobalPartitioner)):
            return self._emit_single  # channel 0: the whole batch, no per-record work
        if isinstance(partitioner, KeyGroupStreamPartitioner):
            self._key_fn = key_function(partitioner.key_selector)
            max_par = partitioner.max_parallelism or default_max_parallelism(n)
            self._cache = KeyChannelCache(max_par, n, partitioner.key_type)
            return self._emit_hash
        if isinstance(partitioner, RebalancePartitioner):
            self._next = subtask_index % n  # spreads the senders' first records (Flink: random)
            return self._emit_round_robin
        if isinstance(partitioner, RescalePartitioner):
            return self._emit_round_robin
        if isinstance(partitioner, ShufflePartitioner):
            self._rng = random.Random()
            return self._emit_shuffle
        raise ValueError(f"RecordWriter does not know the partitioner {partitioner!r}")

    # ----------------------------------------------------------------- public API
    def emit(self, values: list, timestamps: Optional[list]) -> None:
        """Route a batch (``timestamps`` None when the records have none) to the channels.

        Replaced per instance, at construction, by the partitioner's routing method.
        """
        raise NotImplementedError  # pragma: no cover

    def flush(self) -> None:
        """Send every non-empty pending buffer."""
        for c, pending in enumerate(self._values):
            if pending:
                self._send_pending(c)

    def flush_available(self) -> None:
        """Send the non-empty pending buffers of the channels that have a credit now (never waits).

        The timed flush with unaligned checkpoints: a task must not block in a flush while a
        barrier announcement waits for it; what stays pending goes out with the next send.
        """
        for c, pending in enumerate(self._values):
            if pending and getattr(self.channels[c], "available_credits", 1) > 0:
                self._send_pending(c)

    def broadcast_event(self, event: Any) -> None:
        """Flush, then send ``event`` (Watermark, CheckpointBarrier, END_OF_PARTITION, ...) to every channel."""
        self.flush()
        for channel in self.channels:
            self._account(self._send(channel, event))

    def broadcast_unaligned_barrier(self, barrier: Any) -> None:
        """Put ``barrier`` into every channel at once, without waiting for credit, and announce it.

        Unaligned checkpoints (Flink's priority events): the partly filled buffers go in first
        (their records were emitted before the snapshot), then the barrier; the receiver takes
        the barrier out ahead of the queued buffers and stores those as in-flight data.
        """
        for c, channel in enumerate(self.channels):
            if self._values[c]:
                channel.send_overdraft(self._take_pending(c))
            channel.send_overdraft(barrier)
            channel.announce(barrier)

    @property
    def pending_records(self) -> int:
        """Records buffered but not yet sent."""
        return sum(map(len, self._values))

    # ------------------------------------------------------------------- sending
    def _send(self, channel: Any, item: Any) -> int:
        """``channel.send(item)``; while it may wait for credit, the task's metrics know since when
        (a snapshot taken during a long wait counts it as backpressured time already)."""
        metrics = self.metrics
        if metrics is None:
            return channel.send(item)
        metrics.backpressured_since = time.perf_counter_ns()
        try:
            return channel.send(item)
        finally:
            metrics.backpressured_since = 0

    def _account(self, waited: int) -> None:
        if waited:  # only after a wait for credit: nothing of this runs while output flows
            self.backpressured_ns += waited
            if self.metrics is not None:
                self.metrics.backpressured_ns += waited
                periods = getattr(self.metrics, "backpressure_periods", None)
                if periods is not None:
                    periods.append((time.perf_counter_ns(), waited))

    def _take_pending(self, c: int) -> DataBuffer:
        """Channel ``c``'s pending records as one buffer (counted as sent); its lists start anew."""
        buffer = DataBuffer(self._values[c], self._timestamps[c] if self._with_ts else None)
        self._values[c] = []
        self._timestamps[c] = []
        self.buffers_out += 1
        return buffer

    def _send_pending(self, c: int) -> None:
        self._account(self._send(self.channels[c], self._take_pending(c)))

    def _switch_timestamps(self, with_ts: bool) -> None:
        """Records with and without timestamps never share a buffer."""
        self.flush()
        self._with_ts = with_ts

    def _add_chunk(self, c: int, values: list, timestamps: Optional[list], owned: bool) -> None:
        """Append a channel's share; ``owned``: the lists are ours (slices) and may be kept."""
        pending = self._values[c]
        if not pending:
            if len(values) >= self.buffer_size:  # a full buffer on its own: send it, no copy
                self.buffers_out += 1
                self._account(self._send(self.channels[c], DataBuffer(values, timestamps)))
                return
            if owned:
                self._values[c] = values
                if timestamps is not None:
                    self._timestamps[c] = timestamps
                return
        pending.extend(values)
        if timestamps is not None:
            self._timestamps[c].extend(timestamps)
        if len(pending) >= self.buffer_size:
            self._send_pending(c)

    def _send_full(self) -> None:
        size = self.buffer_size
        for c, pending in enumerate(self._values):
            if len(pending) >= size:
                self._send_pending(c)

    # -------------------------------------------------------------- buffer debloating
    def channel_buffer_size(self, c: int) -> int:
        """Records per buffer for channel ``c``: its receiver's announced size (buffer debloating),
        at most the writer's ``buffer_size``; the writer's size while none was announced."""
        announced = getattr(self.channels[c], "buffer_size", 0)
        return min(announced, self.buffer_size) if announced > 0 else self.buffer_size

    def _add_chunk_debloated(self, c: int, values: list, timestamps: Optional[list], owned: bool) -> None:
        """``_add_chunk`` with debloating: append, then send chunks of the channel's announced size."""
        self._values[c].extend(values)
        if timestamps is not None:
            self._timestamps[c].extend(timestamps)
        self._send_chunks(c)

    def _send_full_debloated(self) -> None:
        for c in range(self._n):
            self._send_chunks(c)

    def _send_chunks(self, c: int) -> None:
        """Send channel ``c``'s pending records in buffers of exactly its size; keep the rest pending."""
        size = self.channel_buffer_size(c)
        pending = self._values[c]
        count = len(pending)
        if count < size:
            return
        if count == size:
            self._send_pending(c)
            return
        timestamps = self._timestamps[c] if self._with_ts else None
        full = count - count % size
        self._values[c] = pending[full:]
        self._timestamps[c] = timestamps[full:] if timestamps is not None else []
        channel = self.channels[c]
        for start in range(0, full, size):
            self.buffers_out += 1
            chunk_ts = None if timestamps is None else timestamps[start:start + size]
            self._account(self._send(channel, DataBuffer(pending[start:start + size], chunk_ts)))

    # ------------------------------------------------------------------- routings
    def _emit_single(self, values: list, timestamps: Optional[list]) -> None:
        """FORWARD, GLOBAL, or a single channel: the whole batch to channel 0."""
        if not values:
            return
        self.records_out += len(values)
        if (timestamps is not None) != self._with_ts:
            self._switch_timestamps(timestamps is not None)
        self._add_chunk(0, values, timestamps, False)

    def _emit_broadcast(self, values: list, timestamps: Optional[list]) -> None:
        """BROADCAST: the batch to every channel (the same list objects when they fill a buffer)."""
        if not values:
            return
        self.records_out += len(values)
        if (timestamps is not None) != self._with_ts:
            self._switch_timestamps(timestamps is not None)
        add = self._add_chunk
        for c in range(self._n):
            add(c, values, timestamps, False)

    def _emit_round_robin(self, values: list, timestamps: Optional[list]) -> None:
        """REBALANCE / RESCALE: record j goes to channel (next + j) % n; slices, no record loop."""
        size = len(values)
        if not size:
            return
        self.records_out += size
        if (timestamps is not None) != self._with_ts:
            self._switch_timestamps(timestamps is not None)
        n, start, add = self._n, self._next, self._add_chunk
        for c in range(n):
            offset = (c - start) % n
            if offset < size:
                add(c, values[offset::n], None if timestamps is None else timestamps[offset::n], True)
        self._next = (start + size) % n

    def _emit_hash(self, values: list, timestamps: Optional[list]) -> None:
        """HASH (key_by): key -> key group -> channel, cached per key, straight into the buffers."""
        if not values:
            return
        self.records_out += len(values)
        if (timestamps is not None) != self._with_ts:
            self._switch_timestamps(timestamps is not None)
        buffers = self._values
        marks = [len(b) for b in buffers]
        appends = [b.append for b in buffers]
        channel_of = self._cache.__getitem__
        key_fn = self._key_fn
        try:
            # The hot loop: one user key call, one dict hit, one append per record.
            if timestamps is None:
                for v in values:
                    appends[channel_of(key_fn(v))](v)
            else:
                ts_appends = [b.append for b in self._timestamps]
                for v, t, c in zip(values, timestamps, map(channel_of, map(key_fn, values))):
                    appends[c](v)
                    ts_appends[c](t)
        except Exception:
            self._rollback(marks)
            self._group(values, timestamps, hash_channels(values, self._key_fn, self._cache,
                                                          self.partitioner.key_selector))  # type: ignore[attr-defined]
            return
        self._send_full()

    def _rollback(self, marks: list[int]) -> None:
        """Drop what a failed batch appended to the pending buffers."""
        for c, mark in enumerate(marks):
            del self._values[c][mark:]
            if self._with_ts:
                del self._timestamps[c][mark:]

    def _group(self, values: list, timestamps: Optional[list], channels: list) -> None:
        """Append each record to the pending buffer of its channel, then send full ones."""
        appends = [b.append for b in self._values]
        if timestamps is None:
            for v, c in zip(values, channels):
                appends[c](v)
        else:
            ts_appends = [b.append for b in self._timestamps]
            for v, t, c in zip(values, timestamps, channels):
                appends[c](v)
                ts_appends[c](t)
        self._send_full()

    def _emit_shuffle(self, values: list, timestamps: Optional[list]) -> None:
        """SHUFFLE: a uniformly random channel per record."""
        if not values:
            return
        self.records_out += len(values)
        if (timestamps is not None) != self._with_ts:
            self._switch_timestamps(timestamps is not None)
        self._group(values, timestamps, self._rng.choices(range(self._n), k=len(values)))

    def _emit_custom(self, values: list, timestamps: Optional[list]) -> None:
        """CUSTOM (partition_custom): ``partitioner.partition(key_selector(record), n)``, checked."""
        if not values:
            return
        self.records_out += len(values)
        if (timestamps is not None) != self._with_ts:
            self._switch_timestamps(timestamps is not None)
        wrapper: CustomPartitionerWrapper = self.partitioner  # type: ignore[assignment]
        self._group(values, timestamps, custom_channels(values, self._key_fn, self._partition_fn, wrapper, self._n))

    def __repr__(self) -> str:
        return (f"RecordWriter({self.partitioner}, channels={self._n}, subtask={self.subtask_index}, "
                f"pending={self.pending_records})")
