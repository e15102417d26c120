"""The TaskManager entry point for other processes: a child process or a Spark task runs this.

:func:`run_taskmanager` runs one TaskManager in the calling process: it connects to the
JobManager's RPC listener with the cluster secret, builds the same
:class:`~.task_executor.TaskExecutor` as the ``local`` backend (with a network shuffle
environment: channels to tasks in other TaskManagers are TCP connections to their data
listeners), registers its slots with the ResourceManager, and serves until the JobManager
tells it to shut down or the connection is lost (then its tasks are stopped first). While
it runs, the process's ``sys.stdout`` / ``sys.stderr`` go to the driver and the plan's
collect and pandas sinks write to the driver's live objects (:mod:`.forwarding`).

``python -m streamkernel.runtime.taskmanager.worker --jobmanager HOST:PORT --taskmanager-id
ID --slots N [-D key=value ...]`` runs it from a command line; the secret comes from the
:data:`~streamkernel.runtime.rpc.transport.AUTHKEY_ENV` environment variable (hex), never
from the command line. That command also exits when its parent process dies.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
from typing import Any, Callable, Mapping, Optional, Sequence

from streamkernel.common.options import CoreOptions, RpcOptions, TaskManagerOptions
from streamkernel.runtime.metrics.reporter_setup import ReporterStartError
from streamkernel.runtime.rpc.connection import GatewayRef, RpcConnection
from streamkernel.runtime.rpc.transport import AUTHKEY_ENV, ConnectionRefusedByPeerError, bind_host, connect
from streamkernel.runtime.taskmanager.driver_services import DRIVER_SERVICES, RESOURCE_MANAGER
from streamkernel.runtime.taskmanager.forwarding import WorkerForwarding

__all__ = ["run_taskmanager", "main", "taskmanager_arguments", "rpc_timeout_seconds", "switch_interval_seconds", "use_switch_interval",
           "FORWARD_OUTPUT_KEY", "WORKING_DIR_KEY", "LOG_FILE_KEY", "ENDED_SHUTDOWN", "ENDED_CONNECTION_LOST",
           "ENDED_STOPPED", "ENDED_DISCONNECTED"]

_LOG = logging.getLogger(__name__)

#: ``false`` keeps the TaskManager's stdout/stderr in its own process (tests running a worker in a thread).
FORWARD_OUTPUT_KEY = TaskManagerOptions.FORWARD_OUTPUT.key()
#: The directory the cluster owns for its TaskManagers: each works in ``<dir>/<taskmanager id>``
#: (its RocksDB files included) and the cluster removes the whole tree when it stops, also
#: after a TaskManager was SIGKILLed and could not clean up. Without it a TaskManager makes
#: its own temporary directory (under ``io.tmp.dirs``) and removes it when it ends normally.
WORKING_DIR_KEY = TaskManagerOptions.WORKING_DIR.key()
_POLL_S = 0.2
#: Flink's key naming a process's log file (a TaskManager reports it at registration).
LOG_FILE_KEY = "log.file"
#: Why :func:`run_taskmanager` returned.
ENDED_SHUTDOWN, ENDED_CONNECTION_LOST, ENDED_STOPPED = "shutdown", "connection lost", "stopped"
#: Why :func:`run_taskmanager` returned when its ``disconnect_event`` was set (the JobManager it served
#: no longer leads: the TaskManager closed the connection, and may register with the new leader).
ENDED_DISCONNECTED = "disconnected"


def rpc_timeout_seconds(configuration: Mapping[str, str]) -> float:
    """Flink's ``pekko.ask.timeout`` (1.x ``akka.ask.timeout``): how long an RPC call waits, default 10 s."""
    return RpcOptions.ASK_TIMEOUT.get(configuration).to_milliseconds() / 1000


def switch_interval_seconds(configuration: Mapping[str, str]) -> float:
    """The switch interval a TaskManager process runs with (``streamkernel.taskmanager.switch-interval``,
    default 1 ms); a ValueError naming the key when it is not positive (the launcher checks before it starts)."""
    interval = TaskManagerOptions.SWITCH_INTERVAL.get(configuration)
    seconds = interval.to_nanos() / 1e9
    if seconds <= 0:
        raise ValueError(f"configuration key {TaskManagerOptions.SWITCH_INTERVAL.key()}: the switch interval must be "
                         f"positive, got {interval}")
    return seconds


