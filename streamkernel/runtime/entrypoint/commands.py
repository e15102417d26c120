"""What ``streamkernel cluster|jobmanager|taskmanager start|stop|status`` do (the argparse is :mod:`.cli`).

Each function starts or stops processes of one cluster directory (:mod:`.cluster_dir`),
returns the lines to print, and raises :class:`StandaloneClusterError` with a one-line
message (the command prints it and exits 1) for bad input: a second cluster in a directory
whose cluster runs, no cluster to stop, no JobManager at ``-m``, a JobManager that rejected
its configuration (its own first line of error). Starts racing in one directory are ordered
by the directory's locks (:mod:`.directory_lock`): one JobManager, distinct TaskManager numbers.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Optional

from streamkernel.runtime.entrypoint.cluster_dir import (
    JOBMANAGER,
    LOG_FILE_KEY,
    TASKEXECUTOR,
    ClusterDir,
    host_name,
    process_alive,
)
from streamkernel.runtime.entrypoint.directory_lock import FileLock, LockError
from streamkernel.runtime.entrypoint.jobmanager_rest import (
    StandaloneClusterError,
    get_json,
    registered_ids,
    rest_url_of,
    rpc_address_of,
)
from streamkernel.runtime.entrypoint.leader_rest import LeaderRest, high_availability_configured
from streamkernel.runtime.rpc.transport import AUTHKEY_ENV

__all__ = ["StandaloneClusterError", "StartedTaskManager", "start_cluster", "stop_cluster", "cluster_status", "start_jobmanager",
           "stop_jobmanager", "start_taskmanager", "stop_taskmanager", "START_TIMEOUT_S"]

#: How long a start waits for the JobManager to serve and each TaskManager to register.
START_TIMEOUT_S = 120.0
#: How long a stop waits for a process to exit after SIGTERM before it SIGKILLs it.
STOP_TIMEOUT_S = 30.0
_POLL_S = 0.1
#: How long a stopped JobManager's TaskManagers get to exit by themselves before they are signalled.
TASKMANAGERS_LEAVE_S = 5.0


class StartedTaskManager(NamedTuple):
    """A TaskManager process :func:`start_taskmanager` started: its pid, id and number N in the directory (taskexecutor-N)."""

    pid: int
    taskmanager_id: str
    number: int


# --------------------------------------------------------------------------- processes
def _environment(secret: Optional[bytes] = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(AUTHKEY_ENV, None)
    if secret is not None:
        env[AUTHKEY_ENV] = secret.hex()
    package_init = __import__("streamkernel").__file__
    assert package_init is not None
    root = os.path.dirname(os.path.dirname(os.path.abspath(package_init)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _spawn(module: str, arguments: list[str], out_file: Path, env: Mapping[str, str],
           pass_fds: tuple[int, ...] = ()) -> subprocess.Popen:
    """Start ``python -m module`` detached: its own session, stdin closed, stdout+stderr to ``out_file``,
    no descriptor of ours but ``pass_fds``."""
    with open(out_file, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", module, *arguments], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=dict(env), start_new_session=True, close_fds=True,
                                pass_fds=pass_fds)


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _died(process: subprocess.Popen, what: str, out_file: Path) -> StandaloneClusterError:
    line = _last_line(out_file)
    return StandaloneClusterError(f"the {what} (pid {process.pid}) exited with code {process.returncode}"
                                  + (f": {line}" if line else f"; see {out_file}"))


def _terminate(pids: list[int], timeout: float = STOP_TIMEOUT_S) -> list[int]:
    """SIGTERM each of our running ``pids``, wait until they exited, SIGKILL their groups after ``timeout``;
    returns the pids that were running."""
    running = [pid for pid in pids if process_alive(pid)]
    for pid in running:
        _signal(pid, signal.SIGTERM)
    if not _wait_gone(running, timeout):
        for pid in running:
            if process_alive(pid):
                try:
                    os.killpg(pid, signal.SIGKILL)  # each was started as its session's leader
                except (ProcessLookupError, PermissionError):
                    _signal(pid, signal.SIGKILL)
        _wait_gone(running, 10.0)
    return running


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(pids: list[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while any(process_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_S)
    return True


# --------------------------------------------------------------------------- JobManager
def _running_jobmanager(directory: ClusterDir) -> Optional[int]:
    pid = directory.pids(JOBMANAGER).get(0)
    return pid if pid is not None and process_alive(pid) else None


def start_jobmanager(directory: ClusterDir, configuration: Mapping[str, str], backend: str = "process",
                     taskmanagers: int = 1, slots: int = 1, timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
    """Start the JobManager process of ``directory``; returns what it published (pid, rest_url, rpc_*)
    once its REST API serves (with the spark backend: once its TaskManagers registered).

    One JobManager per directory: this takes the directory's JobManager lock before it touches
    anything and hands it to the process it spawns, which holds it while it runs. A start that
    finds the lock taken (another start at the same moment, or a running cluster) is refused,
    naming the running JobManager's pid and REST address once it serves."""
    directory.path.mkdir(parents=True, exist_ok=True)
    lock = directory.lock(JOBMANAGER)
    try:
        if not lock.try_acquire():
            _await_lock_or_refuse(directory, lock, timeout)
        running = _running_jobmanager(directory)  # one started before the directory had a lock
        if running is not None:
            raise _already_running(directory, running, directory.jobmanager_info() or {})
        return _spawn_jobmanager(directory, configuration, backend, taskmanagers, slots, timeout, lock)
    except LockError as error:
        raise StandaloneClusterError(str(error)) from None
    finally:
        lock.release()  # the JobManager holds it through the descriptor it inherited


