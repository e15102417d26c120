"""Reader of a SocketTextStreamSource: delimited UTF-8 text from a TCP connection.

The reader polls a non-blocking socket, so the task never blocks on the network. Text is
split at the delimiter; a record split across packets is joined (the partial tail waits
in a buffer, kept across reconnects as in Flink). When the server closes the connection
the reader reconnects after 500 ms, up to ``max_retry`` times (``-1``: forever; a refused
reconnect counts as an attempt); then it emits the partial tail, if any, and finishes.
Failing to connect the first time fails the job with an error naming ``host:port``.

Not replayable: :meth:`SocketReader.snapshot_position` is None and restoring does
nothing, so after a failure the records received since the last checkpoint are lost
(at-most-once). Use a MemoryLog or files for exactly-once input.
"""

from __future__ import annotations

import codecs
import socket
from typing import Any, Callable, Optional

from streamkernel.datastream.connectors.socket import SocketTextStreamSource
from streamkernel.errors import StreamKernelError
from streamkernel.runtime.sources.base import DEFAULT_POLL_DELAY_SECONDS, Batch, SourceReader

__all__ = ["SocketReader", "RECONNECT_DELAY_MS", "CONNECT_TIMEOUT_SECONDS"]

#: wait between the end of a connection and the next attempt (Flink's 500 ms)
RECONNECT_DELAY_MS = 500
#: how long one connection attempt may take
CONNECT_TIMEOUT_SECONDS = 5.0
_RECV_BYTES = 1 << 16


class SocketReader(SourceReader):
    """Reads delimited text from ``host:port`` without blocking the task."""

    def __init__(self, source: SocketTextStreamSource, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        super().__init__(subtask_index, parallelism, now_ms)
        self._address = (source.host, source.port)
        self._delimiter = source.delimiter
        self._max_retry = source.max_retry
        self._socket: Optional[socket.socket] = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail = ""  # text after the last delimiter
        self._ready: list[str] = []  # complete records not emitted yet
        self._attempts = 0
        self._reconnect_at_ms: Optional[int] = None
        self._ended = False  # no more data will come
        self.is_idle = subtask_index != 0  # one subtask reads the socket

    def _connect(self) -> None:
        sock = socket.create_connection(self._address, timeout=CONNECT_TIMEOUT_SECONDS)
        sock.setblocking(False)
        self._socket = sock
        self._reconnect_at_ms = None

    def open(self) -> None:
        """Connect to the server (subtask 0 only)."""
        if self.is_idle:
            self._ended = True
            return
        try:
            self._connect()
        except OSError as exc:
            host, port = self._address
            raise StreamKernelError(
                f"socket_text_stream: cannot connect to {host}:{port} ({exc}); start the server first "
                f"(e.g. `nc -lk {port}`)") from exc

    def _connection_lost(self) -> None:
        """The server closed: schedule a reconnect, or end (emitting the partial tail)."""
        self.close()
        self._attempts += 1
        if self._max_retry == -1 or self._attempts <= self._max_retry:
            self._reconnect_at_ms = self.now_ms() + RECONNECT_DELAY_MS
            return
        self._ended = True
        tail = self._decoder.decode(b"", final=True)
        self._tail += tail
        if self._tail:
            self._ready.append(self._strip(self._tail))
            self._tail = ""

    def _strip(self, record: str) -> str:
        return record[:-1] if self._delimiter == "\n" and record.endswith("\r") else record

    def _receive(self, max_records: int) -> None:
        """Read what the socket has now, until ``max_records`` records are ready."""
        sock = self._socket
        delimiter = self._delimiter
        while sock is not None and len(self._ready) < max_records:
            try:
                data = sock.recv(_RECV_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._connection_lost()
                return
            parts = (self._tail + self._decoder.decode(data)).split(delimiter)
            self._tail = parts.pop()
            if delimiter == "\n":
                parts = [p[:-1] if p.endswith("\r") else p for p in parts]
            self._ready.extend(parts)

    def read_batch(self, max_records: int) -> Optional[Batch]:
        """The records received so far (up to ``max_records``); None once the stream ended."""
        if self._socket is None and not self._ended and self._reconnect_at_ms is not None:
            if self.now_ms() < self._reconnect_at_ms:
                return [], None
            try:
                self._connect()
            except OSError:
                self._connection_lost()
        if self._socket is not None:
            self._receive(max_records)
        if self._ready:
            batch, self._ready = self._ready[:max_records], self._ready[max_records:]
            return batch, None
        if self._ended:
            return None
        return [], None

    def poll_delay_seconds(self) -> float:
        """Until the next reconnect attempt, or a short poll interval."""
        if self._reconnect_at_ms is not None:
            return min(max(0.0, (self._reconnect_at_ms - self.now_ms()) / 1000.0), 0.5)
        return DEFAULT_POLL_DELAY_SECONDS

    def snapshot_position(self) -> None:
        """None: a socket cannot be rewound."""
        return None

    def restore_position(self, position: Any) -> None:
        """Nothing to restore (see the module docstring)."""

    def close(self) -> None:
        """Close the connection."""
        if self._socket is not None:
            try:
                self._socket.close()
            finally:
                self._socket = None
