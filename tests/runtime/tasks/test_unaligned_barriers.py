"""Unaligned checkpoints at a task's input: the first barrier snapshots, barriers overtake
queued buffers (which become in-flight data), an aligning checkpoint switches to unaligned
after its timeout, savepoints stay aligned. A real InputGate and InputProcessor, a fake head."""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.core.records import CheckpointBarrier, DataBuffer
from streamkernel.runtime.network.input_gate import InputGate
from streamkernel.runtime.network.record_writer import RecordWriter
from streamkernel.graph.partitioners import ForwardPartitioner
from streamkernel.runtime.tasks.task_input import InputProcessor
from streamkernel.runtime.tasks.unaligned_barriers import UnalignedBarrierHandler


#: The records of a slice in these tests (the task's budget decides it; here it is fixed).
SLICE = 16


class _FixedBudget:
    """A batch budget of :data:`SLICE` records whatever they cost."""

    size = SLICE

    def measured(self, records: int, busy_ns: int) -> None:
        pass


class _Head:
    """Collects what it processes; ``on_batch`` runs after each batch (to inject events)."""

    def __init__(self) -> None:
        self.seen: list = []
        self.on_batch: Optional[Any] = None

    def process_batch(self, values: list, timestamps: Any) -> None:
        self.seen += values
        if self.on_batch is not None:
            action, self.on_batch = self.on_batch, None
            action()

    def process_watermark(self, watermark: Any) -> None:
        pass

    def end_input(self) -> None:
        pass


class _Task:
    """The gate, handler and processor of one task, with the checkpointer's calls recorded."""

    def __init__(self, channels: int = 2, timeout_ms: int = 0) -> None:
        self.gate = InputGate("Count (1/1)")
        self.channels = [self.gate.create_channel(0, credits=4) for _ in range(channels)]
        self.head = _Head()
        self.now = 0
        self.snapshots: list[tuple[int, list]] = []  # (checkpoint id, what the head had seen)
        self.finished: list[tuple[int, list]] = []  # (checkpoint id, in-flight values)
        self.aligned: list[int] = []
        self.handler = UnalignedBarrierHandler(
            self.gate, self.channels, timeout_ms, lambda: self.now,
            lambda b: self.aligned.append(b.checkpoint_id),
            lambda b: self.snapshots.append((b.checkpoint_id, list(self.head.seen))),
            lambda b, in_flight: self.finished.append(
                (b.checkpoint_id, sorted(v for _, buf in in_flight for v in buf.values))))
        self.processor = InputProcessor(self.gate, self.head, False, TaskMetrics("Count", 0),
                                        lambda marker: None, self.handler, budget=_FixedBudget())  # type: ignore[arg-type]

    def drain(self) -> None:
        """Process everything the gate has now (a buffer's slices first, as the task's loop does)."""
        while True:
            if self.processor.has_rest:
                self.processor.resume()
            elif (polled := self.gate.poll(0)) is not None:
                self.processor.process(*polled)
            else:
                return


def _unaligned_barrier(channel: Any, barrier: CheckpointBarrier) -> None:
    channel.send_overdraft(barrier)
    channel.announce(barrier)


def test_the_first_barrier_snapshots_and_the_barriers_overtake_the_queued_buffers() -> None:
    task = _Task()
    a, b = task.channels
    a.send(DataBuffer([1, 2], None)), a.send(DataBuffer([3], None)), b.send(DataBuffer([10], None))
    barrier = CheckpointBarrier(1, 0)
    _unaligned_barrier(a, barrier)
    a_after = DataBuffer([4], None)
    a.send_overdraft(a_after)  # after a's barrier: not in flight
    task.processor.process(*task.gate.poll(0))  # the announcement comes before the queued buffers
    assert task.snapshots == [(1, [])] and task.finished == []
    task.drain()  # b's 10 arrives before b's barrier: recorded as in flight
    b.send(DataBuffer([11], None))
    _unaligned_barrier(b, barrier)
    task.drain()
    assert task.finished == [(1, [1, 2, 3, 10, 11])] and task.aligned == []
    assert sorted(task.head.seen) == [1, 2, 3, 4, 10, 11]  # everything is processed, nothing blocked
    assert [c.available_credits for c in task.channels] == [4, 4]  # overdrafts paid back


def test_a_barrier_announced_mid_buffer_stops_the_buffer_and_its_rest_is_in_flight() -> None:
    task = _Task()
    a, b = task.channels
    values = list(range(SLICE * 3))
    a.send(DataBuffer(values, None))
    barrier = CheckpointBarrier(1, 0)
    task.head.on_batch = lambda: _unaligned_barrier(b, barrier)  # arrives while the first slice runs
    task.processor.process(*task.gate.poll(0))
    assert task.head.seen == values[:SLICE] and task.processor.has_rest
    task.processor.resume()  # the announcement goes first: the rest goes back to the channel
    assert task.head.seen == values[:SLICE] and not task.processor.has_rest
    task.drain()
    assert task.snapshots == [(1, values[:SLICE])]
    _unaligned_barrier(a, barrier)
    task.drain()
    assert task.finished == [(1, values[SLICE:])] and task.head.seen == values


