"""LocalShuffleEnvironment: senders and receivers meet by ChannelId, in either order."""

from __future__ import annotations

import threading

import pytest

from streamkernel.errors import StreamKernelError
from streamkernel.graph.partitioners import RebalancePartitioner
from streamkernel.runtime.core.deployment import ChannelId
from streamkernel.runtime.network import ChannelCancelledError, LocalShuffleEnvironment, RecordWriter
from streamkernel.runtime.core.records import END_OF_PARTITION, DataBuffer

WAIT = 5.0


def _ids(job: str, sources: int, targets: int, edge: int = 0) -> dict[int, list[ChannelId]]:
    """target subtask -> its input channel ids (all-to-all)."""
    return {t: [ChannelId(job, edge, s, t) for s in range(sources)] for t in range(targets)}


def _receive_all(gate) -> list:
    """Poll until every channel delivered END_OF_PARTITION; return the records."""
    ended, records = 0, []
    while ended < gate.num_channels:
        _, item = gate.poll(WAIT)
        if item is END_OF_PARTITION:
            ended += 1
        elif isinstance(item, DataBuffer):
            records.extend(item.values)
    return records


def _send_all(env, job: str, source: int, targets: int, values: list) -> None:
    channels = [env.output_channel(ChannelId(job, 0, source, t)) for t in range(targets)]
    writer = RecordWriter(RebalancePartitioner(), channels, source, buffer_size=8)
    for i in range(0, len(values), 5):
        writer.emit(values[i:i + 5], None)
    writer.broadcast_event(END_OF_PARTITION)


@pytest.mark.parametrize("receivers_first", [True, False])
def test_senders_and_receivers_connect_in_either_order_across_threads(receivers_first):
    env = LocalShuffleEnvironment()
    sources, targets = 3, 2
    ids = _ids("job", sources, targets)
    results: dict[int, list] = {}
    data = {s: list(range(s * 1000, s * 1000 + 200)) for s in range(sources)}

    def receive(t: int) -> None:
        gate = env.create_input_gate(f"Sink ({t + 1}/{targets})", [(cid, 0) for cid in ids[t]], credits=2)
        results[t] = _receive_all(gate)

    receivers = [threading.Thread(target=receive, args=(t,), daemon=True) for t in range(targets)]
    senders = [threading.Thread(target=_send_all, args=(env, "job", s, targets, data[s]), daemon=True)
               for s in range(sources)]
    first, second = (receivers, senders) if receivers_first else (senders, receivers)
    for thread in first:
        thread.start()
    threading.Event().wait(0.02)  # let the first side register (and block, for senders)
    for thread in second:
        thread.start()
    for thread in receivers + senders:
        thread.join(WAIT)
        assert not thread.is_alive()
    everything = sorted(v for t in range(targets) for v in results[t])
    assert everything == sorted(v for values in data.values() for v in values)
    assert env.num_channels("job") == sources * targets


def test_both_sides_get_the_same_channel_object_and_input_indexes():
    env = LocalShuffleEnvironment()
    left, right = ChannelId("j", 0, 0, 0), ChannelId("j", 1, 0, 0)
    out_left = env.output_channel(left)
    gate = env.create_input_gate("CoMap (1/1)", [(left, 0), (right, 1)])
    out_right = env.output_channel(right)
    assert gate.channels == [out_left, out_right]
    assert [(c.index, c.input_index) for c in gate.channels] == [(0, 0), (1, 1)]
    assert env.output_channel(left) is out_left


def test_a_channel_cannot_feed_two_gates():
    env = LocalShuffleEnvironment()
    cid = ChannelId("j", 0, 0, 0)
    env.create_input_gate("first", [(cid, 0)])
    with pytest.raises(StreamKernelError, match="already feeds input gate 'first'"):
        env.create_input_gate("second", [(cid, 0), (ChannelId("j", 0, 1, 0), 0)])
    assert env.num_channels() == 1  # the failed gate registered nothing


def test_bad_gate_arguments_register_nothing():
    env = LocalShuffleEnvironment()
    cid = ChannelId("j", 0, 0, 0)
    with pytest.raises(ValueError, match="twice"):
        env.create_input_gate("g", [(cid, 0), (cid, 0)])
    with pytest.raises(ValueError, match="input_index"):
        env.create_input_gate("g", [(cid, 3)])
    with pytest.raises(ValueError, match="credits"):
        env.create_input_gate("g", [(cid, 0)], credits=0)
    assert env.num_channels() == 0


def test_release_cancels_blocked_parties_and_drops_only_that_job():
    env = LocalShuffleEnvironment()
    early = env.output_channel(ChannelId("a", 0, 0, 1))  # its receiver never comes
    gate = env.create_input_gate("Sink", [(ChannelId("a", 0, 0, 0), 0)])
    other = env.create_input_gate("Other", [(ChannelId("b", 0, 0, 0), 0)])
    boxes: dict = {}

    def send_blocked() -> None:
        try:
            early.send("x")
        except ChannelCancelledError as exc:
            boxes["sender"] = exc

    def poll_blocked() -> None:
        boxes["poll"] = gate.poll(None)

    threads = [threading.Thread(target=f, daemon=True) for f in (send_blocked, poll_blocked)]
    for thread in threads:
        thread.start()
    threading.Event().wait(0.02)
    env.release("a")
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    assert isinstance(boxes["sender"], ChannelCancelledError)
    assert boxes["poll"] is None
    assert env.num_channels("a") == 0 and env.num_channels("b") == 1
    assert not other.is_cancelled
    # a restart asks again: fresh channels, not the cancelled ones
    assert not env.output_channel(ChannelId("a", 0, 0, 1)).is_cancelled


def test_concurrent_registration_creates_one_channel_per_id():
    env = LocalShuffleEnvironment()
    cid = ChannelId("j", 0, 0, 0)
    got = []
    barrier = threading.Barrier(8)

    def ask() -> None:
        barrier.wait()
        got.append(env.output_channel(cid))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert len({id(c) for c in got}) == 1
