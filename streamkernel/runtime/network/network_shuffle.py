"""The shuffle environment of a TaskManager process: in-process channels plus TCP to other TaskManagers.

Flink's ``NettyShuffleEnvironment``. A TaskManager of the ``process`` or ``spark`` backend
owns one :class:`NetworkShuffleEnvironment`; its tasks ask it for their output channels
and input gates exactly as they ask a :class:`~.shuffle.LocalShuffleEnvironment`:

* ``output_channel(channel_id)``: the consumer subtask runs in this TaskManager, so the
  channel is an in-process :class:`~.channel.LocalChannel` (the hot path is untouched);
* ``output_channel(channel_id, (host, port))``: the consumer runs in the TaskManager whose
  data listener is at that address (``TaskDeploymentDescriptor.shuffle_addresses``); the
  channel is a :class:`~.remote_channel.RemoteOutputChannel` on the
  :class:`~.remote_channel.OutboundConnection` of this job to that TaskManager (opened on
  first use: connections are producer-driven);
* ``create_input_gate(name, channels, credits)``: an InputGate over the channels, each
  found or created by ChannelId whoever comes first: a local sender, a remote producer's
  OPEN arriving at this TaskManager's :class:`~.data_listener.DataListener`, or the gate.

Connection granularity (measured in ``bench/bench_network.py``): one connection per
(producing TaskManager, consuming TaskManager, job), multiplexing that job's channels
between the pair, as Flink shares one connection per TaskManager pair. With the GIL, more
sockets do not read faster in one process (the receiver's unpickling is the bottleneck,
one thread or many), while a connection per channel costs a handshake, two threads and a
socket per channel (p x p of them per shuffle). Keying by job as well lets ``release``
close a job's connections without touching another job's.

``release(job_id)`` cancels the job's gates and channels: local senders and remote
producers blocked for credit wake up with ChannelCancelledError (a CANCEL frame tells the
remote ones), and the job's connections close. ``close()`` does that for every job,
stops the listener and joins every thread it started.
"""

from __future__ import annotations

import socket
import threading
from typing import Any, Iterable, Optional

from streamkernel.errors import StreamKernelError
from streamkernel.runtime.core.deployment import ChannelId
from streamkernel.runtime.network.data_listener import DataListener, InboundConnection, RemoteFeed
from streamkernel.runtime.network.input_gate import InputGate
from streamkernel.runtime.network.remote_channel import OutboundConnection, RemoteOutputChannel
from streamkernel.runtime.network.shuffle import LocalShuffleEnvironment, channel_name
from streamkernel.runtime.rpc.transport import LOOPBACK, Address

__all__ = ["NetworkShuffleEnvironment"]

_WILDCARDS = ("", "0.0.0.0", "::")


