"""Parquet files: read as Rows by a FileSource, written by a FileSink (PyFlink's ``formats.parquet``).

Reading::

    row_type = Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.STRING()])
    source = FileSource.for_bulk_file_format(ParquetColumnarRowInputFormat(row_type), "/data/in").build()
    ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "parquet-source")
    # records: Row(id=1, name='a'), ...

Every Parquet file under the paths (hidden files, starting with ``.`` or ``_``, skipped:
Spark's ``_SUCCESS`` and ``.crc`` files, in-progress part files) is read; each **row group**
is a split, dealt to the source subtasks, and a checkpoint records how many rows of it
were emitted, so a restored job (at any parallelism) reads every row exactly once. The row
type selects the columns by name (``is_case_sensitive=False``: ignoring case) and says
what they hold; a missing column, a column of another type or one whose type has no
``Types.*`` fails the job with a message naming the file and the column. Without a row
type (a streamkernel extra) every column of each file is read, named and typed as stored.

Writing::

    sink = FileSink.for_bulk_format("/data/out", ParquetBulkWriters.for_row_type(row_type)).build()
    ds.sink_to(sink)  # Rows, tuples (by position) or dicts (by name)

Part files roll at every checkpoint and are committed when it completes; the base path
is then a Parquet directory that ``spark.read.parquet`` and ``pyarrow.parquet`` read.
Column types: see :mod:`streamkernel.datastream.formats.arrow_types`. pyarrow (``pip install
streamkernel[spark]``) is imported only by the tasks that read or write.

Differences from PyFlink: the row type is a ``Types.ROW_NAMED`` (PyFlink's is a Table API
``DataTypes.ROW``); ``hadoop_config`` may carry ``parquet.compression`` (SNAPPY by default,
as parquet-mr; also UNCOMPRESSED, GZIP, LZ4, ZSTD, BROTLI) and ``parquet.block.size``
(bytes of a row group, 128 MiB by default), other keys are ignored; Avro records need the
JVM and are not supported (``AvroParquetReaders`` / ``AvroParquetWriters`` say so).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from streamkernel.common.serialization import RowDataBulkWriterFactory
from streamkernel.common.typeinfo import RowTypeInfo, TypeInformation
from streamkernel.datastream.connectors.file_system import BulkFormat
from streamkernel.datastream.formats.arrow_types import check_supported
from streamkernel.errors import InvalidProgramError

__all__ = ["ParquetColumnarRowInputFormat", "ParquetBulkWriters", "ParquetWriterFactory", "AvroParquetReaders",
           "AvroParquetWriters"]

_COMPRESSIONS = ("UNCOMPRESSED", "SNAPPY", "GZIP", "LZ4", "ZSTD", "BROTLI")
DEFAULT_BLOCK_SIZE = 128 * 1024 * 1024


def _check_row_type(row_type: Any, call: str) -> RowTypeInfo:
    if not isinstance(row_type, RowTypeInfo):
        raise InvalidProgramError(f"{call}: row_type must be a row type such as "
                                  f"Types.ROW_NAMED(['id', 'name'], [Types.LONG(), Types.STRING()]), got {row_type!r}")
    for name, field_type in zip(row_type.get_field_names(), row_type.get_field_types()):
        try:
            check_supported(field_type, name)
        except InvalidProgramError as exc:
            raise InvalidProgramError(f"{call}: {exc}") from None
    return row_type


def _config_dict(hadoop_config: Any, call: str) -> dict[str, str]:
    if hadoop_config is None:
        return {}
    to_dict = getattr(hadoop_config, "to_dict", None)
    if callable(to_dict):
        return {str(k): str(v) for k, v in to_dict().items()}
    if isinstance(hadoop_config, Mapping):
        return {str(k): str(v) for k, v in hadoop_config.items()}
    raise InvalidProgramError(f"{call}: hadoop_config must be a Configuration or a dict, got {hadoop_config!r}")


class ParquetColumnarRowInputFormat(BulkFormat):
    """Reads Parquet files into Rows of ``row_type``, ``batch_size`` rows decoded at a time.

    ``is_utc_timestamp``: how a timestamp stored as an instant (Spark's TIMESTAMP, INT96 or
    UTC-adjusted) becomes a ``datetime``: in UTC (True) or in local time (False, the
    default, as Spark shows it); wall-clock timestamps (TIMESTAMP_NTZ) are read as stored.
    """

    def __init__(self, row_type: Optional[RowTypeInfo] = None, hadoop_config: Any = None, batch_size: int = 2048,
                 is_utc_timestamp: bool = False, is_case_sensitive: bool = True) -> None:
        call = "ParquetColumnarRowInputFormat"
        self.row_type = _check_row_type(row_type, call) if row_type is not None else None
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise InvalidProgramError(f"{call}: batch_size must be a positive int, got {batch_size!r}")
        self.hadoop_config = _config_dict(hadoop_config, call)
        self.batch_size = batch_size
        self.is_utc_timestamp = bool(is_utc_timestamp)
        self.is_case_sensitive = bool(is_case_sensitive)
        if self.row_type is not None and not self.is_case_sensitive:
            lowered = [n.lower() for n in self.row_type.get_field_names()]
            if len(set(lowered)) != len(lowered):
                raise InvalidProgramError(f"{call}: with is_case_sensitive=False the row type's field names must "
                                          f"differ in more than case, got {self.row_type.get_field_names()}")

    def get_produced_type(self) -> Optional[TypeInformation]:
        """The row type (None when the columns are taken from each file)."""
        return self.row_type

    def __repr__(self) -> str:
        return f"ParquetColumnarRowInputFormat({self.row_type!r})"


class ParquetWriterFactory(RowDataBulkWriterFactory):
    """Describes the Parquet writer of each part file (Flink's ``ParquetWriterFactory``).

    Made by :meth:`ParquetBulkWriters.for_row_type`; the sink's tasks create the writers.
    """

    def __init__(self, row_type: RowTypeInfo, compression: str = "SNAPPY", block_size: int = DEFAULT_BLOCK_SIZE,
                 utc_timestamp: bool = False) -> None:
        super().__init__(_check_row_type(row_type, "ParquetBulkWriters.for_row_type"))
        self.compression = compression
        self.block_size = block_size
        self.utc_timestamp = utc_timestamp

    def __repr__(self) -> str:
        return f"ParquetWriterFactory({self._row_type!r}, compression={self.compression!r})"


class ParquetBulkWriters:
    """Builds the :class:`ParquetWriterFactory` for ``FileSink.for_bulk_format``."""

    @staticmethod
    def for_row_type(row_type: RowTypeInfo, hadoop_config: Any = None,
                     utc_timestamp: bool = False) -> ParquetWriterFactory:
        """Writes records of ``row_type`` (Rows, tuples by position, dicts by name) as Parquet.

        ``utc_timestamp``: SQL_TIMESTAMP fields are written as instants (naive datetimes
        taken as UTC; Spark reads TIMESTAMP) instead of wall-clock times (TIMESTAMP_NTZ).
        """
        call = "ParquetBulkWriters.for_row_type"
        config = _config_dict(hadoop_config, call)
        compression = config.get("parquet.compression", "SNAPPY").upper()
        if compression not in _COMPRESSIONS:
            raise InvalidProgramError(f"{call}: parquet.compression must be one of {', '.join(_COMPRESSIONS)}, "
                                      f"got {compression!r}")
        raw_size = config.get("parquet.block.size", str(DEFAULT_BLOCK_SIZE))
        try:
            block_size = int(raw_size)
            if block_size <= 0:
                raise ValueError
        except ValueError:
            raise InvalidProgramError(f"{call}: parquet.block.size must be a positive number of bytes, "
                                      f"got {raw_size!r}") from None
        return ParquetWriterFactory(row_type, compression, block_size, bool(utc_timestamp))


class AvroParquetReaders:
    """Not supported: Avro records need the JVM; read Rows with ParquetColumnarRowInputFormat."""

    @staticmethod
    def for_generic_record(schema: Any) -> Any:
        """Raises: use ``ParquetColumnarRowInputFormat(row_type)`` instead."""
        raise InvalidProgramError("AvroParquetReaders reads Avro GenericRecords, which need the JVM; streamkernel "
                                  "reads Parquet into Rows: FileSource.for_bulk_file_format("
                                  "ParquetColumnarRowInputFormat(row_type), path)")


class AvroParquetWriters:
    """Not supported: Avro records need the JVM; write Rows with ParquetBulkWriters."""

    @staticmethod
    def for_generic_record(schema: Any) -> Any:
        """Raises: use ``ParquetBulkWriters.for_row_type(row_type)`` instead."""
        raise InvalidProgramError("AvroParquetWriters writes Avro GenericRecords, which need the JVM; streamkernel "
                                  "writes Rows: FileSink.for_bulk_format(path, ParquetBulkWriters.for_row_type("
                                  "row_type))")