def test_an_aligning_checkpoint_switches_to_unaligned_after_its_timeout() -> None:
    task = _Task(timeout_ms=1000)
    a, b = task.channels
    barrier = CheckpointBarrier(1, 0)
    a.send(DataBuffer([1], None))
    _unaligned_barrier(a, barrier)
    a.send_overdraft(DataBuffer([2], None))  # after a's barrier: held back while aligning
    b.send(DataBuffer([10], None)), b.send(DataBuffer([11], None))
    _unaligned_barrier(b, barrier)
    task.processor.process(*task.gate.poll(0))  # a's announcement: aligned for now, nothing pulled
    task.processor.process(*task.gate.poll(0))  # b's announcement
    for _ in range(3):  # a: 1, b: 10, then a's barrier blocks a
        task.processor.process(*task.gate.poll(0))
    assert task.snapshots == [] and task.gate.is_blocked(a) and sorted(task.head.seen) == [1, 10]
    task.now = 999
    task.handler.check_timeout()
    assert task.snapshots == []
    task.now = 1000  # barrier timestamp + aligned-checkpoint-timeout
    task.handler.check_timeout()
    assert task.snapshots == [(1, [1, 10])] and not task.gate.is_blocked(a)
    assert task.finished == [(1, [11])]  # b's barrier was pulled over 11; a's 2 came after its barrier
    task.drain()
    assert sorted(task.head.seen) == [1, 2, 10, 11]


def test_savepoints_align_even_with_unaligned_checkpoints_on() -> None:
    task = _Task()
    a, b = task.channels
    savepoint = CheckpointBarrier(1, 0, is_savepoint=True)
    a.send(savepoint), a.send(DataBuffer([2], None)), b.send(DataBuffer([10], None))
    task.drain()
    assert task.gate.is_blocked(a) and task.head.seen == [10] and task.snapshots == []
    b.send(savepoint)
    task.drain()
    assert task.aligned == [1] and task.snapshots == [] and task.head.seen == [10, 2]


def test_a_newer_checkpoint_aborts_the_unfinished_one() -> None:
    task = _Task()
    aborted: list[int] = []
    task.handler._on_aborted = aborted.append
    a, b = task.channels
    _unaligned_barrier(a, CheckpointBarrier(1, 0))
    task.drain()
    _unaligned_barrier(a, CheckpointBarrier(2, 0))
    _unaligned_barrier(b, CheckpointBarrier(2, 0))
    task.drain()
    assert aborted == [1] and [cid for cid, _ in task.finished] == [2]


def test_pull_barrier_returns_the_overtaken_buffers_and_frees_the_barriers_credit() -> None:
    gate = InputGate("Sink (1/1)")
    channel = gate.create_channel(0, credits=2)
    channel.send(DataBuffer([1], None)), channel.send(DataBuffer([2], None))
    channel.send_overdraft(CheckpointBarrier(7, 0))  # no credit left: it does not wait
    assert channel.available_credits == -1
    assert gate.pull_barrier(channel, 6) is None
    assert [b.values for b in gate.pull_barrier(channel, 7)] == [[1], [2]]
    assert channel.available_credits == 0 and channel.queued() == 2
    gate.push_front(channel, DataBuffer([0], None))
    assert [gate.poll(0)[1].values for _ in range(3)] == [[0], [1], [2]]


def test_a_record_writer_puts_its_pending_records_and_the_barrier_in_without_credit() -> None:
    gate = InputGate("Sink (1/1)")
    channel = gate.create_channel(0, credits=1)
    writer = RecordWriter(ForwardPartitioner(), [channel], 0, buffer_size=10)
    writer.emit([1, 2], None)
    channel.send(DataBuffer([0], None))  # the only credit is gone
    barrier = CheckpointBarrier(3, 0)
    writer.broadcast_unaligned_barrier(barrier)
    announcement = gate.poll(0)[1]
    assert announcement.barrier == barrier  # ahead of the queued items
    assert [b.values for b in gate.pull_barrier(channel, 3)] == [[0], [1, 2]]


def test_await_credit_sets_the_event_when_the_receiver_frees_a_slot() -> None:
    import threading

    gate = InputGate("Sink (1/1)")
    channel = gate.create_channel(0, credits=1)
    event = threading.Event()
    assert channel.await_credit(event)  # a credit is free: no waiting
    channel.send(DataBuffer([1], None))
    assert not channel.await_credit(event) and not event.is_set()
    gate.poll(0)
    assert event.is_set() and channel.available_credits == 1
    channel.stop_awaiting()