def use_switch_interval(configuration: Mapping[str, str]) -> None:
    """Set this process's switch interval for a TaskManager (a process that hosts nothing else).

    A network thread that wakes up from a read needs the GIL, and a busy task thread gives
    it up only after the switch interval: with Python's 5 ms, a batch and its credit spend
    5 ms per hop between two TaskManagers whose tasks keep their GILs busy, so the credits
    of a channel ran out long before the round trip ended (W2 of bench/bench_scaleout.py).
    """
    sys.setswitchinterval(switch_interval_seconds(configuration))


def _shuffle_environment(taskmanager_id: str, secret: bytes, configuration: Mapping[str, str]) -> Any:
    try:
        from streamkernel.runtime.network.network_shuffle import NetworkShuffleEnvironment
    except ImportError:  # pragma: no cover - until the network shuffle lands
        from streamkernel.runtime.network.shuffle import LocalShuffleEnvironment

        _LOG.warning("TaskManager %s: no network shuffle available; channels to other TaskManagers will not "
                     "work", taskmanager_id)
        return LocalShuffleEnvironment()
    return NetworkShuffleEnvironment(taskmanager_id, secret, bind_host(configuration, TaskManagerOptions.BIND_HOST))


def _adopt_driver_environment(environment: Mapping[str, Any]) -> None:
    """Append the driver's ``sys.path`` entries this process lacks (so user modules import alike)."""
    for entry in environment.get("sys_path", ()):
        if entry not in sys.path and (entry == "" or os.path.exists(entry)):
            sys.path.append(entry)


