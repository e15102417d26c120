"""A request body on its way through the REST front to the JobManager, chunk by chunk.

The front (:mod:`.front`) buffers the small JSON bodies of the REST API, but streams the
large ones (a job submission: up to ``rest.server.max-content-length``): the upstream request
is sent with ``Expect: 100-continue``, so the JobManager judges its headers (size, signature
headers) before a byte of the body moves, and once it asks for the body, every chunk the
client sends is passed on as it arrives. At most :data:`DEPTH` chunks wait in between:
tornado reads the client no faster than the JobManager reads the front, so the front holds a
few chunks of tornado's 64 KiB, whatever the body's size.

The handler :meth:`~BodyPipe.put`\\ s chunks and then ``None`` (the end); the upstream request's
``body_producer`` is :meth:`~BodyPipe.produce`. Should the upstream connection close first
(the JobManager refused the body), what still arrives is dropped; should the client leave
first, :meth:`~BodyPipe.abort` fails the upstream request, so the JobManager never takes a
cut body for a whole one. Imports only asyncio and tornado, as the front.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Optional, Union

from tornado.iostream import StreamClosedError

__all__ = ["BodyPipe", "BodyAborted", "DEPTH"]

#: Chunks that may wait between the client and the JobManager.
DEPTH = 2


class BodyAborted(Exception):
    """The client left before its body was whole: the upstream request fails."""


class _Abort:
    """The marker :meth:`BodyPipe.abort` queues."""


class BodyPipe:
    """One request body between the front's handler (``put``) and the upstream request (``produce``)."""

    def __init__(self) -> None:
        self._chunks: asyncio.Queue[Union[bytes, None, _Abort]] = asyncio.Queue(maxsize=DEPTH)
        self.started = asyncio.Event()  # the upstream asked for the body (100 Continue)
        self.closed = False  # the upstream takes no more

    async def put(self, chunk: Optional[bytes]) -> None:
        """Pass ``chunk`` on (``None``: the body is whole), waiting while :data:`DEPTH` chunks wait."""
        if not self.closed:
            await self._chunks.put(chunk)

    def abort(self) -> None:
        """The client left: fail the upstream request (never blocks)."""
        if self.closed:
            return
        while not self._chunks.empty():
            self._chunks.get_nowait()
        self._chunks.put_nowait(_Abort())

    async def produce(self, write: Callable[[bytes], Awaitable[None]]) -> None:
        """tornado's ``body_producer``: write the chunks upstream until the end (or an abort)."""
        self.started.set()
        try:
            while True:
                chunk = await self._chunks.get()
                if chunk is None:
                    return
                if isinstance(chunk, _Abort):
                    raise BodyAborted("the client closed its connection before its request body was whole")
                await write(chunk)
        except StreamClosedError:  # the upstream answered and closed: the rest of the body is dropped
            pass
        finally:
            self.closed = True
            while not self._chunks.empty():  # wakes a put() waiting for room: it returns at once
                self._chunks.get_nowait()
