"""Unaligned checkpoints over TCP channels: overdraft, announcements, output availability.

A remote channel must behave to the consumer's gate (and so to ``unaligned_barriers``) exactly
as a local one: the barrier and the partly filled buffer before it go in without credit, the
announcement comes ahead of the queued buffers, ``pull_barrier`` returns what it overtook,
and the credits catch up afterwards. Each behaviour is checked on both kinds of channel.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from streamkernel.graph.partitioners import RebalancePartitioner
from streamkernel.runtime.core.deployment import ChannelId
from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.core.records import END_OF_PARTITION, CheckpointBarrier, DataBuffer, EventAnnouncement
from streamkernel.runtime.network import NetworkShuffleEnvironment, RecordWriter
from streamkernel.runtime.network.remote_channel import RemoteOutputChannel
from streamkernel.runtime.tasks.task_input import InputProcessor
from streamkernel.runtime.tasks.unaligned_barriers import UnalignedBarrierHandler
from streamkernel.testing import wait_until

WAIT = 60.0  # a deadline for what must happen: generous, since only a failing test waits it out
SECRET = b"cluster-secret-for-tests"
CID = ChannelId("job", 0, 0, 0)


@pytest.fixture
def pair():
    """(producer TaskManager's environment, consumer TaskManager's environment) on loopback."""
    producer = NetworkShuffleEnvironment("tm-a", SECRET)
    consumer = NetworkShuffleEnvironment("tm-b", SECRET)
    yield producer, consumer
    producer.close()
    consumer.close()


def _channels(pair, where: str, credits: int):
    """(the consumer's gate, the producer's channel into it): in one process or across TCP."""
    producer, consumer = pair
    gate = consumer.create_input_gate("Count (1/1)", [(CID, 0)], credits=credits)
    if where == "local":
        return gate, consumer.output_channel(CID)
    channel = producer.output_channel(CID, consumer.data_address)
    assert isinstance(channel, RemoteOutputChannel)
    wait_until(lambda: channel.available_credits == credits, timeout=WAIT, message="the consumer's credits")
    return gate, channel


def _send_in_thread(channel, items) -> tuple[threading.Thread, dict]:
    state: dict = {"sent": 0, "error": None}

    def run() -> None:
        try:
            for item in items:
                channel.send(item)
                state["sent"] += 1
        except BaseException as exc:  # noqa: BLE001 - asserted by the test
            state["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, state


@pytest.mark.parametrize("where", ["local", "remote"])
def test_an_announced_barrier_overtakes_the_buffers_queued_for_a_backpressuring_receiver(pair, where):
    credits = 2
    gate, channel = _channels(pair, where, credits)
    queued = [DataBuffer([i], None) for i in range(credits)]
    for buffer in queued:
        channel.send(buffer)
    assert channel.available_credits == 0  # the receiver backpressures
    partial, barrier = DataBuffer(["partly filled"], None), CheckpointBarrier(3, 1234)
    channel.send_overdraft(partial)  # what RecordWriter.broadcast_unaligned_barrier does: no wait for credit
    channel.send_overdraft(barrier)
    channel.announce(barrier)
    wait_until(gate.has_announcements, timeout=WAIT, message="the barrier's announcement at the consumer")

    polled_channel, announcement = gate.poll(WAIT)  # ahead of the queued buffers
    assert announcement == EventAnnouncement(barrier) and polled_channel is gate.channels[0]
    assert gate.pull_barrier(polled_channel, 3) == queued + [partial]  # the in-flight data

    after = [DataBuffer([10 + i], None) for i in range(5)] + [END_OF_PARTITION]
    thread, state = _send_in_thread(channel, after)  # waits until the receiver caught up
    received = []
    while not received or received[-1] is not END_OF_PARTITION:
        polled = gate.poll(WAIT)
        assert polled is not None, f"nothing arrived within {WAIT}s; got {received!r}"
        received.append(polled[1])
        assert gate.queued_buffers() <= credits + 2  # overdraft: at most the barrier's few items beyond
    thread.join(WAIT)
    assert state["error"] is None
    assert received == queued + [partial] + after  # the barrier is gone, nothing lost or repeated


@pytest.mark.parametrize("where", ["local", "remote"])
def test_await_credit_signals_a_returned_credit(pair, where):
    gate, channel = _channels(pair, where, credits=1)
    event = threading.Event()
    assert channel.await_credit(event)  # a credit is free
    channel.stop_awaiting()
    channel.send(DataBuffer([1], None))
    assert not channel.await_credit(event)  # none free: the event is set when one comes back
    assert not event.is_set()
    wait_until(lambda: gate.poll(0) is not None, timeout=WAIT, message="the buffer at the consumer")
    assert event.wait(WAIT), "a returned credit must set the awaiting sender's event"
    channel.stop_awaiting()
    assert channel.await_credit(threading.Event())


def test_a_remote_channel_accepts_a_credited_item_after_the_task_put_a_slice_back(pair):
    """push_front takes a slot that was already granted again: the producer's next item,
    sent with that credit, is no protocol error (unaligned checkpoints slice buffers)."""
    gate, channel = _channels(pair, "remote", credits=2)
    first, second, third = (DataBuffer([i, i], None) for i in range(3))
    channel.send(first)
    channel.send(second)
    wait_until(lambda: gate.queued_buffers() == 2, timeout=WAIT, message="two buffers at the consumer")
    polled_channel, taken = gate.poll(WAIT)
    wait_until(lambda: channel.available_credits == 1, timeout=WAIT, message="the freed slot's credit")
    gate.push_front(polled_channel, DataBuffer(taken.values[1:], None))  # the unprocessed rest of a buffer
    channel.send(third)  # with the credit it holds (no wait)
    wait_until(lambda: gate.queued_buffers() == 3 or channel.is_cancelled, timeout=WAIT,
               message="the third buffer at the consumer")
    assert not channel.is_cancelled, f"the consumer refused a credited item: {channel._error}"
    thread, state = _send_in_thread(channel, [END_OF_PARTITION])
    received = []
    while not received or received[-1] is not END_OF_PARTITION:
        polled = gate.poll(WAIT)
        assert polled is not None, f"nothing arrived within {WAIT}s; got {received!r} (channel {channel!r})"
        received.append(polled[1])
    thread.join(WAIT)
    assert received == [DataBuffer([0], None), second, third, END_OF_PARTITION]
    assert state["error"] is None and not channel.is_cancelled


class _Head:
    """Collects the values it processes."""

    def __init__(self) -> None:
        self.seen: list = []

    def process_batch(self, values: list, timestamps: Any) -> None:
        self.seen += values

    def process_watermark(self, watermark: Any) -> None:
        pass

    def end_input(self) -> None:
        pass


def test_a_task_fed_by_a_local_and_a_remote_channel_checkpoints_unaligned_with_all_in_flight_records(pair):
    """The unaligned barrier handler sees a remote-fed channel as a local one: the snapshot comes
    at the first barrier, and every record sent before the barriers is in-flight data."""
    producer, consumer = pair
    ids = [ChannelId("job", 0, 0, 0), ChannelId("job", 0, 1, 0)]
    gate = consumer.create_input_gate("Count (1/1)", [(cid, 0) for cid in ids], credits=2)
    local = consumer.output_channel(ids[0])
    remote = producer.output_channel(ids[1], consumer.data_address)
    wait_until(lambda: remote.available_credits == 2, timeout=WAIT, message="the consumer's credits")
    writer = RecordWriter(RebalancePartitioner(), [local, remote], 0, buffer_size=2)
    for i in range(1, 9, 2):
        writer.emit([i, i + 1], None)  # two full buffers per channel: every credit used
    writer.emit([9, 10], None)  # one partly filled buffer per channel
    assert local.available_credits == 0 and remote.available_credits == 0
    barrier = CheckpointBarrier(5, 0)
    writer.broadcast_unaligned_barrier(barrier)  # no wait for credit on either channel

    head, snapshots, finished = _Head(), [], []
    handler = UnalignedBarrierHandler(
        gate, gate.channels, 0, lambda: 0, lambda b: pytest.fail("an unaligned checkpoint must not align"),
        lambda b: snapshots.append((b.checkpoint_id, list(head.seen))),
        lambda b, in_flight: finished.append((b.checkpoint_id, sorted(v for _, buf in in_flight for v in buf.values))))
    processor = InputProcessor(gate, head, False, TaskMetrics("Count", 0), lambda marker: None, handler)
    while not finished:
        polled = gate.poll(WAIT)
        assert polled is not None, f"nothing arrived within {WAIT}s; processed {head.seen}"
        processor.process(*polled)

    assert snapshots == [(5, [])]  # at the first barrier, before any queued record
    assert finished == [(5, list(range(1, 11)))]  # everything sent before the barriers: in flight
    while (polled := gate.poll(0)) is not None:  # the overtaken buffers are still queued: processed now
        processor.process(*polled)
    assert sorted(head.seen) == list(range(1, 11))  # in flight and processed: nothing lost, nothing twice
    writer.emit([11, 12], None)
    writer.flush()  # the credits caught up: the channels carry on as before
    wait_until(lambda: gate.queued_buffers() == 2, timeout=WAIT, message="the records after the checkpoint")
    while (polled := gate.poll(0)) is not None:
        processor.process(*polled)
    assert sorted(head.seen) == list(range(1, 13))