def _already_running(directory: ClusterDir, pid: int, info: Mapping[str, Any]) -> StandaloneClusterError:
    return StandaloneClusterError(
        f"a cluster is already running in {directory.path} (JobManager pid {pid}"
        f"{', REST ' + str(info['rest_url']) if info.get('rest_url') else ''}); stop it first with "
        f"`streamkernel cluster stop --dir {directory.path}`")


def _await_lock_or_refuse(directory: ClusterDir, lock: FileLock, timeout: float) -> None:
    """Another JobManager holds the directory's lock: raise naming it once it published its addresses;
    return holding the lock if that JobManager died meanwhile (a start that failed)."""
    deadline = time.monotonic() + timeout
    while True:
        info = directory.jobmanager_info() or {}
        pid = int(info.get("pid", 0) or 0)
        if info.get("rest_url") and process_alive(pid):
            raise _already_running(directory, pid, info)
        if lock.try_acquire():
            return
        if time.monotonic() > deadline:
            starting = directory.pids(JOBMANAGER).get(0)
            raise StandaloneClusterError(
                f"another JobManager{f' (pid {starting})' if starting else ''} holds {lock.path} and has not served "
                f"its REST API for {timeout:.0f} s; see {directory.log_file(JOBMANAGER, 0)}, or stop it with "
                f"`streamkernel cluster stop --dir {directory.path}`")
        time.sleep(_POLL_S)


def _spawn_jobmanager(directory: ClusterDir, configuration: Mapping[str, str], backend: str, taskmanagers: int,
                      slots: int, timeout: float, lock: FileLock) -> dict[str, Any]:
    """Start the JobManager process (handing it ``lock``) and wait until it serves."""
    assert lock.fd is not None
    directory.prepare()
    directory.remove_jobmanager_info()
    directory.new_secret(_high_availability_secret(configuration))
    arguments = ["--dir", str(directory.path), "--backend", backend, "--taskmanagers", str(taskmanagers),
                 "--slots", str(slots), "--lock-fd", str(lock.fd)]
    for key, value in configuration.items():
        arguments += ["-D", f"{key}={value}"]
    out_file = directory.log_file(JOBMANAGER, 0, "out")
    process = _spawn("streamkernel.runtime.entrypoint.cluster_entrypoint", arguments, out_file, _environment(),
                     pass_fds=(lock.fd,))
    directory.write_pid(JOBMANAGER, 0, process.pid)
    deadline = time.monotonic() + timeout
    while True:
        published = directory.jobmanager_info()
        if published is not None and published.get("pid") == process.pid:
            return published
        if process.poll() is not None:
            directory.remove_pid(JOBMANAGER, 0)
            raise _died(process, "JobManager", out_file)
        if time.monotonic() > deadline:
            _terminate([process.pid])
            directory.remove_pid(JOBMANAGER, 0)
            raise StandaloneClusterError(f"the JobManager (pid {process.pid}) did not serve its REST API within "
                                         f"{timeout:.0f} s; see {directory.log_file(JOBMANAGER, 0)}")
        time.sleep(_POLL_S)


