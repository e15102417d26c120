"""The REST endpoint: a tornado HTTP server on its own thread and asyncio loop (Flink's
``RestServerEndpoint`` / ``WebMonitorEndpoint``).

``start()`` binds the first free port of the configured range (``rest.bind-port``, else
``rest.port`` and the next ports: :func:`~streamkernel.common.options.rest.rest_port_range`)
on ``rest.bind-address`` and returns once the server listens; it never blocks the caller
afterwards. ``stop()`` closes the listening socket and every open connection, stops the loop
and joins its thread: nothing is left behind. Handlers run on the endpoint's loop and only
read published snapshots (:class:`~streamkernel.runtime.rest.context.RestContext`).

By default (``streamkernel.rest.front-process``) the tornado server of this process listens
on a loopback port of its own, and a front process (:mod:`.front_process`, :mod:`.front`)
answers the public port, forwarding to it through a short-lived cache: HTTP's per-request
Python then runs outside the JobManager's process and its GIL. Should the front exit, this
process serves the public port itself from then on (logged as a warning).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import threading
import weakref
from typing import Any, Optional

from streamkernel.runtime.core.engine_log import CONCERNS_USER
from streamkernel.common.options import RestOptions
from streamkernel.common.options.rest import rest_explicitly_configured, rest_port_range
from streamkernel.errors import IllegalConfigurationError, StreamKernelError
from streamkernel.runtime.rest.context import RestContext
from streamkernel.runtime.rest.front_process import RestFrontProcess
from streamkernel.runtime.rest.web_ui import find_dashboard

__all__ = ["RestServerEndpoint", "RestEndpointError"]

_LOG = logging.getLogger(__name__)


class RestEndpointError(StreamKernelError):
    """The REST endpoint could not start (no free port in the configured range, a bad address)."""


class RestServerEndpoint:
    """Serves the REST API of one cluster (``context``) on ``rest.bind-address``:port.

    ``rest_url`` is ``http://HOST:PORT`` while it serves (HOST: ``rest.address``, else the
    bind address), None otherwise.
    """

    def __init__(self, context: RestContext, configuration: Optional[dict] = None) -> None:
        conf = dict(configuration if configuration is not None else context.configuration)
        self.context = context
        self.bind_address = RestOptions.BIND_ADDRESS.get(conf).strip()
        self.ports = rest_port_range(conf)  # raises IllegalConfigurationError naming the key
        find_dashboard(conf)  # web.dashboard.jar set to no file: IllegalConfigurationError naming it, before serving
        self._any_port_after_range = not rest_explicitly_configured(conf)
        self.address = (RestOptions.ADDRESS.get(conf) or self.bind_address).strip()
        self.max_content_length = RestOptions.SERVER_MAX_CONTENT_LENGTH.get(conf)
        self.use_front = RestOptions.FRONT_PROCESS.get(conf)
        self.port: Optional[int] = None
        self.front: Optional[RestFrontProcess] = None
        self._listening = False
        self._public: list[socket.socket] = []
        self._thread: Optional[threading.Thread] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._server: Any = None
        self._lock = threading.Lock()

    @property
    def rest_url(self) -> Optional[str]:
        """``http://HOST:PORT`` while serving, else None."""
        if self.port is None:
            return None
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}"

    @property
    def is_running(self) -> bool:
        """True between a successful start() and stop()."""
        return self.port is not None

    def start(self) -> "RestServerEndpoint":
        """Bind a port and serve on a new thread; returns once listening.

        Raises RestEndpointError naming the address and ports when none could be bound.
        """
        with self._lock:
            if self._thread is not None:
                return self
            public = self._bind()
            sockets = public
            if self.use_front:
                from tornado.netutil import bind_sockets

                sockets = bind_sockets(0, "127.0.0.1", reuse_port=False)  # this process's own, behind the front
            if not _is_loopback(self.bind_address):
                _LOG.warning("The REST API listens on %s:%s, not on a loopback address: anyone who can reach it can "
                             "read and cancel this cluster's jobs (set rest.bind-address to 127.0.0.1 to keep it "
                             "local)", self.bind_address, sockets[0].getsockname()[1], extra=CONCERNS_USER)
            ready = threading.Event()
            failure: list[BaseException] = []
            thread = threading.Thread(target=self._serve, args=(sockets, ready, failure),
                                      name=f"streamkernel REST endpoint :{sockets[0].getsockname()[1]}", daemon=True)
            thread.start()
            ready.wait()
            if failure:
                thread.join()
                for sock in public:
                    sock.close()
                raise RestEndpointError(f"the REST endpoint could not start: {failure[0]}") from failure[0]
            self._thread = thread
            self._public = public
            if self.use_front:
                from streamkernel.runtime.rest.routes import large_body_routes

                self.front = RestFrontProcess(public, sockets[0].getsockname()[1], self.max_content_length,
                                              self._front_lost, large_body_routes()).start()
                if not self._listening:  # a job's start and end show at once, whatever submitted it
                    self.context.dispatcher.add_jobs_listener(_weak_listener(self._jobs_changed))
                    self._listening = True
            self.port = public[0].getsockname()[1]
            self.context.rest_address = f"{self.address}:{self.port}"
        return self

    def _jobs_changed(self, details: object) -> None:
        front = self.front
        if front is not None:
            front.clear_cache()

    def _front_lost(self, message: str) -> None:
        """The front exited while serving: answer the public port here from now on."""
        loop, server = self._loop, self._server
        if loop is None or server is None:
            return
        _LOG.warning("%s; this process answers the REST API on port %s itself from now on", message, self.port)
        try:
            loop.call_soon_threadsafe(server.add_sockets, self._public)
        except RuntimeError:  # the loop closed meanwhile: the endpoint is stopping
            pass

    def _bind(self) -> list[socket.socket]:
        from tornado.netutil import bind_sockets  # lazy: tornado only when a cluster serves the API

        try:
            socket.getaddrinfo(self.bind_address, None)
        except socket.gaierror as error:
            raise IllegalConfigurationError(f"Invalid value {self.bind_address!r} for key "
                                            f"'{RestOptions.BIND_ADDRESS.key()}': {error}") from None
        last: Optional[OSError] = None
        fallback = self._any_port_after_range and self.ports.start != 0
        for port in list(self.ports) + ([0] if fallback else []):
            try:
                sockets = bind_sockets(port, self.bind_address, reuse_port=False)
            except OSError as error:
                last = error
                continue
            if port == 0 and fallback:
                _LOG.warning("REST ports %s-%s are taken; serving on port %s instead", self.ports.start,
                             self.ports.stop - 1, sockets[0].getsockname()[1])
            return sockets
        key = RestOptions.BIND_PORT.key() if RestOptions.BIND_PORT.key() in self.context.configuration \
            else RestOptions.PORT.key()
        raise RestEndpointError(
            f"the REST endpoint could not bind {self.bind_address} on any port of {self.ports.start}-"
            f"{self.ports.stop - 1} ({key}): {last}; free one, or set rest.bind-port (e.g. '0' for any free port)")

    def _serve(self, sockets: list[socket.socket], ready: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            from tornado.web import Application

            from streamkernel.runtime.rest.handlers.base import NotFoundHandler
            from streamkernel.runtime.rest.request_limits import rest_http_server
            from streamkernel.runtime.rest.routes import tornado_rules

            arguments = {"context": self.context, "max_content_length": self.max_content_length}
            application = Application(tornado_rules(self.context, self.max_content_length),
                                      default_handler_class=NotFoundHandler, default_handler_args=arguments,
                                      compress_response=True, log_function=_log_request)
            server = rest_http_server(application)
            server.add_sockets(sockets)
            self._server = server
        except BaseException as error:  # noqa: BLE001 - reported to start()
            failure.append(error)
            for sock in sockets:
                sock.close()
            loop.close()
            ready.set()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def stop(self, timeout: float = 5.0) -> None:
        """Close the listening socket and every connection, stop the loop, join the thread.

        Raises RestEndpointError when called from the endpoint's own thread (a handler): it
        would wait for itself; stop it from another thread (as ``DELETE /cluster`` does).
        """
        with self._lock:
            thread, loop, server = self._thread, self._loop, self._server
            if thread is None or loop is None:
                return
            if thread is threading.current_thread():
                raise RestEndpointError("the REST endpoint cannot be stopped from its own thread (a handler): it "
                                        "would wait for itself; stop it from another thread")
            if self.front is not None:  # first: it drains its requests through this process's server
                self.front.stop(timeout)
                self.front = None

            async def shutdown() -> None:
                server.stop()
                try:
                    await asyncio.wait_for(server.close_all_connections(), timeout)
                finally:
                    loop.stop()

            loop.call_soon_threadsafe(lambda: loop.create_task(shutdown()))
            thread.join(timeout + 1.0)
            if thread.is_alive():
                _LOG.warning("the REST endpoint's thread did not stop within %.1f s", timeout + 1.0)
            self._thread = self._loop = self._server = None
            for sock in self._public:
                sock.close()
            self._public = []
            self.port = None

    def __repr__(self) -> str:
        return f"RestServerEndpoint({self.rest_url or 'stopped'})"


def _weak_listener(method: Any) -> Any:
    """``method`` as a listener that does not keep its object alive (the Dispatcher's JobMasters
    outlive a stopped endpoint: a stopped and dropped cluster must still be collected)."""
    reference = weakref.WeakMethod(method)

    def listener(details: Any) -> None:
        bound = reference()
        if bound is not None:
            bound(details)

    return listener


def _is_loopback(address: str) -> bool:
    if address in ("localhost", ""):
        return address == "localhost"
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _log_request(handler: Any) -> None:
    """tornado's access log at DEBUG (its default warns on every 4xx, into the notebook); the URI cut short."""
    from streamkernel.runtime.rest.request_limits import shorten

    _LOG.debug("%s %s %s %.1f ms", handler.get_status(), handler.request.method, shorten(handler.request.uri or ""),
               1000.0 * handler.request.request_time())
