"""NetworkShuffleEnvironment: channels between TaskManagers over authenticated TCP, with credits."""

from __future__ import annotations

import multiprocessing
import pickle
import socket
import struct
import threading
import time
from dataclasses import dataclass

import pytest

from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.errors import StreamKernelError
from streamkernel.graph.partitioners import RebalancePartitioner
from streamkernel.runtime.core.deployment import ChannelId
from streamkernel.runtime.network import (
    ChannelCancelledError,
    LocalChannel,
    LocalShuffleEnvironment,
    NetworkShuffleEnvironment,
    RecordWriter,
    RemoteChannelError,
)
from streamkernel.runtime.network.remote_channel import RemoteOutputChannel, shutdown_connection
from streamkernel.runtime.core.records import (
    END_OF_PARTITION,
    CheckpointBarrier,
    DataBuffer,
    LatencyMarker,
    Watermark,
)
from streamkernel.runtime.rpc.transport import ConnectionRefusedByPeerError
from streamkernel.testing import wait_until

WAIT = 60.0  # a deadline for what must happen: generous, since only a failing test waits it out
SECRET = b"cluster-secret-for-tests"


@dataclass(frozen=True)
class Point:
    """A record class defined in this test module (importable by name in a spawned child)."""

    x: int
    y: str


def _make_local_class():
    """A class pickle cannot write by name (local): it must travel by value (cloudpickle)."""

    @dataclass(frozen=True)
    class Reading:
        sensor: str
        value: float

        def doubled(self) -> float:
            return self.value * 2

    return Reading


def _data_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("streamkernel-")]


def _assert_no_threads_left(before: set) -> None:
    wait_until(lambda: not [t for t in _data_threads() if t not in before], timeout=WAIT,
               message="the data threads the test started to end")


@pytest.fixture
def pair():
    """(producer TaskManager's environment, consumer TaskManager's environment) on loopback."""
    before = set(_data_threads())
    producer = NetworkShuffleEnvironment("tm-a", SECRET)
    consumer = NetworkShuffleEnvironment("tm-b", SECRET)
    yield producer, consumer
    producer.close()
    consumer.close()
    _assert_no_threads_left(before)


def _cid(target: int = 0, source: int = 0, job: str = "job") -> ChannelId:
    return ChannelId(job, 0, source, target)


def _receive_until_end(gate, channels: int = 1) -> list:
    """Everything the gate delivers until every channel ended (END_OF_PARTITION included)."""
    items, ended = [], 0
    while ended < channels:
        polled = gate.poll(WAIT)
        assert polled is not None, f"nothing arrived within {WAIT}s; got so far {items!r}"
        items.append(polled[1])
        if polled[1] is END_OF_PARTITION:
            ended += 1
    return items


def _send_in_thread(channel, items) -> tuple[threading.Thread, dict]:
    """Send ``items`` from a thread; the dict gets 'sent', 'waited' (ns) and 'error'."""
    state: dict = {"sent": 0, "waited": 0, "error": None}

    def run() -> None:
        try:
            for item in items:
                state["waited"] += channel.send(item)
                state["sent"] += 1
        except BaseException as exc:  # noqa: BLE001 - asserted by the test
            state["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, state


def _wait_for(condition, what: str) -> None:
    wait_until(condition, timeout=WAIT, message=what)


# ---------------------------------------------------------------------------- delivery
def test_buffers_and_events_arrive_in_order_with_exact_types(pair):
    producer, consumer = pair
    gate = consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=3)
    channel = producer.output_channel(_cid(), consumer.data_address)
    assert isinstance(channel, RemoteOutputChannel)
    sent: list = []
    for i in range(60):
        sent.append(DataBuffer([("k%d" % j, i * 100 + j) for j in range(50)], list(range(50)) if i % 2 else None))
        if i % 10 == 9:
            sent.append(Watermark(i))
        if i == 30:
            sent += [CheckpointBarrier(7, 1234), LatencyMarker(5, 1, 0)]
    sent.append(END_OF_PARTITION)
    thread, state = _send_in_thread(channel, sent)
    received = _receive_until_end(gate)
    thread.join(WAIT)
    assert state["error"] is None
    assert received == sent
    assert [type(item) for item in received] == [type(item) for item in sent]
    assert received[-1] is END_OF_PARTITION  # the singleton survives: the input processor compares by identity
    assert not channel.uses_cloudpickle  # builtin records: plain pickle


