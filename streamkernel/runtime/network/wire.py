"""The frames of the data plane between TaskManagers, and how items become bytes.

One TCP connection (authenticated by :mod:`streamkernel.runtime.rpc.transport` before
anything else is read) carries the channels of one job from one producing TaskManager to
one consuming TaskManager, multiplexed by a *stream* number the producer picks per
channel (Flink's ``PartitionRequestClient``: one connection per TaskManager pair, here
per pair and job so releasing a job closes its connections). Every frame is one
``Connection.send_bytes`` message whose first byte is its kind:

===========  =====================  ==============================================
direction    frame                   body
===========  =====================  ==============================================
both         ``HELLO``               utf-8 JSON: the sender's TaskManager id (and job)
producer ->  ``OPEN``  stream        the ChannelId (pickle): "I produce this channel"
producer ->  ``DATA``  stream        one item (a DataBuffer or an event), pickled
producer ->  ``DATA_MARSHAL`` stream a DataBuffer of builtin records, marshalled
producer ->  ``CLOSE``               utf-8 reason: the producer closes on purpose
                                     (its job was released), not a lost peer
producer ->  ``OVERDRAFT``           a whole DATA or DATA_MARSHAL frame after the
                                     kind byte, sent WITHOUT credit (unaligned
                                     checkpoints: Flink's overdraft buffers)
producer ->  ``ANNOUNCE`` stream     a CheckpointBarrier (pickle) already sent on the
                                     stream: the receiver announces it to its gate
                                     ahead of the queued items (EventAnnouncement)
consumer ->  ``CREDIT`` stream n     n more items may be sent (free buffer slots)
consumer ->  ``CANCEL`` stream       utf-8 reason: the receiver is gone (job released,
                                     task cancelled); the sender stops
consumer ->  ``FAIL``  stream        utf-8 reason: the receiver could not take an item
                                     (unpicklable record, refused channel)
consumer ->  ``NEW_BUFFER_SIZE``     buffer debloating: the producer sends buffers of
             stream n               n records on the stream from now on
===========  =====================  ==============================================

Nothing the consumer sends is ever unpickled by the producer (credits are two integers),
so only the direction that carries records runs ``pickle.loads``, and only after the
HMAC challenge.

Serialization (measured by ``bench/bench_network.py`` on this machine, a 1,000-tuple
buffer): plain ``pickle`` protocol 5 and cloudpickle cost about the same for builtin
records (tuples, str, int: ~60-100 us per buffer, in C either way), but records of
classes go through cloudpickle's Python ``reducer_override`` hook for every object, which
makes it 2-3x slower than pickle for importable classes (dataclasses: ~0.9 vs ~2.3 ms).
Plain pickle, however, cannot write instances of classes that are not importable by name:
classes defined in a notebook (shipped to the worker by value, so ``__main__.Point`` is not
found in the worker's ``__main__``) or created dynamically. Hence :class:`ItemSerializer`:
pickle first; on a PicklingError-like failure cloudpickle (which writes such a class by
value; the receiver's cloudpickle maps it back to the one class object its own user
functions use), and from then on cloudpickle directly for that channel, so a buffer is
never pickled twice. Either output is read by plain ``pickle.loads``.

Buffers of builtin records (tuples, str, int, float, bool, None, bytes, lists, dicts,
sets: what most jobs send) go faster still through :mod:`marshal` (``DATA_MARSHAL``:
about a third of pickle's time to write and half of it to read, ~60 and ~110 ns per
2-tuple record here, where a keyed exchange spent a tenth of its source's time
pickling). marshal's format belongs to one Python version, so a producer uses it only
once the consumer's HELLO said it runs the same (:data:`MARSHAL_TAG`); a buffer it
cannot write (a record of any other class) goes by pickle, and so does everything after
it on that channel. Like pickle, marshal is only ever read after the HMAC challenge.
"""

from __future__ import annotations

import json
import marshal
import os
import pickle
import struct
import sys
from typing import Any, Union

from streamkernel.errors import StreamKernelError
from streamkernel.runtime.core.records import DataBuffer

__all__ = ["HELLO", "OPEN", "DATA", "CREDIT", "CANCEL", "FAIL", "CLOSE", "DATA_MARSHAL", "MARSHAL_TAG",
           "ItemSerializer", "SerializationError", "hello_frame", "open_frame", "data_header", "credit_frame",
           "text_frame", "parse_stream", "parse_credit", "parse_text", "parse_hello", "reads_marshal", "loads",
           "loads_marshalled", "FrameReader",
           "OVERDRAFT", "ANNOUNCE", "overdraft_frame", "announce_frame"]

PROTOCOL = 5

