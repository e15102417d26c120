"""A public test kit: scripted sources, failure markers, a manual clock.

Use it to test your own streaming logic, and to watch recovery work: a
:class:`ScriptedSource` emits the records of a script in order, and markers in the script
control time and failures:

* :class:`Pause` ``(ms)`` — the source has nothing for ``ms`` milliseconds (watermarks and
  checkpoints happen meanwhile);
* :class:`Fail` ``(message, times=1)`` — the source raises the first ``times`` times it
  reaches this point (a task failure the job must recover from); after that it passes;
* :class:`Gate` — every source subtask holds here, idle, until the test calls
  :meth:`Gate.open` (the job keeps running and checkpointing meanwhile; it cannot finish);
* :class:`End` — the source ends here (records after it are ignored).

:func:`wait_until` waits for a condition the code exposes (a job's status, a Gate reached,
a count of results) with a deadline, and fails naming what it waited for: tests wait on
what they need instead of sleeping and hoping the machine was fast enough.

A Gate makes recovery tests deterministic: put one after the records that must flow
before a failure is injected, inject the failure (``MiniCluster.failures.fail_operator``,
``kill_taskmanager``, a savepoint), then open the gate. Without it a fast job may end
before the failure, and the test races the job::

    gate = Gate()
    source = ScriptedSource(words[:100] + [gate] + words[100:])
    ...  # submit, wait for the first results, kill a TaskManager
    gate.open()

The source is replayable: its position is the index in the script, so a job restored from
a checkpoint continues exactly after the last record the checkpoint covers. Records are
split between source subtasks round-robin (record *i* goes to subtask ``i % parallelism``).

>>> from streamkernel.testing import ScriptedSource, Fail
>>> source = ScriptedSource([1, 2, Fail("boom"), 3])
>>> source.records()
[1, 2, 3]
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, TypeVar

from streamkernel.datastream.connectors.base import Boundedness, Source
from streamkernel.runtime.core.clock import ManualClock
from streamkernel.runtime.sources.base import DEFAULT_POLL_DELAY_SECONDS, SourceReader

__all__ = ["ScriptedSource", "Pause", "Fail", "Gate", "End", "ManualClock", "InjectedFailure", "wait_until",
           "DEFAULT_WAIT_TIMEOUT_SECONDS", "GatedSource"]

#: How long :func:`wait_until` waits by default: generous, because a loaded machine (a CI
#: runner, a laptop running other tests) can be many times slower than an idle one; a
#: condition that holds returns at once, so only a failing test pays the whole deadline.
DEFAULT_WAIT_TIMEOUT_SECONDS = 60.0

_T = TypeVar("_T")


def wait_until(condition: Callable[[], _T], timeout: float = DEFAULT_WAIT_TIMEOUT_SECONDS,
               message: str = "the condition", interval: float = 0.01) -> _T:
    """Poll ``condition()`` until it returns something truthy, and return that.

    Fails with ``AssertionError("timed out after 60.0 s waiting for <message> ...")`` once
    ``timeout`` seconds passed without it (the last value it returned is in the message).
    ``message`` says what the test waits for: "the job to be RUNNING", "3 results".
    The polls back off from ``interval`` to at most 0.1 s.

    >>> wait_until(lambda: 42, message="the answer")
    42
    >>> wait_until(lambda: [], timeout=0.05, message="a result")
    Traceback (most recent call last):
    ...
    AssertionError: timed out after 0.05 s waiting for a result (last seen: [])
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out after {timeout} s waiting for {message} (last seen: {value!r})")
        time.sleep(min(interval, remaining))
        interval = min(interval * 1.5, 0.1)



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

    def _hold(self) -> bool:
        """Called by a reader at the gate: True while it must hold."""
        if self._opened.is_set():
            return False
        self._reached.set()
        return True

    def __repr__(self) -> str:
        return f"Gate({self.name!r}, {'open' if self.is_open else 'closed'})"


@dataclass(frozen=True)
class End:
    """The source ends here."""


