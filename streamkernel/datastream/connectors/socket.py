"""The socket text source behind ``env.socket_text_stream(host, port)``: Flink's ``socketTextStream``.

The source connects to a TCP server and emits the text it receives, split at
``delimiter``, one str per record (with the default ``"\\n"`` delimiter a trailing
``"\\r"`` is dropped, so Windows line ends work). It is non-parallel (one subtask) and
unbounded: it ends when the server closes the connection and ``max_retry`` reconnection
attempts (500 ms apart; ``-1`` forever) are used up; the last partial record is emitted at
the end. Try it with ``nc -lk 9999`` in a terminal.

A socket cannot be rewound: after a failure the records received since the last
checkpoint are lost (at-most-once); use a MemoryLog or a file for replayable input.
"""

from __future__ import annotations

from streamkernel.datastream.connectors.base import Boundedness, Source
from streamkernel.errors import InvalidProgramError

__all__ = ["SocketTextStreamSource"]


class SocketTextStreamSource(Source):
    """Lines (or ``delimiter``-separated strings) read from ``host:port``; one subtask."""

    default_name = "Socket Stream"

    def __init__(self, host: str, port: int, delimiter: str = "\n", max_retry: int = 0) -> None:
        if not isinstance(host, str) or not host:
            raise InvalidProgramError(f"socket_text_stream: hostname must be a non-empty str, got {host!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise InvalidProgramError(f"socket_text_stream: port must be an int in 1..65535, got {port!r}")
        if not isinstance(delimiter, str) or not delimiter:
            raise InvalidProgramError(f"socket_text_stream: delimiter must be a non-empty str, got {delimiter!r}")
        if isinstance(max_retry, bool) or not isinstance(max_retry, int) or max_retry < -1:
            raise InvalidProgramError(
                f"socket_text_stream: max_retry must be an int >= -1 (-1: retry forever), got {max_retry!r}")
        self.host = host
        self.port = port
        self.delimiter = delimiter
        self.max_retry = max_retry

    def get_boundedness(self) -> Boundedness:
        """CONTINUOUS_UNBOUNDED: it runs until the connection ends for good."""
        return Boundedness.CONTINUOUS_UNBOUNDED

    @property
    def max_parallelism(self) -> int:
        """One subtask reads the socket."""
        return 1

    def __repr__(self) -> str:
        return f"SocketTextStreamSource({self.host!r}, {self.port}, delimiter={self.delimiter!r})"
