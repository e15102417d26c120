"""The socket text source against a local TCP server on 127.0.0.1 (every wait bounded by a timeout)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Optional

import pytest

from streamkernel.datastream.connectors import PandasSink, SocketTextStreamSource
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.errors import InvalidProgramError, StreamKernelError
from streamkernel.runtime.core.clock import ManualClock
from streamkernel.runtime.sources import create_reader

TIMEOUT_S = 30.0


class Server:
    """A one-shot TCP server: for each connection, send the next script (bytes chunks) and close."""

    def __init__(self, *scripts: list[bytes]) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.port = self.listener.getsockname()[1]
        self.scripts = list(scripts)
        self.connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        for script in self.scripts:
            conn = None
            while conn is None and not self.stop.is_set() and time.monotonic() < deadline:
                try:
                    conn, _ = self.listener.accept()
                except socket.timeout:
                    continue
            if conn is None:
                return
            self.connections += 1
            with conn:
                for chunk in script:
                    conn.sendall(chunk)
                    time.sleep(0.01)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(TIMEOUT_S)
        self.listener.close()


def read_until_end(reader, clock: Optional[ManualClock] = None) -> list:
    out: list = []
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        batch = reader.read_batch(100)
        if batch is None:
            return out
        out.extend(batch[0])
        if clock is not None:
            clock.advance(100)
        time.sleep(0.002)
    raise AssertionError(f"socket reader did not finish; got {out}")


def test_lines_split_across_packets_are_joined_and_crlf_is_dropped() -> None:
    server = Server([b"hel", b"lo\nwor", b"ld\r\n\nlast-no-newline"])
    reader = create_reader(SocketTextStreamSource("127.0.0.1", server.port), 0, 1)
    reader.open()
    try:
        assert read_until_end(reader) == ["hello", "world", "", "last-no-newline"]
    finally:
        reader.close()
        server.close()


def test_custom_delimiter_keeps_carriage_returns() -> None:
    server = Server([b"a\r;b;", b"c"])
    reader = create_reader(SocketTextStreamSource("127.0.0.1", server.port, delimiter=";"), 0, 1)
    reader.open()
    try:
        assert read_until_end(reader) == ["a\r", "b", "c"]
    finally:
        reader.close()
        server.close()


def test_reconnects_up_to_max_retry_times() -> None:
    server = Server([b"one\n"], [b"two\n"], [b"three\n"])
    clock = ManualClock(0)
    reader = create_reader(SocketTextStreamSource("127.0.0.1", server.port, max_retry=1), 0, 1,
                           now_ms=clock.now_ms)
    reader.open()
    try:
        assert read_until_end(reader, clock) == ["one", "two"]
        assert server.connections == 2
    finally:
        reader.close()
        server.close()


def test_reconnect_waits_the_retry_delay() -> None:
    server = Server([b"x\n"], [b"y\n"])
    clock = ManualClock(0)
    reader = create_reader(SocketTextStreamSource("127.0.0.1", server.port, max_retry=-1), 0, 1,
                           now_ms=clock.now_ms)
    reader.open()
    try:
        seen: list = []
        deadline = time.monotonic() + TIMEOUT_S
        while reader.poll_delay_seconds() < 0.1 and time.monotonic() < deadline:  # until the server closed
            seen.extend(reader.read_batch(10)[0])
            time.sleep(0.002)
        assert seen == ["x"]
        assert reader.poll_delay_seconds() == pytest.approx(0.5)
        assert reader.read_batch(10) == ([], None)  # no reconnect before the delay
        assert server.connections == 1
        clock.advance(500)
        while not seen[1:] and time.monotonic() < deadline:
            seen.extend(reader.read_batch(10)[0])
            time.sleep(0.002)
        assert seen == ["x", "y"]
    finally:
        reader.close()
        server.close()


def test_refused_connection_names_host_and_port() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed again right away: nobody listens there
    reader = create_reader(SocketTextStreamSource("127.0.0.1", port), 0, 1)
    with pytest.raises(StreamKernelError, match=f"127.0.0.1:{port}"):
        reader.open()


def test_socket_source_is_not_replayable() -> None:
    reader = create_reader(SocketTextStreamSource("127.0.0.1", 9), 0, 1)
    assert reader.snapshot_position() is None
    reader.restore_position(None)  # accepted, does nothing


def test_socket_text_stream_is_one_unbounded_subtask_with_checked_arguments() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(4)
    env.socket_text_stream("localhost", 9999).print()
    node = next(n for n in env.get_stream_graph().nodes if n.is_source)
    assert node.parallelism == 1 and node.name == "Source: Socket Stream"
    assert not node.operator.source.is_bounded
    with pytest.raises(InvalidProgramError, match="port"):
        env.socket_text_stream("localhost", 0)
    with pytest.raises(InvalidProgramError, match="delimiter"):
        env.socket_text_stream("localhost", 1, delimiter="")


def test_socket_text_stream_through_a_job() -> None:
    server = Server([b"to be\nor not\n", b"to be\n"])
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    sink = PandasSink("words")
    env.socket_text_stream("127.0.0.1", server.port).flat_map(lambda line: line.split()).sink_to(sink)
    try:
        env.execute("socket words")  # ends when the server closes (max_retry=0)
    finally:
        server.close()
    assert sorted(sink.records()) == sorted("to be or not to be".split())