HELLO, OPEN, DATA, CREDIT, CANCEL, FAIL, CLOSE, DATA_MARSHAL = range(1, 9)
#: unaligned checkpoints (kinds kept apart from the range above, which may grow)
OVERDRAFT, ANNOUNCE = 32, 33
#: buffer debloating (Flink's NewBufferSize message): consumer -> producer
NEW_BUFFER_SIZE = 34
__all__ += ["NEW_BUFFER_SIZE", "new_buffer_size_frame", "parse_new_buffer_size"]

#: what both ends must share to exchange DATA_MARSHAL frames: interpreter, its version, marshal's format
MARSHAL_TAG = f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}-{marshal.version}"

_STREAM = struct.Struct("!BI")  # kind, stream
_CREDIT = struct.Struct("!BII")  # kind, stream, credits
STREAM_HEADER_SIZE = _STREAM.size
_LENGTH = struct.Struct("!i")  # multiprocessing.connection's message header (-1: an 8-byte length follows)
_LONG_LENGTH = struct.Struct("!Q")

#: bytes a FrameReader asks the kernel for at once (several frames per read)
READ_CHUNK = 1 << 18

#: a frame as received: bytes (Connection.recv_bytes) or bytearray (FrameReader)
Frame = Union[bytes, bytearray]

#: pickle.loads: what the receiving network thread runs on a DATA body
loads = pickle.loads


class SerializationError(StreamKernelError, TypeError):
    """An item could not be written for the network (neither pickle nor cloudpickle could)."""


def hello_frame(taskmanager_id: str, job_id: str = "") -> bytes:
    """The first frame in each direction: who is speaking (for error messages and release)."""
    return bytes([HELLO]) + json.dumps({"taskmanager": taskmanager_id, "job": job_id,
                                        "marshal": MARSHAL_TAG}).encode()


def parse_hello(frame: Frame) -> tuple[str, str]:
    """(taskmanager id, job id) of a HELLO frame."""
    body = json.loads(bytes(frame[1:]).decode())
    return str(body.get("taskmanager", "?")), str(body.get("job", ""))


def reads_marshal(frame: Frame) -> bool:
    """Whether the sender of a HELLO frame reads this process's DATA_MARSHAL frames."""
    return bool(json.loads(bytes(frame[1:]).decode()).get("marshal") == MARSHAL_TAG)


def loads_marshalled(body: Any) -> DataBuffer:
    """The DataBuffer of a DATA_MARSHAL body."""
    values, timestamps = marshal.loads(body)
    return DataBuffer(values, timestamps)


def open_frame(stream: int, channel_id: Any) -> bytes:
    """OPEN: the producer announces that ``stream`` carries ``channel_id``."""
    return _STREAM.pack(OPEN, stream) + pickle.dumps(channel_id, PROTOCOL)


def data_header(stream: int) -> bytes:
    """The 5 bytes in front of a DATA body."""
    return _STREAM.pack(DATA, stream)


def overdraft_frame(data_frame: bytes) -> bytes:
    """OVERDRAFT: ``data_frame`` (a DATA or DATA_MARSHAL frame) to be accepted beyond the credits."""
    return bytes([OVERDRAFT]) + data_frame


def announce_frame(stream: int, barrier: Any) -> bytes:
    """ANNOUNCE: the barrier just sent on ``stream`` is to be announced to the consumer's gate."""
    return _STREAM.pack(ANNOUNCE, stream) + pickle.dumps(barrier, PROTOCOL)


def credit_frame(stream: int, credits: int) -> bytes:
    """CREDIT: ``credits`` more items may be sent on ``stream``."""
    return _CREDIT.pack(CREDIT, stream, credits)


def new_buffer_size_frame(stream: int, size: int) -> bytes:
    """NEW_BUFFER_SIZE: the producer of ``stream`` sends buffers of ``size`` records from now on."""
    return _CREDIT.pack(NEW_BUFFER_SIZE, stream, size)


def parse_new_buffer_size(frame: Frame) -> tuple[int, int]:
    """(stream, size) of a NEW_BUFFER_SIZE frame."""
    _, stream, size = _CREDIT.unpack_from(frame)
    return stream, size


def text_frame(kind: int, stream: int, text: str) -> bytes:
    """CANCEL, FAIL or CLOSE (stream 0) with a reason."""
    return _STREAM.pack(kind, stream) + text.encode("utf-8", "replace")


def parse_stream(frame: Frame) -> int:
    """The stream number of an OPEN, DATA, CANCEL or FAIL frame (its body starts at byte 5)."""
    return _STREAM.unpack_from(frame)[1]


def parse_credit(frame: Frame) -> tuple[int, int]:
    """(stream, credits) of a CREDIT frame."""
    _, stream, credits = _CREDIT.unpack_from(frame)
    return stream, credits


def parse_text(frame: Frame) -> tuple[int, str]:
    """(stream, reason) of a CANCEL or FAIL frame."""
    return _STREAM.unpack_from(frame)[1], bytes(frame[STREAM_HEADER_SIZE:]).decode("utf-8", "replace")


