"""FrameReader: the data plane's network threads read several frames per system call."""

from __future__ import annotations

import os
import socket
import struct
import threading
from multiprocessing.connection import Connection

import pytest

from streamkernel.runtime.network import wire


@pytest.fixture
def pair():
    """Two connected Connections (the framing of multiprocessing.connection, over a socket)."""
    a, b = socket.socketpair()
    reader, writer = Connection(a.detach()), Connection(b.detach())
    yield reader, writer
    reader.close()
    writer.close()


class _CountingRead:
    """Counts os.read calls made through the wire module."""

    def __init__(self) -> None:
        self.calls = 0
        self._read = os.read

    def __call__(self, fd: int, n: int) -> bytes:
        self.calls += 1
        return self._read(fd, n)


def test_frames_come_out_whole_and_in_order(pair):
    reader, writer = pair
    bodies = [b"", b"a", bytes(range(256)) * 100, b"x" * 70_000, b"tail"]
    for body in bodies:
        writer.send_bytes(body)
    frames = wire.FrameReader(reader)
    assert [bytes(frames.read()) for _ in bodies] == bodies


def test_several_frames_are_cut_out_of_one_read(pair, monkeypatch):
    """The point of the reader: frames that arrived together cost one read (Connection.recv_bytes
    makes two per frame, and each one releases the GIL)."""
    reader, writer = pair
    for i in range(50):
        writer.send_bytes(wire.credit_frame(i, 1))
    counting = _CountingRead()
    monkeypatch.setattr(wire.os, "read", counting)
    frames = wire.FrameReader(reader)
    assert [wire.parse_credit(frames.read()) for _ in range(50)] == [(i, 1) for i in range(50)]
    assert counting.calls == 1


def test_a_frame_split_across_reads_is_put_together(pair, monkeypatch):
    reader, writer = pair
    body = bytes(range(200)) * 50
    payload = struct.pack("!i", len(body)) + body
    monkeypatch.setattr(wire, "READ_CHUNK", 7)  # every read gets a piece of the frame
    frames = wire.FrameReader(reader)
    got: list[bytes] = []
    thread = threading.Thread(target=lambda: got.append(bytes(frames.read())))
    thread.start()
    for i in range(0, len(payload), 1000):
        writer._send(payload[i:i + 1000])  # type: ignore[attr-defined]  # raw bytes, in pieces
    thread.join(30)
    assert got == [body]


def test_the_long_length_header_is_understood(pair):
    reader, writer = pair
    body = b"long header"
    writer._send(struct.pack("!i", -1) + struct.pack("!Q", len(body)) + body)  # type: ignore[attr-defined]
    writer.send_bytes(b"next")
    frames = wire.FrameReader(reader)
    assert bytes(frames.read()) == body
    assert bytes(frames.read()) == b"next"


def test_end_of_stream_between_frames_is_eof(pair):
    reader, writer = pair
    writer.send_bytes(b"last")
    writer.close()
    frames = wire.FrameReader(reader)
    assert bytes(frames.read()) == b"last"
    with pytest.raises(EOFError):
        frames.read()


def test_end_of_stream_inside_a_frame_is_an_error(pair):
    reader, writer = pair
    writer._send(struct.pack("!i", 100) + b"only part")  # type: ignore[attr-defined]
    writer.close()
    with pytest.raises(OSError, match="end of file during message"):
        wire.FrameReader(reader).read()
