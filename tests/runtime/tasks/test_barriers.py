"""Barrier alignment at a task's input: exactly-once blocks, at-least-once counts."""

from __future__ import annotations

from dataclasses import dataclass

from streamkernel.runtime.tasks.barriers import BarrierHandler
from streamkernel.runtime.core.records import CheckpointBarrier


@dataclass(frozen=True)
class _Channel:
    index: int


class _Gate:
    def __init__(self) -> None:
        self.blocked: set[int] = set()

    def block_channel(self, channel: _Channel) -> None:
        self.blocked.add(channel.index)

    def unblock_channel(self, channel: _Channel) -> None:
        self.blocked.discard(channel.index)


def _handler(exactly_once: bool, n: int = 3):
    gate, channels, aligned, aborted = _Gate(), [_Channel(i) for i in range(n)], [], []
    handler = BarrierHandler(gate, channels, exactly_once, aligned.append, aborted.append)
    return handler, gate, channels, aligned, aborted


def test_exactly_once_blocks_each_channel_until_every_barrier_arrived() -> None:
    handler, gate, (a, b, c), aligned, _ = _handler(True)
    barrier = CheckpointBarrier(1, 100)
    handler.on_barrier(a, barrier)
    assert gate.blocked == {0} and aligned == []
    handler.on_barrier(c, barrier)
    assert gate.blocked == {0, 2} and aligned == []
    handler.on_barrier(b, barrier)
    assert aligned == [barrier] and gate.blocked == set()  # snapshot taken, channels released


def test_at_least_once_never_blocks_but_waits_for_all_barriers() -> None:
    handler, gate, (a, b, c), aligned, _ = _handler(False)
    for channel in (a, b):
        handler.on_barrier(channel, CheckpointBarrier(1, 100))
        assert gate.blocked == set() and aligned == []
    handler.on_barrier(c, CheckpointBarrier(1, 100))
    assert [x.checkpoint_id for x in aligned] == [1]


def test_a_finished_channel_does_not_hold_alignment_back() -> None:
    handler, gate, (a, b, c), aligned, _ = _handler(True)
    handler.on_barrier(a, CheckpointBarrier(1, 100))
    handler.on_channel_finished(c)
    assert aligned == []
    handler.on_barrier(b, CheckpointBarrier(1, 100))
    assert [x.checkpoint_id for x in aligned] == [1]


def test_a_newer_barrier_aborts_the_checkpoint_still_aligning() -> None:
    handler, gate, (a, b, c), aligned, aborted = _handler(True)
    handler.on_barrier(a, CheckpointBarrier(1, 100))
    handler.on_barrier(b, CheckpointBarrier(2, 200))
    assert aborted == [1] and gate.blocked == {1}
    handler.on_barrier(a, CheckpointBarrier(2, 200))
    handler.on_barrier(c, CheckpointBarrier(1, 100))  # late barrier of the aborted checkpoint: ignored
    assert aligned == []
    handler.on_barrier(c, CheckpointBarrier(2, 200))
    assert [x.checkpoint_id for x in aligned] == [2]
    handler.on_barrier(a, CheckpointBarrier(2, 200))  # late duplicate after completion: ignored
    assert [x.checkpoint_id for x in aligned] == [2] and gate.blocked == set()


def test_single_channel_aligns_at_once() -> None:
    handler, gate, (a,), aligned, _ = _handler(True, n=1)
    handler.on_barrier(a, CheckpointBarrier(7, 1))
    assert [x.checkpoint_id for x in aligned] == [7] and gate.blocked == set()
