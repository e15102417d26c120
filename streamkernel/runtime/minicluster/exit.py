"""Every running MiniCluster is stopped before the interpreter exits.

A cluster's threads are daemon threads, and the transient cluster of ``execute_async()``
or ``execute_and_collect()`` is stopped by a daemon thread once its job ended: a script
that ends right after its job (or raises, or never stops the cluster it started) would
have those threads killed when the interpreter finishes, leaving the cluster's working
directory (TaskManager files, RocksDB databases) behind. So :class:`~.minicluster.MiniCluster`
registers here when it starts and unregisters when its stop completed, and an
:mod:`atexit` handler stops the clusters still registered. Python runs it after the
non-daemon threads ended and before daemon threads are frozen; a stop already under way
on another thread is waited for (``stop()`` holds the cluster's lifecycle lock until it
is done, and the cluster unregisters only then). A forked child does not stop its
parent's clusters.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Any, Optional

__all__ = ["cluster_started", "cluster_stopped", "running_clusters", "stop_running_clusters"]

_LOG = logging.getLogger(__name__)

_lock = threading.Lock()  # guards the two fields below
_running: dict[int, Any] = {}  # id(cluster) -> cluster, in start order
_handler_pid: Optional[int] = None  # the process whose atexit handler is registered


def cluster_started(cluster: Any) -> None:
    """Note a started cluster: it is stopped at interpreter exit unless stopped before."""
    global _handler_pid
    with _lock:
        if _handler_pid != os.getpid():
            atexit.register(stop_running_clusters)
            _handler_pid = os.getpid()
        _running[id(cluster)] = cluster


def cluster_stopped(cluster: Any) -> None:
    """Forget a cluster whose stop completed."""
    with _lock:
        _running.pop(id(cluster), None)


def running_clusters() -> list[Any]:
    """The clusters started and not yet (completely) stopped, oldest first."""
    with _lock:
        return list(_running.values())


def stop_running_clusters() -> None:
    """Stop every registered cluster, newest first (the atexit handler; a no-op in a forked child)."""
    if _handler_pid != os.getpid():
        return
    for cluster in reversed(running_clusters()):
        try:
            cluster.stop()
        except Exception:  # noqa: BLE001 - at exit: stop the others anyway
            _LOG.exception("could not stop %r at interpreter exit", cluster)
        cluster_stopped(cluster)
