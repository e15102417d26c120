"""File sinks: PyFlink's ``FileSink`` (row and bulk formats) and a CSV sink.

``FileSink.for_row_format(base_path, Encoder.simple_string_encoder()).build()`` writes
each sink subtask's records into *part files* in *buckets*, sub-directories of
``base_path`` (by default one per hour of processing time, ``yyyy-MM-dd--HH`` in the local
time zone, as Flink's DateTimeBucketAssigner; ``BucketAssigner.base_path_bucket_assigner()``
writes into ``base_path`` itself). As in Flink 2.x, a part file is named
``<prefix>-<uuid>-<counter><suffix>`` (``part-5c2b...-0`` by default; prefix and suffix set
with :class:`OutputFileConfig`): each bucket a subtask opens gets a random UUID and counts
its part files from 0. A part file is first written *in progress* (a hidden
``.part-<uuid>-0.inprogress.<uuid>`` file), rolled by the :class:`RollingPolicy` (before a
record when it is larger than ``part_size``; by age or inactivity on a timer; or at every
checkpoint), then *pending*, and only *committed* (renamed to its final name) when the
checkpoint that saw it completes, or at the end of a bounded input: without checkpointing
rolled files stay pending until the input ends, as in Flink. So readers of ``base_path``
only ever see complete files (Flink's two-phase commit). With checkpointing the sink is
exactly-once: after any number of failures, each restoring the latest checkpoint, the
committed files hold exactly the lines of a run without failures (a restored subtask
commits what the checkpoint had pending, cuts its in-progress file back to it, and removes
the part files written after it). Without checkpointing a restarted job starts over: what a
subtask committed at its end of input before the failure is written again.

``FileSink.for_bulk_format(base_path, writer_factory).build()`` writes each part file with
a bulk writer (``ParquetBulkWriters.for_row_type(row_type)``,
``CsvBulkWriters.for_schema(schema)`` or a :class:`BulkWriterFactory` of your own). A bulk
encoded file can only be cut when its writer finishes it, so bulk part files roll at
every checkpoint (and at the end of input) and never otherwise, as in Flink: with
checkpointing every committed part file is a complete file (a Parquet file that
``spark.read.parquet(base_path)`` reads straight away; in-progress files start with ``.``
and are ignored by Spark, pyarrow and this project's FileSource). Without checkpointing a
bulk sink commits only at the end of a bounded input.

Difference from Flink: what is left at the end of a bounded input is committed when the
sink subtask finishes (Flink 2.x commits it with a final checkpoint); a restore from an
earlier checkpoint removes it again.

:class:`CsvSink` (a streamkernel extra) writes records as CSV rows, as Flink's old
``writeAsCsv``: one file ``path`` at parallelism 1, else a directory ``path`` holding one
file per subtask (``1.csv``, ``2.csv`` ...). Its rows are visible as they are written
(no two-phase commit); a job restored from a checkpoint cuts each file back to its size at
that checkpoint, at the same parallelism only.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

from streamkernel.common.serialization import BulkWriterFactory, Encoder
from streamkernel.datastream.connectors.base import Sink
from streamkernel.errors import InvalidProgramError

__all__ = ["FileSink", "RowFormatBuilder", "BulkFormatBuilder", "OutputFileConfig", "OutputFileConfigBuilder",
           "RollingPolicy", "BucketAssigner", "CsvSink"]


class OutputFileConfig:
    """The prefix and suffix of part file names (Flink's default: ``part`` and none)."""

    def __init__(self, part_prefix: str = "part", part_suffix: str = "") -> None:
        for arg, value in (("part_prefix", part_prefix), ("part_suffix", part_suffix)):
            if not isinstance(value, str) or os.sep in value or (os.altsep and os.altsep in value):
                raise InvalidProgramError(f"OutputFileConfig: {arg} must be a str without path separators, "
                                          f"got {value!r}")
        self.part_prefix = part_prefix
        self.part_suffix = part_suffix

    @staticmethod
    def builder() -> "OutputFileConfigBuilder":
        """A builder: ``OutputFileConfig.builder().with_part_prefix("data").build()``."""
        return OutputFileConfigBuilder()

    def get_part_prefix(self) -> str:
        """The part file prefix."""
        return self.part_prefix

    def get_part_suffix(self) -> str:
        """The part file suffix."""
        return self.part_suffix

    def __repr__(self) -> str:
        return f"OutputFileConfig({self.part_prefix!r}, {self.part_suffix!r})"


class OutputFileConfigBuilder:
    """Builds an :class:`OutputFileConfig`."""

    def __init__(self) -> None:
        self._prefix = "part"
        self._suffix = ""

    def with_part_prefix(self, prefix: str) -> "OutputFileConfigBuilder":
        """Part files start with ``prefix``."""
        self._prefix = prefix
        return self

    def with_part_suffix(self, suffix: str) -> "OutputFileConfigBuilder":
        """Part files end with ``suffix`` (e.g. ``".txt"``)."""
        self._suffix = suffix
        return self

    def build(self) -> OutputFileConfig:
        """The configuration."""
        return OutputFileConfig(self._prefix, self._suffix)


class RollingPolicy:
    """When the in-progress part file is closed and a new one started (PyFlink's RollingPolicy).

    ``default_rolling_policy``: before a record once the file holds more than ``part_size``
    bytes (and at a checkpoint then), after ``rollover_interval`` ms since the file was
    opened, or after ``inactivity_interval`` ms without writes (checked every bucket check
    interval), as Flink's DefaultRollingPolicy;
    ``on_checkpoint_rolling_policy``: at every checkpoint only.
    """

    def __init__(self, part_size: Optional[int], rollover_interval: Optional[int],
                 inactivity_interval: Optional[int], roll_on_checkpoint: bool) -> None:
        for arg, value in (("part_size", part_size), ("rollover_interval", rollover_interval),
                           ("inactivity_interval", inactivity_interval)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise InvalidProgramError(f"RollingPolicy: {arg} must be a positive int, got {value!r}")
        self.part_size = part_size
        self.rollover_interval = rollover_interval
        self.inactivity_interval = inactivity_interval
        self.roll_on_checkpoint = roll_on_checkpoint

    @staticmethod
    def default_rolling_policy(part_size: int = 1024 * 1024 * 128, rollover_interval: int = 60 * 1000,
                               inactivity_interval: int = 60 * 1000) -> "RollingPolicy":
        """Roll by size (bytes), age (ms) and inactivity (ms): Flink's DefaultRollingPolicy."""
        return RollingPolicy(part_size, rollover_interval, inactivity_interval, False)

    @staticmethod
    def on_checkpoint_rolling_policy() -> "RollingPolicy":
        """Roll at every checkpoint (and at the end of input) only."""
        return RollingPolicy(None, None, None, True)

    def should_roll_on_event(self, size: int) -> bool:
        """True if a part file of ``size`` bytes rolls before the next record is written to it
        (Flink's DefaultRollingPolicy: its size exceeds ``part_size``)."""
        return self.part_size is not None and size > self.part_size

    def should_roll_on_checkpoint(self, size: int) -> bool:
        """True if a part file of ``size`` bytes rolls at a checkpoint (always, on checkpoint)."""
        return self.roll_on_checkpoint or (self.part_size is not None and size > self.part_size)

    def should_roll_on_processing_time(self, opened_ms: int, last_write_ms: int, now_ms: int) -> bool:
        """True if a part file opened and last written at those times is too old or inactive now."""
        return ((self.rollover_interval is not None and now_ms - opened_ms >= self.rollover_interval)
                or (self.inactivity_interval is not None and now_ms - last_write_ms >= self.inactivity_interval))

    def __repr__(self) -> str:
        if self.roll_on_checkpoint:
            return "RollingPolicy.on_checkpoint_rolling_policy()"
        return (f"RollingPolicy.default_rolling_policy({self.part_size}, {self.rollover_interval}, "
                f"{self.inactivity_interval})")


# Java DateTimeFormatter letters -> strftime, longest first
_JAVA_DATE_PATTERNS = (("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"),
                       ("mm", "%M"), ("ss", "%S"))


class BucketAssigner:
    """Which sub-directory of the base path a record goes to (PyFlink's BucketAssigner)."""

    def __init__(self, kind: str, format_str: Optional[str] = None, timezone_id: Optional[str] = None) -> None:
        self.kind = kind
        self.format_str = format_str
        self.timezone_id = timezone_id
        self.strftime_format: Optional[str] = None
        if format_str is not None:
            fmt = format_str
            for java, py in _JAVA_DATE_PATTERNS:
                fmt = fmt.replace(java, py)
            self.strftime_format = fmt

    @staticmethod
    def base_path_bucket_assigner() -> "BucketAssigner":
        """Everything straight into the base path."""
        return BucketAssigner("base_path")

    @staticmethod
    def date_time_bucket_assigner(format_str: str = "yyyy-MM-dd--HH",
                                  timezone_id: Optional[str] = None) -> "BucketAssigner":
        """One sub-directory per processing-time period, named by ``format_str`` (Java pattern) in
        the local time zone or ``timezone_id``: the default (``yyyy-MM-dd--HH``, hourly)."""
        if not isinstance(format_str, str) or not format_str:
            raise InvalidProgramError(f"date_time_bucket_assigner: format_str must be a non-empty str, "
                                      f"got {format_str!r}")
        return BucketAssigner("date_time", format_str, timezone_id)

    def __repr__(self) -> str:
        if self.kind == "base_path":
            return "BucketAssigner.base_path_bucket_assigner()"
        return f"BucketAssigner.date_time_bucket_assigner({self.format_str!r}, {self.timezone_id!r})"


class FileSink(Sink):
    """Writes records into part files under ``base_path`` with an :class:`Encoder` (row format).

    ::

        sink = (FileSink.for_row_format("/tmp/out", Encoder.simple_string_encoder())
                .with_output_file_config(OutputFileConfig.builder().with_part_suffix(".txt").build())
                .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=1 << 20))
                .build())
        ds.sink_to(sink)
    """

    default_name = "FileSink"

    def __init__(self, base_path: str, encoder: Optional[Encoder], *, output_file_config: OutputFileConfig,
                 rolling_policy: RollingPolicy, bucket_assigner: BucketAssigner,
                 bucket_check_interval: int, writer_factory: Optional[BulkWriterFactory] = None) -> None:
        self.base_path = base_path
        #: the row format's Encoder (None for a bulk format)
        self.encoder = encoder
        #: the bulk format's BulkWriterFactory (None for a row format)
        self.writer_factory = writer_factory
        self.output_file_config = output_file_config
        self.rolling_policy = rolling_policy
        self.bucket_assigner = bucket_assigner
        self.bucket_check_interval = bucket_check_interval

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> "RowFormatBuilder":
        """A builder for a sink writing each record with ``encoder`` into files under ``base_path``."""
        return RowFormatBuilder(base_path, encoder)

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: BulkWriterFactory) -> "BulkFormatBuilder":
        """A builder for a sink writing part files under ``base_path`` with a bulk writer::

            row_type = Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.STRING()])
            sink = FileSink.for_bulk_format("/data/out", ParquetBulkWriters.for_row_type(row_type)).build()
        """
        return BulkFormatBuilder(base_path, writer_factory)

    @property
    def is_bulk(self) -> bool:
        """True for a bulk format (part files roll at every checkpoint only)."""
        return self.writer_factory is not None

    def __repr__(self) -> str:
        return f"FileSink({self.base_path!r})"


class _FileSinkBuilder:
    """What both FileSink builders configure: base path, part file names, buckets."""

    _method = ""  # the FileSink method that made the builder, for messages

    def __init__(self, base_path: str) -> None:
        if not isinstance(base_path, (str, os.PathLike)) or not os.fspath(base_path):
            raise InvalidProgramError(f"FileSink.{self._method}: base_path must be a path, got {base_path!r}")
        self._base_path = os.fspath(base_path)
        self._output_file_config = OutputFileConfig()
        self._bucket_assigner = BucketAssigner.date_time_bucket_assigner()  # Flink's default
        self._bucket_check_interval = 60 * 1000

    def with_output_file_config(self, output_file_config: OutputFileConfig) -> Any:
        """Part file prefix and suffix (e.g. ``.with_part_suffix(".parquet")``)."""
        if not isinstance(output_file_config, OutputFileConfig):
            raise InvalidProgramError(f"with_output_file_config: expected an OutputFileConfig, "
                                      f"got {output_file_config!r}")
        self._output_file_config = output_file_config
        return self

    def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> Any:
        """Which sub-directory records go to."""
        if not isinstance(bucket_assigner, BucketAssigner):
            raise InvalidProgramError(f"with_bucket_assigner: expected a BucketAssigner, got {bucket_assigner!r}")
        self._bucket_assigner = bucket_assigner
        return self

    def with_bucket_check_interval(self, interval: int) -> Any:
        """How often (ms) time-based rolling is checked when no records arrive."""
        if isinstance(interval, bool) or not isinstance(interval, int) or interval <= 0:
            raise InvalidProgramError(f"with_bucket_check_interval: interval must be a positive int (ms), "
                                      f"got {interval!r}")
        self._bucket_check_interval = interval
        return self


class RowFormatBuilder(_FileSinkBuilder):
    """Configures a row-format :class:`FileSink` (PyFlink's ``FileSink.RowFormatBuilder``)."""

    _method = "for_row_format"

    def __init__(self, base_path: str, encoder: Encoder) -> None:
        super().__init__(base_path)
        if not isinstance(encoder, Encoder):
            raise InvalidProgramError(
                f"FileSink.for_row_format: encoder must be an Encoder (e.g. Encoder.simple_string_encoder()), "
                f"got {encoder!r}")
        self._encoder = encoder
        self._rolling_policy = RollingPolicy.default_rolling_policy()

    def with_rolling_policy(self, rolling_policy: RollingPolicy) -> "RowFormatBuilder":
        """When part files roll."""
        if not isinstance(rolling_policy, RollingPolicy):
            raise InvalidProgramError(f"with_rolling_policy: expected a RollingPolicy, got {rolling_policy!r}")
        self._rolling_policy = rolling_policy
        return self

    def build(self) -> FileSink:
        """The configured sink."""
        return FileSink(self._base_path, self._encoder, output_file_config=self._output_file_config,
                        rolling_policy=self._rolling_policy, bucket_assigner=self._bucket_assigner,
                        bucket_check_interval=self._bucket_check_interval)


class BulkFormatBuilder(_FileSinkBuilder):
    """Configures a bulk-format :class:`FileSink` (PyFlink's ``FileSink.BulkFormatBuilder``)."""

    _method = "for_bulk_format"

    def __init__(self, base_path: str, writer_factory: BulkWriterFactory) -> None:
        super().__init__(base_path)
        if not isinstance(writer_factory, BulkWriterFactory):
            raise InvalidProgramError(
                f"FileSink.for_bulk_format: writer_factory must be a BulkWriterFactory (e.g. "
                f"ParquetBulkWriters.for_row_type(row_type)), got {writer_factory!r}")
        self._factory = writer_factory

    def with_rolling_policy(self, rolling_policy: RollingPolicy) -> "BulkFormatBuilder":
        """Only ``RollingPolicy.on_checkpoint_rolling_policy()``: bulk part files roll at checkpoints."""
        if not isinstance(rolling_policy, RollingPolicy) or not rolling_policy.roll_on_checkpoint:
            raise InvalidProgramError(f"with_rolling_policy: a bulk format rolls its part files at every "
                                      f"checkpoint only; pass RollingPolicy.on_checkpoint_rolling_policy(), "
                                      f"got {rolling_policy!r}")
        return self

    def build(self) -> FileSink:
        """The configured sink."""
        return FileSink(self._base_path, None, output_file_config=self._output_file_config,
                        rolling_policy=RollingPolicy.on_checkpoint_rolling_policy(),
                        bucket_assigner=self._bucket_assigner, bucket_check_interval=self._bucket_check_interval,
                        writer_factory=self._factory)


# PyFlink nests the builders in FileSink
FileSink.RowFormatBuilder = RowFormatBuilder  # type: ignore[attr-defined]
FileSink.BulkFormatBuilder = BulkFormatBuilder  # type: ignore[attr-defined]


class CsvSink(Sink):
    """Writes records as CSV rows (tuples, lists and Rows by position; dicts by ``columns``).

    ``columns`` names the header row (written first) and, for dict records, which keys to
    write in which order; dict records without ``columns`` use the first record's keys.
    Other records are written as one field. ``delimiter`` separates the fields.
    """

    default_name = "CsvSink"

    def __init__(self, path: str, columns: Optional[Sequence[str]] = None, delimiter: str = ",",
                 charset_name: str = "UTF-8") -> None:
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise InvalidProgramError(f"CsvSink: path must be a file path, got {path!r}")
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise InvalidProgramError(f"CsvSink: delimiter must be one character, got {delimiter!r}")
        self.path = os.fspath(path)
        self.columns = tuple(columns) if columns is not None else None
        self.delimiter = delimiter
        self.charset_name = charset_name

    def __repr__(self) -> str:
        return f"CsvSink({self.path!r}, columns={self.columns})"
