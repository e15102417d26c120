"""File sources (and, re-exported, the file sink), as PyFlink's ``connectors.file_system``.

``FileSource.for_record_stream_format(StreamFormat.text_line_format(), path).build()``
reads every line of the given files (or of all files under the given directories,
recursively) once, skipping hidden files and directories (names starting with ``.`` or
``_``, as Flink's DefaultFileFilter, given paths too: a FileSink's in-progress files);
``.monitor_continuously(Duration.of_seconds(1))`` keeps watching the directories for new
files, which makes the source unbounded. Each file is a split; source subtasks share them.

Formats: a :class:`StreamFormat` reads a file record by record (text lines,
``formats.csv.CsvReaderFormat``); a :class:`BulkFormat` decodes batches of records at a
time (``formats.parquet.ParquetColumnarRowInputFormat``; with it each Parquet row group is
a split of its own), used with ``FileSource.for_bulk_file_format(bulk_format, path)``.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Union

from streamkernel.datastream.connectors.base import Boundedness, Source
from streamkernel.datastream.connectors.file_sink import (
    BucketAssigner,
    FileSink,
    OutputFileConfig,
    RollingPolicy,
)
from streamkernel.errors import InvalidProgramError

# PyFlink keeps the file sink in this module too.
__all__ = ["StreamFormat", "BulkFormat", "FileSource", "FileSourceBuilder", "FileSink", "OutputFileConfig",
           "RollingPolicy", "BucketAssigner"]


class StreamFormat:
    """How a file's bytes become records; ``text_line_format`` yields one str per line."""

    def __init__(self, kind: str, charset_name: str = "UTF-8") -> None:
        self.kind = kind
        self.charset_name = charset_name

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> "StreamFormat":
        """One record per line, decoded with ``charset_name``, line terminators removed."""
        return StreamFormat("text_line", charset_name)

    def get_produced_type(self) -> Any:
        """The type of the records read: ``Types.STRING()`` for text lines, as Flink's TextLineInputFormat."""
        from streamkernel.common.typeinfo import Types

        return Types.STRING() if self.kind == "text_line" else None

    def __repr__(self) -> str:
        return f"StreamFormat.{self.kind}_format({self.charset_name!r})"


class BulkFormat:
    """Reads and decodes batches of records at a time (Flink's ``BulkFormat``: Parquet, ORC).

    Plan data, like a Source: the runtime reads files with the reader registered for the
    format's class. A bulk format may cut a file into several splits (Parquet: row groups).
    """

    def get_produced_type(self) -> Any:
        """The type of the records read (None: not declared)."""
        return None


class FileSource(Source):
    """Reads records from files and directories; bounded unless monitoring continuously."""

    default_name = "FileSource"

    def __init__(self, stream_format: Union[StreamFormat, BulkFormat], paths: tuple[str, ...],
                 discovery_interval_ms: Optional[int] = None) -> None:
        #: the StreamFormat or BulkFormat the files are read with
        self.stream_format = stream_format
        self.paths = paths
        self.discovery_interval_ms = discovery_interval_ms

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> "FileSourceBuilder":
        """A builder for a source reading ``paths`` (files or directories) with ``stream_format``."""
        return FileSourceBuilder(stream_format, paths)

    @staticmethod
    def for_bulk_file_format(bulk_format: BulkFormat, *paths: str) -> "FileSourceBuilder":
        """A builder for a source reading ``paths`` (files or directories) with ``bulk_format``::

            source = FileSource.for_bulk_file_format(
                ParquetColumnarRowInputFormat(Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.STRING()])),
                "/data/events").build()
        """
        return FileSourceBuilder(bulk_format, paths, bulk=True)

    def get_produced_type(self) -> Any:
        """The type of the records read, as the format declares it (None when unknown)."""
        return self.stream_format.get_produced_type()
    def get_boundedness(self) -> Boundedness:
        """BOUNDED for a static file set, CONTINUOUS_UNBOUNDED when monitoring."""
        if self.discovery_interval_ms is None:
            return Boundedness.BOUNDED
        return Boundedness.CONTINUOUS_UNBOUNDED

    def __repr__(self) -> str:
        return f"FileSource({', '.join(self.paths)})"


class FileSourceBuilder:
    """Configures a :class:`FileSource`; finish with :meth:`build`."""

    def __init__(self, stream_format: Union[StreamFormat, BulkFormat], paths: tuple[str, ...],
                 bulk: bool = False) -> None:
        call, expected = (("for_bulk_file_format", BulkFormat) if bulk
                          else ("for_record_stream_format", StreamFormat))
        if not isinstance(stream_format, expected):
            hint = ""
            if isinstance(stream_format, (StreamFormat, BulkFormat)):
                other = "for_record_stream_format" if bulk else "for_bulk_file_format"
                hint = f" (a {type(stream_format).__name__} goes to FileSource.{other})"
            raise InvalidProgramError(f"FileSource.{call}: expected a {expected.__name__}, got {stream_format!r}{hint}")
        if not paths:
            raise InvalidProgramError(f"FileSource.{call}: give at least one path")
        self._format = stream_format
        self._paths = tuple(os.fspath(p) for p in paths)
        self._discovery_interval_ms: Optional[int] = None

    def monitor_continuously(self, discovery_interval: Any) -> "FileSourceBuilder":
        """Keep scanning the paths for new files every ``discovery_interval`` (a Duration)."""
        millis = discovery_interval.to_milliseconds() if hasattr(discovery_interval, "to_milliseconds") \
            else int(discovery_interval)
        if millis <= 0:
            raise InvalidProgramError(f"monitor_continuously: discovery_interval must be positive, got {millis} ms")
        self._discovery_interval_ms = millis
        return self

    def process_static_file_set(self) -> "FileSourceBuilder":
        """Read the files present at start, then end (the default)."""
        self._discovery_interval_ms = None
        return self

    def build(self) -> FileSource:
        """The configured source."""
        return FileSource(self._format, self._paths, self._discovery_interval_ms)