class NetworkShuffleEnvironment:
    """Channels of one TaskManager process: in-process ones, and TCP ones to other TaskManagers.

    Starts the authenticated data listener at once (``data_address``) on ``bind_host``
    (loopback unless configured, e.g. from ``taskmanager.bind-host``) and ``data_port`` (0:
    any free port; Flink's ``taskmanager.data.port``); ``authkey`` is the cluster secret
    every peer must prove. ``connect_timeout`` bounds opening a connection to a consumer.
    Thread-safe.

    >>> from streamkernel.runtime.core.deployment import ChannelId
    >>> producer = NetworkShuffleEnvironment("tm-1", b"secret")
    >>> consumer = NetworkShuffleEnvironment("tm-2", b"secret")
    >>> cid = ChannelId("job", edge_index=0, source_subtask=0, target_subtask=0)
    >>> gate = consumer.create_input_gate("Sink (1/1)", [(cid, 0)])
    >>> producer.output_channel(cid, consumer.data_address).send(("a", 1)) >= 0  # ns waited for credit
    True
    >>> gate.poll(5)[1]
    ('a', 1)
    >>> producer.close(); consumer.close()
    """

    def __init__(self, taskmanager_id: str, authkey: bytes, bind_host: str = LOOPBACK, *, data_port: int = 0,
                 connect_timeout: float = 10.0, connection_per_channel: bool = False) -> None:
        if not isinstance(authkey, (bytes, bytearray)) or not authkey:
            raise ValueError(f"NetworkShuffleEnvironment of TaskManager {taskmanager_id!r} needs the cluster "
                             "secret as non-empty bytes")
        self.taskmanager_id = taskmanager_id
        self._authkey = bytes(authkey)
        self._connect_timeout = connect_timeout
        self._per_channel = connection_per_channel  # for bench/bench_network.py's comparison only
        self._local = LocalShuffleEnvironment()
        self._lock = threading.Lock()
        # Guarded by _lock: the producer of each channel this TaskManager knows ("local" or
        # its RemoteFeed), the remote senders by id, the outbound connections by
        # (job, address[, channel]), closed flag. One producer per ChannelId.
        self._local_producers: set[ChannelId] = set()
        self._feeds: dict[ChannelId, RemoteFeed] = {}
        self._senders: dict[ChannelId, RemoteOutputChannel] = {}
        self._outbound: dict[tuple, OutboundConnection] = {}
        self._closed = False
        self._connect_lock = threading.Lock()  # one connect at a time (never held with _lock)
        self._listener = DataListener(bind_host, self._authkey, taskmanager_id, self._open_remote, data_port)
        host, port = self._listener.address
        self._advertised: Address = (socket.gethostname() if host in _WILDCARDS else host, port)

    @property
    def data_address(self) -> Address:
        """(host, port) of this TaskManager's data listener, as producers should reach it
        (the host name when bound to every interface)."""
        return self._advertised

    @property
    def refused(self) -> int:
        """Peers the data listener dropped because they failed the challenge."""
        return self._listener.refused

    # -------------------------------------------------------------------- gates
    def create_input_gate(self, name: str, channels: Iterable[tuple[ChannelId, int]], credits: int = 4) -> InputGate:
        """An input gate over ``channels`` (``(channel id, input index)`` pairs, in gate order),
        fed by local senders or remote producers alike (LocalShuffleEnvironment's semantics)."""
        self._check_open()
        return self._local.create_input_gate(name, channels, credits)

    # ----------------------------------------------------------------- channels
    def output_channel(self, channel_id: ChannelId, remote_address: Optional[Address] = None) -> Any:
        """The channel a sender writes ``channel_id`` to: in-process when ``remote_address``
        is None (or this TaskManager's own address), else over TCP to the TaskManager whose
        data listener is at ``remote_address``."""
        self._check_open()
        if remote_address is None or tuple(remote_address) in (self._advertised, self._listener.address):
            with self._lock:
                if channel_id in self._feeds:
                    raise StreamKernelError(f"channel {channel_name(channel_id)} already has a producer in "
                                            f"{self._feeds[channel_id].connection.describe_peer()}")
                self._local_producers.add(channel_id)
            return self._local.output_channel(channel_id)
        address = (str(remote_address[0]), int(remote_address[1]))
        with self._lock:
            existing = self._senders.get(channel_id)
            if existing is not None:
                return existing
        connection = self._connection(channel_id, address)
        channel = connection.open_channel(channel_id, channel_name(channel_id))
        with self._lock:
            existing = self._senders.setdefault(channel_id, channel)
            closed = self._closed
        if closed:
            channel.cancel()
        return existing

    def _connection(self, channel_id: ChannelId, address: Address) -> OutboundConnection:
        key: tuple = (channel_id.job_id, address) + ((channel_id,) if self._per_channel else ())
        with self._connect_lock:
            with self._lock:
                connection = self._outbound.get(key)
            if connection is not None and connection.is_alive:
                return connection
            connection = OutboundConnection(address, self._authkey, self.taskmanager_id, channel_id.job_id,
                                            timeout=self._connect_timeout)
            with self._lock:
                stale = self._outbound.get(key)
                self._outbound[key] = connection
                closed = self._closed
        if stale is not None:
            stale.close()
        if closed:
            connection.close()
        return connection

    def _open_remote(self, channel_id: Any, connection: InboundConnection, stream: int) -> RemoteFeed:
        """(Network thread) a producer in ``connection`` announced ``channel_id``: find or create it."""
        if not isinstance(channel_id, ChannelId):
            raise StreamKernelError(f"expected a ChannelId, got {type(channel_id).__name__}")
        with self._lock:
            if self._closed:
                raise StreamKernelError("the TaskManager's shuffle environment is closed")
            if channel_id in self._local_producers or channel_id in self._feeds:
                raise StreamKernelError(f"channel {channel_name(channel_id)} already has a producer")
            feed = RemoteFeed(self._local.output_channel(channel_id), channel_id, connection, stream)
            self._feeds[channel_id] = feed
        return feed

    # ----------------------------------------------------------------------- life
    def release(self, job_id: str) -> None:
        """Drop every channel and gate of ``job_id``, wake whoever is blocked on them
        (ChannelCancelledError), and close the job's connections."""
        with self._lock:
            senders = [ch for cid, ch in self._senders.items() if cid.job_id == job_id]
            self._senders = {cid: ch for cid, ch in self._senders.items() if cid.job_id != job_id}
            self._feeds = {cid: f for cid, f in self._feeds.items() if cid.job_id != job_id}
            self._local_producers = {cid for cid in self._local_producers if cid.job_id != job_id}
            outbound = [c for key, c in self._outbound.items() if key[0] == job_id]
            self._outbound = {key: c for key, c in self._outbound.items() if key[0] != job_id}
        self._local.release(job_id)  # cancels gates and channels: remote producers get CANCEL
        for channel in senders:
            channel.cancel()
        for connection in outbound:
            connection.close()
        for inbound in self._listener.connections(job_id):
            inbound.close()

    def close(self) -> None:
        """Release every job, stop the data listener, close every connection; no thread stays."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            jobs = {cid.job_id for cid in self._senders} | {cid.job_id for cid in self._feeds}
            jobs |= {key[0] for key in self._outbound}
        jobs |= set(self._local.job_ids())
        for job_id in sorted(jobs):
            self.release(job_id)
        self._listener.close()
        with self._lock:
            outbound = list(self._outbound.values())
            self._outbound.clear()
        for connection in outbound:
            connection.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StreamKernelError(f"the shuffle environment of TaskManager {self.taskmanager_id!r} is closed")

    # --------------------------------------------------------------------- status
    def num_channels(self, job_id: Optional[str] = None) -> int:
        """Channels registered, in-process and remote (for ``job_id`` only, when given)."""
        with self._lock:
            remote = sum(1 for cid in self._senders if job_id is None or cid.job_id == job_id)
        return self._local.num_channels(job_id) + remote

    def connections(self) -> list[dict]:
        """The live data connections, for the cockpit: direction, job, peer, channels, bytes."""
        with self._lock:
            outbound = list(self._outbound.values())
        rows = [{"direction": "out", "job_id": c.job_id, "peer": c.describe_peer(), "channels": c.num_channels(),
                 "bytes": c.bytes_sent} for c in outbound if c.is_alive]
        rows += [{"direction": "in", "job_id": c.job_id, "peer": c.describe_peer(), "channels": len(c.feeds),
                  "bytes": c.bytes_received} for c in self._listener.connections()]
        return rows

    def __repr__(self) -> str:
        host, port = self.data_address
        return (f"NetworkShuffleEnvironment({self.taskmanager_id!r}, data={host}:{port}, "
                f"channels={self.num_channels()})")
