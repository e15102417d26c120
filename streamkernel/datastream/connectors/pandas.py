"""The pandas sink: a job's records as a ``pandas.DataFrame`` once it ran (a streamkernel extra).

::

    sink = PandasSink("counts")
    ds.sink_to(sink)
    env.execute()
    sink.to_pandas()          # one row per record

Tuples, lists and unnamed Rows become rows (columns 0, 1, ... unless ``columns`` names
them); dicts and named Rows become rows with their keys as columns; anything else is one
column named ``value``. Records are kept per sink subtask (in subtask order in the
frame); a subtask that starts afresh (the same sink in another job, or a job restarted
without a checkpoint) replaces what it wrote before, one restarted from a checkpoint keeps
what it wrote up to that checkpoint.

When records become visible: without checkpointing, as soon as they are written (a
restarted job replaces them, so while it recovers the frame may lose records that come
back when they are replayed). With checkpointing the sink is a two-phase commit sink:
records appear when the checkpoint that covers them completes (and at the end of the
input), so the frame only ever holds records that will stay, each exactly once, whatever
fails. pandas is imported only when a frame is built.
"""

from __future__ import annotations

import threading
from typing import Any, Optional, Sequence

from streamkernel.common.types import Row
from streamkernel.datastream.connectors.base import Sink
from streamkernel.datastream.connectors.shared_objects import SharedObjectRegistry
from streamkernel.errors import InvalidProgramError

__all__ = ["PandasSink", "records_to_dataframe"]

_STORES = SharedObjectRegistry()


def records_to_dataframe(records: Sequence[Any], columns: Optional[Sequence[str]] = None) -> Any:
    """A DataFrame of ``records`` (see the module docstring for how records become rows)."""
    import pandas as pd

    cols = list(columns) if columns is not None else None
    if not records:
        return pd.DataFrame(columns=cols)
    first = records[0]
    if isinstance(first, Row):
        if first._fields is not None and cols is None:
            return pd.DataFrame.from_records([r.as_dict() for r in records])
        return pd.DataFrame([list(r._values) for r in records], columns=cols)
    if isinstance(first, dict):
        frame = pd.DataFrame.from_records(list(records))
        return frame[cols] if cols is not None else frame
    if isinstance(first, (tuple, list)):
        return pd.DataFrame(list(records), columns=cols)
    return pd.DataFrame({cols[0] if cols else "value": list(records)})


class _PandasStore:
    """The records of one PandasSink, per sink subtask (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _parts (sink subtasks write from their threads)
        self._parts: dict[int, list] = {}

    def start(self, subtask_index: int) -> list:
        """Start (or restart) subtask ``subtask_index``: a fresh list it appends to."""
        part: list = []
        with self._lock:
            self._parts[subtask_index] = part
        return part

    def resume(self, subtask_index: int, count: int) -> list:
        """Restart subtask ``subtask_index`` from a checkpoint: its part cut back to ``count`` records."""
        with self._lock:
            part = self._parts.setdefault(subtask_index, [])
            del part[count:]
        return part

    def remove(self, subtask_index: int) -> list:
        """Take the part of subtask ``subtask_index`` out of the store (its records, or [])."""
        with self._lock:
            return self._parts.pop(subtask_index, [])

    def records(self) -> list:
        """All records, subtask by subtask."""
        with self._lock:
            parts = [self._parts[i] for i in sorted(self._parts)]
        return [record for part in parts for record in part]

    def tail(self, n: int) -> tuple[list, int]:
        """(the last ``n`` records in :meth:`records` order, how many there are), without copying the rest."""
        with self._lock:
            parts = [self._parts[i] for i in sorted(self._parts)]
            total = sum(map(len, parts))
            last: list = []
            for part in reversed(parts):
                if len(last) >= n:
                    break
                last[:0] = part[-(n - len(last)):]
        return last, total

    def clear(self) -> None:
        """Forget every record."""
        with self._lock:
            self._parts.clear()


def _pandas_sink(name: str, columns: Optional[tuple], token: str) -> "PandasSink":
    sink = PandasSink.__new__(PandasSink)
    sink.name, sink.columns, sink.default_name, sink._token = name, columns, name, token
    store = _STORES.get(token)
    if store is None:  # another process: records stay there (see module docstring)
        store = _PandasStore()
        _STORES.register(store, token)
    sink._store = store
    return sink


class PandasSink(Sink):
    """Collects a stream's records; :meth:`to_pandas` returns them as a DataFrame."""

    def __init__(self, name: str = "PandasSink", columns: Optional[Sequence[str]] = None) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidProgramError(f"PandasSink: name must be a non-empty str, got {name!r}")
        self.name = name
        self.default_name = name  # the sink operator's name in the graphs
        self.columns = tuple(columns) if columns is not None else None
        self._store = _PandasStore()
        self._token = _STORES.register(self._store)

    @property
    def store(self) -> _PandasStore:
        """Where the sink subtasks of this process put their records."""
        return self._store

    def records(self) -> list:
        """The collected records, as a list (subtask by subtask)."""
        return self._store.records()

    def to_pandas(self) -> Any:
        """The collected records as a ``pandas.DataFrame``."""
        return records_to_dataframe(self._store.records(), self.columns)

    def tail(self, n: int = 20) -> tuple[Any, int]:
        """(the last ``n`` records as a DataFrame, how many records there are): for live views,
        which must not build a frame of every record a few times a second."""
        records, total = self._store.tail(n)
        return records_to_dataframe(records, self.columns), total

    def clear(self) -> None:
        """Forget the collected records."""
        self._store.clear()

    def __reduce__(self) -> tuple:
        return _pandas_sink, (self.name, self.columns, self._token)

    def __repr__(self) -> str:
        return f"PandasSink({self.name!r})"