def test_builtin_buffers_travel_marshalled_until_a_record_of_another_class(pair, monkeypatch):
    """marshal for buffers of builtin records; a buffer it cannot write goes by pickle, and the
    channel stays with pickle (never a buffer written twice)."""
    from streamkernel.runtime.network import wire

    marshalled: list = []
    read_marshalled = wire.loads_marshalled
    monkeypatch.setattr(wire, "loads_marshalled", lambda body: marshalled.append(1) or read_marshalled(body))
    producer, consumer = pair
    gate = consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=3)
    channel = producer.output_channel(_cid(), consumer.data_address)
    _wait_for(lambda: channel._connection.peer_reads_marshal, "the consumer's HELLO (it reads marshal)")
    builtin = [DataBuffer([("k%d" % j, j, j / 2, None, b"x", [j], {"j": j}) for j in range(20)],
                          list(range(20)) if i % 2 else None) for i in range(6)]
    sent = builtin[:3] + [Watermark(1), DataBuffer([Point(1, "a"), ("k", 1)], None)] + builtin[3:] + [END_OF_PARTITION]
    thread, state = _send_in_thread(channel, sent)
    received = _receive_until_end(gate)
    thread.join(WAIT)
    assert state["error"] is None
    assert received == sent
    assert [type(r) for b in received if isinstance(b, DataBuffer) for r in b.values] == \
        [type(r) for b in sent if isinstance(b, DataBuffer) for r in b.values]
    assert len(marshalled) == 3  # the three builtin buffers before the Point; pickle after it
    assert not channel._serializer.uses_marshal and not channel.uses_cloudpickle


def test_marshal_only_for_a_peer_on_the_same_python():
    from streamkernel.runtime.network import wire

    other = bytes([wire.HELLO]) + b'{"taskmanager": "tm-9", "job": "j", "marshal": "cpython-2.7-2"}'
    assert wire.reads_marshal(wire.hello_frame("tm-1", "j")) and not wire.reads_marshal(other)
    assert wire.parse_hello(other) == ("tm-9", "j")
    serializer = wire.ItemSerializer("job/edge0/0->1#0", stream=1)
    assert serializer.frame(DataBuffer([1], None), marshal_ok=False)[0] == wire.DATA
    assert serializer.frame(DataBuffer([1], None), marshal_ok=True)[0] == wire.DATA_MARSHAL
    assert serializer.frame(Watermark(3), marshal_ok=True)[0] == wire.DATA  # events: pickle


@pytest.mark.parametrize("consumer_first", [True, False])
def test_consumer_first_and_producer_first_both_connect(pair, consumer_first):
    producer, consumer = pair
    ids = [_cid(0, source) for source in range(3)]
    items = {cid: [DataBuffer([cid.source_subtask, i], None) for i in range(20)] + [END_OF_PARTITION] for cid in ids}
    gate = consumer.create_input_gate("Sink (1/1)", [(cid, 0) for cid in ids], credits=2) if consumer_first else None
    senders = [_send_in_thread(producer.output_channel(cid, consumer.data_address), items[cid]) for cid in ids]
    if not consumer_first:
        time.sleep(0.1)  # the producers are connected, opened their channels and wait for credit
        assert all(state["sent"] == 0 for _, state in senders)
        gate = consumer.create_input_gate("Sink (1/1)", [(cid, 0) for cid in ids], credits=2)
    received = _receive_until_end(gate, channels=3)
    for thread, state in senders:
        thread.join(WAIT)
        assert state["error"] is None
    per_source = {s: [b.values[1] for b in received if isinstance(b, DataBuffer) and b.values[0] == s] for s in range(3)}
    assert per_source == {s: list(range(20)) for s in range(3)}  # each channel in its own order
    assert len(producer.connections()) == 1  # one connection per TaskManager pair (and job)


