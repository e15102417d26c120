"""What the REST API's HTTP servers refuse before any handler runs (the limits Netty's
``HttpServerCodec`` sets in front of Flink's REST handlers), for the JobManager's endpoint and
the front process alike (:func:`rest_http_server`).

A request whose target is longer than :data:`MAX_URI_LENGTH` gets 414, one whose header
fields are larger than :data:`MAX_HEADER_BYTES` 431, an unknown method (``FOO``, ``TRACE``)
405 and a path with a NUL character (``%00``) 400, each with Flink's ``{"errors": [...]}``.

Why a larger tornado header limit and the check here: tornado's HTTP/1 connection reads the
start line and the header fields up to ``max_header_size`` and, past it, closes the
connection without an answer (its stream refuses the read and closes itself before the
connection could write). Answering instead would mean copying tornado's private
``HTTP1Connection._read_message``. So tornado reads up to :data:`HEADER_READ_LIMIT` (1 MiB,
what one connection may make the server hold before an answer), and :class:`RequestLimits`,
the first delegate to see a parsed request, answers 414 or 431 for anything over the limits
below it. Only a request whose header block exceeds :data:`HEADER_READ_LIMIT` still has its
connection closed unanswered.

Request bodies are bounded per resource by the handlers (:data:`MAX_JSON_BODY`, and
``rest.server.max-content-length`` for a job submission), a declared length before a byte
of the body is read.
This module imports only tornado: the front process uses it.
"""

from __future__ import annotations

import json
import sys
import urllib.parse
from typing import Any, Awaitable, Optional, Union

from tornado import httputil
from tornado.httpserver import HTTPServer

__all__ = ["MAX_URI_LENGTH", "MAX_HEADER_BYTES", "HEADER_READ_LIMIT", "MAX_JSON_BODY", "SUPPORTED_METHODS",
           "error_body", "shorten", "too_large_message", "refusal", "RequestLimits", "rest_http_server"]

#: The longest request target (path and query) answered: 8 KiB, twice Netty's default
#: initial line; a longer one gets 414.
MAX_URI_LENGTH = 8192
#: The most bytes of header fields answered (names, values, separators): 64 KiB, tornado's
#: own default, so nothing answered before is refused; more gets 431.
MAX_HEADER_BYTES = 65536
#: The most tornado reads of a request's start line and header fields before it closes the
#: connection unanswered (see the module's docstring).
HEADER_READ_LIMIT = 1 << 20
#: The largest body a resource taking JSON accepts (every resource but a job submission):
#: Flink's request bodies are a few hundred bytes; a larger one gets 413 before it is read.
MAX_JSON_BODY = 1 << 20
#: The methods the REST API knows; any other gets 405.
SUPPORTED_METHODS = ("GET", "HEAD", "POST", "DELETE", "PATCH", "PUT", "OPTIONS")
_JSON = "application/json; charset=UTF-8"


def error_body(message: str) -> bytes:
    """Flink's error body ``{"errors": [message]}`` as bytes."""
    return json.dumps({"errors": [message]}).encode("utf-8")


