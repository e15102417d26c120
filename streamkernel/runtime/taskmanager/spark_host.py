"""The host of one TaskManager inside a Spark task: the code that runs in a Spark executor's Python worker.

A Spark task of the launcher's background job calls :func:`run_host` with its partition
index. The host

1. names its TaskManager after the id it was launched as and the task's attempt number
   (:func:`spark_taskmanager_id`): Spark relaunches a killed task as attempt + 1, which
   therefore registers as a *new* TaskManager, as a replacement container does in Flink;
2. reports itself (host name, pid, partition, attempt) to the launcher over an
   authenticated connection and keeps it open: the launcher's :meth:`describe` shows where
   each TaskManager runs, and ``kill`` on a remote executor is a message over it (on the
   driver's machine the launcher sends SIGKILL itself);
3. runs :func:`streamkernel.runtime.taskmanager.worker.run_taskmanager` (its data
   listener on ``taskmanager.bind-host``, by default the address this machine reaches the
   JobManager from: :func:`reachable_address`) until the
   JobManager tells the TaskManager to stop (the task then *succeeds*, and Spark does not
   relaunch it) or the TaskManager dies (the task fails, and Spark relaunches it).

Its TaskManager's working directory: under the cluster's own directory when the launcher
passed one (local masters: the driver removes it at stop); on another machine under
:func:`host_working_dir`, a directory named after the cluster and the launched id, so the
attempt Spark relaunches after a kill (no ``finally`` ran in the killed one) removes what
its predecessor left, and the host removes it when its TaskManager ends.

The control connection carries only these host messages; everything a TaskManager does goes
through the JobManager <-> TaskManager protocol. Nothing here imports pyspark at module level.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable, Mapping, Optional

from streamkernel.common.options import CoreOptions, TaskManagerOptions

__all__ = ["SparkHostInfo", "spark_taskmanager_id", "machine_identity", "run_host", "shutdown_connection",
           "reachable_address", "host_working_dir",
           "HOST_MESSAGE", "ENDED_MESSAGE", "KILL_MESSAGE"]

_LOG = logging.getLogger(__name__)

#: host -> launcher, once: ``(HOST_MESSAGE, SparkHostInfo)``.
HOST_MESSAGE = "host"
#: host -> launcher when the TaskManager returned or raised: ``(ENDED_MESSAGE, outcome)``.
ENDED_MESSAGE = "ended"
#: launcher -> host: SIGKILL yourself (failure injection on an executor of another machine).
KILL_MESSAGE = "kill"


def spark_taskmanager_id(launched_as: str, attempt: int) -> str:
    """The id of the TaskManager run by attempt ``attempt`` of the Spark task launched for ``launched_as``.

    The first attempt keeps the id; a relaunch is a new TaskManager: ``taskmanager-1.1``,
    ``taskmanager-1.2`` ...

        >>> spark_taskmanager_id("taskmanager-1", 0), spark_taskmanager_id("taskmanager-1", 2)
        ('taskmanager-1', 'taskmanager-1.2')
    """
    return launched_as if attempt <= 0 else f"{launched_as}.{attempt}"


def machine_identity() -> tuple[str, str, str]:
    """(host name, boot id, pid namespace) of this process: equal tuples mean pids are comparable.

    A pid means the same process only on the same kernel and in the same pid namespace
    (containers share host names but not pid namespaces).
    """
    def read(path: str, how: Callable[[str], str]) -> str:
        try:
            return how(path)
        except OSError:
            return ""

    boot_id = read("/proc/sys/kernel/random/boot_id", lambda p: open(p, encoding="ascii").read().strip())
    pid_ns = read("/proc/self/ns/pid", os.readlink)
    return (socket.gethostname(), boot_id, pid_ns)


@dataclass(frozen=True)
class SparkHostInfo:
    """Where one TaskManager runs: the Spark task hosting it and that task's Python worker process."""

    taskmanager_id: str
    launched_as: str
    partition: int
    attempt: int
    task_attempt_id: int
    host: str
    pid: int
    machine: tuple[str, str, str]
    started_at: float


def shutdown_connection(conn: Connection) -> None:
    """Close ``conn`` so that a thread blocked in ``conn.recv()`` wakes up (with EOF).

    Closing a descriptor does not wake a blocked ``recv`` on Linux; shutting the socket down
    does, so shut it down through a duplicate of the descriptor, then close.
    """
    try:
        duplicate = socket.socket(fileno=os.dup(conn.fileno()))
    except OSError:
        duplicate = None
    if duplicate is not None:
        try:
            duplicate.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        finally:
            duplicate.close()
    try:
        conn.close()
    except OSError:
        pass


