"""The base of every REST handler: JSON out, Flink's error bodies, the body-size check.

A handler subclasses :class:`RestHandler` and implements ``get`` (or ``post``, ``patch``
...) with the path parameters of its Flink template as keyword arguments. It answers with
:meth:`RestHandler.write_json` and refuses with :class:`RestError` (status and message).
Errors leave as Flink's ``{"errors": ["..."]}``: an unknown path 404, an unknown job 404, a
malformed id 400, a body that is not JSON (or nested too deeply to parse) 400, a method the
resource has not 405, a body over what the resource takes 413 (before it is read: see
:meth:`RestHandler.body_limit`); a handler's bug is a 500 with a one-line message (logged
with its traceback, never sent). What is logged of a request is cut short
(:func:`~..request_limits.shorten`).
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any, Optional

import tornado.web

from streamkernel.runtime.jobmaster.job_status import JobDetails, VertexDetails
from streamkernel.runtime.rest.context import RestContext
from streamkernel.runtime.rest.json_views.ids import HEX32, vertex_by_hex
from streamkernel.runtime.rest.request_limits import MAX_JSON_BODY, SUPPORTED_METHODS, shorten, too_large_message

__all__ = ["RestError", "RestHandler", "NotFoundHandler"]

_LOG = logging.getLogger(__name__)
_AGGREGATIONS = ("min", "max", "sum", "avg", "skew")


class RestError(Exception):
    """A request the handler refuses: ``status`` (4xx) and the message sent in ``errors``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def bad_parameter(name: str, value: str) -> RestError:
    """Flink's 400 for a path or query parameter that does not parse."""
    return RestError(400, f"Bad request, could not parse parameters: Cannot resolve path parameter ({name}) "
                          f"from value \"{shorten(value)}\".")