def test_local_and_remote_channels_of_one_writer_keep_records_and_events_in_order(pair):
    producer, consumer = pair
    local_gate = producer.create_input_gate("Map (1/2)", [(_cid(0), 0)], credits=2)
    remote_gate = consumer.create_input_gate("Map (2/2)", [(_cid(1), 0)], credits=2)
    channels = [producer.output_channel(_cid(0)), producer.output_channel(_cid(1), consumer.data_address)]
    assert type(channels[0]) is LocalChannel and isinstance(channels[1], RemoteOutputChannel)
    writer = RecordWriter(RebalancePartitioner(), channels, 0, buffer_size=4)

    def produce() -> None:
        for step in range(5):
            writer.emit(list(range(step * 10, step * 10 + 10)), None)
            writer.broadcast_event(Watermark(step))
        writer.broadcast_event(CheckpointBarrier(1, 0))
        writer.broadcast_event(END_OF_PARTITION)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    results: list = [None, None]

    def receive(i: int, gate) -> None:
        results[i] = _receive_until_end(gate)

    receivers = [threading.Thread(target=receive, args=(i, g), daemon=True)
                 for i, g in enumerate((local_gate, remote_gate))]
    for receiver in receivers:
        receiver.start()
    for receiver in receivers + [thread]:
        receiver.join(WAIT)
    assert all(r is not None for r in results)
    for items in results:
        marks = [item for item in items if not isinstance(item, DataBuffer)]
        assert marks == [Watermark(0), Watermark(1), Watermark(2), Watermark(3), Watermark(4),
                         CheckpointBarrier(1, 0), END_OF_PARTITION]
        # every record before watermark w has a step <= w: nothing overtakes an event
        step = 0
        for item in items:
            if isinstance(item, Watermark):
                step = item.timestamp + 1
            elif isinstance(item, DataBuffer):
                assert all(v // 10 == step for v in item.values)
    assert sorted(v for items in results for b in items if isinstance(b, DataBuffer) for v in b.values) == \
        list(range(50))


def test_classes_defined_in_a_function_travel_by_cloudpickle(pair):
    producer, consumer = pair
    reading = _make_local_class()
    gate = consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=2)
    channel = producer.output_channel(_cid(), consumer.data_address)
    sent = [DataBuffer([reading("s%d" % i, float(i)) for i in range(10)], None), END_OF_PARTITION]
    thread, state = _send_in_thread(channel, sent)
    received = _receive_until_end(gate)
    thread.join(WAIT)
    assert state["error"] is None and channel.uses_cloudpickle
    values = received[0].values
    assert [(r.sensor, r.value, r.doubled()) for r in values] == [("s%d" % i, float(i), 2.0 * i) for i in range(10)]
    assert len({type(r) for r in values}) == 1


# ------------------------------------------------------------------------ flow control
def test_credits_bound_what_is_in_flight_and_a_slow_receiver_backpressures(pair):
    producer, consumer = pair
    credits = 2
    gate = consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=credits)
    channel = producer.output_channel(_cid(), consumer.data_address)
    items = [DataBuffer([i], None) for i in range(30)] + [END_OF_PARTITION]
    thread, state = _send_in_thread(channel, items)
    _wait_for(lambda: state["sent"] == credits, "the sender to use its credits")
    time.sleep(0.2)  # a sender without credit stays blocked
    assert state["sent"] == credits and channel.available_credits == 0
    assert gate.queued_buffers() <= credits
    received = []
    while len(received) < len(items):
        time.sleep(0.005)  # a slow receiver
        polled = gate.poll(WAIT)
        assert polled is not None
        received.append(polled[1])
        # sent - taken = in flight + queued at the receiver: never more than the credits
        assert channel.items_sent - len(received) <= credits
        assert gate.queued_buffers() <= credits
    thread.join(WAIT)
    assert received == items and state["error"] is None
    assert state["waited"] > 0  # the waits for credit are the sender's backpressure


