"""Records/s through one TCP channel between TaskManagers vs one in-process channel, in one run.

Run: ``.venv/bin/python bench/bench_network.py [--buffers N] [--buffer-size B] [--credits C]``

Every channel carries ``N`` DataBuffers of ``B`` records ``("k<i>", i)`` (built before the
clock starts) and END_OF_PARTITION; a consumer thread polls its InputGate until the end.
Printed, each the best of ``--repeat`` runs:

1. serialization of one buffer of 1,000 tuples (and of 1,000 dataclass instances):
   ``pickle`` protocol 5 vs ``cloudpickle``, dumps and loads (why the data plane pickles
   first and uses cloudpickle only where pickle cannot);
2. one in-process LocalChannel (a LocalShuffleEnvironment, as ``local`` TaskManagers);
3. one TCP channel with both TaskManagers' environments in this process (sender pickling
   and receiver unpickling share one GIL);
4. one TCP channel from a producer in a spawned child process (the ``process`` backend's
   case: pickling and unpickling run in parallel);
5. connection granularity: 4 channels multiplexed on one connection (what the
   NetworkShuffleEnvironment does) vs one connection per channel, in this process.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pickle
import sys
import threading
import time
import timeit
from dataclasses import dataclass
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from streamkernel.runtime.core.deployment import ChannelId  # noqa: E402
from streamkernel.runtime.network import LocalShuffleEnvironment, NetworkShuffleEnvironment  # noqa: E402
from streamkernel.runtime.core.records import END_OF_PARTITION, DataBuffer  # noqa: E402
from streamkernel.runtime.rpc.transport import new_cluster_secret  # noqa: E402


@dataclass
class Reading:
    """A record class (importable by name) for the serialization comparison."""

    sensor: str
    value: int


def _buffers(count: int, size: int) -> list[DataBuffer]:
    return [DataBuffer([("k%d" % (i * size + j), i * size + j) for j in range(size)], None) for i in range(count)]


def _cid(target: int = 0) -> ChannelId:
    return ChannelId("bench", 0, 0, target)


def _drain(gate: Any, channels: int = 1) -> tuple[int, float, float]:
    """Poll until every channel ended: (records, time of the first item, time of the last end)."""
    records, ended, first = 0, 0, 0.0
    while ended < channels:
        polled = gate.poll(30)
        if polled is None:
            raise RuntimeError("nothing arrived within 30 s")
        if not first:
            first = time.perf_counter()
        item = polled[1]
        if item is END_OF_PARTITION:
            ended += 1
        else:
            records += len(item.values)
    return records, first, time.perf_counter()


def _send(channel: Any, buffers: list) -> None:
    for buffer in buffers:
        channel.send(buffer)
    channel.send(END_OF_PARTITION)


def _through(make_channels: Callable[[], tuple[Any, list]], buffers: list) -> float:
    """Records/s from the senders' start to the receiver's end."""
    gate, channels = make_channels()
    senders = [threading.Thread(target=_send, args=(ch, buffers)) for ch in channels]
    start = time.perf_counter()
    for sender in senders:
        sender.start()
    records, _, end = _drain(gate, len(channels))
    for sender in senders:
        sender.join()
    return records / (end - start)


def local_channel(buffers: list, credits: int) -> float:
    """One in-process channel."""
    env = LocalShuffleEnvironment()

    def make() -> tuple[Any, list]:
        return env.create_input_gate("Sink", [(_cid(), 0)], credits), [env.output_channel(_cid())]

    try:
        return _through(make, buffers)
    finally:
        env.release("bench")


def tcp_in_process(buffers: list, credits: int, channels: int = 1, per_channel: bool = False) -> float:
    """TCP channels between two environments of this process."""
    secret = new_cluster_secret()
    producer = NetworkShuffleEnvironment("tm-a", secret, connection_per_channel=per_channel)
    consumer = NetworkShuffleEnvironment("tm-b", secret)

    def make() -> tuple[Any, list]:
        ids = [_cid(t) for t in range(channels)]
        # one gate over several channels with one sender each: ChannelIds differ by target only
        gate = consumer.create_input_gate("Sink", [(cid, 0) for cid in ids], credits)
        return gate, [producer.output_channel(cid, consumer.data_address) for cid in ids]

    try:
        return _through(make, buffers)
    finally:
        producer.close()
        consumer.close()


def _child_producer(address: tuple, secret: bytes, count: int, size: int, ready: Any) -> None:
    buffers = _buffers(count, size)
    env = NetworkShuffleEnvironment("tm-child", secret)
    try:
        channel = env.output_channel(_cid(), address)
        ready.wait()
        _send(channel, buffers)
    finally:
        env.close()


def tcp_cross_process(count: int, size: int, credits: int) -> float:
    """One TCP channel from a producer in a spawned child process (timed at the receiver)."""
    secret = new_cluster_secret()
    consumer = NetworkShuffleEnvironment("tm-b", secret)
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    child = context.Process(target=_child_producer, args=(consumer.data_address, secret, count, size, ready))
    child.start()
    try:
        gate = consumer.create_input_gate("Sink", [(_cid(), 0)], credits)
        ready.set()
        records, first, end = _drain(gate)
        child.join(30)
        # the first buffer's own time is not in [first, end]: count the records after it
        return (records - size) / (end - first)
    finally:
        if child.is_alive():
            child.kill()
            child.join()
        consumer.close()


def serialization(repeat: int) -> list[str]:
    """pickle vs cloudpickle on one 1,000-record buffer (microseconds)."""
    import cloudpickle

    rows = []
    for label, values in (("1,000 (str, int) tuples", [("k%d" % i, i) for i in range(1000)]),
                          ("1,000 dataclass records", [Reading("s%d" % i, i) for i in range(1000)])):
        buffer = DataBuffer(values, None)
        data = pickle.dumps(buffer, 5)
        times = {}
        for name, fn in (("pickle.dumps", lambda buffer=buffer: pickle.dumps(buffer, 5)),
                         ("cloudpickle.dumps", lambda buffer=buffer: cloudpickle.dumps(buffer, 5)),
                         ("pickle.loads", lambda data=data: pickle.loads(data))):
            times[name] = min(timeit.repeat(fn, number=50, repeat=repeat)) / 50 * 1e6
        rows.append(f"  {label:<26} pickle.dumps {times['pickle.dumps']:7.0f} us   cloudpickle.dumps "
                    f"{times['cloudpickle.dumps']:7.0f} us ({times['cloudpickle.dumps'] / times['pickle.dumps']:.1f}x)"
                    f"   pickle.loads {times['pickle.loads']:7.0f} us   {len(data):,} bytes")
    return rows


def main() -> None:
    """Print the serialization costs and the records/s of each channel kind."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buffers", type=int, default=500, help="buffers per channel")
    parser.add_argument("--buffer-size", type=int, default=1024, help="records per buffer")
    parser.add_argument("--credits", type=int, default=4, help="credits per channel")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    buffers = _buffers(args.buffers, args.buffer_size)
    best = lambda fn: max(fn() for _ in range(args.repeat))  # noqa: E731
    print(f"serialization of one buffer (best of {args.repeat}):")
    for row in serialization(args.repeat):
        print(row)
    n = args.buffers * args.buffer_size
    print(f"\none channel, {args.buffers} buffers x {args.buffer_size} records ({n:,} records), "
          f"{args.credits} credits; records/s, best of {args.repeat}:")
    local = best(lambda: local_channel(buffers, args.credits))
    rows = [("in-process LocalChannel", local),
            ("TCP, both TaskManagers in this process", best(lambda: tcp_in_process(buffers, args.credits))),
            ("TCP, producer in a child process", best(lambda: tcp_cross_process(args.buffers, args.buffer_size,
                                                                               args.credits)))]
    for label, rate in rows:
        print(f"  {label:<42}{rate:>14,.0f}   {rate / local:6.2f}x of in-process")
    channels = 4
    quarter = buffers[: max(1, args.buffers // channels)]
    print(f"\n{channels} channels x {len(quarter)} buffers into one gate, in this process; records/s:")
    for label, per_channel in (("one connection, channels multiplexed", False), ("one connection per channel", True)):
        rate = best(lambda per_channel=per_channel: tcp_in_process(quarter, args.credits, channels, per_channel))
        print(f"  {label:<42}{rate:>14,.0f}")


if __name__ == "__main__":
    main()
