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

Records are the lines without their terminator (``\\n``, ``\\r\\n`` or ``\\r``). Position:
the files finished, the current file and how many of its lines were emitted.
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
        self._pending: list[str] = []  # files of this subtask not started yet, in order
        self._done: list[str] = []  # files of this subtask read completely
        self._seen: set[str] = set()  # every file this subtask has discovered (any owner)
        self._current: Optional[str] = None
        self._lines_read = 0  # lines of the current file emitted so far
        self._file: Optional[TextIO] = None
        self._next_scan_ms = 0
        self._opened = False

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
            if self._owns(index, path) and path not in self._done and path != self._current:
                self._pending.append(path)
        if self.monitoring:
            self._next_scan_ms = self.now_ms() + self._interval_ms  # type: ignore[operator]
        self.is_idle = self._current is None and not self._pending

    def open(self) -> None:
        """List the files (skipping what a restored position says was read)."""
        missing = [p for p in self._paths if not os.path.exists(p)]
        if missing and not self.monitoring:  # a monitored directory may appear later
            raise InvalidProgramError(f"FileSource: path {missing[0]!r} does not exist (source subtask "
                                      f"{self.subtask_index + 1}/{self.parallelism})")
        self._opened = True
        self._discover()

    def _open_next(self) -> bool:
        """Open the current file (or the next pending one); False if there is none."""
        if self._current is None:
            if not self._pending:
                return False
            self._current = self._pending.pop(0)
            self._lines_read = 0
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
                if not self._pending:
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
            self.is_idle = not self._pending

    def poll_delay_seconds(self) -> float:
        """Until the next directory scan (when monitoring)."""
        if not self.monitoring:
            return DEFAULT_POLL_DELAY_SECONDS
        return min(max(0.0, (self._next_scan_ms - self.now_ms()) / 1000.0), 0.5)

    def snapshot_position(self) -> dict:
        """``{"done": [...], "current": path or None, "lines": n}``."""
        return {"done": list(self._done), "current": self._current, "lines": self._lines_read}

    def restore_position(self, position: Any) -> None:
        """Resume after the files ``done``, ``lines`` lines into ``current``."""
        self.close()
        self._done = list(position["done"])
        self._current = position["current"]
        self._lines_read = position["lines"]
        self._pending = []
        self._seen = set(self._done)
        if self._current is not None:
            self._seen.add(self._current)
        if self._opened:
            self._discover()

    def close(self) -> None:
        """Close the open file."""
        if self._file is not None:
            self._file.close()
            self._file = None
