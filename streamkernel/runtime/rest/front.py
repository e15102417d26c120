"""The REST front: the process that answers HTTP for a JobManager's REST endpoint.

``python -m streamkernel.runtime.rest.front --listen-fd N --upstream http://127.0.0.1:P``
serves the listening socket it inherits as file descriptor ``N`` (the public ``rest.port``,
bound by the JobManager) and answers every request by forwarding it to the JobManager's own
tornado endpoint at ``P`` (loopback only), with a cache in between: a ``GET`` answered
``200`` with ``Cache-Control: max-age=S`` is answered from the cache for ``S`` seconds,
identical ``GET``\\ s in flight at once share one upstream request, and any other method
(an action: cancel, savepoint, submit, ...) empties the cache once it was answered, but for
the ``POST``\\ s with which a client fetches collected results (they read).

Bodies are bounded before they are read: a JSON body (every resource but a job submission)
at :data:`~.request_limits.MAX_JSON_BODY`, buffered; a job submission's (``--large-body``
routes) at ``rest.server.max-content-length``, never buffered: it goes to the JobManager as it
arrives (:mod:`.body_pipe`), once the JobManager accepted its headers, so an unsigned upload is
refused unread here too. Requests the API cannot answer (a too long URI, too large headers, an
unknown method, a NUL in the path) are refused as the JobManager's endpoint refuses them
(:mod:`.request_limits`).

Why a process of its own: every request an HTTP server answers costs about a millisecond of
Python (parsing, routing, writing), and in the JobManager's process that millisecond is
taken, under the GIL, from the tasks when they run there (the ``local`` backend). With the
front, what a browser polling the Web UI and a ``curl`` loop cost the JobManager is at most
one upstream request per resource per ``max-age``, whatever their rate. Flink's REST
handlers make the same trade: a job's execution graph is cached for
``web.refresh-interval`` (``DefaultExecutionGraphCache``); here an answer is at most
``min(web.refresh-interval, 1 s)`` old, or less after an action or a job's status change
(:mod:`.handlers.base`).

The JobManager writes ``clear`` to the front's standard input when a job is submitted or
changes status (through whatever client), so a job's start and end show at once; what only
ages is what Flink's cache lets age too: metrics and checkpoint statistics. The front ends
when its standard input closes (the JobManager stopped it, or died): it stops accepting,
lets the requests in flight finish (5 s at most) and exits. It writes
``ready`` to its standard output once it serves. It imports nothing of streamkernel's
runtime but the REST modules that import only tornado (:mod:`.request_limits`, :mod:`.body_pipe`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional, Sequence, cast

from tornado.httpclient import AsyncHTTPClient, HTTPRequest, HTTPResponse
from tornado.web import Application, RequestHandler, stream_request_body

from streamkernel.runtime.rest.body_pipe import BodyPipe
from streamkernel.runtime.rest.request_limits import (
    MAX_JSON_BODY,
    SUPPORTED_METHODS,
    error_body,
    rest_http_server,
    shorten,
    too_large_message,
)

__all__ = ["CLEAR", "CachedAnswer", "ResponseCache", "ForwardingHandler", "front_application", "main"]

#: Headers that describe one connection, not the message (RFC 9110 7.6.1), and those tornado sets itself.
_NOT_FORWARDED = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                            "trailer", "trailers", "transfer-encoding", "upgrade", "content-length", "host",
                            "date", "server", "expect"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: POSTs that read rather than act: a remote execute_and_collect() fetching its results (many a second)
_READING_POSTS = re.compile(r"^(?:/v1)?/jobs/[^/]+/coordinators/")
_UPSTREAM_TIMEOUT_S = 300.0  # a submission's upload and checks may take long; no answer waits on a job
_DRAIN_S = 5.0
#: What the JobManager writes to the front's standard input when a job was submitted or changed status.
CLEAR = b"clear\n"
#: The line that points the front at another upstream (``upstream http://HOST:PORT``; ``upstream -``: none):
#: a standby JobManager of a highly available cluster answers with the leader's REST API, as Flink's do.
UPSTREAM = b"upstream "
#: Flink's answer while no JobManager leads (``LeaderRetrievalHandler``: no leader gateway).
NO_LEADER = "Service temporarily unavailable due to an ongoing leader election. Please refresh."


@dataclass(frozen=True)
class CachedAnswer:
    """One upstream answer: status, reason, headers to send, body."""

    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


def max_age(answer: CachedAnswer) -> float:
    """Seconds ``answer`` may be reused: its ``Cache-Control: max-age``, 0 unless a 200 that allows it."""
    if answer.status != 200:
        return 0.0
    for name, value in answer.headers:
        if name.lower() != "cache-control":
            continue
        directives = [part.strip().lower() for part in value.split(",")]
        if any(d in ("no-store", "no-cache", "private") for d in directives):
            return 0.0
        for directive in directives:
            if directive.startswith("max-age="):
                try:
                    return max(0.0, float(directive[len("max-age="):]))
                except ValueError:
                    return 0.0
    return 0.0


class ResponseCache:
    """Answers by key until their ``max-age`` passes; at most ``capacity`` entries (oldest go first)."""

    def __init__(self, capacity: int = 1024, clock: Any = time.monotonic) -> None:
        self.capacity = capacity
        self._clock = clock
        self._entries: dict[Any, tuple[float, CachedAnswer]] = {}
        self.generation = 0  # counts clear()s: an answer asked for before one is never kept after it
        self.hits = 0
        self.misses = 0

    def get(self, key: Any) -> Optional[CachedAnswer]:
        """The answer stored under ``key`` if still fresh, else None."""
        entry = self._entries.get(key)
        if entry is not None and entry[0] > self._clock():
            self.hits += 1
            return entry[1]
        if entry is not None:
            del self._entries[key]
        self.misses += 1
        return None

    def put(self, key: Any, answer: CachedAnswer, generation: Optional[int] = None) -> None:
        """Keep ``answer`` under ``key`` for its max-age (not at all when that is 0, nor when the
        cache was cleared since ``generation``: the answer may be from before the change)."""
        seconds = max_age(answer)
        if seconds <= 0 or (generation is not None and generation != self.generation):
            return
        now = self._clock()
        if len(self._entries) >= self.capacity:
            for stale in [k for k, (expires, _) in self._entries.items() if expires <= now]:
                del self._entries[stale]
            while len(self._entries) >= self.capacity:
                del self._entries[next(iter(self._entries))]
        self._entries[key] = (now + seconds, answer)

    def clear(self) -> None:
        """Forget every answer (after an action changed the cluster)."""
        self._entries.clear()
        self.generation += 1

    def __len__(self) -> int:
        return len(self._entries)


#: tornado's ``body_producer``: called with the write function, done when the body is written.
BodyProducer = Callable[[Callable[[bytes], Awaitable[None]]], Awaitable[None]]


class Front:
    """What the handlers share: the upstream URL, the cache, the GETs in flight, the body limits."""

    def __init__(self, upstream: str, max_content_length: int,
                 large_bodies: Sequence[tuple[str, str]] = ()) -> None:
        self.upstream = upstream.rstrip("/")
        self.max_content_length = max_content_length
        self.large_bodies = [(method.upper(), re.compile(pattern)) for method, pattern in large_bodies]
        self.cache = ResponseCache()
        self.pending_input = b""  # a line of standard input not complete yet
        self.in_flight: dict[Any, asyncio.Future] = {}
        self.active = 0  # requests being answered
        self.idle = asyncio.Event()
        self.idle.set()
        self.client = AsyncHTTPClient(force_instance=True, max_clients=64,
                                      max_body_size=max(max_content_length, 1 << 30))

    def streams(self, method: str, path: str) -> bool:
        """Whether the body of ``method path`` may be large: streamed to the JobManager, never buffered."""
        return any(m == method and pattern.match(path) for m, pattern in self.large_bodies)

    def body_limit(self, method: str, path: str) -> int:
        """The largest body ``method path`` may have (as the JobManager's handler says)."""
        if self.streams(method, path):
            return self.max_content_length
        return min(MAX_JSON_BODY, self.max_content_length)

    async def fetch(self, method: str, uri: str, headers: dict[str, str], body: Optional[bytes],
                    body_producer: Optional[BodyProducer] = None) -> CachedAnswer:
        """Ask the JobManager's endpoint; a 503 with Flink's error body when it does not answer
        (or while no JobManager leads: no upstream). With ``body_producer``, the body is
        written by it once the JobManager asks for it (``Expect: 100-continue``)."""
        if not self.upstream:
            return CachedAnswer(503, "Service Unavailable", (("Content-Type", "application/json; charset=UTF-8"),),
                                json.dumps({"errors": [NO_LEADER]}).encode())
        if body is None and body_producer is None and method in ("POST", "PUT", "PATCH"):
            body = b""
        request = HTTPRequest(self.upstream + uri, method=method, headers=headers, body=body,
                              body_producer=cast(Any, body_producer),  # typed as a Future, any awaitable is awaited
                              expect_100_continue=body_producer is not None,
                              allow_nonstandard_methods=True, decompress_response=False, follow_redirects=False,
                              connect_timeout=_UPSTREAM_TIMEOUT_S, request_timeout=_UPSTREAM_TIMEOUT_S)
        response: HTTPResponse = await self.client.fetch(request, raise_error=False)
        if response.code == 599:
            message = f"The JobManager's REST endpoint did not answer: {response.error}"
            return CachedAnswer(503, "Service Unavailable", (("Content-Type", "application/json; charset=UTF-8"),),
                                json.dumps({"errors": [message]}).encode())
        kept = tuple((name, value) for name, value in response.headers.get_all()
                     if name.lower() not in _NOT_FORWARDED)
        return CachedAnswer(response.code, response.reason or "", kept, response.body or b"")


@stream_request_body
class ForwardingHandler(RequestHandler):
    """Every path, every method: from the cache or from the JobManager's endpoint."""

    SUPPORTED_METHODS = SUPPORTED_METHODS

    def initialize(self, front: Front) -> None:
        """tornado's per-request setup."""
        self.front = front
        self._body = bytearray()
        self._received = 0
        self._pipe: Optional[BodyPipe] = None  # a large body on its way upstream
        self._streamed: Optional[asyncio.Future] = None  # the upstream answer to a streamed request

    async def prepare(self) -> None:
        """Refuse a declared body over what the resource takes (413) before reading it; a
        large one goes upstream as it arrives, once the JobManager accepted its headers."""
        method, path = self.request.method or "GET", self.request.path
        length = self.request.headers.get("Content-Length", "").strip()
        if length.isascii() and length.isdigit() and int(length) > self.front.body_limit(method, path):
            self._refuse_too_large(f"{int(length)} bytes exceed")
        elif self.front.streams(method, path):
            await self._start_streaming(method)

    async def _start_streaming(self, method: str) -> None:
        """Send the request's headers upstream; return once the JobManager asks for the body,
        or send its answer if it refuses the request unread (the client's body is never read)."""
        headers = self._forwarded_headers()
        length = self.request.headers.get("Content-Length")
        if length is not None:
            headers["Content-Length"] = length.strip()
        pipe = BodyPipe()
        answer = asyncio.ensure_future(self.front.fetch(method, self.request.uri or "/", headers, None, pipe.produce))
        started = asyncio.ensure_future(pipe.started.wait())
        await asyncio.wait({answer, started}, return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if not pipe.started.is_set():  # refused (or unreachable) before the body
            self.front.cache.clear()
            await self._send(answer.result())
            return
        self._pipe, self._streamed = pipe, answer

    async def data_received(self, chunk: bytes) -> None:
        """Collect the body (a streamed one: pass it on); one over the limit is refused (413)."""
        if self._finished:
            return
        self._received += len(chunk)
        if self._received > self.front.body_limit(self.request.method or "GET", self.request.path):
            if self._pipe is not None:
                self._pipe.abort()
            self._body = bytearray()
            self._refuse_too_large("more than")
        elif self._pipe is not None:
            await self._pipe.put(chunk)
        else:
            self._body.extend(chunk)

    def on_connection_close(self) -> None:
        """The client left: a body on its way upstream is not completed."""
        if self._pipe is not None:
            self._pipe.abort()
        super().on_connection_close()

    def _refuse_too_large(self, how: str) -> None:
        limit = self.front.body_limit(self.request.method or "GET", self.request.path)
        self.set_status(413)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(error_body(too_large_message(how, limit, self.front.max_content_length)))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Flink's error body for what tornado answers itself (a method the API has not, a bug of the front's)."""
        if status_code == 405:
            message = f"Method {self.request.method} is not allowed for {shorten(self.request.path)}"
        else:
            message = f"{'Internal server error: ' if status_code >= 500 else ''}{self._reason}"
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(error_body(message))

    def compute_etag(self) -> Optional[str]:
        """No ETag of the front's own: the JobManager's headers pass through unchanged."""
        return None

    async def _answer(self, *_: Any) -> None:
        if self._finished:
            return
        self.front.active += 1
        self.front.idle.clear()
        try:
            await self._forward()
        finally:
            self.front.active -= 1
            if self.front.active == 0:
                self.front.idle.set()

    def _forwarded_headers(self) -> dict[str, str]:
        return {name: value for name, value in self.request.headers.get_all() if name.lower() not in _NOT_FORWARDED}

    async def _forward(self) -> None:
        method = self.request.method or "GET"
        if self._pipe is not None and self._streamed is not None:  # the body went upstream as it came
            await self._pipe.put(None)
            answer = await self._streamed
            self.front.cache.clear()
            await self._send(answer)
            return
        headers = self._forwarded_headers()
        body = bytes(self._body) if self._body else None
        if method == "GET":
            answer = await self._get(headers, body)
        else:
            answer = await self.front.fetch(method, self.request.uri or "/", headers, body)
            if method not in _SAFE_METHODS and not _READING_POSTS.match(self.request.path):
                self.front.cache.clear()
        await self._send(answer)

    async def _get(self, headers: dict[str, str], body: Optional[bytes]) -> CachedAnswer:
        conditional = "If-None-Match" in self.request.headers or "If-Modified-Since" in self.request.headers
        if body is not None or conditional:  # its answer depends on more than the URI: never shared
            return await self.front.fetch("GET", self.request.uri or "/", headers, body)
        key = (self.request.uri, "gzip" in self.request.headers.get("Accept-Encoding", ""))
        cached = self.front.cache.get(key)
        if cached is not None:
            return cached
        pending = self.front.in_flight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self.front.in_flight[key] = future
        generation = self.front.cache.generation
        try:
            answer = await self.front.fetch("GET", self.request.uri or "/", headers, None)
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: a GET nobody shared does not warn
            raise
        finally:
            self.front.in_flight.pop(key, None)
        future.set_result(answer)
        self.front.cache.put(key, answer, generation)
        return answer

    def _send(self, answer: CachedAnswer) -> "asyncio.Future[None]":
        self.clear()
        self.clear_header("Content-Type")  # the JobManager's, if any, comes with its headers
        self.set_status(answer.status, answer.reason or None)
        for name, value in answer.headers:
            self.add_header(name, value)
        if answer.status in (204, 304) or self.request.method == "HEAD":
            return self.finish()
        return self.finish(answer.body)  # done once written to the socket

    get = head = post = delete = patch = put = options = _answer


def front_application(front: Front) -> Application:
    """The tornado application: one handler for every path."""
    return Application([(r"/.*", ForwardingHandler, {"front": front})], log_function=lambda handler: None)


async def _serve(listen: socket.socket, upstream: str, max_content_length: int,
                 large_bodies: Sequence[tuple[str, str]]) -> None:
    front = Front(upstream, max_content_length, large_bodies)  # in the loop: tornado's client binds to it
    server = rest_http_server(front_application(front))
    server.add_sockets([listen])
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), lambda: _on_stdin(front, done))
    loop.add_signal_handler(signal.SIGTERM, done.set)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    await done.wait()
    loop.remove_reader(sys.stdin.fileno())
    server.stop()  # no new connection; the requests being answered are answered (an answer to
    try:           # DELETE /cluster, whose JobManager is stopping this front, included)
        await asyncio.wait_for(front.idle.wait(), _DRAIN_S)
        await asyncio.wait_for(server.close_all_connections(), _DRAIN_S)
    except asyncio.TimeoutError:
        pass
    front.client.close()


def _on_stdin(front: Front, done: asyncio.Event) -> None:
    """End of file: stop. A line ``clear``: a job was submitted or changed status in the
    JobManager (not through this front): forget every answer. A line ``upstream URL`` (``-``:
    none): answer from that endpoint from now on (the cache is forgotten)."""
    try:
        data = os.read(sys.stdin.fileno(), 4096)
    except OSError:
        data = b""
    if not data:
        done.set()
        return
    front.pending_input += data
    *lines, front.pending_input = front.pending_input.split(b"\n")
    for line in lines:
        if line.startswith(UPSTREAM):
            target = line[len(UPSTREAM):].decode("utf-8", "replace").strip()
            front.upstream = "" if target == "-" else target.rstrip("/")
            front.cache.clear()
        elif line + b"\n" == CLEAR:
            front.cache.clear()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Serve until standard input closes; 0 then."""
    parser = argparse.ArgumentParser(prog="python -m streamkernel.runtime.rest.front",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--listen-fd", type=int, required=True, help="the listening socket's file descriptor")
    parser.add_argument("--upstream", required=True, help="the JobManager's endpoint, http://127.0.0.1:PORT")
    parser.add_argument("--max-content-length", type=int, default=104_857_600,
                        help="rest.server.max-content-length: the largest request body")
    parser.add_argument("--large-body", nargs=2, action="append", default=[], metavar=("METHOD", "PATTERN"),
                        help="a request whose body may be that large (streamed); any other body is JSON")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for a terminal's foreground job
    listen = socket.socket(fileno=args.listen_fd)
    listen.setblocking(False)
    asyncio.run(_serve(listen, args.upstream, args.max_content_length, [tuple(r) for r in args.large_body]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
