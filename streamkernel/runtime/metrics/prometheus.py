"""Flink's Prometheus reporter: an HTTP endpoint serving ``/metrics`` in Prometheus' text format.

``metrics.reporter.<name>.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory``
makes every process of the cluster (the JobManager, each TaskManager; on the ``local`` backend the
kernel's whole cluster) serve its metrics on the first free port of ``metrics.reporter.<name>.port``
(default 9249; a range such as ``9249-9260`` lets several processes of one machine share the
setting). The names are Flink's, the text Prometheus' exposition format (:mod:`.prometheus_text`).

Nothing is counted for the reporter: a scrape asks the registry's sources for their groups now
(each reads the snapshots its component publishes) and turns them into text; between scrapes the
reporter costs nothing. The endpoint is the standard library's HTTP server on one thread of its own,
answering ``GET /metrics`` (and ``/``) one request after the other (a scrape takes about a millisecond;
a thread per request, or WSGI, cost as much again); a client that sends nothing is dropped after 10 s.
:meth:`PrometheusReporter.close` stops it and waits for the request in progress, leaving no thread and
no port behind.
"""

from __future__ import annotations

import errno
import logging
import socketserver
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Callable, Iterable, Optional

from streamkernel.runtime.metrics.groups import MetricGroupSnapshot
from streamkernel.runtime.metrics.prometheus_text import CONTENT_TYPE, PrometheusText
from streamkernel.runtime.metrics.reporter_setup import ReporterSetup, ReporterStartError

__all__ = ["PrometheusReporter", "ReporterStartError"]

_LOG = logging.getLogger(__name__)


class _Handler(BaseHTTPRequestHandler):
    """``GET /metrics``: the reporter's text; anything else 404. Logs nothing (Prometheus scrapes every few seconds)."""

    timeout = 10
    wbufsize = -1  # the headers and the text leave in one send when the request ends (one GIL hand-over, not two)
    server: "_Server"

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        """The metrics (or 404)."""
        self._answer(send_body=True)

    def do_HEAD(self) -> None:  # noqa: N802 - the standard library's name
        """The metrics' headers."""
        self._answer(send_body=False)

    def _answer(self, send_body: bool) -> None:
        started = time.thread_time()
        if self.path.split("?", 1)[0] not in ("/", "/metrics"):
            body, status, kind = b"Not Found: the metrics are at /metrics\n", 404, "text/plain; charset=utf-8"
        else:
            body, status, kind = self.server.reporter.render().encode("utf-8"), 200, CONTENT_TYPE
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)
        self.server.reporter.answers.append((time.thread_time() - started, len(body)))

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Nothing."""


class _Server(HTTPServer):
    """One request at a time, in the server's own thread."""

    def __init__(self, address: tuple[str, int], reporter: "PrometheusReporter") -> None:
        self.reporter = reporter
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-answer (or the like): logged, not printed to stderr."""
        _LOG.debug("the metrics endpoint could not answer %s", client_address, exc_info=True)

    def server_bind(self) -> None:
        """Bind as a TCP server does, without HTTPServer's reverse lookup of the host name (seconds without DNS)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])


class PrometheusReporter:
    """Serves the groups ``groups()`` returns at ``http://<bind_address>:<port>/metrics`` (see the module).

    :meth:`open` binds the first free port of the setup's ports (ReporterStartError naming the key
    when every one is taken); :attr:`port` and :attr:`url` tell where it serves. :attr:`answers` keeps
    the CPU seconds and the size in bytes of its last 1,000 answers (what a scrape costs the process).
    """

    def __init__(self, setup: ReporterSetup, groups: Callable[[], Iterable[MetricGroupSnapshot]],
                 bind_address: str = "127.0.0.1") -> None:
        self.setup = setup
        self._groups = groups
        self._bind_address = bind_address
        self._text = PrometheusText(setup)
        # The lock guards _text's caches: two scrapes at once (two Prometheus servers) take turns.
        self._lock = threading.Lock()
        self.answers: deque[tuple[float, int]] = deque(maxlen=1000)
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def port(self) -> Optional[int]:
        """The port it serves on (None before :meth:`open` and after :meth:`close`)."""
        server = self._server
        return int(server.server_address[1]) if server is not None else None

    @property
    def url(self) -> Optional[str]:
        """``http://HOST:PORT/metrics`` while it serves."""
        port = self.port
        return None if port is None else f"http://{self._bind_address}:{port}/metrics"

    def render(self) -> str:
        """The text of every group now (what a scrape returns)."""
        groups = self._groups()
        with self._lock:
            return self._text.render(groups)

    def open(self) -> "PrometheusReporter":
        """Start serving on the first free port of the setup's ports; returns self."""
        for port in self.setup.ports:
            try:
                server = _Server((self._bind_address, port), self)
            except OSError as error:
                if error.errno in (errno.EADDRINUSE, errno.EACCES):
                    continue
                raise ReporterStartError(f"the Prometheus reporter {self.setup.name!r} cannot listen on "
                                         f"{self._bind_address}:{port}: {error}") from error
            self._server = server
            break
        if self._server is None:
            raise ReporterStartError(
                f"Could not start PrometheusReporter HTTP server on any configured port. Ports: "
                f"{self.setup.port_text} (key '{self.setup.key('port')}'; each is taken on {self._bind_address})")
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name=f"streamkernel-metrics-{self.setup.name}:{self.port}", daemon=True)
        self._thread.start()
        _LOG.info("Started PrometheusReporter HTTP server on %s:%s.", self._bind_address, self.port)
        return self

    def close(self) -> None:
        """Stop serving: the port is free and no thread of it is left once this returns."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join()

    def __repr__(self) -> str:
        where = self.url or "not serving"
        return f"PrometheusReporter({self.setup.name!r}, {where})"
