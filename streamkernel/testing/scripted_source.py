"""Sources for tests: a ScriptedSource plays a script of records and markers; a GatedSource
holds any source at a Gate."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from streamkernel.datastream.connectors.base import Boundedness, Source
from streamkernel.runtime.sources.base import DEFAULT_POLL_DELAY_SECONDS, SourceReader
from streamkernel.testing.markers import MARKERS, End, Fail, Gate, Pause

__all__ = ["ScriptedSource", "ScriptedReader", "GatedSource", "GatedReader"]


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
            if not isinstance(item, MARKERS):
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
