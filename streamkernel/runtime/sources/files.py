"""Reader of a FileSource: the lines of this subtask's files, decoded with the format's charset.

Files: each given path that is a file, and every file under each given directory
(recursively; hidden files, those starting with ``.`` or ``_``, are skipped as Flink does).
Each file is a split and is read whole by one subtask:

* static file set: all files sorted by path, file ``i`` to subtask ``i % parallelism``;
* monitoring (``monitor_continuously``): each subtask rescans the paths every discovery
  interval on its own, so the owner of a file must not depend on which other files exist
  at scan time: a file goes to subtask ``crc32(path) % parallelism``. Files already seen
  are remembered and never read twice; a file is read as it is when discovered (write
  files elsewhere and move them in, as with Flink).

Records are the lines without their terminator (``\\n``, ``\\r\\n`` or ``\\r``).

Position: one split per file this subtask finished, is reading or has queued, as
``(path, lines emitted)``, with None instead of a count once the file is done. Restored at
another parallelism, a file's split goes to the subtask that owns its path under the same
rule as above (sorted index or crc32, ``owns_split``), so the subtask that would discover a
file is the one that knows it was read, and a half-read file is continued by exactly one
subtask. The static rule assumes the file set does not change while the job runs.
"""

from __future__ import annotations

import itertools
import os
import zlib
from typing import Any, Callable, Optional, TextIO

from streamkernel.datastream.connectors.file_system import FileSource
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.sources.base import DEFAULT_POLL_DELAY_SECONDS, Batch, SourceReader

__all__ = ["FileReader", "list_files"]


def list_files(paths: tuple[str, ...]) -> list[str]:
    """Every file under ``paths`` (files as given, directories recursively), sorted, no hidden files."""
    found: set[str] = set()
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
                found.update(os.path.join(root, f) for f in files if not f.startswith((".", "_")))
        elif os.path.isfile(path):
            found.add(path)
    return sorted(found)


class FileReader(SourceReader):
    """Reads the lines of the files this subtask owns; rescans directories when monitoring."""

    def __init__(self, source: FileSource, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        super().__init__(subtask_index, parallelism, now_ms)
        self._paths = source.paths
        self._charset = source.stream_format.charset_name
        self._interval_ms = source.discovery_interval_ms
        self._queue: list[tuple[str, int]] = []  # files to read next: (path, lines already emitted)
        self._done: list[str] = []  # files of this subtask read completely
        self._seen: set[str] = set()  # every file this subtask has discovered (any owner)
        self._current: Optional[str] = None
        self._lines_read = 0  # lines of the current file emitted so far
        self._file: Optional[TextIO] = None
        self._next_scan_ms = 0
        self._opened = False
        self._static_index: Optional[dict[str, int]] = None  # path -> sorted index (static rule)

    @property
    def monitoring(self) -> bool:
        """True when the paths are rescanned for new files (unbounded)."""
        return self._interval_ms is not None

    def _owns(self, index: int, path: str) -> bool:
        if self.monitoring:
            return zlib.crc32(path.encode("utf-8", "surrogatepass")) % self.parallelism == self.subtask_index
        return index % self.parallelism == self.subtask_index

    def _discover(self) -> None:
        """Scan the paths; queue the new files this subtask owns."""
        files = list_files(self._paths)
        for index, path in enumerate(files):
            if path in self._seen:
                continue
            self._seen.add(path)
            if self._owns(index, path):
                self._queue.append((path, 0))
        if self.monitoring:
            self._next_scan_ms = self.now_ms() + self._interval_ms  # type: ignore[operator]
        self.is_idle = self._current is None and not self._queue

    def open(self) -> None:
        """List the files (skipping what a restored position says was read)."""
        missing = [p for p in self._paths if not os.path.exists(p)]
        if missing and not self.monitoring:  # a monitored directory may appear later
            raise InvalidProgramError(f"FileSource: path {missing[0]!r} does not exist (source subtask "
                                      f"{self.subtask_index + 1}/{self.parallelism})")
        self._opened = True
        self._discover()

    def _open_next(self) -> bool:
        """Open the current file (or the next queued one); False if there is none."""
        if self._current is None:
            if not self._queue:
                return False
            self._current, self._lines_read = self._queue.pop(0)
        # newline=None: universal newlines, so "\r\n" and "\r" arrive as "\n"
        self._file = open(self._current, "r", encoding=self._charset, newline=None)
        if self._lines_read:
            for _ in itertools.islice(self._file, self._lines_read):
                pass
        return True

    def read_batch(self, max_records: int) -> Optional[Batch]:
        """The next lines of the current file; moves through the files, rescans when monitoring."""
        while True:
            if self._file is None and not self._open_next():
                if not self.monitoring:
                    return None
                if self.now_ms() < self._next_scan_ms:
                    return [], None
                self._discover()
                if not self._queue:
                    return [], None
                continue
            lines = list(itertools.islice(self._file, max_records))  # type: ignore[arg-type]
            if lines:
                self._lines_read += len(lines)
                # one C-level join/split per batch instead of a strip per line
                text = "".join(lines)
                values = text.split("\n")
                if text.endswith("\n"):
                    values.pop()
                return values, None
            self._file.close()  # type: ignore[union-attr]
            self._file = None
            self._done.append(self._current)  # type: ignore[arg-type]
            self._current = None
            self.is_idle = not self._queue

    def poll_delay_seconds(self) -> float:
        """Until the next directory scan (when monitoring)."""
        if not self.monitoring:
            return DEFAULT_POLL_DELAY_SECONDS
        return min(max(0.0, (self._next_scan_ms - self.now_ms()) / 1000.0), 0.5)

    # ------------------------------------------------------------- positions
    def snapshot_splits(self) -> list[tuple[str, Optional[int]]]:
        """``[(path, lines emitted or None once done), ...]``: done, current, then queued files."""
        splits: list[tuple[str, Optional[int]]] = [(path, None) for path in self._done]
        if self._current is not None:
            splits.append((self._current, self._lines_read))
        splits.extend(self._queue)
        return splits

    def restore_splits(self, splits: list) -> None:
        """Skip the files done, continue the others after the lines already emitted."""
        self.close()
        self._current, self._lines_read = None, 0
        self._done = [path for path, lines in splits if lines is None]
        self._queue = [(path, int(lines)) for path, lines in splits if lines is not None]
        self._seen = {path for path, _ in splits}
        if self._opened:
            self._discover()

    def owns_split(self, index: int, split: Any) -> bool:
        """The file's owner under the discovery rule (a file no longer listed: by crc32 of its path)."""
        path = split[0]
        if not self.monitoring:
            if self._static_index is None:
                self._static_index = {p: i for i, p in enumerate(list_files(self._paths))}
            position = self._static_index.get(path)
            if position is not None:
                return position % self.parallelism == self.subtask_index
        return zlib.crc32(path.encode("utf-8", "surrogatepass")) % self.parallelism == self.subtask_index

    def close(self) -> None:
        """Close the open file."""
        if self._file is not None:
            self._file.close()
            self._file = None
