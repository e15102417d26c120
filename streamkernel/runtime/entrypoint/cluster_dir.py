"""A standalone cluster's directory (``--dir``, default ``./streamkernel-cluster``).

::

    DIR/cluster.secret                                   the cluster secret (hex, mode 0600)
    DIR/jobmanager.json                                  written by the JobManager once it serves:
                                                         pid, REST URL, RPC address, backend
    DIR/standalonesession.lock                           locked by the running JobManager (one per DIR)
    DIR/taskexecutor.lock                                locked while a TaskManager takes its number
    DIR/pid/standalonesession-0.pid                      the JobManager's pid
    DIR/pid/taskexecutor-N.pid                           each TaskManager's pid (N from 0)
    DIR/log/streamkernel-USER-standalonesession-0-HOST.log / .out
    DIR/log/streamkernel-USER-taskexecutor-N-HOST.log / .out

The log names are Flink's (``flink-USER-standalonesession-0-HOST.log``); ``env.log.dir``
moves ``log/`` elsewhere. A pid counts as running only while the process with that pid is
one of ours (its command line names the entry point), so a pid reused by another program
is never signalled. The lock files are :mod:`.directory_lock` locks: a dead process's
lock is released with it.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from pathlib import Path
from typing import Any, Mapping, Optional

from streamkernel.common.options import CoreOptions
from streamkernel.arguments import parse_dynamic_properties
from streamkernel.runtime.entrypoint.directory_lock import FileLock
from streamkernel.runtime.rpc.secret_file import write_private_file
from streamkernel.runtime.rpc.transport import new_cluster_secret

__all__ = ["ClusterDir", "DEFAULT_DIR", "LOG_DIR_KEY", "LOG_FILE_KEY", "JOBMANAGER", "TASKEXECUTOR",
           "process_alive", "parse_dynamic_properties", "host_name"]

#: The directory of ``streamkernel cluster start`` without ``--dir``.
DEFAULT_DIR = "streamkernel-cluster"
#: Flink's keys: the directory of the log files, and one process's log file.
LOG_DIR_KEY, LOG_FILE_KEY = CoreOptions.LOG_DIR.key(), CoreOptions.LOG_FILE.key()
#: Flink's names of the two kinds of process (in the log and pid file names).
JOBMANAGER, TASKEXECUTOR = "standalonesession", "taskexecutor"
_ENTRY_MARK = b"streamkernel.runtime.entrypoint."


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a running (not zombie) process started from our entry points."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: not ours
    proc = Path(f"/proc/{pid}")
    if not proc.exists():
        return True  # no /proc (not Linux): trust the signal
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = (proc / "cmdline").read_bytes()
    except (OSError, IndexError):
        return False  # ended meanwhile
    return state != "Z" and _ENTRY_MARK in cmdline


def _child_of_ours(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) child of this process (from /proc; False without it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] != "Z" and int(fields[1]) == os.getpid()


class ClusterDir:
    """The files of one standalone cluster under ``path`` (see the module docstring)."""

    def __init__(self, path: str, configuration: Optional[Mapping[str, str]] = None) -> None:
        self.path = Path(path).expanduser().resolve()
        log_dir = (configuration or {}).get(LOG_DIR_KEY, "").strip()
        self.log_dir = Path(log_dir).expanduser().resolve() if log_dir else self.path / "log"
        self.pid_dir = self.path / "pid"
        self.secret_file = self.path / "cluster.secret"
        self.jobmanager_file = self.path / "jobmanager.json"

    # --------------------------------------------------------------------- files
    def log_file(self, kind: str, index: int, suffix: str = "log") -> Path:
        """Flink's name of a process's log (``suffix`` ``log``) or stdout/stderr (``out``) file."""
        return self.log_dir / f"streamkernel-{_user()}-{kind}-{index}-{host_name()}.{suffix}"

    def pid_file(self, kind: str, index: int) -> Path:
        """The pid file of the ``index``-th process of ``kind``."""
        return self.pid_dir / f"{kind}-{index}.pid"

    def lock(self, kind: str) -> FileLock:
        """The (not yet taken) lock of ``kind``: the JobManager's, held by the running JobManager; the
        TaskManagers', held while one takes its number (:mod:`.directory_lock`)."""
        return FileLock(self.path / f"{kind}.lock")

    def prepare(self) -> None:
        """Create the directory, ``log/`` and ``pid/`` (the secret file alone is private: mode 0600)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.pid_dir.mkdir(parents=True, exist_ok=True)

    def new_secret(self, secret: Optional[bytes] = None) -> bytes:
        """A new cluster secret (or ``secret``: a highly available cluster's, shared by its JobManagers),
        written to :attr:`secret_file` with mode 0600."""
        secret = secret if secret is not None else new_cluster_secret()
        write_private_file(self.secret_file, secret.hex().encode("ascii") + b"\n")  # never through a link
        return secret

    def read_secret(self) -> bytes:
        """The secret of :attr:`secret_file` (SecretError when missing, malformed, a symbolic link, another
        user's or open to others: :func:`~streamkernel.runtime.rpc.secret_file.read_secret_file`)."""
        from streamkernel.runtime.rest.cluster_secret import read_secret_file

        return read_secret_file(self.secret_file)

    def write_pid(self, kind: str, index: int, pid: int) -> Path:
        """Record a started process."""
        path = self.pid_file(kind, index)
        path.write_text(f"{pid}\n")
        return path

    def pids(self, kind: str) -> dict[int, int]:
        """index -> pid of every pid file of ``kind`` (running or not)."""
        found: dict[int, int] = {}
        for path in sorted(self.pid_dir.glob(f"{kind}-*.pid")) if self.pid_dir.is_dir() else []:
            try:
                found[int(path.stem.rsplit("-", 1)[1])] = int(path.read_text().strip())
            except (OSError, ValueError, IndexError):
                continue
        return dict(sorted(found.items()))

    def next_index(self, kind: str) -> int:
        """The first index of ``kind`` without a running process (its files are reused). A process
        this one has just spawned counts as running before it shows our entry point: on a loaded
        machine its ``exec`` may not have happened yet when the next one is started."""
        taken = {index for index, pid in self.pids(kind).items() if process_alive(pid) or _child_of_ours(pid)}
        index = 0
        while index in taken:
            index += 1
        return index

    def remove_pid(self, kind: str, index: int) -> None:
        """Forget a process (its pid file)."""
        try:
            self.pid_file(kind, index).unlink()
        except FileNotFoundError:
            pass

    def jobmanager_info(self) -> Optional[dict[str, Any]]:
        """What the JobManager wrote once it served (pid, rest_url, rpc_address, rpc_port, backend), or None."""
        try:
            return dict(json.loads(self.jobmanager_file.read_text()))
        except (OSError, ValueError):
            return None

    def write_jobmanager_info(self, info: Mapping[str, Any]) -> None:
        """Atomically publish the JobManager's addresses (the JobManager process calls this)."""
        temporary = self.jobmanager_file.with_name(f".{self.jobmanager_file.name}.{os.getpid()}")
        temporary.write_text(json.dumps(dict(info), indent=1))
        os.replace(temporary, self.jobmanager_file)

    def remove_jobmanager_info(self) -> None:
        """Forget the JobManager's addresses."""
        try:
            self.jobmanager_file.unlink()
        except FileNotFoundError:
            pass

    def __repr__(self) -> str:
        return f"ClusterDir({str(self.path)!r})"


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return str(os.getuid())


def host_name() -> str:
    return socket.gethostname().split(".")[0] or "localhost"