class ItemSerializer:
    """Writes the items of one channel: marshal, pickle protocol 5, cloudpickle once pickle cannot.

    ``frame(item, marshal_ok)`` returns a whole DATA or DATA_MARSHAL frame (header + body):
    marshal for a DataBuffer when ``marshal_ok`` (the consumer reads it) and no buffer of
    this channel failed to marshal yet. Used by one sender thread.

    >>> serializer = ItemSerializer("job/edge0/0->1#0", stream=3)
    >>> frame = serializer.frame(("a", 1))
    >>> parse_stream(frame), loads(memoryview(frame)[STREAM_HEADER_SIZE:])
    (3, ('a', 1))
    >>> serializer.uses_cloudpickle
    False
    >>> frame = serializer.frame(DataBuffer([("a", 1)], None), marshal_ok=True)
    >>> frame[0] == DATA_MARSHAL, loads_marshalled(memoryview(frame)[STREAM_HEADER_SIZE:])
    (True, DataBuffer(values=[('a', 1)], timestamps=None))
    """

    __slots__ = ("channel_name", "_header", "_marshal_header", "uses_cloudpickle", "uses_marshal")

    def __init__(self, channel_name: str, stream: int) -> None:
        self.channel_name = channel_name
        self._header = data_header(stream)
        self._marshal_header = _STREAM.pack(DATA_MARSHAL, stream)
        self.uses_cloudpickle = False
        self.uses_marshal = True  # until a buffer of the channel cannot be marshalled

    def frame(self, item: Any, marshal_ok: bool = False) -> bytes:
        """The DATA (or DATA_MARSHAL) frame of ``item``."""
        if marshal_ok and self.uses_marshal and type(item) is DataBuffer:
            try:
                return self._marshal_header + marshal.dumps((item.values, item.timestamps))
            except ValueError:  # a record of another class (or nested too deeply): pickle from now on
                self.uses_marshal = False
        if not self.uses_cloudpickle:
            try:
                return self._header + pickle.dumps(item, PROTOCOL)
            except (pickle.PicklingError, AttributeError, TypeError) as exc:
                first_error: Exception = exc
        else:
            first_error = None  # type: ignore[assignment]
        try:
            import cloudpickle

            body = cloudpickle.dumps(item, PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - report both reasons
            reason = first_error or exc
            raise SerializationError(
                f"channel {self.channel_name}: cannot send a {type(item).__name__} to another TaskManager: "
                f"{type(reason).__name__}: {reason}. Records crossing TaskManagers must be picklable "
                "(by pickle or cloudpickle): avoid open files, sockets, locks or generators in records") from exc
        self.uses_cloudpickle = True
        return self._header + body


class FrameReader:
    """Reads the frames ``Connection.send_bytes`` wrote, several per system call.

    ``Connection.recv_bytes`` makes two or more ``read`` calls per frame (length, then
    body), and every one releases the GIL: in a TaskManager whose task threads keep the
    GIL busy, each of them waits up to the switch interval (5 ms) to get it back, which
    made the network threads, not the tasks, the limit of a keyed exchange. This reader
    asks for up to :data:`READ_CHUNK` bytes at once and cuts every whole frame out of
    them, so a network thread that fell behind catches up with one read.

    The only reader of its connection once the handshake is done (the handshake itself
    reads through the Connection, with nothing buffered beyond its messages).

    >>> from multiprocessing import Pipe
    >>> a, b = Pipe(duplex=False)
    >>> b.send_bytes(b"one"); b.send_bytes(b"two")
    >>> reader = FrameReader(a)
    >>> bytes(reader.read()), bytes(reader.read())
    (b'one', b'two')
    """

    __slots__ = ("_fd", "_buffer", "_start")

    def __init__(self, conn: Any) -> None:
        self._fd = conn.fileno()
        self._buffer = bytearray()
        self._start = 0  # where the next frame's length starts in _buffer

    def read(self) -> bytearray:
        """The next frame (a copy: it stays valid); EOFError at the end of the stream,
        OSError when it ends inside a frame."""
        buffer = self._buffer
        while True:
            start = self._start
            available = len(buffer) - start
            if available >= 4:
                size = _LENGTH.unpack_from(buffer, start)[0]
                header = 4
                if size == -1:
                    if available < 12:
                        size = -2  # the long length is not all here yet
                    else:
                        size = _LONG_LENGTH.unpack_from(buffer, start + 4)[0]
                        header = 12
                if size >= 0 and available >= header + size:
                    end = start + header + size
                    frame = buffer[start + header:end]
                    self._start = end
                    return frame
            self._fill(available)

    def _fill(self, available: int) -> None:
        buffer = self._buffer
        if self._start:
            del buffer[:self._start]  # keep only the partial frame
            self._start = 0
        chunk = os.read(self._fd, READ_CHUNK)
        if not chunk:
            if available:
                raise OSError("got end of file during message")
            raise EOFError
        buffer += chunk
