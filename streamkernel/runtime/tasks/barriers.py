"""Checkpoint barrier handling at a task's input: alignment (exactly-once) or counting (at-least-once).

A checkpoint barrier travels in every channel, between records. A task with several input
channels must see barrier *n* on all of them before it snapshots its state:

* **EXACTLY_ONCE** (aligned): once barrier *n* arrived on a channel, that channel is
  *blocked* (its later records wait in the channel) until barrier *n* arrived on every
  other channel too. The snapshot then reflects exactly the records before the barrier.
* **AT_LEAST_ONCE**: nothing is blocked; records after the barrier on a fast channel are
  processed before the snapshot, so after a restore they are processed again (duplicates).

When the last barrier arrives the handler calls ``on_aligned(barrier)``: the task
snapshots its state, forwards the barrier downstream and acknowledges. A channel that
ended counts as aligned. A newer barrier while an older one is still aligning aborts the
older checkpoint (``on_aborted(checkpoint_id)``), as Flink does.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from streamkernel.runtime.core.records import CheckpointBarrier

__all__ = ["BarrierHandler"]


class BarrierHandler:
    """Tracks barriers per channel for one task; blocks channels when aligning (exactly-once)."""

    def __init__(self, gate: Any, channels: Iterable[Any], exactly_once: bool,
                 on_aligned: Callable[[CheckpointBarrier], None],
                 on_aborted: Optional[Callable[[int], None]] = None) -> None:
        self.gate = gate
        self.exactly_once = exactly_once
        self._on_aligned = on_aligned
        self._on_aborted = on_aborted
        self._open: set[int] = {c.index for c in channels}
        self._pending: Optional[CheckpointBarrier] = None
        self._arrived: set[int] = set()
        self._blocked: list[Any] = []
        self.last_completed = 0

    @property
    def aligning(self) -> Optional[int]:
        """The checkpoint id being aligned, or None."""
        return self._pending.checkpoint_id if self._pending is not None else None

    def on_barrier(self, channel: Any, barrier: CheckpointBarrier) -> None:
        """A barrier arrived on ``channel``."""
        checkpoint_id = barrier.checkpoint_id
        if checkpoint_id <= self.last_completed:
            return  # a late barrier of a checkpoint this task already took (or aborted)
        if self._pending is not None and checkpoint_id > self._pending.checkpoint_id:
            aborted = self._pending.checkpoint_id
            self._release()
            if self._on_aborted is not None:
                self._on_aborted(aborted)
        if self._pending is None:
            self._pending = barrier
        if checkpoint_id < self._pending.checkpoint_id:
            return
        self._arrived.add(channel.index)
        if self.exactly_once:
            self.gate.block_channel(channel)
            self._blocked.append(channel)
        self._maybe_complete()

    def on_channel_finished(self, channel: Any) -> None:
        """``channel`` ended: it no longer holds an alignment back."""
        self._open.discard(channel.index)
        self._maybe_complete()

    def _maybe_complete(self) -> None:
        if self._pending is None or not self._open.issubset(self._arrived):
            return
        barrier = self._pending
        self.last_completed = barrier.checkpoint_id
        try:
            self._on_aligned(barrier)
        finally:
            self._release()

    def _release(self) -> None:
        for channel in self._blocked:
            self.gate.unblock_channel(channel)
        self._blocked = []
        self._arrived = set()
        self._pending = None
