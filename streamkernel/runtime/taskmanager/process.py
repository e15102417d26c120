"""The ``process`` backend's launcher: each TaskManager is a child process of the driver.

:class:`ProcessTaskManagerLauncher` starts ``python -m streamkernel.runtime.taskmanager.worker``
with the driver's own interpreter (the virtual environment's python), one process per
TaskManager, like a standalone Flink cluster's ``taskmanager.sh`` on one machine. The
cluster secret goes in the environment (:data:`~streamkernel.runtime.rpc.transport.AUTHKEY_ENV`),
never on the command line. Each child runs in its own session (a signal meant for the
driver's terminal does not hit it) and exits by itself when its connection to the
JobManager closes or its parent dies, so no TaskManager outlives the driver.

What a child writes to its file descriptors outside the RPC forwarding (start-up errors,
C extensions) is copied line by line to the driver's ``sys.stdout`` / ``sys.stderr``; the
last lines of its stderr are kept to explain a child that dies at start-up (:meth:`failure`).
"""

from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from streamkernel.runtime.rpc.transport import AUTHKEY_ENV

__all__ = ["ProcessTaskManagerLauncher", "worker_command"]

_STDERR_TAIL = 40  # lines of a child's stderr kept for error messages


def worker_command(python: str, jobmanager_address: tuple[str, int], taskmanager_id: str, slots: int,
                   configuration: Mapping[str, str]) -> list[str]:
    """The command line of one TaskManager process (configuration as ``-D key=value``; no secret)."""
    host, port = jobmanager_address
    command = [python, "-m", "streamkernel.runtime.taskmanager.worker", "--jobmanager", f"{host}:{port}",
               "--taskmanager-id", taskmanager_id, "--slots", str(slots)]
    for key, value in sorted(configuration.items()):
        command += ["-D", f"{key}={value}"]
    return command


@dataclass
class _Child:
    """One TaskManager process and the threads copying its output."""

    process: subprocess.Popen
    pumps: list[threading.Thread] = field(default_factory=list)
    stderr_tail: collections.deque = field(default_factory=lambda: collections.deque(maxlen=_STDERR_TAIL))
    killed: bool = False


def _pump(stream: Any, name: str, tail: Optional[collections.deque], process: Optional[subprocess.Popen] = None) -> None:
    """Copy a child's output lines to this process's sys.<name> (looked up per line) until EOF;
    then reap ``process`` (if given), so a dead TaskManager leaves no zombie."""
    with stream:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace")
            if tail is not None:
                tail.append(line.rstrip("\n"))
            target = sys.stderr if name == "stderr" else sys.stdout
            try:
                target.write(line)
                target.flush()
            except (OSError, ValueError):
                pass
    if process is not None:
        process.wait()


class ProcessTaskManagerLauncher:
    """Starts TaskManagers as child processes of this one (a TaskManagerLauncher).

    ``python`` is the interpreter to run (default: this one, ``sys.executable``).
    """

    backend = "process"

    def __init__(self, python: Optional[str] = None) -> None:
        self._python = python or sys.executable
        self._lock = threading.Lock()  # guards _children
        self._children: dict[str, _Child] = {}

    def _environment(self, secret: bytes) -> dict[str, str]:
        env = dict(os.environ)
        env[AUTHKEY_ENV] = secret.hex()
        # streamkernel itself must import before the driver's sys.path arrives over RPC
        package_init = __import__("streamkernel").__file__
        assert package_init is not None  # a regular package (an __init__.py), never a namespace package
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(package_init)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def launch(self, ids: Sequence[str], slots: int, jobmanager_address: tuple[str, int], secret: bytes,
               configuration: Mapping[str, str]) -> None:
        """Start one child process per id; each connects back and registers."""
        from streamkernel.runtime.taskmanager.worker import switch_interval_seconds

        switch_interval_seconds(configuration)  # a bad value fails here, not in every child
        env = self._environment(secret)
        for taskmanager_id in ids:
            command = worker_command(self._python, jobmanager_address, taskmanager_id, slots, configuration)
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=env, start_new_session=True, close_fds=True)
            child = _Child(process)
            child.pumps = [
                threading.Thread(target=_pump, args=(process.stdout, "stdout", None),
                                 name=f"streamkernel-{taskmanager_id}-stdout", daemon=True),
                threading.Thread(target=_pump, args=(process.stderr, "stderr", child.stderr_tail, process),
                                 name=f"streamkernel-{taskmanager_id}-stderr", daemon=True),
            ]
            for pump in child.pumps:
                pump.start()
            with self._lock:
                self._children[taskmanager_id] = child

    def kill(self, taskmanager_id: str) -> bool:
        """SIGKILL the TaskManager's process (and its process group); False if unknown or ended."""
        with self._lock:
            child = self._children.get(taskmanager_id)
        if child is None or child.process.poll() is not None:
            return False
        child.killed = True
        _kill_group(child.process)
        return True

    def failure(self, taskmanager_id: str) -> Optional[str]:
        """Why the TaskManager's process ended (exit code and the tail of its stderr), None while it runs."""
        with self._lock:
            child = self._children.get(taskmanager_id)
        if child is None:
            return None
        code = child.process.poll()
        if code is None:
            return None
        for pump in child.pumps:
            pump.join(1.0)  # the last lines
        how = "was killed (SIGKILL)" if child.killed else (
            f"died of signal {-code}" if code < 0 else f"exited with code {code}")
        tail = "\n".join(child.stderr_tail)
        return f"process {child.process.pid} {how}" + (f"; last lines of its stderr:\n{tail}" if tail else "")

    def stop(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for the children to exit (they were asked to), then SIGKILL the rest."""
        with self._lock:
            children = list(self._children.values())
            self._children.clear()
        deadline = time.monotonic() + timeout
        for child in children:
            try:
                child.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for child in children:
            if child.process.poll() is None:
                _kill_group(child.process)
            child.process.wait()
            for pump in child.pumps:
                pump.join(5.0)

    def describe(self, taskmanager_id: str) -> dict[str, Any]:
        """``{"backend": "process", "host", "pid", "alive"}`` (empty for an unknown id)."""
        with self._lock:
            child = self._children.get(taskmanager_id)
        if child is None:
            return {}
        return {"backend": self.backend, "host": socket.gethostname(), "pid": child.process.pid,
                "alive": child.process.poll() is None}

    def pids(self) -> dict[str, int]:
        """Process id of every TaskManager started and not yet stopped."""
        with self._lock:
            return {tm: child.process.pid for tm, child in self._children.items()}

    def __repr__(self) -> str:
        with self._lock:
            alive = sum(1 for c in self._children.values() if c.process.poll() is None)
        return f"ProcessTaskManagerLauncher({alive} running)"


def _kill_group(process: subprocess.Popen) -> None:
    """SIGKILL a running child's process group (its session: the child and what it started).

    Only for a child not yet reaped, whose pid (and group id) cannot have been reused.
    """
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            process.kill()
        except ProcessLookupError:
            pass