class _ControlChannel:
    """The host's end of its connection to the launcher: reports, and obeys ``kill``."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._send_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="streamkernel-spark-host-control", daemon=True)
        self._reader.start()

    @classmethod
    def open(cls, address: Optional[tuple[str, int]], secret: bytes, info: SparkHostInfo) -> Optional["_ControlChannel"]:
        if address is None:
            return None
        from streamkernel.runtime.rpc.transport import connect

        try:
            conn = connect(tuple(address), secret, timeout=10.0)  # type: ignore[arg-type]
            conn.send((HOST_MESSAGE, info))
        except Exception as exc:  # the TaskManager runs anyway; only describe/kill lose it
            _LOG.warning("TaskManager %s could not report to its launcher at %s: %s", info.taskmanager_id,
                         address, exc)
            return None
        return cls(conn)

    def _read(self) -> None:
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                return
            if message == (KILL_MESSAGE,):
                os.kill(os.getpid(), signal.SIGKILL)

    def ended(self, outcome: str) -> None:
        with self._send_lock:
            try:
                self._conn.send((ENDED_MESSAGE, outcome))
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        shutdown_connection(self._conn)
        self._reader.join(timeout=5)


def reachable_address(peer: tuple[str, int]) -> str:
    """The address of this machine on the route to ``peer`` (no packet is sent).

    A TaskManager's data listener must be reachable by the other TaskManagers; the address
    the JobManager is reached from is the best guess without configuration: 127.0.0.1 when
    the JobManager listens on loopback (local masters), the executor's own network address
    on a cluster.
    """
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((peer[0], int(peer[1]) or 9))
            return str(probe.getsockname()[0])
    except OSError:
        return socket.gethostname()


def host_base_dir(cluster: str, launched_as: str, configuration: Mapping[str, str]) -> str:
    """``<io.tmp.dirs or the temp dir>/streamkernel-<cluster>-<launched_as>``: where the
    TaskManagers launched as ``launched_as`` work on the machine of their Spark task."""
    import tempfile

    root = (CoreOptions.TMP_DIRS.get(configuration) or "").strip() or tempfile.gettempdir()
    return os.path.join(root, f"streamkernel-{cluster}-{launched_as}")


def host_working_dir(cluster: str, launched_as: str, configuration: Mapping[str, str]) -> str:
    """The base directory of the TaskManagers launched as ``launched_as`` on this machine, emptied.

    The same for every attempt of that Spark task (:func:`host_base_dir`), so a relaunched
    attempt removes the files of a killed one.
    """
    base = host_base_dir(cluster, launched_as, configuration)
    shutil.rmtree(base, ignore_errors=True)  # an earlier attempt's, killed before it could clean up
    os.makedirs(base, exist_ok=True)
    return base


def _default_entry(before_oom_exit: Optional[Callable[[BaseException], None]] = None) -> Callable[..., object]:
    import functools

    from streamkernel.runtime.taskmanager.worker import run_taskmanager

    # the Python worker is the TaskManager's: it enforces the process size
    return functools.partial(run_taskmanager, enforce_process_size=True, before_oom_exit=before_oom_exit)


def run_host(partition: int, spec: Mapping[str, Any]) -> list[tuple[str, int, int, str]]:
    """Run the TaskManager of Spark partition ``partition`` in this Spark task; returns its summary.

    ``spec`` (plain data, pickled into the task's closure) holds ``ids`` (one per partition),
    ``slots``, ``jobmanager_address``, ``secret``, ``configuration``, ``launcher_address``,
    ``cluster`` (the launcher's cluster id) and an optional ``worker_entry`` replacing ``run_taskmanager`` (tests). The result, one
    ``(taskmanager_id, attempt, pid, outcome)`` tuple, is what the job collects.
    Exceptions of the TaskManager propagate: the Spark task fails and Spark relaunches it.
    """
    from pyspark import TaskContext  # only ever imported inside a Spark task

    context = TaskContext.get()
    attempt = int(context.attemptNumber()) if context is not None else 0
    task_attempt_id = int(context.taskAttemptId()) if context is not None else -1
    launched_as = str(spec["ids"][partition])
    taskmanager_id = spark_taskmanager_id(launched_as, attempt)
    info = SparkHostInfo(taskmanager_id, launched_as, partition, attempt, task_attempt_id, socket.gethostname(),
                         os.getpid(), machine_identity(), time.time())
    secret: bytes = spec["secret"]
    control = _ControlChannel.open(spec.get("launcher_address"), secret, info)
    own_dir: Optional[str] = None

    def before_oom_exit(error: BaseException) -> None:
        """The watchdog's exit 137 skips the ``finally`` below: say why and clean up first."""
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)
        if control is not None:
            control.ended(f"failed: {type(error).__name__}: {error} (the Python worker exits with code 137)")

    entry = spec.get("worker_entry") or _default_entry(before_oom_exit)
    configuration = dict(spec["configuration"])
    if not (TaskManagerOptions.BIND_HOST.get(configuration) or "").strip():
        configuration[TaskManagerOptions.BIND_HOST.key()] = reachable_address(tuple(spec["jobmanager_address"]))
    if not (TaskManagerOptions.WORKING_DIR.get(configuration) or "").strip():  # not on the driver's machine
        own_dir = configuration[TaskManagerOptions.WORKING_DIR.key()] = host_working_dir(str(spec.get("cluster", "spark")), launched_as,
                                                                    configuration)
    from streamkernel.runtime.taskmanager.worker import use_switch_interval

    use_switch_interval(configuration)  # this Python worker hosts the TaskManager alone while it runs
    outcome = "finished"
    try:
        entry(tuple(spec["jobmanager_address"]), secret, taskmanager_id, int(spec["slots"]), configuration)
    except BaseException as exc:
        outcome = f"failed: {type(exc).__name__}: {exc}"
        raise
    finally:
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)
        if control is not None:
            control.ended(outcome)
            control.close()
    return [(taskmanager_id, attempt, os.getpid(), outcome)]
