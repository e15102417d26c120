"""Checkpoint barriers at a task's input when unaligned checkpoints are on (Flink's
``SingleCheckpointBarrierHandler`` with its ``AlternatingWaitingForFirstBarrierUnaligned``
and ``AlternatingCollectingBarriers`` states).

Senders put their barrier into the channel without waiting for credit and *announce* it
(:meth:`~streamkernel.runtime.network.record_writer.RecordWriter.broadcast_unaligned_barrier`);
the announcement reaches the task before the channel's queued buffers.

* **Unaligned** (``execution.checkpointing.aligned-checkpoint-timeout`` 0, the default): the
  *first* barrier or announcement of checkpoint *n* on any channel makes the task snapshot
  its operators at once and send its barrier downstream ahead of its queued output
  (``start_unaligned``). Then, for every input channel, the records *before* that channel's
  barrier that the task processes after its snapshot are its **in-flight data**: the buffers
  a pulled barrier overtook (:meth:`InputGate.pull_barrier`) plus the buffers processed
  from a channel whose barrier had not arrived yet (recorded as they pass,
  :attr:`UnalignedBarrierHandler.recording`). Nothing is blocked. When every channel's
  barrier was seen, ``finish_unaligned(barrier, in_flight)`` stores the snapshot with its
  in-flight data and acknowledges.
* **Aligned first, unaligned after a timeout** (timeout > 0): the checkpoint aligns as usual
  (channels with the barrier are blocked); once ``barrier.timestamp + timeout`` passed
  (:meth:`UnalignedBarrierHandler.check_timeout`, called between batches) it switches to
  unaligned: the snapshot is taken then, the blocked channels are released (what they hold
  comes after the barrier), the announced barriers are pulled out of the other channels.
* **Savepoints** always align (as in Flink): ``perform_aligned(barrier)`` when all arrived.

In-flight data is stored as the *receiver's* input state (``[(input index, DataBuffer)]``):
a local channel is one queue shared by sender and receiver, so the receiver sees exactly
what the barrier overtook, and on restore it feeds those records to its operators first. A
channel from another TaskManager is the same LocalChannel at the receiver, fed by the
network thread (:class:`~streamkernel.runtime.network.data_listener.RemoteFeed`, which also
queues the overdraft items and announces the barrier): nothing here tells them apart.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from streamkernel.runtime.core.records import CheckpointBarrier, DataBuffer

__all__ = ["UnalignedBarrierHandler"]


class UnalignedBarrierHandler:
    """Tracks one task's barriers with unaligned checkpoints on (module docstring)."""

    def __init__(self, gate: Any, channels: Iterable[Any], timeout_ms: int, now_ms: Callable[[], int],
                 perform_aligned: Callable[[CheckpointBarrier], None],
                 start_unaligned: Callable[[CheckpointBarrier], None],
                 finish_unaligned: Callable[[CheckpointBarrier, list[tuple[int, DataBuffer]]], None],
                 on_aborted: Optional[Callable[[int], None]] = None) -> None:
        self.gate = gate
        self.timeout_ms = timeout_ms
        self._now_ms = now_ms
        self._perform_aligned = perform_aligned
        self._start_unaligned = start_unaligned
        self._finish_unaligned = finish_unaligned
        self._on_aborted = on_aborted
        self._channels = {c.index: c for c in channels}
        self._open: set[int] = set(self._channels)
        self._pending: Optional[CheckpointBarrier] = None
        self._unaligned = False
        self._arrived: set[int] = set()
        self._blocked: list[Any] = []
        self._announced: dict[int, CheckpointBarrier] = {}
        self._in_flight: list[tuple[int, DataBuffer]] = []
        #: channel index -> buffers processed after the snapshot, before that channel's barrier
        self.recording: dict[int, list[DataBuffer]] = {}
        self.last_completed = 0

    @property
    def aligning(self) -> Optional[int]:
        """The checkpoint id in progress, or None."""
        return self._pending.checkpoint_id if self._pending is not None else None

    @property
    def is_unaligned(self) -> bool:
        """True while the checkpoint in progress is unaligned."""
        return self._pending is not None and self._unaligned

    # ------------------------------------------------------------------ events
    def on_announcement(self, channel: Any, barrier: CheckpointBarrier) -> None:
        """``barrier`` was put into ``channel`` (a priority notice ahead of the queued items)."""
        if barrier.is_savepoint or not self._begin(barrier):
            return
        if channel.index in self._arrived:
            return
        if self._unaligned:
            self._pull(channel)
            self._maybe_complete()
        else:
            self._announced[channel.index] = barrier
            self.check_timeout()

    def on_barrier(self, channel: Any, barrier: CheckpointBarrier) -> None:
        """``barrier`` reached the head of ``channel``'s queue (it was not pulled out before)."""
        if not self._begin(barrier) or channel.index in self._arrived:
            return
        self._announced.pop(channel.index, None)
        self._arrived.add(channel.index)
        if self._unaligned:
            self._in_flight += [(channel.input_index, b) for b in self.recording.pop(channel.index, ())]
        else:
            self.gate.block_channel(channel)
            self._blocked.append(channel)
        self._maybe_complete()
        if self._pending is not None:
            self.check_timeout()

    def on_channel_finished(self, channel: Any) -> None:
        """``channel`` ended: it no longer holds the checkpoint back."""
        self._open.discard(channel.index)
        self._announced.pop(channel.index, None)
        if channel.index in self.recording:
            self._in_flight += [(channel.input_index, b) for b in self.recording.pop(channel.index)]
        self._maybe_complete()

    def check_timeout(self) -> None:
        """Switch an aligning checkpoint to unaligned once its aligned-checkpoint-timeout passed."""
        pending = self._pending
        if pending is None or self._unaligned or pending.is_savepoint:
            return
        if self._now_ms() >= pending.timestamp + self.timeout_ms:
            self._go_unaligned()
            self._maybe_complete()

    # ------------------------------------------------------------------ internals
    def _begin(self, barrier: CheckpointBarrier) -> bool:
        """Start tracking ``barrier``'s checkpoint if new; False for an old or aborted one."""
        checkpoint_id = barrier.checkpoint_id
        if checkpoint_id <= self.last_completed:
            return False
        if self._pending is not None and checkpoint_id > self._pending.checkpoint_id:
            aborted = self._pending.checkpoint_id
            self._reset()
            if self._on_aborted is not None:
                self._on_aborted(aborted)
        if self._pending is None:
            self._pending = barrier
            if not barrier.is_savepoint and self.timeout_ms <= 0:
                self._go_unaligned()
        return checkpoint_id == self._pending.checkpoint_id

    def _go_unaligned(self) -> None:
        """Snapshot now, release blocked channels, take announced barriers out, record the rest."""
        barrier = self._pending
        assert barrier is not None
        self._unaligned = True
        self._start_unaligned(barrier)
        for channel in self._blocked:  # what they hold came after their barrier: not in flight
            self.gate.unblock_channel(channel)
        self._blocked = []
        for index in self._open - self._arrived:
            self.recording[index] = []
        for index in list(self._announced):
            self._pull(self._channels[index])
        self._announced.clear()

    def _pull(self, channel: Any) -> None:
        """Take the pending barrier out of ``channel``: what it overtook is in-flight data."""
        pending = self._pending
        assert pending is not None
        overtaken = self.gate.pull_barrier(channel, pending.checkpoint_id)
        if overtaken is None:
            return  # not (or no longer) in the queue: it arrives through on_barrier
        recorded = self.recording.pop(channel.index, [])
        self._in_flight += [(channel.input_index, b) for b in recorded + overtaken]
        self._arrived.add(channel.index)

    def _maybe_complete(self) -> None:
        if self._pending is None or not self._open.issubset(self._arrived):
            return
        barrier, unaligned, in_flight = self._pending, self._unaligned, self._in_flight
        self.last_completed = barrier.checkpoint_id
        self._reset()
        if unaligned:
            self._finish_unaligned(barrier, in_flight)
        else:
            self._perform_aligned(barrier)

    def _reset(self) -> None:
        for channel in self._blocked:
            self.gate.unblock_channel(channel)
        self._blocked = []
        self._arrived = set()
        self._announced.clear()
        self.recording = {}
        self._in_flight = []
        self._pending = None
        self._unaligned = False