def run_taskmanager(jobmanager_address: tuple[str, int], secret: bytes, taskmanager_id: str, slots: int,
                    configuration: Mapping[str, str], *, stop_event: Optional[threading.Event] = None,
                    disconnect_event: Optional[threading.Event] = None, enforce_process_size: bool = False,
                    before_oom_exit: Optional[Callable[[BaseException], None]] = None) -> str:
    """Run one TaskManager in this process until the JobManager stops it or the connection is lost.

    Returns why it ended: :data:`ENDED_SHUTDOWN` (the JobManager told it to),
    :data:`ENDED_CONNECTION_LOST` (the JobManager is gone), :data:`ENDED_STOPPED` (``stop_event``) or
    :data:`ENDED_DISCONNECTED` (``disconnect_event``: high availability's fencing, the JobManager no
    longer leads; its tasks end and the connection is closed as with ``stop_event``).

    ``configuration`` holds Flink keys (``taskmanager.bind-host`` for the data listener,
    ``pekko.ask.timeout``, ``io.tmp.dirs``, :data:`WORKING_DIR_KEY`; ``taskmanager.forward-output:
    false`` keeps stdout here). Setting ``stop_event`` stops it too (as a lost connection does). Raises
    ConnectionRefusedByPeerError when the JobManager cannot be reached or refuses the secret.
    ``log.file`` (Flink's key), when set, is reported at registration (the REST API serves it).
    ``enforce_process_size`` (the process is this TaskManager's alone: the worker command, a Spark task):
    above ``taskmanager.memory.process.size`` the TaskManager reports why to the ResourceManager and the
    process exits with code 137 (:mod:`.memory_watchdog`); otherwise its RSS is only measured.
    ``before_oom_exit(error)`` runs just before that exit, which skips every ``finally`` (the Spark host
    reports the error to its launcher and removes its working directory).
    The metric reporters ``metrics.reporter.<name>.*`` configure (Flink's Prometheus reporter) serve this
    TaskManager's metrics on ``taskmanager.bind-host`` while it runs (:mod:`.metric_groups`); a wrong key,
    or no free port left in the reporter's range, fails the start naming the key.
    """
    from streamkernel.runtime.core.clock import SystemClock
    from streamkernel.runtime.metrics.registry import MetricRegistry
    from streamkernel.runtime.taskmanager.memory_watchdog import ProcessMemoryWatchdog
    from streamkernel.runtime.taskmanager.metric_groups import TaskManagerMetricGroups
    from streamkernel.runtime.taskmanager.task_executor import TaskExecutor
    from streamkernel.runtime.network.buffer_pool import network_buffer_pool_from_config
    from streamkernel.runtime.tasks.task import TaskServices

    conf = {str(k): str(v) for k, v in configuration.items()}
    timeout = rpc_timeout_seconds(conf)
    metrics = MetricRegistry.from_configuration(conf, bind_host(conf, TaskManagerOptions.BIND_HOST))  # keys checked
    # the memory spec, once, before anything starts (a bad key fails here, naming it)
    watchdog = ProcessMemoryWatchdog.from_configuration(
        taskmanager_id, conf, enforce=enforce_process_size,
        on_exceeded=lambda error: _exit_exceeding_process_size(error, taskmanager_id, rpc, timeout, before_oom_exit))
    network_buffers = network_buffer_pool_from_config(conf, watchdog.spec)  # its network memory / segment size
    forwarding = WorkerForwarding()
    rpc = RpcConnection(connect((jobmanager_address[0], jobmanager_address[1]), secret, timeout), name=f"{taskmanager_id}->JobManager",
                        hooks=forwarding.hooks, default_timeout=timeout)
    forwarding.bind(rpc)
    rpc.start()
    shuffle: Any = None
    working_dir: Optional[str] = None
    task_executor: Optional[TaskExecutor] = None
    ended: Optional[str] = None
    try:
        _adopt_driver_environment(rpc.call(DRIVER_SERVICES, "worker_environment"))
        shuffle = _shuffle_environment(taskmanager_id, secret, conf)
        working_dir = _make_working_dir(taskmanager_id, conf)
        services = TaskServices(shuffle=shuffle, clock=SystemClock(), taskmanager_id=taskmanager_id,
                                working_dir=working_dir, network_buffer_pool=network_buffers)
        task_executor = TaskExecutor(  # each slot's managed memory: its share of the spec computed above
            taskmanager_id, int(slots), services,
            managed_memory_per_slot=watchdog.spec.flink_memory.managed.divide(max(1, int(slots))).get_bytes(),
            configuration=conf)
        task_executor.log_file = conf.get(LOG_FILE_KEY) or None
        task_executor.memory_watchdog = watchdog
        watchdog.attach(task_executor)
        watchdog.start()  # its baseline: this process before any task ran
        metrics.add_source(TaskManagerMetricGroups(task_executor))
        metrics.start()
        resource_manager = rpc.proxy(GatewayRef(RESOURCE_MANAGER, "ResourceManagerGateway"))
        forward = TaskManagerOptions.FORWARD_OUTPUT.get(conf)
        if forward:
            with forwarding.redirect_output():
                ended = _serve(task_executor, resource_manager, rpc, stop_event, disconnect_event)
        else:
            ended = _serve(task_executor, resource_manager, rpc, stop_event, disconnect_event)
        return ended
    finally:
        metrics.close()
        watchdog.stop()
        if ended == ENDED_DISCONNECTED:  # fenced: not even the tasks' ends reach a JobManager that no longer leads
            rpc.close(timeout)
        if task_executor is not None and task_executor.is_running:
            task_executor.shutdown(timeout)  # connection lost or stop_event: tasks end first
        rpc.close(timeout)
        close = getattr(shuffle, "close", None)
        if close is not None:
            close()
        if working_dir is not None:
            shutil.rmtree(working_dir, ignore_errors=True)


def _exit_exceeding_process_size(error: BaseException, taskmanager_id: str, rpc: RpcConnection, timeout: float,
                                 before_exit: Optional[Callable[[BaseException], None]] = None) -> None:
    """Die as a container's OOM kill would, but explained: the error goes to this process's stderr and, as
    the cause of the TaskManager's loss, to the ResourceManager (its jobs restart); then exit 137."""
    from streamkernel.runtime.rpc.serialization import portable_exception
    from streamkernel.runtime.taskmanager.memory_watchdog import OOM_EXIT_CODE

    try:
        os.write(2, f"streamkernel worker {taskmanager_id}: {error}\n".encode("utf-8", errors="replace"))
    except OSError:
        pass
    try:
        rpc.call(RESOURCE_MANAGER, "unregister_task_executor", (taskmanager_id, portable_exception(error)),
                 timeout=timeout)
    except Exception:  # noqa: BLE001 - the JobManager still learns of the loss through the closed connection
        _LOG.exception("TaskManager %s could not report why it exits", taskmanager_id)
    if before_exit is not None:
        try:
            before_exit(error)
        except Exception:  # noqa: BLE001 - exit all the same
            _LOG.exception("TaskManager %s: its exit hook failed", taskmanager_id)
    os._exit(OOM_EXIT_CODE)