def _high_availability_secret(configuration: Mapping[str, str]) -> Optional[bytes]:
    """The secret of a highly available cluster (every JobManager's: from high-availability.storageDir,
    created by the first), None without high availability. A bad high-availability.* key fails here,
    naming it, before any process starts."""
    from streamkernel.common.options.high_availability import check_high_availability_options, is_zookeeper

    check_high_availability_options(configuration)
    if not is_zookeeper(configuration):
        return None
    from streamkernel.runtime.highavailability.cluster_secret import read_or_create_ha_secret

    return read_or_create_ha_secret(configuration)


def stop_jobmanager(directory: ClusterDir) -> list[str]:
    """Stop the JobManager of ``directory`` (it tells its TaskManagers to shut down); remove its pid
    file, ``jobmanager.json`` and its secret from the user's registry. Lines to print."""
    pids = directory.pids(JOBMANAGER)
    if not pids:
        raise StandaloneClusterError(f"no JobManager to stop in {directory.path}: no pid file "
                                     f"{directory.pid_file(JOBMANAGER, 0)}")
    info = directory.jobmanager_info()
    stopped = _terminate(list(pids.values()))
    lines = [f"Stopping {JOBMANAGER} daemon (pid: {pid}) on host {host_name()}." for pid in stopped]
    if not lines:
        lines = [f"No {JOBMANAGER} daemon (pid: {pid}) is running on host {host_name()}; removed its pid file."
                 for pid in pids.values()]
    _forget_registry_entry(directory, info)
    for index in pids:
        directory.remove_pid(JOBMANAGER, index)
    directory.remove_jobmanager_info()
    return lines


def _forget_registry_entry(directory: ClusterDir, info: Optional[Mapping[str, Any]]) -> None:
    """Remove the user's registry entry of this cluster's REST address, if it still holds our secret."""
    from urllib.parse import urlsplit

    from streamkernel.runtime.rest.cluster_secret import SecretError, read_secret_file, secret_path

    if not info or not info.get("rest_url"):
        return
    url = urlsplit(str(info["rest_url"]))
    if url.hostname is None or url.port is None:
        return
    path = secret_path(url.hostname, url.port)
    try:
        if path.exists() and read_secret_file(path) == directory.read_secret():
            path.unlink()
    except (SecretError, OSError):
        pass


# --------------------------------------------------------------------------- TaskManagers
def start_taskmanager(directory: ClusterDir, configuration: Mapping[str, str], slots: int = 1,
                      jobmanager: Optional[str] = None, secret_file: Optional[str] = None,
                      wait: bool = True, timeout: float = START_TIMEOUT_S) -> StartedTaskManager:
    """Start one TaskManager process registering with the JobManager at ``jobmanager`` (its REST
    address; None: the JobManager of ``directory``, or with high availability configured the leading
    JobManager, followed through ZooKeeper); returns it once it registered (unless not ``wait``)."""
    if jobmanager is None and high_availability_configured(configuration):
        leader = LeaderRest(configuration)
        try:
            leader_url = leader.rest_url(timeout)  # fails naming the cluster id when no leader shows
            return _start_taskmanager(directory, configuration, slots, None, None, wait, timeout,
                                      leader.registered_ids, leader.current_rest_url or leader_url)
        finally:
            leader.close()
    rest_url, rpc_address, secret = _jobmanager_of(directory, jobmanager, secret_file)
    return _start_taskmanager(directory, configuration, slots, rpc_address, secret, wait, timeout,
                              lambda: registered_ids(rest_url), rest_url)