def test_credits_go_back_in_batches_of_half_the_channel(pair, monkeypatch):
    """A CREDIT frame once half of the channel's slots are free again, not one per item taken
    (each frame is a socket write on the consuming task's thread and a wake-up of the
    producer's reader): with 4 credits, 2 credits per frame, and the producer never starves."""
    from streamkernel.runtime.network import wire

    frames: list = []
    credit_frame = wire.credit_frame
    monkeypatch.setattr(wire, "credit_frame", lambda stream, n: frames.append(n) or credit_frame(stream, n))
    producer, consumer = pair
    gate = consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=4)
    channel = producer.output_channel(_cid(), consumer.data_address)
    sent = [DataBuffer([i], None) for i in range(40)] + [END_OF_PARTITION]
    thread, state = _send_in_thread(channel, sent)
    assert _receive_until_end(gate) == sent
    thread.join(WAIT)
    assert state["error"] is None
    [feed] = [f for inbound in consumer._listener.connections() for f in inbound.feeds.values()]
    # the 4 initial credits, then one frame of 2 credits per 2 items taken (41 items: 20 frames)
    assert frames == [4] + [2] * (len(sent) // 2)
    assert feed.credit_frames == len(frames)
    assert feed.announced - feed.received == 4 - (len(sent) % 2)  # what is announced and not used yet
    _wait_for(lambda: channel.available_credits == feed.announced - feed.received,
              "the producer to hold every credit announced and not used")


def test_barrier_alignment_holds_back_a_remote_channel_without_losing_credit(pair):
    producer, consumer = pair
    ids = [_cid(0, 0), _cid(0, 1)]
    gate = consumer.create_input_gate("Sink (1/1)", [(cid, 0) for cid in ids], credits=2)
    first = producer.output_channel(ids[0], consumer.data_address)
    blocked = gate.channels[0]
    gate.block_channel(blocked)
    thread, state = _send_in_thread(first, [DataBuffer([i], None) for i in range(5)] + [END_OF_PARTITION])
    _wait_for(lambda: state["sent"] == 2, "two items into the blocked channel")
    assert gate.poll(0.1) is None  # held back
    gate.unblock_channel(blocked)
    second = producer.output_channel(ids[1], consumer.data_address)
    second.send(END_OF_PARTITION)
    received = _receive_until_end(gate, channels=2)
    thread.join(WAIT)
    assert [b.values[0] for b in received if isinstance(b, DataBuffer)] == list(range(5))


# ------------------------------------------------------------------ release and failure
@pytest.mark.parametrize("side", ["consumer", "producer"])
def test_release_wakes_a_blocked_sender(pair, side):
    producer, consumer = pair
    consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=1)
    channel = producer.output_channel(_cid(), consumer.data_address)
    thread, state = _send_in_thread(channel, [DataBuffer([i], None) for i in range(10)])
    _wait_for(lambda: state["sent"] == 1, "the first item")
    (consumer if side == "consumer" else producer).release("job")
    thread.join(WAIT)
    assert not thread.is_alive()
    assert isinstance(state["error"], ChannelCancelledError)
    assert "job/edge0/0->0#0" in str(state["error"])
    assert consumer.num_channels("job") == 0 if side == "consumer" else producer.num_channels("job") == 0
    _wait_for(lambda: not [c for c in producer.connections() + consumer.connections() if c["job_id"] == "job"],
              "the job's connections to close")


def test_release_of_one_job_leaves_another_job_running(pair):
    producer, consumer = pair
    gates = {job: consumer.create_input_gate(f"Sink {job}", [(_cid(job=job), 0)], credits=2) for job in ("a", "b")}
    channels = {job: producer.output_channel(_cid(job=job), consumer.data_address) for job in ("a", "b")}
    consumer.release("a")
    with pytest.raises(ChannelCancelledError):
        for _ in range(5):
            channels["a"].send(DataBuffer([1], None))
    channels["b"].send(DataBuffer([2], None))
    assert gates["b"].poll(WAIT)[1] == DataBuffer([2], None)


