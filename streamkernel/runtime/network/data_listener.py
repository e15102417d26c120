"""The consuming side of the data plane: a TaskManager's data listener and its connections.

Every TaskManager of the ``process`` and ``spark`` backends runs one :class:`DataListener`
(Flink's Netty server of a ``NettyShuffleEnvironment``): producing TaskManagers connect to
it (connections are producer-driven), pass the cluster secret's HMAC challenge both ways
(:class:`~streamkernel.runtime.rpc.transport.AuthenticatedListener`: a peer that fails is
dropped and logged before anything it sent is unpickled), say which channels they produce
(OPEN) and then send items (DATA). Each connection is read by one network thread.

The receiver-side channel is an ordinary :class:`~.channel.LocalChannel`, found or
created by ChannelId in the TaskManager's registry exactly as for an in-process sender
(so consumer-first and producer-first deployments both work), and attached to its task's
:class:`~.input_gate.InputGate` as usual. What makes it remote is a :class:`RemoteFeed`:

* the network thread puts each received item into the channel with :meth:`RemoteFeed.deliver`,
  which never blocks: the producer only sends while it holds a credit, so a slot is free;
* credits go back to the producer when the channel frees a slot. The gate's ``poll``
  already grants the freed slot to the channel and notifies the channel's credit
  condition when a sender waits; the feed *is* that condition object for a remote-fed
  channel and marks the sender as always waiting, so ``notify`` becomes "announce a
  credit" (a 9-byte CREDIT frame), with no change to the in-process hot path. Attaching
  the gate (``notify_all`` after the initial credits) announces them all; cancelling the channel (``notify_all`` with the channel cancelled)
  sends CANCEL, which wakes the producer's blocked sender with ChannelCancelledError.

Credits go back in batches: a CREDIT frame once the free slots not announced yet are at
least half of the channel's slots, not one per slot. Every frame costs a socket write on the
consuming task's thread and a wake-up of the producer's reader thread, and each of them gives
the GIL away and waits to get it back (W2 of ``bench/bench_scaleout.py``: the producer's
reader thread woke ~1,300 times per million records with one frame per slot, under 100 in
batches). The producer never starves: it still holds (or has in flight) the other half, and
a channel the receiver drained always announces all its slots.

The credit invariant (under the channel's lock): ``announced - received`` items are
promised to the producer and not arrived yet, and ``channel._credits`` slots are free, so
``channel._credits + received - announced`` free slots are still to be announced; it is
never negative, and the receiver never holds more than ``credits`` items of a channel (but
for the overdraft items of an unaligned checkpoint, below).

Unaligned checkpoints: an OVERDRAFT frame carries an item the producer sent without credit
(its partly filled buffer and its barrier, :meth:`RemoteFeed.deliver` with ``overdraft``):
it is queued beyond the channel's credits, exactly as ``LocalChannel.send_overdraft`` does,
and the credit invariant above holds as it is (the channel's free slots go negative). The
ANNOUNCE frame after it announces the barrier to the gate (:meth:`RemoteFeed.announce`),
which then sees it ahead of the queued buffers: to the gate and the task, a remote-fed
channel is the same LocalChannel as an in-process one.

A producer that dies (connection lost before its END_OF_PARTITION) is logged; its
consumer task then waits for input like any idle task until the JobManager's failover
(heartbeat timeout of the dead TaskManager) cancels and restarts the job.
"""

from __future__ import annotations

import logging
import threading
from multiprocessing.connection import Connection
from typing import Any, Callable, Optional

from streamkernel.runtime.core.records import END_OF_PARTITION
from streamkernel.runtime.network import wire
from streamkernel.runtime.network.channel import LocalChannel
from streamkernel.runtime.network.remote_channel import shutdown_connection
from streamkernel.runtime.rpc.transport import Address, AuthenticatedListener

__all__ = ["RemoteFeed", "InboundConnection", "DataListener"]

_LOG = logging.getLogger(__name__)