def _start_taskmanager(directory: ClusterDir, configuration: Mapping[str, str], slots: int,
                       rpc_address: Optional[tuple[str, int]], secret: Optional[bytes], wait: bool, timeout: float,
                       registered: Callable[[], set[str]], where: str) -> StartedTaskManager:
    """Spawn the TaskManager (``rpc_address`` None: it follows the leader) and wait until ``registered()`` lists it."""
    directory.prepare()
    lock = directory.lock(TASKEXECUTOR)  # two starts in one directory never take the same number
    try:
        lock.acquire(timeout)
        index = directory.next_index(TASKEXECUTOR)
        taskmanager_id = f"taskmanager-{host_name()}-{index}-{secrets.token_hex(3)}"
        conf = {LOG_FILE_KEY: str(directory.log_file(TASKEXECUTOR, index)), **configuration}
        arguments = ["--taskmanager-id", taskmanager_id, "--slots", str(slots)]
        if rpc_address is not None:
            arguments = ["--jobmanager", f"{rpc_address[0]}:{rpc_address[1]}", *arguments]
        for key, value in conf.items():
            arguments += ["-D", f"{key}={value}"]
        out_file = directory.log_file(TASKEXECUTOR, index, "out")
        process = _spawn("streamkernel.runtime.entrypoint.taskmanager_runner", arguments, out_file,
                         _environment(secret))
        directory.write_pid(TASKEXECUTOR, index, process.pid)
    except (LockError, TimeoutError) as error:
        raise StandaloneClusterError(str(error)) from None
    finally:
        lock.release()
    if wait:
        _await_registration(directory, index, process, taskmanager_id, registered, where, timeout)
    return StartedTaskManager(process.pid, taskmanager_id, index)


