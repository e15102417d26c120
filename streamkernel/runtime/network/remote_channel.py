"""The producing side of channels to tasks in another TaskManager: credit-based, over TCP.

A :class:`RemoteOutputChannel` is what a RecordWriter sends to when the consumer subtask
runs in another TaskManager process. It behaves as a :class:`~.channel.LocalChannel` to
its sender: ``send(item)`` returns the nanoseconds waited for credit and blocks while
the channel holds none (that wait is the sender's backpressure). The credits come from
the receiver: the consumer TaskManager's channel owns ``credits`` buffer slots and
announces one credit per free slot (Flink's credit-based flow control of
``RemoteInputChannel`` / ``CreditBasedPartitionRequestClientHandler``), so at most
``credits`` items of a channel are ever in flight or queued at the receiver, and the
receiver's network thread never blocks.

An :class:`OutboundConnection` is Flink's ``PartitionRequestClient``: one authenticated
TCP connection from this (producing) TaskManager to one consumer TaskManager's data
listener, for one job, multiplexing that job's channels between the pair. The producing
task thread serializes its item and writes the frame itself (serialization happens
before it waits for credit, so pickling overlaps with the receiver's work); a reader
thread per connection takes credits, cancellations and failures from the consumer.
Nothing from the consumer is unpickled (see :mod:`.wire`).

Unaligned checkpoints: :meth:`RemoteOutputChannel.send_overdraft` sends an item without
waiting for credit (an OVERDRAFT frame, which the consumer accepts beyond its credits) and
:meth:`RemoteOutputChannel.announce` sends an ANNOUNCE frame after the barrier, so the
consumer's gate learns of the barrier ahead of the buffers queued before it, exactly as a
:class:`~.channel.LocalChannel` does in one process. :meth:`RemoteOutputChannel.await_credit`
lets a source wait for output availability and for its mailbox at once.

Failure: a consumer that cancels the channel (job released, task cancelled) wakes a
blocked sender with :class:`~.channel.ChannelCancelledError`; a consumer TaskManager that
dies (connection lost) or cannot read an item fails the sender with
:class:`RemoteChannelError` (a ChannelCancelledError too) naming the channel and the peer.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from multiprocessing.connection import Connection
from typing import Any, Optional

from streamkernel.runtime.network import wire
from streamkernel.runtime.network.channel import ChannelCancelledError
from streamkernel.runtime.rpc.transport import Address, connect

__all__ = ["RemoteChannelError", "RemoteOutputChannel", "OutboundConnection", "shutdown_connection"]

_LOG = logging.getLogger(__name__)


class RemoteChannelError(ChannelCancelledError):
    """A channel to (or from) another TaskManager broke: the peer died, the connection was
    lost, or the peer could not read an item. Names the channel and the peer."""


def shutdown_connection(conn: Connection, how: int = socket.SHUT_RDWR) -> None:
    """Shut ``conn``'s socket down (both ways: whoever blocks reading it gets EOF); never raises.

    ``close()`` alone does not interrupt a ``recv`` blocked in another thread on Linux;
    ``shutdown`` on the shared socket does. ``SHUT_WR`` only sends the end of stream after
    everything written (a graceful close: the peer reads all, then closes its side).
    """
    try:
        sock = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            sock.shutdown(how)
        finally:
            sock.close()
    except (OSError, ValueError):
        pass


class RemoteOutputChannel:
    """The sender side of one channel whose receiver is in another TaskManager.

    Used by one task thread through ``send`` (as a LocalChannel); the connection's reader
    thread grants credits (:meth:`_grant`) and fails it (:meth:`_fail`). Everything else
    is status.
    """

    __slots__ = ("name", "channel_id", "stream", "_connection", "_serializer", "_lock", "_cond", "_credits",
                 "_error", "_error_type", "items_sent", "bytes_sent", "_credit_event", "_granted",
                 "buffer_size")

    def __init__(self, channel_id: Any, name: str, connection: "OutboundConnection", stream: int) -> None:
        self.name = name
        self.channel_id = channel_id
        self.stream = stream
        self._connection = connection
        self._serializer = wire.ItemSerializer(name, stream)
        self._lock = threading.Lock()
        # Guarded by _lock: credits granted by the receiver and not used yet; the failure
        # (message and class) once the channel is dead.
        self._cond = threading.Condition(self._lock)
        self._credits = 0
        self._error: Optional[str] = None
        self._error_type: type[ChannelCancelledError] = ChannelCancelledError
        self.items_sent = 0
        self.bytes_sent = 0
        self._credit_event: Optional[threading.Event] = None  # set when a credit comes back (await_credit)
        self._granted = False  # a credit came once: the consumer's gate has the channel
        self.buffer_size = 0  # buffer debloating: records per buffer the consumer announced (0: none)

    # ------------------------------------------------------------------ sender side
    def send(self, item: Any) -> int:
        """Send ``item`` (a DataBuffer or an event) once a credit is free; return ns waited.

        Raises ChannelCancelledError if the receiver cancelled the channel (or the job was
        released), RemoteChannelError if the connection or the peer failed.
        """
        frame = self._serializer.frame(item, self._connection.peer_reads_marshal)  # before waiting: pickling overlaps the receiver's work
        waited = 0
        with self._lock:
            if self._credits <= 0 or self._error is not None:
                waited = self._wait_for_credit()
            self._credits -= 1
        self._connection.send_frame(frame, self)
        self.items_sent += 1
        self.bytes_sent += len(frame)
        return waited

    def send_overdraft(self, item: Any) -> None:
        """Send ``item`` without waiting for credit (Flink's overdraft buffers; unaligned checkpoints).

        As :meth:`.channel.LocalChannel.send_overdraft`: the credits go negative and the next
        :meth:`send` waits until the consumer caught up. Before the consumer's first credit
        (its gate has not attached the channel yet) it waits for that credit.
        """
        frame = wire.overdraft_frame(self._serializer.frame(item, self._connection.peer_reads_marshal))
        with self._lock:
            if not self._granted or self._error is not None:
                self._wait_for_credit()
            self._credits -= 1
        self._connection.send_frame(frame, self)
        self.items_sent += 1
        self.bytes_sent += len(frame)

    def announce(self, barrier: Any) -> None:
        """Tell the consumer's gate, ahead of its queued items, that ``barrier`` is in the channel
        (sent just before with :meth:`send_overdraft`; frames of a stream arrive in order)."""
        self._connection.send_frame(wire.announce_frame(self.stream, barrier), self)

    def await_credit(self, event: threading.Event) -> bool:
        """True if a credit is free now (or the channel failed: ``send`` raises); else ``event``
        is set when a credit comes back (or the channel fails) and False is returned. The
        sender calls :meth:`stop_awaiting` when it stops waiting (as LocalChannel.await_credit)."""
        with self._lock:
            if self._credits > 0 or self._error is not None:
                return True
            self._credit_event = event
            return False

    def stop_awaiting(self) -> None:
        """End an :meth:`await_credit`."""
        with self._lock:
            self._credit_event = None

    def _wait_for_credit(self) -> int:
        start = time.perf_counter_ns()
        while self._credits <= 0 and self._error is None:
            self._cond.wait()
        if self._error is not None:
            raise self._error_type(self._error)
        return time.perf_counter_ns() - start

    # ------------------------------------------------------- from the connection
    def _grant(self, credits: int) -> None:
        """The receiver freed ``credits`` buffer slots."""
        with self._lock:
            self._credits += credits
            self._granted = True
            self._cond.notify()
            if self._credit_event is not None:
                self._credit_event.set()

    def _fail(self, error_type: type[ChannelCancelledError], message: str) -> None:
        """The channel is dead: a blocked (and every later) ``send`` raises ``error_type(message)``."""
        with self._lock:
            if self._error is None:
                self._error = message
                self._error_type = error_type
            self._cond.notify_all()
            if self._credit_event is not None:
                self._credit_event.set()

    def cancel(self) -> None:
        """Cancel the channel: a blocked sender wakes up and raises ChannelCancelledError."""
        self._fail(ChannelCancelledError, f"channel {self.name} was cancelled: the job's channels were released "
                                          "(the job was cancelled, failed or is restarting)")

    # ---------------------------------------------------------------------- status
    def queued(self) -> int:
        """Items waiting in this (sending) side: always 0, an item is sent or not at all."""
        return 0

    @property
    def available_credits(self) -> int:
        """Credits the sender holds right now: items it may still send without blocking."""
        return self._credits

    @property
    def is_cancelled(self) -> bool:
        """True once the channel was cancelled or failed."""
        return self._error is not None

    @property
    def uses_cloudpickle(self) -> bool:
        """True once an item needed cloudpickle (then every later one uses it)."""
        return self._serializer.uses_cloudpickle

    @property
    def peer(self) -> str:
        """The consumer TaskManager and its data address, for messages."""
        return self._connection.describe_peer()

    def __repr__(self) -> str:
        return (f"RemoteOutputChannel({self.name!r} -> {self.peer}, credits={self._credits}, "
                f"sent={self.items_sent}, cancelled={self.is_cancelled})")


class OutboundConnection:
    """One authenticated connection from this TaskManager to a consumer TaskManager, for one job.

    Opens on construction (raising ConnectionRefusedByPeerError naming the address when
    nobody listens or the secret is wrong) and starts its reader thread. ``open_channel``
    adds a channel (a stream) to it; ``close`` ends it, cancelling its channels.
    """

    def __init__(self, address: Address, authkey: bytes, taskmanager_id: str, job_id: str, *,
                 timeout: float = 10.0) -> None:
        self.address = (str(address[0]), int(address[1]))
        self.job_id = job_id
        self.peer_taskmanager = "?"
        self.peer_reads_marshal = False  # set from the consumer's HELLO: pickle until then
        self._conn = connect(self.address, authkey, timeout)
        self._write_lock = threading.Lock()  # one frame at a time on the socket
        self._lock = threading.Lock()
        # Guarded by _lock: the streams by number; the next number; closing flag.
        self._streams: dict[int, RemoteOutputChannel] = {}
        self._next_stream = 0
        self._closing = False
        self.bytes_sent = 0
        try:
            self._conn.send_bytes(wire.hello_frame(taskmanager_id, job_id))
        except OSError as exc:
            shutdown_connection(self._conn)
            self._conn.close()
            raise RemoteChannelError(f"lost the data connection to {self.describe_peer()} while opening it: {exc}") \
                from exc
        self._thread = threading.Thread(target=self._read_loop, daemon=True,
                                        name=f"streamkernel-data-out-{self.address[0]}:{self.address[1]}")
        self._thread.start()

    def describe_peer(self) -> str:
        """"TaskManager 'tm-2' at host:port" (the id once its HELLO arrived)."""
        return f"TaskManager {self.peer_taskmanager!r} at {self.address[0]}:{self.address[1]}"

    # --------------------------------------------------------------- the producer side
    def open_channel(self, channel_id: Any, name: str) -> RemoteOutputChannel:
        """A new channel on this connection; the consumer learns of it by an OPEN frame."""
        with self._lock:
            if self._closing:
                raise ChannelCancelledError(f"channel {name}: the connection to {self.describe_peer()} "
                                            "is closed (its job was released)")
            stream = self._next_stream
            self._next_stream += 1
            channel = RemoteOutputChannel(channel_id, name, self, stream)
            self._streams[stream] = channel
        self.send_frame(wire.open_frame(stream, channel_id), channel)
        return channel

    def send_frame(self, frame: bytes, channel: RemoteOutputChannel) -> None:
        """Write one frame; a broken connection fails ``channel`` (and raises) naming the peer."""
        try:
            with self._write_lock:
                self._conn.send_bytes(frame)
            self.bytes_sent += len(frame)
        except (OSError, ValueError) as exc:
            if self._closing:
                channel.cancel()
            else:
                channel._fail(RemoteChannelError,
                              f"channel {channel.name}: lost the data connection to {self.describe_peer()} "
                              f"({type(exc).__name__}: {exc}); the consumer TaskManager died or dropped it")
            raise channel._error_type(channel._error) from exc

    # ----------------------------------------------------------------- reader thread
    def _read_loop(self) -> None:
        reason = "the connection was closed"
        try:
            recv = wire.FrameReader(self._conn).read  # credits come in bursts: several per read
            while True:
                frame = recv()
                kind = frame[0]
                if kind == wire.CREDIT:
                    stream, credits = wire.parse_credit(frame)
                    channel = self._streams.get(stream)
                    if channel is not None:
                        channel._grant(credits)
                elif kind == wire.CANCEL or kind == wire.FAIL:
                    stream, text = wire.parse_text(frame)
                    channel = self._streams.get(stream)
                    if channel is not None:
                        error = ChannelCancelledError if kind == wire.CANCEL else RemoteChannelError
                        channel._fail(error, f"channel {channel.name} to {self.describe_peer()}: {text}")
                elif kind == wire.NEW_BUFFER_SIZE:  # buffer debloating: the writer reads it per batch
                    stream, size = wire.parse_new_buffer_size(frame)
                    channel = self._streams.get(stream)
                    if channel is not None:
                        channel.buffer_size = size
                elif kind == wire.HELLO:
                    self.peer_taskmanager, _ = wire.parse_hello(frame)
                    self.peer_reads_marshal = wire.reads_marshal(frame)
                else:
                    reason = f"protocol error: unexpected frame kind {kind}"
                    break
        except (EOFError, OSError) as exc:
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else "the peer closed the connection"
        except Exception as exc:  # noqa: BLE001 - a bug must not leave senders blocked forever
            reason = f"{type(exc).__name__}: {exc}"
            _LOG.exception("data connection to %s failed", self.describe_peer())
        self._end(reason)

    def _end(self, reason: str) -> None:
        with self._lock:
            closing = self._closing
            self._closing = True
            channels = list(self._streams.values())
        for channel in channels:
            if closing:
                channel.cancel()
            else:
                channel._fail(RemoteChannelError,
                              f"channel {channel.name}: lost the data connection to {self.describe_peer()} "
                              f"({reason}); the consumer TaskManager died or dropped the connection")

    # --------------------------------------------------------------------- life
    def close(self, grace: float = 1.0) -> None:
        """Close the connection: its channels are cancelled (blocked senders wake up).

        Gracefully: CLOSE, end of stream, then wait up to ``grace`` seconds for the consumer
        to close its side (the reader drains its credits meanwhile), so neither side resets
        a connection with unread frames (a reset can discard frames already received).
        """
        with self._lock:
            self._closing = True
        # On purpose: the consumer must not take it for a lost TaskManager. A sender stuck in
        # a write (a consumer that stopped reading) must not hold the close up: then no CLOSE.
        if self._write_lock.acquire(timeout=grace):
            try:
                self._conn.send_bytes(wire.text_frame(wire.CLOSE, 0, "the job's channels were released"))
            except (OSError, ValueError):
                pass
            finally:
                self._write_lock.release()
        shutdown_connection(self._conn, socket.SHUT_WR)
        if self._thread is not threading.current_thread():
            self._thread.join(grace)
            if self._thread.is_alive():
                shutdown_connection(self._conn)
                self._thread.join(5)
        self._end("closed")
        try:
            self._conn.close()
        except OSError:
            pass

    @property
    def is_alive(self) -> bool:
        """True while the reader thread runs (the connection is up)."""
        return self._thread.is_alive()

    def num_channels(self) -> int:
        """Channels opened on this connection."""
        return len(self._streams)

    def __repr__(self) -> str:
        return f"OutboundConnection(job={self.job_id!r} -> {self.describe_peer()}, channels={len(self._streams)})"
