"""The markers of a script: Pause, Fail, Gate (and FileGate across processes), End."""

from __future__ import annotations

import pathlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["InjectedFailure", "Pause", "Fail", "Gate", "FileGate", "End", "MARKERS"]


class InjectedFailure(RuntimeError):
    """The failure a :class:`Fail` marker raises."""


@dataclass(frozen=True)
class Pause:
    """Nothing to read for ``millis`` milliseconds."""

    millis: int


@dataclass
class Fail:
    """Raise :class:`InjectedFailure` the first ``times`` times the source reaches this point."""

    message: str = "injected failure"
    times: int = 1
    _fired: int = field(default=0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def fire(self) -> None:
        """Raise if this marker still has failures left (shared by every attempt of the job)."""
        with self._lock:
            if self._fired >= self.times:
                return
            self._fired += 1
        raise InjectedFailure(f"{self.message} (scripted failure {self._fired} of {self.times})")

    @property
    def fired(self) -> int:
        """How often it has raised so far."""
        return self._fired


class Gate:
    """A point in the script where every source subtask holds until :meth:`open` is called.

    A held subtask emits nothing and stays responsive (checkpoints, cancellation, injected
    failures). Its position stays *at* the gate, so a checkpoint taken while it holds
    restores to the gate, and the restored job holds again unless the gate is open by then.
    One Gate is shared by every subtask and every attempt of the job; once open it stays
    open. Opening is thread-safe (call it from the test while the job runs).

    >>> gate = Gate("after part one")
    >>> gate.is_open, gate.reached
    (False, False)
    >>> gate.open()
    >>> gate.is_open
    True
    """

    def __init__(self, name: str = "gate") -> None:
        self.name = name
        self._opened = threading.Event()
        self._reached = threading.Event()

    def open(self) -> None:
        """Let every subtask held here (and every later one) pass."""
        self._opened.set()

    @property
    def is_open(self) -> bool:
        """True once :meth:`open` was called."""
        return self._opened.is_set()

    @property
    def reached(self) -> bool:
        """True once a source subtask has held here (it emitted everything before the gate)."""
        return self._reached.is_set()

    def wait_reached(self, timeout: Optional[float] = None) -> bool:
        """Block until a source subtask holds here (or ``timeout`` seconds); returns :attr:`reached`."""
        return self._reached.wait(timeout)

    def wait_open(self, timeout: Optional[float] = None) -> bool:
        """Block until :meth:`open` was called (or ``timeout`` seconds); returns :attr:`is_open`.
        For a user function that must hold until the test lets it go (a held, slow operator)."""
        return self._opened.wait(timeout)

    def _hold(self) -> bool:
        """Called by a reader at the gate: True while it must hold."""
        if self._opened.is_set():
            return False
        self._reached.set()
        return True

    def __repr__(self) -> str:
        return f"Gate({self.name!r}, {'open' if self.is_open else 'closed'})"


class FileGate(Gate):
    """A :class:`Gate` across processes, for the ``process`` and ``spark`` backends.

    A Gate's state lives in memory, so a source subtask in a TaskManager process would hold
    at its own copy forever. A FileGate keeps its state in files of ``directory`` (a
    directory every TaskManager can reach: a temporary directory for TaskManagers on this
    machine): it is open once ``<directory>/<name>.open`` exists, and a subtask that holds
    creates ``<name>.reached``. Pickled, it is only its directory and name.

    >>> import tempfile
    >>> gate = FileGate(tempfile.mkdtemp(), "mid-job")
    >>> gate._hold(), gate.reached, gate.is_open
    (True, True, False)
    >>> gate.open(); gate._hold()
    False
    """

    def __init__(self, directory: Any, name: str = "gate") -> None:  # no Events: plain data
        self.name = name
        self.directory = str(directory)

    def _path(self, suffix: str) -> pathlib.Path:
        return pathlib.Path(self.directory) / f"{self.name}.{suffix}"

    def open(self) -> None:
        """Let every subtask held here (in any process) pass."""
        self._path("open").touch()

    @property
    def is_open(self) -> bool:
        """True once :meth:`open` was called (in any process)."""
        return self._path("open").exists()

    @property
    def reached(self) -> bool:
        """True once a source subtask (in any process) has held here."""
        return self._path("reached").exists()

    def wait_reached(self, timeout: Optional[float] = None) -> bool:
        """Poll until a source subtask holds here (or ``timeout`` seconds); returns :attr:`reached`."""
        return self._poll(lambda: self.reached, timeout)

    def wait_open(self, timeout: Optional[float] = None) -> bool:
        """Poll until :meth:`open` was called in any process (or ``timeout`` seconds); returns :attr:`is_open`."""
        return self._poll(lambda: self.is_open, timeout)

    @staticmethod
    def _poll(done: Any, timeout: Optional[float]) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done() and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.002)  # a file in another process's sight: nothing to wait on but the file
        return bool(done())

    def _hold(self) -> bool:
        if self.is_open:
            return False
        self._path("reached").touch()
        return True

    def __reduce__(self) -> tuple:
        return FileGate, (self.directory, self.name)

    def __repr__(self) -> str:
        return f"FileGate({self.name!r} in {self.directory!r}, {'open' if self.is_open else 'closed'})"


@dataclass(frozen=True)
class End:
    """The source ends here."""


#: every marker class (records are everything else)
MARKERS = (Pause, Fail, Gate, End)
