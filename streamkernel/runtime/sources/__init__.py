"""Source readers: what a source subtask runs for each kind of Source (see ``base``).

:func:`create_reader` picks the reader for a Source. A Source of your own (or of the
testing kit) plugs in by defining ``create_reader(subtask_index, parallelism)`` returning a
:class:`~streamkernel.runtime.sources.base.SourceReader`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.core.registry import lookup, resolve
from streamkernel.runtime.sources.base import SourceReader

__all__ = ["SourceReader", "create_reader", "READERS"]

_SOURCES = "streamkernel.runtime.sources"

#: Source class name (streamkernel.datastream.connectors) -> "module:ReaderClass" (imported on first use)
READERS = {
    "CollectionSource": f"{_SOURCES}.collection:CollectionReader",
    "NumberSequenceSource": f"{_SOURCES}.number_seq:NumberSequenceReader",
    "DataGeneratorSource": f"{_SOURCES}.datagen:DataGeneratorReader",
    "FileSource": f"{_SOURCES}.files:FileReader",
    "SocketTextStreamSource": f"{_SOURCES}.socket:SocketReader",
    "MemoryLogSource": f"{_SOURCES}.memory_log:MemoryLogReader",
}


def create_reader(source: Any, subtask_index: int, parallelism: int, *,
                  now_ms: Optional[Callable[[], int]] = None) -> SourceReader:
    """The reader of ``source`` for subtask ``subtask_index`` of ``parallelism``.

    ``now_ms`` is the clock (milliseconds) for rate limits and discovery intervals; the
    task's processing-time clock in a job, a ManualClock's ``now_ms`` in tests.
    """
    if not 0 <= subtask_index < parallelism:
        raise InvalidProgramError(f"create_reader: subtask_index {subtask_index} is not in 0..{parallelism - 1}")
    target = lookup(READERS, source, "streamkernel.datastream.connectors")
    if target is not None:
        return resolve(target)(source, subtask_index, parallelism, now_ms)
    factory = getattr(source, "create_reader", None)
    if callable(factory):
        reader = factory(subtask_index, parallelism)
        if now_ms is not None and isinstance(reader, SourceReader):
            reader.now_ms = now_ms
        return reader
    raise InvalidProgramError(
        f"source {source!r} ({type(source).__name__}) cannot be read: streamkernel reads CollectionSource, "
        f"NumberSequenceSource, DataGeneratorSource, FileSource, SocketTextStreamSource and MemoryLogSource; "
        f"a Source of your own must define create_reader(subtask_index, parallelism) -> SourceReader")
