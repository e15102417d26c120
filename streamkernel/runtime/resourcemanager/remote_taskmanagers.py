"""TaskManagers in other processes, seen from the JobManager: RPC listener, registration, loss, stop.

Flink's *active* ResourceManager (YARN, Kubernetes) asks a resource driver for workers,
learns that one runs when it registers, and when the driver reports a worker terminated it
closes that TaskManager's connection and requests a new worker. :class:`RemoteTaskManagers`
plays that part for the ``process`` and ``spark`` backends around a
:class:`~.launcher.TaskManagerLauncher` (the resource driver):

* it listens for TaskManagers on an authenticated RPC listener
  (``jobmanager.bind-host``, loopback by default; ``jobmanager.rpc.port``, any free port by
  default) and exports the ResourceManager and the :class:`~.driver_services.DriverServices`
  on every connection;
* :meth:`start` launches TaskManagers and waits until all registered
  (``taskmanager.registration.timeout``), failing with the launcher's explanation (exit code,
  stderr tail) when one dies or never comes;
* a TaskManager whose connection closes is unregistered at once (its jobs restart by their
  restart strategies) and, with ``streamkernel.taskmanager.replace-lost`` (default true for
  ``process``), replaced by a new one, as an active ResourceManager requests a new worker; a
  TaskManager that hangs is still found by the heartbeat timeout;
* :meth:`shutdown` asks every TaskManager to shut down over the protocol, then lets the
  launcher make sure no process is left.

Given the cluster's ``working_dir``, every TaskManager it launches (replacements included)
works under it (:data:`~.worker.WORKING_DIR_KEY`), so the cluster removes their files when it
stops even when a process was SIGKILLed; a launcher whose TaskManagers run on other machines
drops that key (their hosts clean up themselves).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Mapping, Optional

from streamkernel.common.options import BackendOptions, HeartbeatManagerOptions, JobManagerOptions, TaskManagerOptions
from streamkernel.errors import StreamKernelError
from streamkernel.runtime.resourcemanager.resource_manager import TaskManagerLostError
from streamkernel.runtime.rpc.connection import RpcConnection
from streamkernel.runtime.rpc.transport import AuthenticatedListener, bind_host, new_cluster_secret
from streamkernel.runtime.taskmanager.driver_services import DRIVER_SERVICES, RESOURCE_MANAGER, DriverServices
from streamkernel.runtime.taskmanager.proxy import TaskExecutorProxy
from streamkernel.runtime.taskmanager.worker import WORKING_DIR_KEY, rpc_timeout_seconds

__all__ = ["RemoteTaskManagers", "TaskManagerStartError", "REMOTE_HEARTBEAT_DEFAULTS", "REPLACE_LOST_KEY",
           "REGISTRATION_TIMEOUT_KEY"]

_LOG = logging.getLogger(__name__)

#: ``heartbeat.interval`` / ``heartbeat.timeout`` for TaskManagers in other processes unless
#: configured: a heartbeat is a TCP round trip to a process that may be busy (a GIL held by
#: a user function, a garbage collection), so it may be late without being dead; a dead
#: process is noticed at once anyway, through its closed connection.
REMOTE_HEARTBEAT_DEFAULTS = {"heartbeat.interval": "1 s", "heartbeat.timeout": "5 s"}

#: Start a new TaskManager when one is lost (true/false).
REPLACE_LOST_KEY = BackendOptions.REPLACE_LOST.key()

#: How long :meth:`RemoteTaskManagers.start` waits for launched TaskManagers to register (Flink's key).
REGISTRATION_TIMEOUT_KEY = TaskManagerOptions.REGISTRATION_TIMEOUT.key()


class TaskManagerStartError(StreamKernelError):
    """TaskManagers could not be started: one died at start-up or did not register in time."""


class _RegistrationDesk:
    """The ResourceManager as exported to TaskManagers: registrations are noted on the way."""

    def __init__(self, resource_manager: Any, on_registered: Callable[[Any], None]) -> None:
        self._resource_manager = resource_manager
        self._on_registered = on_registered

    def register_task_executor(self, gateway: Any, slot_report: Any) -> Any:
        self._on_registered(gateway)
        return self._resource_manager.register_task_executor(gateway, slot_report)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._resource_manager, name)


class RemoteTaskManagers:
    """The TaskManagers a launcher starts, as the JobManager manages them (see the module docstring).

    ``id_of(index)`` names the ``index``-th TaskManager (``taskmanager-1`` ...); ``working_dir``
    (owned and removed by the cluster) is where the TaskManagers make their working directories.
    ``secret``: the cluster secret TaskManagers authenticate with (None: a new one; a standalone
    cluster passes the one of its directory, which TaskManagers started elsewhere read).
    """

    def __init__(self, launcher: Any, configuration: Mapping[str, str], id_of: Callable[[int], str], *,
                 replace_lost: bool = True, working_dir: Optional[str] = None,
                 secret: Optional[bytes] = None) -> None:
        self.launcher = launcher
        self.configuration = dict(configuration)
        if working_dir is not None:
            self.configuration[WORKING_DIR_KEY] = working_dir
        self._id_of = id_of
        self.replaces_lost = BackendOptions.REPLACE_LOST.get(configuration, replace_lost)
        self._timeout = rpc_timeout_seconds(self.configuration)
        self._registration_timeout_s = TaskManagerOptions.REGISTRATION_TIMEOUT.get(self.configuration) \
            .to_milliseconds() / 1000
        heartbeat = REMOTE_HEARTBEAT_DEFAULTS["heartbeat.interval"]
        self._heartbeat_s = HeartbeatManagerOptions.HEARTBEAT_INTERVAL.get(
            self.configuration, HeartbeatManagerOptions.HEARTBEAT_INTERVAL.parse(heartbeat)).to_milliseconds() / 1000
        self.secret = secret or new_cluster_secret()
        self.driver_services = DriverServices()
        # _cond guards every field below; waiters in start()/add() wait for registrations.
        self._cond = threading.Condition()
        self._gateways: dict[str, TaskExecutorProxy] = {}  # registered TaskManager id -> its proxy
        self._unregistered: list[RpcConnection] = []  # connected, not yet registered
        self._launched: list[str] = []
        self._next_index = 0
        self._slots = 1
        self._stopping = False
        self._helpers: list[threading.Thread] = []
        self._resource_manager: Any = None
        self._listener: Optional[AuthenticatedListener] = None

    @property
    def address(self) -> tuple[str, int]:
        """The JobManager's RPC address TaskManagers connect to."""
        assert self._listener is not None, "start() first"
        return self._listener.address

    # ---------------------------------------------------------------- connections
    def _accept(self, conn: Any, peer: tuple[str, int]) -> None:
        rpc = RpcConnection(conn, name=f"JobManager<-{peer[0]}:{peer[1]}", default_timeout=self._timeout,
                            exports={RESOURCE_MANAGER: _RegistrationDesk(self._resource_manager, self._registered),
                                     DRIVER_SERVICES: self.driver_services},
                            on_close=self._connection_closed)
        with self._cond:
            if self._stopping:
                rpc.close(0)
                return
            self._unregistered.append(rpc)
        rpc.start()

    def _registered(self, gateway: Any) -> None:
        if isinstance(gateway, TaskExecutorProxy):
            gateway.heartbeat_timeout = self._heartbeat_s
            with self._cond:
                self._gateways[gateway.taskmanager_id] = gateway
                if gateway.rpc in self._unregistered:
                    self._unregistered.remove(gateway.rpc)
                self._cond.notify_all()

    def _connection_closed(self, rpc: RpcConnection, cause: BaseException) -> None:
        with self._cond:
            if rpc in self._unregistered:
                self._unregistered.remove(rpc)
            lost = [tm for tm, g in self._gateways.items() if g.rpc is rpc]
            for tm in lost:
                del self._gateways[tm]
            if not lost or self._stopping:
                return
            helper = threading.Thread(target=self._handle_loss, args=(lost[0], cause),
                                      name=f"streamkernel-{lost[0]}-lost", daemon=True)
            self._helpers = [t for t in self._helpers if t.is_alive()] + [helper]
            self._cond.notify_all()
        helper.start()

    def _handle_loss(self, taskmanager_id: str, cause: BaseException) -> None:
        """Unregister a TaskManager whose connection closed; start a replacement if configured."""
        failure = getattr(self.launcher, "failure", None)
        why = (failure(taskmanager_id) if failure is not None else None) or f"{type(cause).__name__}: {cause}"
        error = TaskManagerLostError(f"TaskManager {taskmanager_id!r} is lost: its connection closed ({why})")
        _LOG.warning("%s", error)
        try:
            self._resource_manager.unregister_task_executor(taskmanager_id, error)
        except Exception:  # noqa: BLE001
            _LOG.exception("could not unregister TaskManager %s", taskmanager_id)
        with self._cond:
            if self._stopping or not self.replaces_lost:
                return
        try:
            replacement = self._launch(1, self._slots)[0]
            _LOG.warning("started TaskManager %s to replace %s", replacement, taskmanager_id)
        except Exception:  # noqa: BLE001
            _LOG.exception("could not start a TaskManager to replace %s", taskmanager_id)

    # ------------------------------------------------------------------ lifecycle
    def start(self, resource_manager: Any, count: int, slots: int, first_index: int = 0) -> list[str]:
        """Listen, launch ``count`` TaskManagers of ``slots`` slots and wait until all registered."""
        self._resource_manager = resource_manager
        self._slots = slots
        self._next_index = first_index
        # a launcher may know better (spark: the driver's reachable spark.driver.host on a cluster)
        reachable = getattr(self.launcher, "jobmanager_bind_host", None)
        host = reachable() if reachable is not None else bind_host(self.configuration, JobManagerOptions.BIND_HOST)
        port = JobManagerOptions.RPC_PORT.get(self.configuration)
        self._listener = AuthenticatedListener((host, port), self.secret, self._accept, name="jobmanager-rpc")
        try:
            ids = self._launch(count, slots)
            self._await_registration(ids)
        except BaseException:
            self.shutdown(self._timeout)
            raise
        return ids

    def _launch(self, count: int, slots: int) -> list[str]:
        with self._cond:
            ids = [self._id_of(self._next_index + i) for i in range(count)]
            self._next_index += count
            self._launched.extend(ids)
        assert self._listener is not None
        self.launcher.launch(ids, slots, self._listener.address, self.secret, self.configuration)
        return ids

    def _await_registration(self, ids: list[str]) -> None:
        deadline = time.monotonic() + self._registration_timeout_s
        failure = getattr(self.launcher, "failure", None)
        with self._cond:
            while True:
                missing = [tm for tm in ids if tm not in self._gateways]
                if not missing:
                    return
                for tm in missing:
                    why = failure(tm) if failure is not None else None
                    if why is not None:
                        raise TaskManagerStartError(
                            f"TaskManager {tm!r} ({type(self.launcher).__name__}) ended before it registered with "
                            f"the JobManager: {why}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TaskManagerStartError(
                        f"TaskManager(s) {', '.join(missing)} did not register with the JobManager at "
                        f"{self.address[0]}:{self.address[1]} within {self._registration_timeout_s:.0f} s "
                        f"({REGISTRATION_TIMEOUT_KEY}); is that address reachable from where they run "
                        f"(jobmanager.bind-host)?")
                self._cond.wait(min(remaining, 0.1))

    def add(self, slots: int) -> str:
        """Launch one more TaskManager and wait until it registered; returns its id."""
        [taskmanager_id] = self._launch(1, slots)
        self._await_registration([taskmanager_id])
        return taskmanager_id

    def kill(self, taskmanager_id: str) -> bool:
        """Kill the process hosting a TaskManager (failure injection)."""
        return bool(self.launcher.kill(taskmanager_id))

    def inject_failure(self, taskmanager_id: str, attempt_id: Any, error: BaseException) -> bool:
        """Make a running subtask of a TaskManager fail with ``error`` (over RPC)."""
        with self._cond:
            gateway = self._gateways.get(taskmanager_id)
        return False if gateway is None else bool(gateway.inject_failure(attempt_id, error))

    def peek(self, taskmanager_id: str, attempt_id: Any, node_id: int, limit: int, seconds: float) -> list:
        """The last records an operator of a running subtask of a TaskManager emits (over RPC)."""
        with self._cond:
            gateway = self._gateways.get(taskmanager_id)
        return [] if gateway is None else list(gateway.peek(attempt_id, node_id, limit, seconds))

    def live_ids(self) -> list[str]:
        """The registered TaskManagers whose connection is open."""
        with self._cond:
            return [tm for tm, g in self._gateways.items() if not g.rpc.closed]

    def gateway(self, taskmanager_id: str) -> Any:
        """The TaskExecutorProxy of a registered TaskManager (KeyError when unknown)."""
        return self._resource_manager.task_executor_gateway(taskmanager_id)

    def describe(self, taskmanager_id: str) -> dict[str, Any]:
        """The launcher's description of a TaskManager's host."""
        return dict(self.launcher.describe(taskmanager_id) or {})

    #: Whether stopping asks the TaskManagers to shut down. False for a JobManager of a highly available
    #: cluster: its TaskManagers only lose the connection, and follow the next leader.
    shuts_down_taskmanagers = True

    def shutdown(self, timeout: float) -> None:
        """Ask every TaskManager to shut down (unless :attr:`shuts_down_taskmanagers` is False), close the
        listener and connections, stop the launcher."""
        with self._cond:
            self._stopping = True
            gateways = dict(self._gateways)
            waiting = list(self._unregistered)
            helpers = list(self._helpers)
        if self._listener is not None:
            self._listener.close()
        for helper in helpers:
            helper.join(timeout)
        stoppers = []
        for taskmanager_id, proxy in (gateways.items() if self.shuts_down_taskmanagers else ()):
            stopper = threading.Thread(target=_shutdown_quietly, args=(proxy, timeout),
                                       name=f"streamkernel-{taskmanager_id}-shutdown", daemon=True)
            stopper.start()
            stoppers.append(stopper)
        for stopper in stoppers:
            stopper.join(timeout + self._timeout)
        try:
            self.launcher.stop(timeout)
        finally:
            for rpc in [*(g.rpc for g in gateways.values()), *waiting]:
                rpc.close(1.0)


def _shutdown_quietly(proxy: TaskExecutorProxy, timeout: float) -> None:
    try:
        proxy.shutdown(timeout)
    except Exception as error:  # noqa: BLE001 - gone already: the launcher ends the process
        _LOG.debug("TaskManager %s did not confirm its shutdown: %s", proxy.taskmanager_id, error)
