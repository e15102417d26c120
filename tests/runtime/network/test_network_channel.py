"""LocalChannel and InputGate: credit-based flow control, fair polling, blocking, cancel."""

from __future__ import annotations

import threading

import pytest

from streamkernel.errors import StreamKernelError
from streamkernel.runtime.network import ChannelCancelledError, InputGate, LocalChannel
from streamkernel.runtime.core.records import END_OF_PARTITION, CheckpointBarrier, DataBuffer, Watermark
from streamkernel.testing import wait_until

WAIT = 5.0  # generous upper bound for joins; never a timing assertion


def _start(target, *args) -> tuple[threading.Thread, dict]:
    """Run ``target(*args)`` in a thread; the dict gets 'result' or 'error'."""
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = target(*args)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def _wait_until_blocked(channel: LocalChannel) -> None:
    """Until the sender thread waits for credit (the channel says so)."""
    wait_until(lambda: channel._sender_waiting, message="the sender to block waiting for credit")


def test_channels_are_registered_in_order_with_their_input_index():
    gate = InputGate("CoMap (1/1)")
    a = gate.create_channel(0)
    b = gate.create_channel(1, name="second")
    assert gate.channels == [a, b]
    assert gate.num_channels == 2
    assert (a.index, a.input_index) == (0, 0)
    assert (b.index, b.input_index, b.name) == (1, 1, "second")
    assert a.gate is gate


def test_bad_arguments_are_rejected():
    gate = InputGate("g")
    with pytest.raises(ValueError, match="credits"):
        gate.create_channel(0, credits=0)
    with pytest.raises(ValueError, match="input_index"):
        gate.create_channel(2)


def test_poll_returns_items_in_channel_order_and_the_channel():
    gate = InputGate("g")
    ch = gate.create_channel(0, credits=3)
    buf = DataBuffer([1, 2], None)
    ch.send(buf)
    ch.send(Watermark(5))
    ch.send(END_OF_PARTITION)
    assert gate.poll(0) == (ch, buf)
    assert gate.poll(0) == (ch, Watermark(5))
    assert gate.poll(0) == (ch, END_OF_PARTITION)
    assert gate.poll(0) is None


def test_poll_times_out_with_none():
    gate = InputGate("g")
    gate.create_channel(0)
    assert gate.poll(0.01) is None


def test_sender_blocks_on_the_third_send_with_two_credits_until_poll():
    gate = InputGate("g")
    ch = gate.create_channel(0, credits=2)
    assert ch.send(DataBuffer([1], None)) == 0
    assert ch.send(DataBuffer([2], None)) == 0
    assert ch.available_credits == 0
    thread, box = _start(ch.send, DataBuffer([3], None))
    _wait_until_blocked(ch)
    assert thread.is_alive() and ch.queued() == 2  # the third item is not in yet
    assert gate.poll(0)[1].values == [1]  # frees one slot: the credit goes back
    thread.join(WAIT)
    assert not thread.is_alive()
    assert box["result"] > 0  # the nanoseconds waited for credit were measured
    assert [gate.poll(0)[1].values for _ in range(2)] == [[2], [3]]
    assert ch.available_credits == 2


def test_events_take_credit_too():
    gate = InputGate("g")
    ch = gate.create_channel(0, credits=2)
    ch.send(Watermark(1))
    ch.send(CheckpointBarrier(1, 0))
    thread, box = _start(ch.send, END_OF_PARTITION)
    _wait_until_blocked(ch)
    assert gate.poll(0)[1] == Watermark(1)
    thread.join(WAIT)
    assert "error" not in box
    assert gate.queued_buffers() == 2


def test_poll_is_round_robin_among_channels_with_data():
    gate = InputGate("g")
    fast, slow, other = (gate.create_channel(0, credits=10) for _ in range(3))
    for i in range(6):
        fast.send(("fast", i))
    slow.send(("slow", 0))
    other.send(("other", 0))
    other.send(("other", 1))
    order = [gate.poll(0)[1] for _ in range(9)]
    assert order == [("fast", 0), ("slow", 0), ("other", 0), ("fast", 1), ("other", 1),
                     ("fast", 2), ("fast", 3), ("fast", 4), ("fast", 5)]


def test_a_busy_channel_cannot_starve_another_across_threads():
    gate = InputGate("g")
    busy, quiet = gate.create_channel(0, credits=4), gate.create_channel(0, credits=4)
    stop = threading.Event()

    def flood() -> None:
        try:
            while not stop.is_set():
                busy.send("busy")
        except ChannelCancelledError:
            pass

    thread, _ = _start(flood)
    _wait_until_blocked(busy)
    quiet.send("quiet")
    seen = [gate.poll(WAIT)[1] for _ in range(3)]
    stop.set()
    gate.cancel()
    thread.join(WAIT)
    assert "quiet" in seen  # served within one round of the busy channel


