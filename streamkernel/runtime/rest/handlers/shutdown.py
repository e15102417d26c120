"""``DELETE /cluster``: shut the cluster down (Flink's ``ShutdownHandler``).

The answer (200 ``{}``, as Flink's ``ShutdownHeaders``) is sent first; the cluster is then
stopped from a thread of its own: stopping the cluster stops this endpoint, which joins the
endpoint's thread, so it must never run on the endpoint's loop.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from streamkernel.runtime.rest.handlers.base import RestError, RestHandler

__all__ = ["ROUTES", "SHUTDOWN_THREAD_NAME"]

_LOG = logging.getLogger(__name__)

#: The name of the thread that stops the cluster after ``DELETE /cluster``.
SHUTDOWN_THREAD_NAME = "streamkernel REST cluster shutdown"


class ShutdownHandler(RestHandler):
    """``DELETE /cluster``: 200 ``{}``, then the whole cluster stops (jobs cancelled, TaskManagers gone)."""

    def delete(self) -> None:
        """Answer, then stop the cluster from another thread once the answer is written."""
        shutdown = self.context.shutdown_cluster
        if shutdown is None:
            raise RestError(503, "This cluster cannot be shut down through the REST API.")
        self.set_status(200)
        self.finish("{}").add_done_callback(lambda _: _start_shutdown(shutdown))


def _start_shutdown(shutdown: Callable[[], None]) -> None:
    def run() -> None:
        try:
            shutdown()
        except Exception:  # noqa: BLE001 - nobody waits for this thread: log it
            _LOG.exception("DELETE /cluster: stopping the cluster failed")

    threading.Thread(target=run, name=SHUTDOWN_THREAD_NAME, daemon=False).start()


ROUTES = [
    ("/cluster", ShutdownHandler),
]
