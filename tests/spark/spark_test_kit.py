"""Helpers for the Spark launcher tests: a fake JobManager, fake TaskManager entries, process checks.

Not a test module: the test files load it by path (tests have no packages here).

* :class:`FakeJobManager` listens like the JobManager's RPC listener (authenticated, the
  cluster secret) and records each fake TaskManager that connects and registers; it tells
  them to stop as the JobManager would through the protocol.
* :func:`fake_worker_entry` builds a ``worker_entry`` for the launcher, standing in for
  ``run_taskmanager``; it is a nested function, so cloudpickle ships its code by value to
  the Spark task (this file is not importable there).
* :func:`python_workers` lists the Python worker processes below this process (the Python
  processes the Spark JVM forked, without the ``pyspark.daemon`` that forks them).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable

from streamkernel.runtime.rpc.transport import AuthenticatedListener, new_cluster_secret
from streamkernel.testing import wait_until  # noqa: F401  (the spark tests use kit.wait_until)


class FakeJobManager:
    """Accepts fake TaskManagers: each sends ``("register", id, pid, attempt)`` and waits for ``"stop"``."""

    def __init__(self) -> None:
        self.secret = new_cluster_secret()
        self.registered: dict[str, dict[str, Any]] = {}
        self._conns: dict[str, Any] = {}
        self._cond = threading.Condition()
        self.listener = AuthenticatedListener(("127.0.0.1", 0), self.secret, self._serve, name="fake-jobmanager")

    @property
    def address(self) -> tuple[str, int]:
        return self.listener.address

    def _serve(self, conn: Any, peer: Any) -> None:
        try:
            kind, taskmanager_id, pid, attempt, slots = conn.recv()
        except (EOFError, OSError):
            return
        with self._cond:
            self.registered[taskmanager_id] = {"pid": pid, "attempt": attempt, "slots": slots,
                                               "at": time.monotonic()}
            self._conns[taskmanager_id] = conn
            self._cond.notify_all()

    def wait_for(self, *ids: str, timeout: float = 60.0) -> dict[str, dict[str, Any]]:
        """Wait until every id registered; returns the registrations."""
        with self._cond:
            ok = self._cond.wait_for(lambda: all(i in self.registered for i in ids), timeout)
            assert ok, f"TaskManagers {sorted(set(ids) - set(self.registered))} did not register in {timeout} s " \
                       f"(registered: {sorted(self.registered)})"
            return {i: self.registered[i] for i in ids}

    def stop_taskmanagers(self) -> None:
        """Tell every registered fake TaskManager to stop, as the JobManager does through the protocol."""
        with self._cond:
            conns = list(self._conns.values())
            self._conns.clear()
        for conn in conns:
            try:
                conn.send("stop")
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self.stop_taskmanagers()
        self.listener.close()


def fake_worker_entry(mode: str = "serve") -> Callable[..., None]:
    """A stand-in for ``run_taskmanager``.

    ``serve``: register at the (fake) JobManager and return when told to stop or the
    connection is lost. ``ignore_stop``: register, then never return. ``raise``: fail at once.
    """

    def entry(jobmanager_address, secret, taskmanager_id, slots, configuration):
        import os as worker_os
        import time as worker_time

        from pyspark import TaskContext

        from streamkernel.runtime.rpc.transport import connect

        if mode == "raise":
            raise RuntimeError(f"fake TaskManager {taskmanager_id} fails on purpose")
        conn = connect(tuple(jobmanager_address), secret)
        conn.send(("register", taskmanager_id, worker_os.getpid(), TaskContext.get().attemptNumber(), slots))
        if mode == "ignore_stop":
            while True:
                worker_time.sleep(1)
        try:
            conn.recv()
        except (EOFError, OSError):
            pass
        conn.close()

    return entry


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if fields[0] == "Z":
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def python_workers(root: int | None = None) -> list[int]:
    """Pids of Python worker processes below ``root`` (this process): the children of ``pyspark.daemon``.

    Forked workers keep the daemon's command line, so they are told apart by their parent.
    """
    tree = _children()
    found, todo = [], [(pid, root or os.getpid()) for pid in tree.get(root or os.getpid(), [])]
    while todo:
        pid, parent = todo.pop()
        todo.extend((child, pid) for child in tree.get(pid, []))
        if "pyspark.daemon" in _cmdline(parent):
            found.append(pid)
    return found




def local_session(master: str = "local[2,4]", app: str = "streamkernel-tests") -> Any:
    """A SparkSession on a local master, configured as the launcher would (loopback, this Python)."""
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master(master).appName(app)
            .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
            .config("spark.python.worker.reuse", "false").config("spark.pyspark.python", sys.executable)
            .getOrCreate())


def gated_running_counts(env: Any, words: list, gate_file: str) -> Any:
    """Running word counts of ``words`` read by a paced ScriptedSource that holds a third of
    the way through until ``gate_file`` exists (a Gate across processes: the test's
    threading.Event would not reach a TaskManager in a Spark worker)."""
    from streamkernel.common import Types, WatermarkStrategy
    from streamkernel.testing import Pause, ScriptedSource

    script: list = []
    for i in range(0, len(words), 35):
        script += words[i:i + 35] + [Pause(20)]
    script[len(script) // 3:len(script) // 3] = ["GATE"] * 2  # one per source subtask (records go round robin)

    def hold(word, gate_file=gate_file):
        import os as worker_os
        import time as worker_time

        while word == "GATE" and not worker_os.path.exists(gate_file):
            worker_time.sleep(0.01)
        return word

    source = env.from_source(ScriptedSource(script), WatermarkStrategy.no_watermarks(), "words")
    return (source.map(hold).name("Hold").filter(lambda w: w != "GATE")
            .map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
            .key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).name("Count"))