class RemoteFeed:
    """Feeds one receiver-side LocalChannel from a producer in another TaskManager.

    Installed as the channel's credit condition (see the module docstring): ``notify``
    and ``notify_all`` are called by the gate and the channel with the channel's lock
    held, and must not block nor raise.
    """

    __slots__ = ("channel", "channel_id", "connection", "stream", "received", "announced", "credit_frames",
                 "ended", "failed", "_cancel_sent")

    def __init__(self, channel: LocalChannel, channel_id: Any, connection: "InboundConnection", stream: int) -> None:
        self.channel = channel
        self.channel_id = channel_id
        self.connection = connection
        self.stream = stream
        self.received = 0  # items delivered into the channel
        self.announced = 0  # credits announced to the producer
        self.credit_frames = 0  # CREDIT frames sent (each announces one or more credits)
        self.ended = False  # END_OF_PARTITION arrived
        self.failed = False  # an item could not be read: the rest of the stream is dropped
        self._cancel_sent = False

    def bind(self) -> None:
        """Become the channel's credit condition and announce the slots already granted."""
        channel = self.channel
        with channel._lock:
            channel.remote = True
            channel._credit_cond = self  # type: ignore[assignment]
            channel._sender_waiting = True  # so that poll notifies us of every freed slot
            self.notify_all()
        if channel.buffer_size:  # buffer debloating: a size announced before the producer opened the stream
            self.announce_buffer_size(channel.buffer_size)

    # ------------------------------------------------ the channel's credit condition
    def notify(self, n: int = 1) -> None:
        """The gate freed a slot (channel lock held): announce the free slots once they are
        half of the channel's (see the module docstring: credits in batches)."""
        channel = self.channel
        delta = channel._credits + self.received - self.announced
        if delta > 0 and delta * 2 >= channel._credits + len(channel._queue) and not channel._cancelled:
            self.announced += delta
            self.credit_frames += 1
            self.connection.send_quietly(wire.credit_frame(self.stream, delta))

    def notify_all(self) -> None:
        """Credits were granted (gate attached) or the channel was cancelled (channel lock held)."""
        channel = self.channel
        if channel._cancelled:
            if not self._cancel_sent:
                self._cancel_sent = True
                self.connection.send_quietly(wire.text_frame(
                    wire.CANCEL, self.stream, f"cancelled by its receiver in {self.connection.describe_self()} "
                    "(the job was cancelled, failed or is restarting)"))
            return
        self.notify()

    def announce_buffer_size(self, size: int) -> None:
        """Buffer debloating: tell the producer to send buffers of ``size`` records (NEW_BUFFER_SIZE)."""
        if not self.channel._cancelled:
            self.connection.send_quietly(wire.new_buffer_size_frame(self.stream, size))

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Never called: the sender of a remote-fed channel is in another process."""
        raise RuntimeError(f"channel {self.channel.name!r} is fed from another TaskManager: "
                           "nothing in this process may send to it")

    # ------------------------------------------------------------- network thread
    def deliver(self, item: Any, overdraft: bool = False) -> bool:
        """Put a received item into the channel; False if the producer had no credit (a protocol error).

        ``overdraft``: the producer sent it without credit on purpose (unaligned checkpoints).
        A credit announced and not used yet is what allows an item (the channel's free slots
        may be fewer after the task put part of a buffer back, ``InputGate.push_front``).
        """
        channel = self.channel
        with channel._lock:
            if channel._cancelled:
                return True  # nobody reads it any more: dropped
            if self.received >= self.announced and not overdraft:
                return False
            channel._credits -= 1
            self.received += 1
            channel._queue.append(item)
            if item is END_OF_PARTITION:
                self.ended = True
            if channel._listed or channel._blocked:
                return True
            channel._listed = True
            gate = channel._gate
        gate._channel_has_data(channel)  # type: ignore[union-attr]  # outside the channel lock: gate -> channel
        return True

    def announce(self, barrier: Any) -> None:
        """The producer announced ``barrier`` (already delivered): tell the gate, ahead of the queue."""
        channel = self.channel
        if channel._cancelled or channel._gate is None:
            return  # released: nobody reads it
        channel.announce(barrier)


class InboundConnection:
    """One authenticated connection from a producing TaskManager, read by one network thread.

    ``open_channel(channel_id, connection, stream)`` (the shuffle environment's) returns
    the bound :class:`RemoteFeed` for an OPEN, or raises to refuse it (the producer gets
    FAIL with the reason); ``on_closed(connection)`` is called once the connection ended.
    """

    def __init__(self, conn: Connection, peer: Address, taskmanager_id: str,
                 open_channel: Callable[[Any, "InboundConnection", int], RemoteFeed],
                 on_closed: Callable[["InboundConnection"], None]) -> None:
        self.peer = peer
        self.taskmanager_id = taskmanager_id
        self.peer_taskmanager = "?"
        self.job_id = ""
        self._conn = conn
        self._open_channel = open_channel
        self._on_closed = on_closed
        self._write_lock = threading.Lock()  # frames from poll threads, the network thread, cancel
        self.feeds: dict[int, RemoteFeed] = {}  # written by the network thread only
        self._closing = False
        self.bytes_received = 0

    def describe_self(self) -> str:
        """This TaskManager, for messages to the producer."""
        return f"TaskManager {self.taskmanager_id!r}"

    def describe_peer(self) -> str:
        """The producing TaskManager, for messages and logs."""
        return f"TaskManager {self.peer_taskmanager!r} at {self.peer[0]}:{self.peer[1]}"

    def send_quietly(self, frame: bytes) -> None:
        """Write a frame to the producer; a broken connection is the reader's to report."""
        if self._closing:
            return
        try:
            with self._write_lock:
                self._conn.send_bytes(frame)
        except (OSError, ValueError):
            pass

    def run(self) -> None:
        """The network thread: read frames until the connection ends."""
        reason = "closed"
        try:
            reason = self._read_frames()
        except (EOFError, OSError) as exc:
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else "the peer closed the connection"
        except Exception as exc:  # noqa: BLE001 - a bug must not kill the listener silently
            reason = f"{type(exc).__name__}: {exc}"
            _LOG.exception("data connection from %s failed", self.describe_peer())
        finally:
            self._finish(reason)

    def _read_frames(self) -> str:
        recv = wire.FrameReader(self._conn).read  # several frames per read (see FrameReader)
        feeds = self.feeds
        loads, loads_marshalled = wire.loads, wire.loads_marshalled
        offset = wire.STREAM_HEADER_SIZE
        while True:
            frame = recv()
            self.bytes_received += len(frame)
            kind = frame[0]
            if kind == wire.DATA_MARSHAL or kind == wire.DATA:  # the hot path: a buffer of records, or an event
                feed = feeds.get(wire.parse_stream(frame))
                if feed is None or feed.failed:
                    continue  # a released channel: dropped
                feed.channel.bytes_received += len(frame)
                try:
                    body = memoryview(frame)[offset:]
                    item = loads_marshalled(body) if kind == wire.DATA_MARSHAL else loads(body)
                except Exception as exc:  # noqa: BLE001 - the producer's task fails with the reason
                    self._refuse(feed, f"could not read an item in {self.describe_self()}: {type(exc).__name__}: "
                                       f"{exc} (is the record's class importable there? classes defined in a "
                                       "notebook travel by value through cloudpickle)")
                    continue
                if not feed.deliver(item):
                    self._refuse(feed, "protocol error: an item arrived without credit")
            elif kind == wire.OVERDRAFT or kind == wire.ANNOUNCE:
                self._priority(kind, frame)
            elif kind == wire.OPEN:
                self._open(wire.parse_stream(frame), loads(memoryview(frame)[offset:]))
            elif kind == wire.CLOSE:
                self._closing = True  # on purpose (released): not a lost producer
                return f"closed by the producer: {wire.parse_text(frame)[1]}"
            elif kind == wire.HELLO:
                self.peer_taskmanager, self.job_id = wire.parse_hello(frame)
                self.send_quietly(wire.hello_frame(self.taskmanager_id, self.job_id))
            else:
                return f"protocol error: unexpected frame kind {kind}"

    def _priority(self, kind: int, frame: wire.Frame) -> None:
        """An OVERDRAFT item or an ANNOUNCE (unaligned checkpoints; rare: once per checkpoint)."""
        if kind == wire.OVERDRAFT:
            frame = frame[1:]  # the DATA or DATA_MARSHAL frame inside
        feed = self.feeds.get(wire.parse_stream(frame))
        if feed is None or feed.failed:
            return  # a released channel: dropped
        if kind == wire.OVERDRAFT:
            feed.channel.bytes_received += len(frame) + 1  # as its producer counted it
        body = memoryview(frame)[wire.STREAM_HEADER_SIZE:]
        try:
            item = wire.loads_marshalled(body) if frame[0] == wire.DATA_MARSHAL else wire.loads(body)
        except Exception as exc:  # noqa: BLE001 - the producer's task fails with the reason
            self._refuse(feed, f"could not read an item in {self.describe_self()}: {type(exc).__name__}: {exc}")
            return
        if kind == wire.ANNOUNCE:
            feed.announce(item)
        else:
            feed.deliver(item, overdraft=True)

    def _open(self, stream: int, channel_id: Any) -> None:
        try:
            feed = self._open_channel(channel_id, self, stream)
        except Exception as exc:  # noqa: BLE001 - refused: the producer is told why
            self.send_quietly(wire.text_frame(wire.FAIL, stream, f"refused by {self.describe_self()}: {exc}"))
            return
        self.feeds[stream] = feed
        feed.bind()

    def _refuse(self, feed: RemoteFeed, reason: str) -> None:
        feed.failed = True
        _LOG.warning("channel %s from %s: %s", feed.channel.name, self.describe_peer(), reason)
        self.send_quietly(wire.text_frame(wire.FAIL, feed.stream, reason))

    def _finish(self, reason: str) -> None:
        closing = self._closing
        self._closing = True
        lost = [f.channel.name for f in self.feeds.values() if not (f.ended or f.failed or f.channel._cancelled)]
        if lost and not closing:
            _LOG.warning("lost the data connection from %s (%s) before the end of channels %s; the JobManager's "
                         "failover restarts the job", self.describe_peer(), reason, ", ".join(lost))
        try:
            self._conn.close()
        except OSError:
            pass
        self._on_closed(self)

    def close(self) -> None:
        """End the connection (its network thread returns)."""
        self._closing = True
        shutdown_connection(self._conn)

    def __repr__(self) -> str:
        return f"InboundConnection(job={self.job_id!r} from {self.describe_peer()}, channels={len(self.feeds)})"


class DataListener:
    """A TaskManager's data listener: accepts authenticated connections from producers.

    Binds ``(bind_host, port)`` (port 0: any free port). ``open_channel`` resolves OPEN frames
    (see :class:`InboundConnection`). ``address`` is the bound (host, port); ``refused`` counts
    peers dropped for a wrong secret.
    """

    def __init__(self, bind_host: str, authkey: bytes, taskmanager_id: str,
                 open_channel: Callable[[Any, InboundConnection, int], RemoteFeed], port: int = 0) -> None:
        self.taskmanager_id = taskmanager_id
        self._open_channel = open_channel
        self._lock = threading.Lock()
        # Guarded by _lock: live connections and their network threads; closed flag.
        self._connections: dict[InboundConnection, threading.Thread] = {}
        self._closed = False
        self._listener = AuthenticatedListener((bind_host, port), authkey, self._serve, name=f"data-{taskmanager_id}")

    @property
    def address(self) -> Address:
        """The bound (host, port)."""
        return self._listener.address

    @property
    def refused(self) -> int:
        """Peers dropped because they failed the challenge."""
        return self._listener.refused

    def _serve(self, conn: Connection, peer: Address) -> None:
        """Runs on the listener's per-peer thread: it becomes this connection's network thread."""
        connection = InboundConnection(conn, peer, self.taskmanager_id, self._open_channel, self._forget)
        with self._lock:
            if self._closed:
                conn.close()
                return
            self._connections[connection] = threading.current_thread()
        thread = threading.current_thread()
        thread.name = f"streamkernel-data-in-{peer[0]}:{peer[1]}"
        connection.run()

    def _forget(self, connection: InboundConnection) -> None:
        with self._lock:
            self._connections.pop(connection, None)

    def connections(self, job_id: Optional[str] = None) -> list[InboundConnection]:
        """The live connections (of ``job_id`` only, when given)."""
        with self._lock:
            return [c for c in self._connections if job_id is None or c.job_id == job_id]

    def close(self) -> None:
        """Stop accepting, end every connection and wait for their threads."""
        with self._lock:
            self._closed = True
        self._listener.close()
        with self._lock:
            live = dict(self._connections)
        for connection in live:
            connection.close()
        for thread in live.values():
            if thread is not threading.current_thread():
                thread.join(5)

    def __repr__(self) -> str:
        host, port = self.address
        return f"DataListener({self.taskmanager_id!r}, {host}:{port}, connections={len(self._connections)})"
