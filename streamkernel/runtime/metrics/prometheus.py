"""Flink's Prometheus reporter: an HTTP endpoint serving ``/metrics`` in Prometheus' text format.

``metrics.reporter.<name>.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory``
makes every process of the cluster (the JobManager, each TaskManager; on the ``local`` backend the
kernel's whole cluster) serve its metrics on the first free port of ``metrics.reporter.<name>.port``
(default 9249; a range such as ``9249-9260`` lets several processes of one machine share the
setting). The names are Flink's (:mod:`.prometheus_families`).

Nothing is counted for the reporter: a scrape asks the registry's sources for their groups now
(each reads the snapshots its component publishes) and turns them into text; between scrapes the
reporter costs nothing. The endpoint is prometheus_client's WSGI application on a small threaded
HTTP server of its own; :meth:`PrometheusReporter.close` stops it and waits for the request in
progress, leaving no thread and no port behind.
"""

from __future__ import annotations

import errno
import logging
import socketserver
import threading
from typing import Any, Callable, Iterable, Optional
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.metrics_core import Metric

from streamkernel.errors import StreamKernelError
from streamkernel.runtime.metrics.groups import MetricGroupSnapshot
from streamkernel.runtime.metrics.prometheus_families import prometheus_families
from streamkernel.runtime.metrics.reporter_setup import ReporterSetup

__all__ = ["PrometheusReporter", "ReporterStartError"]

_LOG = logging.getLogger(__name__)


class ReporterStartError(StreamKernelError):
    """A metric reporter could not start (every configured port taken)."""


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    """One thread per request, each joined when the server closes."""

    daemon_threads = False
    block_on_close = True


class _QuietHandler(WSGIRequestHandler):
    """Logs nothing per request; a client that sends nothing is dropped after 10 s."""

    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Nothing: Prometheus scrapes every few seconds."""


class _Collector:
    """prometheus_client's custom collector protocol: the families of the groups now."""

    def __init__(self, reporter: "PrometheusReporter") -> None:
        self._reporter = reporter

    def collect(self) -> Iterable[Metric]:
        """Called once per scrape, in the request's thread."""
        return self._reporter.families()


class PrometheusReporter:
    """Serves the groups ``groups()`` returns at ``http://<bind_address>:<port>/metrics`` (see the module).

    :meth:`open` binds the first free port of the setup's ports (ReporterStartError naming the key
    when every one is taken); :attr:`port` and :attr:`url` tell where it serves.
    """

    def __init__(self, setup: ReporterSetup, groups: Callable[[], Iterable[MetricGroupSnapshot]],
                 bind_address: str = "127.0.0.1") -> None:
        self.setup = setup
        self._groups = groups
        self._bind_address = bind_address
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(_Collector(self))
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

    def families(self) -> list[Metric]:
        """The Prometheus metric families of every group now (what a scrape returns)."""
        return prometheus_families(self._groups(), self.setup)

    def open(self) -> "PrometheusReporter":
        """Start serving on the first free port of the setup's ports; returns self."""
        app = make_wsgi_app(self._registry)
        for port in self.setup.ports:
            try:
                server = make_server(self._bind_address, port, app, _Server, handler_class=_QuietHandler)
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
