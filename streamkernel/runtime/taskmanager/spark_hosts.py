"""The launcher's end of the Spark tasks hosting TaskManagers: who runs where, and how to kill it.

Each host (:mod:`.spark_host`) connects to the launcher's :class:`SparkHostRegistry` with
the cluster secret, reports a :class:`~.spark_host.SparkHostInfo` (host name, pid,
partition, attempt) and keeps the connection open until its TaskManager ended. That is how
the launcher can describe a TaskManager for the cockpit and kill its process: with SIGKILL
sent from here when the host runs on this machine (same kernel and pid namespace), and by
telling it to SIGKILL itself when it runs on another machine's executor.

A host's state: ``running`` -> ``finished`` (its TaskManager returned: stopped through the
protocol), ``failed`` (it raised: Spark retries the task), ``killed`` (by :meth:`kill`) or
``lost`` (the connection closed without a word: the Python worker died).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Callable, Optional

from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.rpc.transport import Address, AuthenticatedListener
from streamkernel.runtime.taskmanager.spark_host import (ENDED_MESSAGE, HOST_MESSAGE, KILL_MESSAGE, SparkHostInfo,
                                                         machine_identity, shutdown_connection)

__all__ = ["SparkHost", "SparkHostRegistry", "send_kill"]

_LOG = logging.getLogger(__name__)


@dataclass
class SparkHost:
    """One Spark task hosting a TaskManager, as the launcher knows it once it reported."""

    info: SparkHostInfo
    conn: Connection
    thread: threading.Thread
    state: str = "running"
    outcome: str = ""
    send_lock: threading.Lock = field(default_factory=threading.Lock)

    def why_ended(self) -> Optional[str]:
        """Why the host ended abnormally (killed, died, failed), None while it runs or after a normal end."""
        info = self.info
        where = f"Spark task {info.partition}.{info.attempt} (pid {info.pid} on {info.host})"
        if self.state == "killed":
            return f"{where} was killed (SIGKILL)"
        if self.state == "lost":
            return f"{where} ended without a word: its Python worker died"
        if self.state == "failed":
            return f"{where} failed: {self.outcome.removeprefix('failed: ')}"
        return None


def send_kill(host: SparkHost) -> bool:
    """SIGKILL a host: directly when it runs on this machine, else by asking it over its connection."""
    if host.info.machine == machine_identity():
        try:
            os.kill(host.info.pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        return True
    with host.send_lock:
        try:
            host.conn.send((KILL_MESSAGE,))
        except (OSError, ValueError):
            return False
    return True


class SparkHostRegistry:
    """Listens for the hosts of one cluster (authenticated with its secret) and tracks them.

    ``on_report(info)`` is called when a host reports, ``on_finished(info)`` when its
    TaskManager ended normally (both on the host's connection thread).
    """

    def __init__(self, name: str, on_report: Callable[[SparkHostInfo], None],
                 on_finished: Callable[[SparkHostInfo], None]) -> None:
        self._name = name
        self._on_report = on_report
        self._on_finished = on_finished
        # _lock guards the fields below; never held while blocking on a connection or thread.
        self._lock = threading.Lock()
        self._listener: Optional[AuthenticatedListener] = None
        self._secret: Optional[bytes] = None
        self._hosts: dict[str, SparkHost] = {}

    @property
    def address(self) -> Optional[Address]:
        """Where hosts report (None before :meth:`listen`)."""
        listener = self._listener
        return listener.address if listener is not None else None

    def listen(self, host: str, secret: bytes) -> Address:
        """Start listening on ``host`` (any free port) with ``secret``, once; returns the address."""
        with self._lock:
            if self._listener is None:
                self._secret = bytes(secret)
                self._listener = AuthenticatedListener((host, 0), self._secret, self._serve,
                                                       name=f"spark-launcher-{self._name}")
            elif self._secret != bytes(secret):
                raise IllegalConfigurationError("SparkTaskManagerLauncher: every launch of a cluster must use the "
                                                "cluster's one secret")
            return self._listener.address

    def get(self, taskmanager_id: str) -> Optional[SparkHost]:
        """The host of a TaskManager, None until it reported."""
        with self._lock:
            return self._hosts.get(taskmanager_id)

    def hosts(self) -> list[SparkHost]:
        """Every host that reported, whatever its state."""
        with self._lock:
            return list(self._hosts.values())

    def in_states(self, *states: str) -> list[SparkHost]:
        """The hosts whose state is one of ``states``."""
        with self._lock:
            return [h for h in self._hosts.values() if h.state in states]

    def __len__(self) -> int:
        with self._lock:
            return len(self._hosts)

    def _serve(self, conn: Connection, peer: Address) -> None:
        try:
            kind, info = conn.recv()
        except Exception:  # noqa: BLE001 - a peer that says nothing sensible is dropped
            shutdown_connection(conn)
            return
        if kind != HOST_MESSAGE or not isinstance(info, SparkHostInfo):
            shutdown_connection(conn)
            return
        host = SparkHost(info, conn, threading.current_thread())
        with self._lock:
            self._hosts[info.taskmanager_id] = host
        self._on_report(info)
        _LOG.info("spark backend: TaskManager %s runs in Spark task %d.%d (pid %d on %s)", info.taskmanager_id,
                  info.partition, info.attempt, info.pid, info.host)
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            if isinstance(message, tuple) and message and message[0] == ENDED_MESSAGE:
                with self._lock:
                    host.outcome = str(message[1])
                    host.state = "finished" if host.outcome == "finished" else "failed"
                if host.state == "finished":
                    self._on_finished(info)
        with self._lock:
            if host.state == "running":
                host.state = "lost"
        shutdown_connection(conn)

    def kill(self, taskmanager_id: str) -> bool:
        """SIGKILL the host of a running TaskManager (:func:`send_kill`); False if unknown or ended."""
        with self._lock:
            host = self._hosts.get(taskmanager_id)
            if host is None or host.state != "running":
                return False
            host.state = "killed"
        if send_kill(host):
            _LOG.info("spark backend: killed TaskManager %s (pid %d on %s)", taskmanager_id, host.info.pid,
                      host.info.host)
            return True
        with self._lock:
            host.state = "lost"
        return False

    def close(self) -> None:
        """Stop listening, close every host connection and wait for their threads; forget the hosts."""
        with self._lock:
            listener, self._listener, self._secret = self._listener, None, None
            hosts = list(self._hosts.values())
            self._hosts = {}
        if listener is not None:
            listener.close()
        for host in hosts:
            shutdown_connection(host.conn)
            if host.thread is not threading.current_thread():
                host.thread.join(timeout=5)