def _make_working_dir(taskmanager_id: str, conf: Mapping[str, str]) -> str:
    """``<WORKING_DIR_KEY>/<taskmanager_id>`` when the cluster gave a directory, else a new temporary one."""
    base = (TaskManagerOptions.WORKING_DIR.get(conf) or "").strip()
    if not base:
        return tempfile.mkdtemp(prefix=f"streamkernel-{taskmanager_id}-", dir=CoreOptions.TMP_DIRS.get(conf))
    directory = os.path.join(base, taskmanager_id)
    os.makedirs(directory, exist_ok=True)
    return directory


def _serve(task_executor: Any, resource_manager: Any, rpc: RpcConnection, stop_event: Optional[threading.Event],
           disconnect_event: Optional[threading.Event] = None) -> str:
    if disconnect_event is not None and disconnect_event.is_set():
        return ENDED_DISCONNECTED  # fenced before it registered: never serve that JobManager
    task_executor.register_at(resource_manager)
    _LOG.info("TaskManager %s registered (index %s)", task_executor.taskmanager_id, task_executor.index)
    wait = stop_event.wait if stop_event is not None else threading.Event().wait
    while task_executor.is_running and not rpc.closed:
        if disconnect_event is not None and disconnect_event.is_set():
            return ENDED_DISCONNECTED
        if wait(_POLL_S):
            return ENDED_STOPPED
    return ENDED_SHUTDOWN if not task_executor.is_running else ENDED_CONNECTION_LOST


# ----------------------------------------------------------------------- command line
def taskmanager_arguments(prog: str, description: str, jobmanager_required: bool = True) -> argparse.ArgumentParser:
    """The command line every TaskManager process takes (``--jobmanager HOST:PORT
    --taskmanager-id ID --slots N [-D key=value ...]``; the secret comes from the environment).
    ``jobmanager_required=False``: ``--jobmanager`` may be left out (a TaskManager following the leader)."""
    parser = argparse.ArgumentParser(prog=prog, description=f"{description} The cluster secret is read (hex) "
                                                            f"from ${AUTHKEY_ENV}.")
    parser.add_argument("--jobmanager", required=jobmanager_required, default=None,
                        help="HOST:PORT of the JobManager's RPC listener")
    parser.add_argument("--taskmanager-id", required=True, help="this TaskManager's id")
    parser.add_argument("--slots", type=int, required=True, help="number of task slots")
    parser.add_argument("-D", dest="dynamic", action="append", default=[], metavar="KEY=VALUE",
                        help="a configuration entry (Flink's dynamic properties); repeatable")
    return parser


def _parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    return taskmanager_arguments("python -m streamkernel.runtime.taskmanager.worker",
                                 "Run one streamkernel TaskManager connected to a JobManager.").parse_args(argv)


def _watch_parent(stop: threading.Event) -> None:
    parent = os.getppid()
    while not stop.wait(1.0):
        if os.getppid() != parent:  # re-parented: the driver is gone
            stop.set()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Command-line entry point; returns the exit code (2: bad arguments or no secret)."""
    args = _parse(argv)
    secret_hex = os.environ.pop(AUTHKEY_ENV, "")
    if not secret_hex:
        print(f"streamkernel worker: the cluster secret is missing: set ${AUTHKEY_ENV} (hex)", file=sys.stderr)
        return 2
    host, _, port = args.jobmanager.rpartition(":")
    configuration = dict(entry.split("=", 1) for entry in args.dynamic if "=" in entry)
    logging.basicConfig(level=logging.WARNING, format=f"[{args.taskmanager_id}] %(levelname)s %(name)s: %(message)s")
    use_switch_interval(configuration)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=_watch_parent, args=(stop,), name="streamkernel-parent-watch", daemon=True).start()
    try:
        run_taskmanager((host, int(port)), bytes.fromhex(secret_hex), args.taskmanager_id, args.slots, configuration,
                        stop_event=stop, enforce_process_size=True)
    except (ConnectionRefusedByPeerError, ReporterStartError) as error:  # the JobManager is gone; no free port
        print(f"streamkernel worker {args.taskmanager_id}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through the process backend
    sys.exit(main())
