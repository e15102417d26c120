"""Where a MiniCluster's TaskManagers come from: one small interface, one class per kind of backend.

* :class:`LocalTaskManagers` (``local``): TaskExecutor objects in this process sharing one
  in-process shuffle environment (:mod:`.taskmanager.local`).
* :class:`~.taskmanager.remote.RemoteTaskManagers` (``process``, ``spark``): TaskManagers
  started by a :class:`~.taskmanager.launcher.TaskManagerLauncher` in other processes,
  reached over RPC.

Both offer ``replaces_lost`` (whether a lost TaskManager is replaced by itself),
``start(resource_manager, count, slots, first_index)``, ``add(slots)``,
``kill(id)``, ``inject_failure(id, attempt, error)``, ``peek(id, attempt, node, limit, seconds)``, ``live_ids()``, ``describe(id)`` and
``shutdown(timeout)``, which is all :class:`~.minicluster.MiniCluster` needs. The heavy
backends are imported only when chosen (the Spark one imports pyspark).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Optional

from streamkernel.common.options import BackendOptions
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError
from streamkernel.runtime.core.clock import Clock
from streamkernel.runtime.taskmanager.local import local_taskmanager_id, start_local_taskmanagers
from streamkernel.runtime.taskmanager.task_executor import TaskExecutor

__all__ = ["BACKENDS", "BACKEND_KEY", "BACKEND_ENV", "LOCAL_HEARTBEAT_DEFAULTS", "LocalTaskManagers",
           "resolve_backend", "create_taskmanagers", "heartbeat_defaults", "positive_count"]

#: Where TaskManagers can come from: threads in this process, child processes, Spark tasks.
BACKENDS = ("local", "process", "spark")

#: The configuration key naming the backend of a cluster started without an explicit one
#: (the transient cluster of ``env.execute()`` included); its default comes from :data:`BACKEND_ENV`.
BACKEND_KEY = BackendOptions.BACKEND.key()

#: Environment variable giving the default backend (e.g. to run a test suite on ``process``).
BACKEND_ENV = "STREAMKERNEL_BACKEND"

#: ``heartbeat.interval`` / ``heartbeat.timeout`` of the ``local`` backend unless configured.
#: Flink's 10 s / 50 s guard against GC pauses and slow networks between machines; a
#: local TaskManager answers a heartbeat with a method call in this process, which fails
#: only when the TaskManager is dead (``kill_taskmanager``): it is never merely slow, so a
#: short timeout cannot declare a healthy one lost. With 100 ms / 500 ms a killed
#: TaskManager is noticed within about 0.6 s, and a job restarted by Flink's default
#: strategy with checkpoints (exponential delay from 1 s) processes records again well
#: under the issue's 2 s target; a heartbeat round (a few dict copies per task) ten times a
#: second costs nothing measurable. Backends with real processes use longer values
#: (:data:`~.taskmanager.remote.REMOTE_HEARTBEAT_DEFAULTS`).
LOCAL_HEARTBEAT_DEFAULTS = {"heartbeat.interval": "100 ms", "heartbeat.timeout": "500 ms"}


def positive_count(name: str, value: Any) -> int:
    """``value`` as a count of TaskManagers or slots (an int >= 1, or its digits), else InvalidProgramError."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidProgramError(f"MiniCluster: {name} must be an int >= 1, got {value!r}")
    return value


def resolve_backend(backend: Optional[str], configuration: Mapping[str, str]) -> str:
    """The backend to use: ``backend`` if given, else ``streamkernel.backend``, else
    ``$STREAMKERNEL_BACKEND``, else ``local``. Raises IllegalConfigurationError for an unknown one."""
    name = backend or BackendOptions.BACKEND.get(configuration) or os.environ.get(BACKEND_ENV) or "local"
    name = str(name).strip().lower()
    if name not in BACKENDS:
        raise IllegalConfigurationError(
            f"MiniCluster: unknown backend {name!r}; available: {', '.join(BACKENDS)} (local = threads in this "
            f"process, process = one child process per TaskManager, spark = TaskManagers in Spark tasks)")
    return name


def heartbeat_defaults(backend: str) -> dict[str, str]:
    """The heartbeat interval and timeout a backend uses unless configured."""
    if backend == "local":
        return dict(LOCAL_HEARTBEAT_DEFAULTS)
    from streamkernel.runtime.resourcemanager.remote_taskmanagers import REMOTE_HEARTBEAT_DEFAULTS

    return dict(REMOTE_HEARTBEAT_DEFAULTS)


