"""A public test kit: scripted sources, failure markers, a manual clock.

Use it to test your own streaming logic, and to watch recovery work: a
:class:`ScriptedSource` emits the records of a script in order, and markers in the script
control time and failures:

* :class:`Pause` ``(ms)`` — the source has nothing for ``ms`` milliseconds (watermarks and
  checkpoints happen meanwhile);
* :class:`Fail` ``(message, times=1)`` — the source raises the first ``times`` times it
  reaches this point (a task failure the job must recover from); after that it passes;
* :class:`End` — the source ends here (records after it are ignored).

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
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from streamkernel.datastream.connectors.base import Boundedness, Source
from streamkernel.runtime.clock import ManualClock
from streamkernel.runtime.sources.base import SourceReader

__all__ = ["ScriptedSource", "Pause", "Fail", "End", "ManualClock", "InjectedFailure"]


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


@dataclass(frozen=True)
class End:
    """The source ends here."""


_MARKERS = (Pause, Fail, End)


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
            if self._record_index % self.parallelism == self.subtask_index:
                out.append(item)
            self._record_index += 1
            self.position += 1
        if not out and self.position >= len(script):
            return None
        return out, None

    def poll_delay_seconds(self) -> float:
        """While paused: how long until the pause ends."""
        if self._paused_until is None:
            return 0.0
        return max(0.0, (self._paused_until - self.now_ms()) / 1000)

    def snapshot_position(self) -> Any:
        """(script index, records seen)."""
        return (self.position, self._record_index)

    def restore_position(self, position: Any) -> None:
        """Continue after the checkpointed item."""
        self.position, self._record_index = position