def _await_registration(directory: ClusterDir, index: int, process: subprocess.Popen, taskmanager_id: str,
                        registered: Callable[[], set[str]], rest_url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while taskmanager_id not in registered():
        if process.poll() is not None:
            directory.remove_pid(TASKEXECUTOR, index)
            raise _died(process, f"TaskManager {taskmanager_id}", directory.log_file(TASKEXECUTOR, index, "out"))
        if time.monotonic() > deadline:
            _terminate([process.pid])
            directory.remove_pid(TASKEXECUTOR, index)
            raise StandaloneClusterError(f"TaskManager {taskmanager_id} (pid {process.pid}) did not register with "
                                         f"{rest_url} within {timeout:.0f} s; see "
                                         f"{directory.log_file(TASKEXECUTOR, index)}")
        time.sleep(_POLL_S)


def _jobmanager_of(directory: ClusterDir, jobmanager: Optional[str],
                   secret_file: Optional[str]) -> tuple[str, tuple[str, int], bytes]:
    """(REST URL, RPC address, secret) of the JobManager to register with."""
    if jobmanager:
        from urllib.parse import urlsplit

        from streamkernel.runtime.rest.cluster_secret import SecretError, find_secret

        rest_url = rest_url_of(jobmanager)
        rpc_address = rpc_address_of(rest_url)
        url = urlsplit(rest_url)
        try:
            secret = find_secret(url.hostname or "", url.port or 80, secret_file)
        except SecretError as error:
            raise StandaloneClusterError(str(error)) from None
        return rest_url, rpc_address, secret
    info = directory.jobmanager_info()
    if info is None or not process_alive(int(info.get("pid", 0))):
        raise StandaloneClusterError(f"no JobManager runs in {directory.path}: start one with `streamkernel "
                                     f"cluster start --dir {directory.path}`, or pass -m REST_HOST:REST_PORT")
    return str(info["rest_url"]), (str(info["rpc_address"]), int(info["rpc_port"])), directory.read_secret()


def stop_taskmanager(directory: ClusterDir) -> list[str]:
    """Stop the last started running TaskManager of ``directory`` (as Flink's ``taskmanager.sh stop``)."""
    running = [(index, pid) for index, pid in directory.pids(TASKEXECUTOR).items() if process_alive(pid)]
    if not running:
        raise StandaloneClusterError(f"no TaskManager to stop in {directory.path}: no running process in "
                                     f"{directory.pid_dir}")
    index, pid = running[-1]
    _terminate([pid])
    directory.remove_pid(TASKEXECUTOR, index)
    return [f"Stopping {TASKEXECUTOR} daemon (pid: {pid}) on host {host_name()}."]


# --------------------------------------------------------------------------- the cluster
def start_cluster(directory: ClusterDir, configuration: Mapping[str, str], taskmanagers: int = 1, slots: int = 1,
                  backend: str = "process", timeout: float = START_TIMEOUT_S) -> list[str]:
    """Start a JobManager and ``taskmanagers`` TaskManagers; returns the lines to print
    (``REST http://HOST:PORT``, ``pid N`` per process) once every TaskManager registered."""
    if taskmanagers < 1 or slots < 1:
        raise StandaloneClusterError(f"--taskmanagers and --slots must be >= 1, got {taskmanagers} and {slots}")
    info = start_jobmanager(directory, configuration, backend, taskmanagers, slots, timeout)
    lines = [f"REST {info['rest_url']}", f"pid {info['pid']} ({JOBMANAGER}-0)"]
    if backend == "spark":
        return lines + [f"secret {directory.secret_file}"]
    try:
        started = [start_taskmanager(directory, configuration, slots, wait=False) for _ in range(taskmanagers)]
        lines.extend(f"pid {tm.pid} ({TASKEXECUTOR}-{tm.number}: {tm.taskmanager_id})" for tm in started)
        deadline = time.monotonic() + timeout
        expected = {tm.taskmanager_id for tm in started}
        while not expected <= registered_ids(str(info["rest_url"])):
            for tm in started:
                if not process_alive(tm.pid) and tm.taskmanager_id not in registered_ids(str(info["rest_url"])):
                    last = _last_line(directory.log_file(TASKEXECUTOR, tm.number, "out"))
                    raise StandaloneClusterError(f"TaskManager {tm.taskmanager_id} (pid {tm.pid}) exited before it "
                                                 f"registered: {last}")
            if time.monotonic() > deadline:
                raise StandaloneClusterError(f"the TaskManagers did not all register within {timeout:.0f} s; see "
                                             f"{directory.log_dir}")
            time.sleep(_POLL_S)
    except BaseException:
        stop_cluster(directory)
        raise
    return lines + [f"secret {directory.secret_file}"]


def stop_cluster(directory: ClusterDir) -> list[str]:
    """Stop the JobManager and every TaskManager of ``directory``; nothing of it is left running."""
    jobmanagers, taskmanagers = directory.pids(JOBMANAGER), directory.pids(TASKEXECUTOR)
    if not jobmanagers and not taskmanagers:
        raise StandaloneClusterError(f"no cluster to stop in {directory.path}: no pid file in {directory.pid_dir}")
    alive = [pid for pid in taskmanagers.values() if process_alive(pid)]
    lines = stop_jobmanager(directory) if jobmanagers else []
    # the JobManager told its TaskManagers to shut down; what still runs (or was never registered) is stopped here
    _wait_gone(alive, TASKMANAGERS_LEAVE_S)  # they were told to shut down: give them a moment first
    signalled = _terminate(alive)
    for pid in alive:
        how = "Stopping" if pid in signalled else "Stopped with the JobManager:"
        lines.append(f"{how} {TASKEXECUTOR} daemon (pid: {pid}) on host {host_name()}.")
    for index in taskmanagers:
        directory.remove_pid(TASKEXECUTOR, index)
    try:
        directory.secret_file.unlink()
    except FileNotFoundError:
        pass
    return lines


def cluster_status(directory: ClusterDir) -> tuple[bool, list[str]]:
    """(whether the JobManager runs, the lines to print): each process alive or not, the REST URL, the jobs."""
    jobmanagers, taskmanagers = directory.pids(JOBMANAGER), directory.pids(TASKEXECUTOR)
    if not jobmanagers and not taskmanagers:
        raise StandaloneClusterError(f"no cluster in {directory.path}: no pid file in {directory.pid_dir}")
    info = directory.jobmanager_info() or {}
    lines: list[str] = []
    running = False
    for pid in jobmanagers.values():
        alive = process_alive(pid)
        running = running or alive
        lines.append(f"JobManager pid {pid}: {'running' if alive else 'not running'}")
    if running and info.get("rest_url"):
        lines.append(f"REST {info['rest_url']}")
    for index, pid in taskmanagers.items():
        state = "running" if process_alive(pid) else "not running"
        lines.append(f"TaskManager {TASKEXECUTOR}-{index} pid {pid}: {state}")
    if running and info.get("rest_url"):
        try:
            overview = get_json(str(info["rest_url"]), "/overview")
            jobs = get_json(str(info["rest_url"]), "/jobs/overview").get("jobs", [])
        except StandaloneClusterError as error:
            lines.append(f"REST API not answering: {error}")
        else:
            lines.append(f"TaskManagers registered: {overview.get('taskmanagers')}, slots: "
                         f"{overview.get('slots-total')} ({overview.get('slots-available')} free)")
            lines.append(f"jobs: {len(jobs)}")
            lines.extend(f"  {job.get('jid')} {job.get('state')} {job.get('name')}" for job in jobs)
    return running, lines