class LocalTaskManagers:
    """The ``local`` backend: TaskExecutors in this process sharing ``shuffle`` and ``clock``."""

    backend = "local"
    #: A killed local TaskManager stays dead until ``add`` starts another one.
    replaces_lost = False

    def __init__(self, shuffle: Any, clock: Clock, working_dir: str,
                 task_factory: Optional[Callable[..., Any]] = None,
                 configuration: Optional[Mapping[str, str]] = None) -> None:
        self.shuffle = shuffle
        self._configuration = configuration
        self._clock = clock
        self._working_dir = working_dir
        self._task_factory = task_factory
        self._resource_manager: Any = None
        self.taskmanagers: list[TaskExecutor] = []  # every one started, killed ones too
        self._next_index = 0
        #: The cluster's log file, where these threads log (each TaskExecutor's ``log_file``).
        self.log_file: Optional[str] = None

    def start(self, resource_manager: Any, count: int, slots: int, first_index: int = 0) -> list[str]:
        """Create ``count`` TaskExecutors and register them."""
        self._resource_manager = resource_manager
        self._next_index = first_index
        return [self._start(slots) for _ in range(count)]

    def _start(self, slots: int) -> str:
        [taskmanager] = start_local_taskmanagers(
            1, slots, self._resource_manager, shuffle=self.shuffle, clock=self._clock,
            working_dir=self._working_dir, first_index=self._next_index, task_factory=self._task_factory,
            configuration=self._configuration)
        self._next_index += 1
        taskmanager.log_file = self.log_file
        self.taskmanagers.append(taskmanager)
        return taskmanager.taskmanager_id

    def add(self, slots: int) -> str:
        """One more TaskExecutor; returns its id."""
        return self._start(slots)

    def _find(self, taskmanager_id: str) -> Optional[TaskExecutor]:
        return next((tm for tm in self.taskmanagers if tm.taskmanager_id == taskmanager_id and not tm.is_killed),
                    None)

    def kill(self, taskmanager_id: str) -> bool:
        """Play the death of a TaskManager's process (:meth:`TaskExecutor.kill`)."""
        taskmanager = self._find(taskmanager_id)
        if taskmanager is None:
            return False
        taskmanager.kill()
        return True

    def inject_failure(self, taskmanager_id: str, attempt_id: Any, error: BaseException) -> bool:
        """Make a running subtask fail with ``error``."""
        taskmanager = self._find(taskmanager_id)
        return False if taskmanager is None else taskmanager.inject_failure(attempt_id, error)

    def peek(self, taskmanager_id: str, attempt_id: Any, node_id: int, limit: int, seconds: float) -> list:
        """The last records an operator of a running subtask emits."""
        taskmanager = self._find(taskmanager_id)
        return [] if taskmanager is None else taskmanager.peek(attempt_id, node_id, limit, seconds)

    def live_ids(self) -> list[str]:
        """TaskManagers not killed."""
        return [tm.taskmanager_id for tm in self.taskmanagers if not tm.is_killed]

    def describe(self, taskmanager_id: str) -> dict[str, Any]:
        """``{"backend": "local", "host", "pid"}``: this process."""
        import socket

        return {"backend": "local", "host": socket.gethostname(), "pid": os.getpid()} \
            if any(tm.taskmanager_id == taskmanager_id for tm in self.taskmanagers) else {}

    def shutdown(self, timeout: float) -> None:
        """Stop every TaskExecutor (joining its task threads)."""
        for taskmanager in self.taskmanagers:
            taskmanager.shutdown(timeout)


def create_taskmanagers(backend: str, configuration: Mapping[str, str], *, shuffle: Any, clock: Clock,
                        working_dir: str, task_factory: Optional[Callable[..., Any]] = None,
                        spark_session: Any = None, spark_master: Optional[str] = None) -> Any:
    """The TaskManagers object of ``backend`` (not started yet); a bad memory key fails here, naming it."""
    from streamkernel.runtime.network.buffer_pool import number_of_network_buffers
    from streamkernel.runtime.taskmanager.memory_watchdog import taskmanager_process_spec, watchdog_interval_seconds

    number_of_network_buffers(configuration, taskmanager_process_spec(configuration))  # segment-size too
    watchdog_interval_seconds(configuration)
    if backend == "local":
        return LocalTaskManagers(shuffle, clock, working_dir, task_factory, configuration)
    if task_factory is not None:
        raise IllegalConfigurationError(f"MiniCluster: a task_factory only works with the local backend, not "
                                        f"{backend!r} (tasks run in other processes there)")
    from streamkernel.runtime.resourcemanager.remote_taskmanagers import RemoteTaskManagers

    if backend == "process":
        from streamkernel.runtime.taskmanager.process import ProcessTaskManagerLauncher

        return RemoteTaskManagers(ProcessTaskManagerLauncher(), configuration, local_taskmanager_id,
                                  replace_lost=True, working_dir=working_dir)
    from streamkernel.runtime.taskmanager.spark import SparkTaskManagerLauncher  # lazy: imports pyspark

    launcher = SparkTaskManagerLauncher(configuration, spark_session=spark_session, master=spark_master)
    return RemoteTaskManagers(launcher, configuration, local_taskmanager_id, replace_lost=False,
                              working_dir=working_dir)
