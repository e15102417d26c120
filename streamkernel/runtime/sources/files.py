"""Reader of a FileSource: the records of this subtask's file splits, read with the source's format.

Files: each given path that is a file, and every file under each given directory
(recursively; hidden files and directories, those starting with ``.`` or ``_``, are skipped
as Flink's DefaultFileFilter does, given paths too).
A **format reader** (:class:`FormatReader`: text lines here, CSV in ``csv``, Parquet in
``parquet``) cuts each file into splits (a whole file; a Parquet row group) and reads a
split from any record on. Each split is read whole by one subtask:

* static file set: the splits of all files (files sorted by path, each file's splits in
  order), split ``i`` to subtask ``i % parallelism``;
* monitoring (``monitor_continuously``): each subtask rescans the paths every discovery
  interval on its own, so the owner of a file must not depend on which other files exist
  at scan time: every split of a file goes to subtask ``crc32(path) % parallelism``. Files
  already seen are remembered and never read twice; a file is read as it is when
  discovered (write files elsewhere and move them in, as with Flink).

Text lines are the lines without their terminator (``\\n``, ``\\r\\n`` or ``\\r``).

Position: one entry per split this subtask finished, is reading or has queued, as
``(split, records emitted)``, with None instead of a count once the split is done (a
text or CSV split is its path; a Parquet split is ``(path, row group)``). Restored at
another parallelism, a split goes to the subtask that owns it under the same rule as
above (sorted index or crc32, ``owns_split``), so the subtask that would discover a file
is the one that knows it was read, and a half-read split is continued by exactly one
subtask, after the records already emitted. The static rule assumes the file set does
not change while the job runs.
"""

from __future__ import annotations

import itertools
import os
import zlib
from abc import ABC, abstractmethod
from typing import Any, Callable, Hashable, Optional

from streamkernel.datastream.connectors.file_system import FileSource
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.core.registry import lookup, resolve
from streamkernel.runtime.sources.base import DEFAULT_POLL_DELAY_SECONDS, Batch, SourceReader

__all__ = ["FileReader", "FormatReader", "SplitCursor", "TextLineFormatReader", "list_files", "format_reader",
           "FORMAT_READERS"]

#: format class name (streamkernel.datastream) -> "module:FormatReaderClass" (imported on first use)
FORMAT_READERS = {
    "CsvReaderFormat": "streamkernel.runtime.sources.csv:CsvFormatReader",
    "ParquetColumnarRowInputFormat": "streamkernel.runtime.sources.parquet:ParquetFormatReader",
    "StreamFormat": "streamkernel.runtime.sources.files:TextLineFormatReader",
}


def _hidden(path: str) -> bool:
    """Flink's DefaultFileFilter: a name starting with ``.`` or ``_`` is hidden."""
    return os.path.basename(os.path.abspath(path)).startswith((".", "_"))


def list_files(paths: tuple[str, ...]) -> list[str]:
    """Every file under ``paths`` (files as given, directories recursively), sorted, no hidden
    files or directories (also when given: Flink's enumerators filter the paths themselves)."""
    found: set[str] = set()
    for path in paths:
        if _hidden(path):
            continue
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
                found.update(os.path.join(root, f) for f in files if not f.startswith((".", "_")))
        elif os.path.isfile(path):
            found.add(path)
    return sorted(found)


def split_path(split: Any) -> str:
    """The file a split belongs to (a split is a path, or a tuple starting with one)."""
    return split if isinstance(split, str) else split[0]


def _hashable(split: Any) -> Any:
    """A split as snapshotted, hashable again (a tuple split may come back as a list)."""
    return split if isinstance(split, str) else tuple(split)


class SplitCursor(ABC):
    """Reads one split from a given record on."""

    @abstractmethod
    def read(self, max_records: int) -> list:
        """Up to ``max_records`` records; an empty list once the split is done."""

    def close(self) -> None:
        """Release the file."""


class FormatReader(ABC):
    """How one file format cuts files into splits and reads them (Flink's format readers)."""

    def splits(self, path: str) -> list[Hashable]:
        """The splits of the file ``path`` (picklable, hashable; by default the whole file)."""
        return [path]

    @abstractmethod
    def open_split(self, split: Any, skip: int) -> SplitCursor:
        """A cursor reading ``split`` after its first ``skip`` records."""


class _TextLineCursor(SplitCursor):
    def __init__(self, path: str, charset: str, skip: int) -> None:
        # newline=None: universal newlines, so "\r\n" and "\r" arrive as "\n"
        self._file = open(path, "r", encoding=charset, newline=None)
        if skip:
            for _ in itertools.islice(self._file, skip):
                pass

    def read(self, max_records: int) -> list:
        lines = list(itertools.islice(self._file, max_records))
        if not lines:
            return lines
        # one C-level join/split per batch instead of a strip per line
        text = "".join(lines)
        values = text.split("\n")
        if text.endswith("\n"):
            values.pop()
        return values

    def close(self) -> None:
        self._file.close()


class TextLineFormatReader(FormatReader):
    """``StreamFormat.text_line_format``: one record per line, the whole file one split."""

    def __init__(self, stream_format: Any, where: str) -> None:
        self._charset = stream_format.charset_name

    def open_split(self, split: Any, skip: int) -> SplitCursor:
        return _TextLineCursor(split, self._charset, skip)