def test_a_sender_whose_consumer_dies_gets_an_error_naming_channel_and_peer(pair):
    producer, consumer = pair
    consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=1)
    channel = producer.output_channel(_cid(), consumer.data_address)
    thread, state = _send_in_thread(channel, [DataBuffer([i], None) for i in range(10)])
    _wait_for(lambda: state["sent"] == 1, "the first item")
    for inbound in consumer._listener.connections():  # the consumer's socket dies without a word
        shutdown_connection(inbound._conn)
    thread.join(WAIT)
    error = state["error"]
    assert isinstance(error, RemoteChannelError) and isinstance(error, ChannelCancelledError)
    host, port = consumer.data_address
    assert "job/edge0/0->0#0" in str(error) and "tm-b" in str(error) and f"{host}:{port}" in str(error)


def test_an_item_the_consumer_cannot_read_fails_the_sender_with_the_reason(pair):
    producer, consumer = pair
    gate = consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=2)
    channel = producer.output_channel(_cid(), consumer.data_address)
    channel.send(DataBuffer([_Unreadable()], None))
    with pytest.raises(RemoteChannelError, match="could not read an item.*unreadable on purpose"):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:  # the consumer's error reaches the sender soon after
            channel.send(DataBuffer([1], None))
            time.sleep(0.05)
    assert gate.poll(0) is None


def test_a_channel_has_one_producer(pair):
    producer, consumer = pair
    consumer.output_channel(_cid())  # a local sender in the consumer's TaskManager
    channel = producer.output_channel(_cid(), consumer.data_address)
    consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=2)
    with pytest.raises(RemoteChannelError, match="already has a producer"):
        channel.send(DataBuffer([1], None))


def test_unknown_consumer_address_fails_clearly():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = NetworkShuffleEnvironment("tm-a", SECRET, connect_timeout=2)
    try:
        with pytest.raises(ConnectionRefusedByPeerError, match=f"127.0.0.1:{port}"):
            env.output_channel(_cid(), ("127.0.0.1", port))
    finally:
        env.close()


def test_local_shuffle_refuses_a_remote_address():
    env = LocalShuffleEnvironment()
    with pytest.raises(StreamKernelError, match="NetworkShuffleEnvironment"):
        env.output_channel(_cid(), ("127.0.0.1", 1234))
    assert env.output_channel(_cid(), None) is env.output_channel(_cid())


# ---------------------------------------------------------------------------- security
_UNPICKLED: list = []


def _record_unpickling() -> str:
    _UNPICKLED.append(True)
    return "unpickled!"


class _Evil:
    def __reduce__(self):
        return (_record_unpickling, ())


class _Unreadable:
    def __reduce__(self):
        return (_fail_on_load, ())


def _fail_on_load():
    raise RuntimeError("unreadable on purpose")


def test_wrong_secret_is_refused_and_nothing_of_it_is_unpickled(pair):
    _, consumer = pair
    stranger = NetworkShuffleEnvironment("tm-x", b"not-the-secret", connect_timeout=3)
    try:
        with pytest.raises(ConnectionRefusedByPeerError, match="could not open an authenticated connection"):
            stranger.output_channel(_cid(), consumer.data_address)
    finally:
        stranger.close()
    # a raw client that skips the challenge and sends frames holding pickles straight away
    payload = pickle.dumps(_Evil())
    with socket.create_connection(consumer.data_address, timeout=WAIT) as raw:
        try:
            for _ in range(3):
                frame = bytes([2]) + struct.pack("!I", 0) + payload  # an OPEN frame
                raw.sendall(struct.pack("!i", len(frame)) + frame)
            raw.settimeout(WAIT)
            while raw.recv(4096):
                pass  # the challenge, then the listener hangs up
        except OSError:
            pass  # the listener may hang up (a reset) while the frames are still being sent
    _wait_for(lambda: consumer.refused >= 2, "both peers to be refused")
    assert not _UNPICKLED
    assert consumer.connections() == []