def test_items_keep_their_order_across_threads():
    gate = InputGate("g")
    ch = gate.create_channel(0, credits=2)

    def produce() -> None:
        for i in range(500):
            ch.send(i)
        ch.send(END_OF_PARTITION)

    thread, box = _start(produce)
    got = []
    while True:
        item = gate.poll(WAIT)[1]
        if item is END_OF_PARTITION:
            break
        got.append(item)
    thread.join(WAIT)
    assert got == list(range(500)) and "error" not in box
    assert ch.available_credits == 2 and gate.queued_buffers() == 0


def test_blocked_channel_is_skipped_until_unblocked():
    gate = InputGate("g")
    a, b = gate.create_channel(0), gate.create_channel(1)
    a.send("a1")
    gate.block_channel(a)
    a.send("a2")  # a blocked channel still receives while it has credit
    b.send("b1")
    assert gate.is_blocked(a)
    assert gate.poll(0) == (b, "b1")
    assert gate.poll(0) is None
    assert gate.queued_buffers() == 2
    gate.unblock_channel(a)
    assert [gate.poll(0)[1] for _ in range(2)] == ["a1", "a2"]


def test_unblock_wakes_a_waiting_poll():
    gate = InputGate("g")
    a = gate.create_channel(0)
    gate.block_channel(a)
    a.send("held")
    thread, box = _start(gate.poll, WAIT)
    threading.Event().wait(0.02)
    gate.unblock_channel(a)
    thread.join(WAIT)
    assert box["result"] == (a, "held")


def test_blocking_a_foreign_channel_is_an_error():
    gate, other = InputGate("g"), InputGate("h")
    ch = other.create_channel(0)
    with pytest.raises(ValueError, match="does not belong"):
        gate.block_channel(ch)


def test_poll_waits_for_a_sender_in_another_thread():
    gate = InputGate("g")
    ch = gate.create_channel(0)
    thread, box = _start(gate.poll, WAIT)
    threading.Event().wait(0.02)
    ch.send("late")
    thread.join(WAIT)
    assert box["result"] == (ch, "late")


def test_cancel_wakes_a_blocked_sender_and_a_blocked_poll():
    gate = InputGate("g")
    full = gate.create_channel(0, credits=1)
    full.send("x")
    sender, sender_box = _start(full.send, "y")
    _wait_until_blocked(full)
    # a poll that waits: block the only channel with data so poll has nothing to return
    gate.block_channel(full)
    poller, poller_box = _start(gate.poll, None)
    threading.Event().wait(0.02)
    gate.cancel()
    sender.join(WAIT)
    poller.join(WAIT)
    assert not sender.is_alive() and not poller.is_alive()
    assert isinstance(sender_box["error"], ChannelCancelledError)
    assert isinstance(sender_box["error"], StreamKernelError)
    assert poller_box["result"] is None
    assert gate.poll(None) is None  # at once, forever after
    with pytest.raises(ChannelCancelledError):
        gate.create_channel(0).send("z")
    assert gate.is_cancelled and full.is_cancelled


def test_wakeup_makes_a_waiting_poll_return_none():
    gate = InputGate("g")
    gate.create_channel(0)
    thread, box = _start(gate.poll, None)
    threading.Event().wait(0.02)
    gate.wakeup()
    thread.join(WAIT)
    assert not thread.is_alive() and box["result"] is None


def test_wakeup_does_not_hide_available_data():
    gate = InputGate("g")
    ch = gate.create_channel(0)
    ch.send("item")
    gate.wakeup()
    assert gate.poll(0) == (ch, "item")
    assert gate.poll(0) is None  # the wakeup is consumed here
    assert gate.poll(0) is None


def test_a_channel_created_before_its_gate_waits_for_credit():
    ch = LocalChannel("early")
    thread, box = _start(ch.send, "first")
    _wait_until_blocked(ch)
    gate = InputGate("g")
    gate._attach(ch, 1, 2)
    thread.join(WAIT)
    assert box["result"] > 0
    assert gate.poll(0) == (ch, "first") and ch.input_index == 1


def test_a_channel_feeds_one_gate_only():
    gate = InputGate("g")
    ch = gate.create_channel(0)
    with pytest.raises(StreamKernelError, match="already attached"):
        InputGate("h")._attach(ch, 0, 4)