def format_reader(stream_format: Any, where: str) -> FormatReader:
    """The format reader of a FileSource's StreamFormat or BulkFormat (``where`` names the subtask in errors)."""
    target = lookup(FORMAT_READERS, stream_format, "streamkernel.datastream")
    if target is not None and not (target == FORMAT_READERS["StreamFormat"] and stream_format.kind != "text_line"):
        return resolve(target)(stream_format, where)
    raise InvalidProgramError(f"{where}: cannot read files in format {stream_format!r}; streamkernel reads "
                              f"StreamFormat.text_line_format(), CsvReaderFormat and ParquetColumnarRowInputFormat")


class FileReader(SourceReader):
    """Reads the file splits this subtask owns; rescans directories when monitoring."""

    def __init__(self, source: FileSource, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        super().__init__(subtask_index, parallelism, now_ms)
        self._paths = source.paths
        self._where = f"FileSource (source subtask {subtask_index + 1}/{parallelism})"
        self._format = format_reader(source.stream_format, self._where)
        self._interval_ms = source.discovery_interval_ms
        self._queue: list[tuple[Any, int]] = []  # splits to read next: (split, records already emitted)
        self._done: list[Any] = []  # splits of this subtask read completely
        self._seen: set[str] = set()  # every file this subtask has discovered (any owner)
        self._current: Any = None
        self._emitted = 0  # records of the current split emitted so far
        self._cursor: Optional[SplitCursor] = None
        self._next_scan_ms = 0
        self._opened = False
        self._static: Optional[tuple[list[str], dict[Any, int]]] = None  # files, split -> sorted index

    @property
    def monitoring(self) -> bool:
        """True when the paths are rescanned for new files (unbounded)."""
        return self._interval_ms is not None

    def _crc_owner(self, path: str) -> bool:
        return zlib.crc32(path.encode("utf-8", "surrogatepass")) % self.parallelism == self.subtask_index

    def _static_splits(self) -> tuple[list[str], dict[Any, int]]:
        """The files and, for each split of all of them, its index in the static order (listed once)."""
        if self._static is None:
            files = list_files(self._paths)
            splits = [split for path in files for split in self._format.splits(path)]
            self._static = (files, {split: index for index, split in enumerate(splits)})
        return self._static

    def _discover(self) -> None:
        """Scan the paths; queue the splits of new files that this subtask owns."""
        if self.monitoring:
            for path in list_files(self._paths):
                if path not in self._seen:
                    self._seen.add(path)
                    if self._crc_owner(path):
                        self._queue.extend((split, 0) for split in self._format.splits(path))
            self._next_scan_ms = self.now_ms() + self._interval_ms  # type: ignore[operator]
        else:
            files, index = self._static_splits()
            for split, i in index.items():
                if split_path(split) not in self._seen and i % self.parallelism == self.subtask_index:
                    self._queue.append((split, 0))
            self._seen.update(files)
        self.is_idle = self._current is None and not self._queue

    def open(self) -> None:
        """List the files and their splits (skipping what a restored position says was read)."""
        missing = [p for p in self._paths if not os.path.exists(p)]
        if missing and not self.monitoring:  # a monitored directory may appear later
            raise InvalidProgramError(f"{self._where}: path {missing[0]!r} does not exist")
        self._opened = True
        self._discover()

    def _open_next(self) -> bool:
        """Open the current split (or the next queued one); False if there is none."""
        if self._current is None:
            if not self._queue:
                return False
            self._current, self._emitted = self._queue.pop(0)
        self._cursor = self._format.open_split(self._current, self._emitted)
        return True

    def read_batch(self, max_records: int) -> Optional[Batch]:
        """The next records of the current split; moves through the splits, rescans when monitoring."""
        while True:
            if self._cursor is None and not self._open_next():
                if not self.monitoring:
                    return None
                if self.now_ms() < self._next_scan_ms:
                    return [], None
                self._discover()
                if not self._queue:
                    return [], None
                continue
            values = self._cursor.read(max_records)  # type: ignore[union-attr]
            if values:
                self._emitted += len(values)
                return values, None
            self._cursor.close()  # type: ignore[union-attr]
            self._cursor = None
            self._done.append(self._current)
            self._current = None
            self.is_idle = not self._queue

    def poll_delay_seconds(self) -> float:
        """Until the next directory scan (when monitoring)."""
        if not self.monitoring:
            return DEFAULT_POLL_DELAY_SECONDS
        return min(max(0.0, (self._next_scan_ms - self.now_ms()) / 1000.0), 0.5)

    # ------------------------------------------------------------- positions
    def snapshot_splits(self) -> list[tuple[Any, Optional[int]]]:
        """``[(split, records emitted or None once done), ...]``: done, current, then queued splits."""
        splits: list[tuple[Any, Optional[int]]] = [(split, None) for split in self._done]
        if self._current is not None:
            splits.append((self._current, self._emitted))
        splits.extend(self._queue)
        return splits

    def restore_splits(self, splits: list) -> None:
        """Skip the splits done, continue the others after the records already emitted."""
        self.close()
        self._current, self._emitted = None, 0
        self._done = [_hashable(split) for split, count in splits if count is None]
        self._queue = [(_hashable(split), int(count)) for split, count in splits if count is not None]
        self._seen = {split_path(split) for split, _ in splits}
        if self._opened:
            self._discover()

    def owns_split(self, index: int, split: Any) -> bool:
        """The split's owner under the discovery rule (a file no longer listed: by crc32 of its path)."""
        key = _hashable(split[0])
        if not self.monitoring:
            position = self._static_splits()[1].get(key)
            if position is not None:
                return position % self.parallelism == self.subtask_index
        return self._crc_owner(split_path(key))

    def close(self) -> None:
        """Close the open split."""
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = None