def test_close_leaves_no_thread_and_wakes_blocked_senders():
    before = set(_data_threads())
    producer = NetworkShuffleEnvironment("tm-a", SECRET)
    consumer = NetworkShuffleEnvironment("tm-b", SECRET)
    consumer.create_input_gate("Sink (1/1)", [(_cid(0), 0), (_cid(1), 0)], credits=1)
    senders = [_send_in_thread(producer.output_channel(_cid(t), consumer.data_address),
                               [DataBuffer([i], None) for i in range(5)]) for t in range(2)]
    _wait_for(lambda: all(state["sent"] == 1 for _, state in senders), "the first items")
    assert len(_data_threads()) > len(before)
    consumer.close()
    producer.close()
    for thread, state in senders:
        thread.join(WAIT)
        assert isinstance(state["error"], ChannelCancelledError)
    _assert_no_threads_left(before)
    with pytest.raises(StreamKernelError, match="closed"):
        producer.output_channel(_cid(), consumer.data_address)


# ------------------------------------------------------------- real tasks, real jobs
class _EvenOddTaskManagers:
    """The shuffle of a cluster whose even subtasks run in TaskManager 'tm-even' and odd ones in
    'tm-odd': what Task asks of its TaskManager's shuffle, routed so that every channel between
    an even and an odd subtask goes over TCP (as the JobManager's shuffle_addresses would say)."""

    def __init__(self) -> None:
        self.envs = [NetworkShuffleEnvironment("tm-even", SECRET), NetworkShuffleEnvironment("tm-odd", SECRET)]
        self.remote_channels: list = []

    def create_input_gate(self, name, channels, credits=4):
        channels = list(channels)
        return self.envs[channels[0][0].target_subtask % 2].create_input_gate(name, channels, credits)

    def output_channel(self, cid, remote_address=None):
        home, there = self.envs[cid.source_subtask % 2], self.envs[cid.target_subtask % 2]
        if home is there:
            return home.output_channel(cid)
        channel = home.output_channel(cid, there.data_address)
        self.remote_channels.append(channel)
        return channel

    def release(self, job_id: str) -> None:
        for env in self.envs:
            env.release(job_id)

    def close(self) -> None:
        for env in self.envs:
            env.close()