@tornado.web.stream_request_body
class RestHandler(tornado.web.RequestHandler):
    """A REST resource: reads the cluster through ``self.context`` (a :class:`RestContext`).

    The body is streamed in and counted, so that one over :meth:`body_limit` gets 413 before
    anything is done (a declared length before a byte is read); Flink's CLI sends ``{}`` even
    with a GET, which is accepted.
    """

    SUPPORTED_METHODS = SUPPORTED_METHODS

    #: The methods whose body may be as large as ``rest.server.max-content-length`` (a job
    #: submission's pickled job); any other body is JSON of at most :data:`MAX_JSON_BODY` bytes.
    LARGE_BODY_METHODS: frozenset[str] = frozenset()

    #: Whether a GET's 200 answer is a snapshot that may be reused for ``context.answer_max_age``
    #: seconds (``Cache-Control: max-age``); False for answers a client polls to see a change
    #: it waits for (an operation's status, a job's result).
    CACHEABLE = True

    def initialize(self, context: RestContext, max_content_length: int) -> None:
        """tornado's per-request setup: the context and the body limit."""
        self.context = context
        self.max_content_length = max_content_length
        self._body = bytearray()

    def set_default_headers(self) -> None:
        """JSON, and readable from any origin (Flink's ``web.access-control-allow-origin`` default ``*``)."""
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.set_header("Access-Control-Allow-Origin", "*")

    def body_limit(self) -> int:
        """The largest body this request may have: ``rest.server.max-content-length`` for a
        method of :attr:`LARGE_BODY_METHODS`, else :data:`MAX_JSON_BODY` (or the key, if lower)."""
        if self.request.method in self.LARGE_BODY_METHODS:
            return self.max_content_length
        return min(MAX_JSON_BODY, self.max_content_length)

    def prepare(self) -> None:
        """Refuse a declared body over the limit (413) before reading it."""
        length = self.request.headers.get("Content-Length", "").strip()
        if length.isascii() and length.isdigit() and int(length) > self.body_limit():
            raise self._too_large(f"{int(length)} bytes exceed")

    def data_received(self, chunk: bytes) -> None:
        """Collect the body; a chunked one over the limit is refused (413)."""
        if self._finished:  # answered already (refused): what still arrives is dropped
            return
        self._body.extend(chunk)
        if len(self._body) > self.body_limit():
            self._body = bytearray()
            self.refuse(self._too_large("more than"))

    def refuse(self, error: RestError) -> None:
        """Answer ``error`` now, while the body streams in (an exception raised there would
        only close the connection): tornado closes it once answered, unread."""
        self.write_json({"errors": [error.message]}, error.status)

    def _too_large(self, how: str) -> RestError:
        return RestError(413, too_large_message(how, self.body_limit(), self.max_content_length))

    def json_body(self) -> Any:
        """The request's JSON body (None when empty); 400 naming the problem when it is not JSON."""
        if not self._body.strip():
            return None
        try:
            return json.loads(self._body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise RestError(400, f"Bad request, the request body is not valid JSON: {error}") from None
        except RecursionError:
            raise RestError(400, "Bad request, the request body is not valid JSON: it is nested too deeply "
                                 "to be parsed") from None

    # ------------------------------------------------------------------ answers
    def write_json(self, body: Any, status: int = 200) -> None:
        """Send ``body`` as JSON with ``status`` (a GET's 200 snapshot with its ``Cache-Control``).

        A float NaN or infinity is written as Flink's Jackson writes it, as the string ``"NaN"``,
        ``"Infinity"`` or ``"-Infinity"`` (bare ``NaN`` is no JSON)."""
        self.set_status(status)
        if status == 200 and self.request.method == "GET":
            max_age = self.context.answer_max_age if self.CACHEABLE else 0
            self.set_header("Cache-Control", f"max-age={max_age}" if max_age > 0 else "no-cache")
        try:
            text = json.dumps(body, default=str, allow_nan=False)
        except ValueError:  # a NaN or infinity somewhere: the rare case pays a second pass
            text = json.dumps(_non_finite_as_strings(body), default=str)
        self.finish(text)

    def _handle_request_exception(self, error: BaseException) -> None:
        if isinstance(error, RestError):
            if not self._finished:
                self.write_json({"errors": [error.message]}, error.status)
            return
        super()._handle_request_exception(error)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Flink's error body for tornado's own errors (405, malformed requests) and handler bugs (500)."""
        exc_info = kwargs.get("exc_info")
        error = exc_info[1] if exc_info else None
        if status_code == 405:
            message = f"Method {self.request.method} is not allowed for {shorten(self.request.path)}"
        elif status_code >= 500:
            message = "Internal server error: " + (
                f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".strip(": ")
                if error is not None and not isinstance(error, tornado.web.HTTPError) else self._reason)
        else:
            message = (error.log_message if isinstance(error, tornado.web.HTTPError) and error.log_message
                       else self._reason)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps({"errors": [message]}))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """Log a handler's bug with its traceback (the client gets one line)."""
        if isinstance(value, (RestError, tornado.web.HTTPError)):
            return
        _LOG.error("REST handler %s failed for %s %s", type(self).__name__, self.request.method,
                   shorten(self.request.path), exc_info=(typ, value, tb))

    # ------------------------------------------------------------------ lookups
    def job(self, jobid: str) -> JobDetails:
        """The published details of job ``jobid``: 400 for a malformed id, 404 for an unknown one."""
        if not HEX32.match(jobid):
            raise bad_parameter("jobid", jobid)
        try:
            return self.context.dispatcher.request_job_details(jobid.lower())
        except KeyError:
            raise RestError(404, f"Job {jobid.lower()} not found") from None

    def vertex(self, details: JobDetails, vertexid: str) -> VertexDetails:
        """The vertex ``vertexid`` of the job: 400 for a malformed id, 404 for an unknown one."""
        if not HEX32.match(vertexid):
            raise bad_parameter("vertexid", vertexid)
        vertex = vertex_by_hex(details, vertexid)
        if vertex is None:
            raise RestError(404, f"JobVertex {vertexid.lower()} of job {details.job_id} not found")
        return vertex

    def query_list(self, name: str) -> Optional[list[str]]:
        """A comma-separated query parameter as a list (None when absent), Flink's ``?get=a,b``."""
        values = self.get_query_arguments(name)
        if not values:
            return None
        return [item.strip() for value in values for item in value.split(",") if item.strip()]

    def aggregation_modes(self) -> list[str]:
        """``?agg=min,max,...`` of an aggregated metrics resource (lower case; all but ``skew``
        without it); 400 naming the values Flink would not parse."""
        modes = [m.lower() for m in (self.query_list("agg") or ["min", "max", "sum", "avg"])]
        bad = [m for m in modes if m not in _AGGREGATIONS]
        if bad:
            raise RestError(400, f"Bad request, could not parse parameters: Cannot resolve query parameter (agg) "
                                 f"from value \"{','.join(bad)}\"; expected min, max, sum, avg or skew.")
        return modes


def _non_finite_as_strings(value: Any) -> Any:
    """``value`` with every NaN / infinite float replaced by Jackson's strings for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _non_finite_as_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_non_finite_as_strings(v) for v in value]
    return value


class NotFoundHandler(RestHandler):
    """Any path no resource serves: Flink's 404 ``Not found: /x``."""

    def _not_found(self, *args: Any, **kwargs: Any) -> None:
        raise RestError(404, f"Not found: {shorten(self.request.path)}")

    get = post = put = patch = delete = head = options = _not_found

    def prepare(self) -> None:
        """A body is not read for an unknown path."""
        raise RestError(404, f"Not found: {shorten(self.request.path)}")