_MARKERS = (Pause, Fail, Gate, End)


class ScriptedSource(Source):
    """A bounded, replayable source that plays a script of records and markers."""

    default_name = "Scripted Source"

    def __init__(self, script: Sequence[Any]) -> None:
        self.script = list(script)

    def get_boundedness(self) -> Boundedness:
        """Always BOUNDED (the script ends)."""
        return Boundedness.BOUNDED

    def records(self) -> list:
        """The records of the script (markers left out, up to an End)."""
        out = []
        for item in self.script:
            if isinstance(item, End):
                break
            if not isinstance(item, _MARKERS):
                out.append(item)
        return out

    def create_reader(self, subtask_index: int, parallelism: int) -> "ScriptedReader":
        """The reader of one source subtask."""
        return ScriptedReader(self, subtask_index, parallelism)

    def __repr__(self) -> str:
        return f"ScriptedSource({len(self.script)} items)"


class ScriptedReader(SourceReader):
    """Reads a ScriptedSource: markers apply to every subtask, records are split round-robin."""

    def __init__(self, source: ScriptedSource, subtask_index: int, parallelism: int) -> None:
        super().__init__(subtask_index, parallelism)
        self.source = source
        self.position = 0  # index of the next script item
        self._paused_until: Optional[int] = None
        self._record_index = 0  # records seen so far (for the round-robin split)

    def read_batch(self, max_records: int) -> Optional[tuple[list, Optional[list]]]:
        """Records up to the next marker (or ``max_records``); markers act when reached."""
        script = self.source.script
        if self._paused_until is not None:
            if self.now_ms() < self._paused_until:
                return [], None
            self._paused_until = None
        out: list = []
        while self.position < len(script) and len(out) < max_records:
            item = script[self.position]
            if isinstance(item, End):
                self.position = len(script)
                break
            if isinstance(item, Pause):
                self.position += 1
                self._paused_until = self.now_ms() + item.millis
                return out, None
            if isinstance(item, Fail):
                if out:
                    return out, None  # emit what came before the failure point first
                item.fire()
                self.position += 1
                continue
            if isinstance(item, Gate):
                if out:
                    return out, None  # emit what came before the gate first
                if item._hold():
                    return out, None  # held: the position stays at the gate
                self.position += 1
                continue
            if self._record_index % self.parallelism == self.subtask_index:
                out.append(item)
            self._record_index += 1
            self.position += 1
        if not out and self.position >= len(script):
            return None
        return out, None

    def poll_delay_seconds(self) -> float:
        """While paused: how long until the pause ends; while held at a closed Gate: a short poll."""
        script = self.source.script
        if self.position < len(script) and isinstance(script[self.position], Gate) \
                and not script[self.position].is_open:
            return DEFAULT_POLL_DELAY_SECONDS  # a checkpoint or cancellation ends the wait early
        if self._paused_until is None:
            return 0.0
        return max(0.0, (self._paused_until - self.now_ms()) / 1000)

    def snapshot_position(self) -> Any:
        """(script index, records seen)."""
        return (self.position, self._record_index)

    def restore_position(self, position: Any) -> None:
        """Continue after the checkpointed item."""
        self.position, self._record_index = position