def shorten(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was: what is logged or echoed of
    a client's string (a path, a header), never the whole of it.

        >>> shorten("a" * 300, 10)
        'aaaaaaaaaa... (300 characters)'
    """
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def too_large_message(how: str, limit: int, max_content_length: int) -> str:
    """The 413 message for a body over ``limit``: ``how`` is "N bytes exceed" (declared) or
    "more than" (counted); names ``rest.server.max-content-length`` when that is the limit.

        >>> too_large_message("more than", 1048576, 104857600)
        'Request entity too large: more than the 1048576 bytes of JSON this resource takes'
    """
    what = (f"rest.server.max-content-length ({limit} bytes)" if limit == max_content_length
            else f"the {limit} bytes of JSON this resource takes")
    return f"Request entity too large: {how} {what}"


def refusal(method: str, target: str, headers: httputil.HTTPHeaders) -> Optional[tuple[int, str, str]]:
    """(status, reason, message) for a request refused before any handler runs, None for one
    a handler may answer."""
    if len(target) > MAX_URI_LENGTH:
        return 414, "URI Too Long", (f"URI too long: the request target has {len(target)} characters, at most "
                                     f"{MAX_URI_LENGTH} are accepted")
    size = sum(len(name) + len(value) + 4 for name, value in headers.get_all())  # "name: value\r\n"
    if size > MAX_HEADER_BYTES:
        return 431, "Request Header Fields Too Large", (
            f"Request header fields too large: {size} bytes, at most {MAX_HEADER_BYTES} are accepted")
    path = target.split("?", 1)[0]
    if method not in SUPPORTED_METHODS:
        return 405, "Method Not Allowed", f"Method {shorten(method, 40)} is not allowed for {shorten(path)}"
    if "\x00" in urllib.parse.unquote(path):
        return 400, "Bad Request", f"Bad request: the path {shorten(path)} contains a NUL character (%00)"
    return None


class RequestLimits(httputil.HTTPServerConnectionDelegate):
    """``application`` behind the checks of :func:`refusal`: a refused request is answered here
    (and its connection closed once answered); any other goes on to the application."""

    def __init__(self, application: httputil.HTTPServerConnectionDelegate) -> None:
        self.application = application

    def start_request(self, server_conn: object, request_conn: httputil.HTTPConnection) -> httputil.HTTPMessageDelegate:
        """The application's delegate for the request, behind the checks."""
        return _CheckedRequest(self.application.start_request(server_conn, request_conn), request_conn)

    def on_close(self, server_conn: object) -> None:
        """A connection closed: the application's to know."""
        self.application.on_close(server_conn)


class _CheckedRequest(httputil.HTTPMessageDelegate):
    """One request: refused at its headers, or handed over to ``delegate`` whole."""

    def __init__(self, delegate: httputil.HTTPMessageDelegate, connection: httputil.HTTPConnection) -> None:
        self.delegate = delegate
        self.connection = connection
        self.refused = False

    def headers_received(self, start_line: Union[httputil.RequestStartLine, httputil.ResponseStartLine],
                         headers: httputil.HTTPHeaders) -> Optional[Awaitable[None]]:
        assert isinstance(start_line, httputil.RequestStartLine)
        refused = refusal(start_line.method, start_line.path, headers)
        if refused is None:
            return self.delegate.headers_received(start_line, headers)
        self.refused = True
        status, reason, message = refused
        body = error_body(message)
        answer = httputil.HTTPHeaders({"Content-Type": _JSON, "Content-Length": str(len(body)),
                                       "Connection": "close"})
        if status == 405:
            answer["Allow"] = ", ".join(SUPPORTED_METHODS)
        self.connection.write_headers(httputil.ResponseStartLine("HTTP/1.1", status, reason), answer, body)
        self.connection.finish()
        return None

    def data_received(self, chunk: bytes) -> Optional[Awaitable[None]]:
        return None if self.refused else self.delegate.data_received(chunk)

    def finish(self) -> None:
        if not self.refused:
            self.delegate.finish()

    def on_connection_close(self) -> None:
        if not self.refused:
            self.delegate.on_connection_close()


def rest_http_server(application: httputil.HTTPServerConnectionDelegate, **settings: Any) -> HTTPServer:
    """The HTTPServer of the REST API for ``application``: the checks of :class:`RequestLimits`,
    header fields read up to :data:`HEADER_READ_LIMIT`, idle connections and slow bodies
    dropped after a minute. ``settings`` go to HTTPServer.

    Bodies are the handlers' to bound (each counts what it receives and answers 413 past its
    limit, a declared length before reading): tornado's own ``max_body_size`` is set out of
    the way, because it answers a bare ``400`` with no body, and for a chunked body before the
    handler has seen the chunk that crosses the limit.
    """
    options: dict[str, Any] = {"max_header_size": HEADER_READ_LIMIT, "max_body_size": sys.maxsize,
                               "idle_connection_timeout": 60, "body_timeout": 60, **settings}
    return HTTPServer(RequestLimits(application), **options)