class _EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def test_keyed_and_event_time_jobs_give_the_same_results_across_tcp_channels():
    from streamkernel.common import Duration, Types, WatermarkStrategy
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.datastream.window import TumblingEventTimeWindows
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    before = set(_data_threads())
    shuffle = _EvenOddTaskManagers()
    words = ["to be or not to be", "that is the question", "to sleep perchance to dream"] * 200
    events = [("k%d" % (i % 5), i * 7) for i in range(3000)]
    try:
        with MiniCluster(1, 8, shuffle=shuffle):
            env = StreamExecutionEnvironment.get_execution_environment()
            env.set_parallelism(3)
            counts: dict = {}
            for word, count in (env.from_collection(words).rebalance().flat_map(lambda line: line.split())
                                .map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
                                .key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
                                .execute_and_collect()):
                counts[word] = max(counts.get(word, 0), count)
            strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(_EventTime())
            sums = (env.from_collection(events).assign_timestamps_and_watermarks(strategy).rebalance()
                    .map(lambda e: (e[0], e[1], 1)).key_by(lambda e: e[0])
                    .window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
                    .reduce(lambda a, b: (a[0], a[1], a[2] + b[2])).execute_and_collect())
            windows = sorted((key, ts // 1000, n) for key, ts, n in sums)
        _wait_for(lambda: not [c for env in shuffle.envs for c in env.connections()],
                  "the connections to close with their jobs")
    finally:
        shuffle.close()
    expected_counts: dict = {}
    for line in words:
        for word in line.split():
            expected_counts[word] = expected_counts.get(word, 0) + 1
    assert counts == expected_counts
    expected_windows: dict = {}
    for key, ts in events:
        expected_windows[(key, ts // 1000)] = expected_windows.get((key, ts // 1000), 0) + 1
    assert windows == sorted((key, second, n) for (key, second), n in expected_windows.items())
    remote = shuffle.remote_channels
    assert len(remote) >= 8 and sum(ch.items_sent for ch in remote) > 2 * len(remote)  # data crossed TaskManagers
    _assert_no_threads_left(before)


# ------------------------------------------------------------------ a real second process
def _child_producer(address, secret: bytes, count: int) -> None:
    """(In a spawned process) produce buffers of Point and of a dynamic class, then end."""
    env = NetworkShuffleEnvironment("tm-child", secret)
    try:
        channel = env.output_channel(ChannelId("job", 0, 0, 0), tuple(address))
        reading = _make_local_class()
        for i in range(count):
            channel.send(DataBuffer([Point(i * 10 + j, "p%d" % j) for j in range(10)], None))
        channel.send(Watermark(count))
        channel.send(DataBuffer([reading("child", 1.5)], None))
        channel.send(END_OF_PARTITION)
    finally:
        env.close()


def _child_consumer(secret: bytes, addresses) -> None:
    """(In a spawned process) a consumer that never reads: publish its address and wait."""
    env = NetworkShuffleEnvironment("tm-child", secret)
    env.create_input_gate("Sink (1/1)", [(ChannelId("job", 0, 0, 0), 0)], credits=2)
    addresses.put(env.data_address)
    time.sleep(120)


def test_buffers_of_user_classes_cross_a_real_process_boundary(pair):
    _, consumer = pair
    gate = consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=2)
    child = multiprocessing.get_context("spawn").Process(target=_child_producer,
                                                         args=(consumer.data_address, SECRET, 40))
    child.start()
    try:
        received = _receive_until_end(gate)
        child.join(WAIT * 3)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()
            child.join()
    points = [p for item in received[:40] for p in item.values]
    assert all(type(p) is Point for p in points)  # pickled by name, rebuilt as this module's class
    assert [p.x for p in points] == list(range(400))
    assert received[40] == Watermark(40)
    dynamic = received[41].values[0]
    assert (dynamic.sensor, dynamic.doubled()) == ("child", 3.0)  # came by value, methods included
    assert received[42] is END_OF_PARTITION


def test_a_sender_whose_consumer_process_is_killed_fails_naming_channel_and_peer(pair):
    producer, _ = pair
    context = multiprocessing.get_context("spawn")
    addresses = context.Queue()
    child = context.Process(target=_child_consumer, args=(SECRET, addresses), daemon=True)
    child.start()
    try:
        address = tuple(addresses.get(timeout=WAIT * 3))
        channel = producer.output_channel(_cid(), address)
        thread, state = _send_in_thread(channel, [DataBuffer([i], None) for i in range(10)])
        _wait_for(lambda: state["sent"] == 2, "the consumer's two credits to be used")
        child.kill()
        thread.join(WAIT)
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        addresses.close()
        addresses.join_thread()
    error = state["error"]
    assert isinstance(error, RemoteChannelError), error
    assert "job/edge0/0->0#0" in str(error) and "tm-child" in str(error) and f"{address[0]}:{address[1]}" in str(error)


def test_a_channel_fed_over_tcp_counts_as_remote_for_the_task_metrics(pair):
    from streamkernel.runtime.core.metrics import TaskMetrics

    producer, consumer = pair
    gate = consumer.create_input_gate("Sink (1/1)", [(_cid(), 0)], credits=3)
    channel = producer.output_channel(_cid(), consumer.data_address)
    sent = [DataBuffer(list(range(100)), None) for _ in range(5)] + [END_OF_PARTITION]
    thread, state = _send_in_thread(channel, sent)
    _receive_until_end(gate)
    thread.join(WAIT)
    metrics = TaskMetrics("Sink", 0)
    metrics.input_channels = gate.channels
    snapshot = metrics.snapshot()
    assert gate.channels[0].remote and snapshot["buffers_in_remote"] == 6 and snapshot["buffers_in_local"] == 0
    assert snapshot["bytes_in_remote"] == channel.bytes_sent > 0 and snapshot["bytes_in_local"] == 0