class GatedSource(Source):
    """Any source, whose every subtask holds at ``gate`` once it emitted ``after`` records.

    A :class:`Gate` for the built-in sources, which a :class:`ScriptedSource` cannot stand
    in for (a DataGeneratorSource restored at another parallelism): a job reading it cannot
    finish before the test opens the gate, so a savepoint or failure injected after
    ``wait_until(...)`` finds it running. Positions, splits and rescaling are the wrapped
    source's; the count starts again in every attempt (a restored job reads ``after``
    more records per subtask before it holds, unless the gate is open by then).

    >>> from streamkernel.datastream.connectors import NumberSequenceSource
    >>> source = GatedSource(NumberSequenceSource(0, 99), Gate(), after=10)
    >>> reader = source.create_reader(0, 1)
    >>> len(reader.read_batch(100)[0]), reader.read_batch(100), source.gate.reached
    (10, ([], None), True)
    >>> source.gate.open(); len(reader.read_batch(100)[0])
    90
    """

    def __init__(self, source: Source, gate: Gate, after: int) -> None:
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise ValueError(f"GatedSource: after must be an int >= 0 (records per subtask), got {after!r}")
        self.source = source
        self.gate = gate
        self.after = after

    @property
    def default_name(self) -> str:  # type: ignore[override]
        """The wrapped source's name."""
        return getattr(self.source, "default_name", type(self.source).__name__)

    def get_boundedness(self) -> Boundedness:
        """The wrapped source's."""
        return self.source.get_boundedness()

    def create_reader(self, subtask_index: int, parallelism: int) -> "GatedReader":
        """The wrapped source's reader for this subtask, held at the gate."""
        from streamkernel.runtime.sources import create_reader

        return GatedReader(self, create_reader(self.source, subtask_index, parallelism), subtask_index, parallelism)

    def __repr__(self) -> str:
        return f"GatedSource({self.source!r}, {self.gate!r}, after={self.after})"


class GatedReader(SourceReader):
    """Delegates to the wrapped reader; emits at most ``after`` records while the gate is closed."""

    def __init__(self, source: GatedSource, inner: SourceReader, subtask_index: int, parallelism: int) -> None:
        self.inner = inner
        super().__init__(subtask_index, parallelism, inner.now_ms)
        self.gated = source
        self.emitted = 0

    @property
    def now_ms(self) -> Callable[[], int]:
        """The wrapped reader's clock (setting it sets the wrapped reader's)."""
        return self.inner.now_ms

    @now_ms.setter
    def now_ms(self, clock: Callable[[], int]) -> None:
        self.inner.now_ms = clock

    @property
    def is_idle(self) -> bool:
        """The wrapped reader's."""
        return self.inner.is_idle

    @is_idle.setter
    def is_idle(self, idle: bool) -> None:
        self.inner.is_idle = idle

    @property
    def supports_splits(self) -> bool:
        """The wrapped reader's."""
        return self.inner.supports_splits

    def _holding(self) -> bool:
        return self.emitted >= self.gated.after and self.gated.gate._hold()

    def read_batch(self, max_records: int) -> Optional[tuple[list, Optional[list]]]:
        """The wrapped reader's batch, cut at ``after`` records; nothing while held."""
        if self._holding():
            return [], None
        if not self.gated.gate.is_open:
            max_records = min(max_records, self.gated.after - self.emitted)
        batch = self.inner.read_batch(max_records)
        if batch is not None:
            self.emitted += len(batch[0])
        return batch

    def poll_delay_seconds(self) -> float:
        """A short poll while held, else the wrapped reader's."""
        if self.emitted >= self.gated.after and not self.gated.gate.is_open:
            return DEFAULT_POLL_DELAY_SECONDS
        return self.inner.poll_delay_seconds()

    def open(self) -> None:
        """Open the wrapped reader."""
        self.inner.open()

    def close(self) -> None:
        """Close the wrapped reader."""
        self.inner.close()

    def snapshot_position(self) -> Any:
        """The wrapped reader's position."""
        return self.inner.snapshot_position()

    def restore_position(self, position: Any) -> None:
        """Restore the wrapped reader."""
        self.inner.restore_position(position)

    def snapshot_splits(self) -> Optional[list]:
        """The wrapped reader's splits."""
        return self.inner.snapshot_splits()

    def restore_splits(self, splits: list) -> None:
        """Restore the wrapped reader's splits."""
        self.inner.restore_splits(splits)

    def rebalance_splits(self, splits: list) -> list:
        """The wrapped reader's rule."""
        return self.inner.rebalance_splits(splits)

    def owns_split(self, index: int, split: Any) -> bool:
        """The wrapped reader's rule."""
        return self.inner.owns_split(index, split)
