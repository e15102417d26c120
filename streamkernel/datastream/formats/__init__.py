"""File formats for FileSource and FileSink, as PyFlink's ``pyflink.datastream.formats``.

``formats.parquet``: ``ParquetColumnarRowInputFormat`` (a BulkFormat for
``FileSource.for_bulk_file_format``) and ``ParquetBulkWriters.for_row_type`` (a
BulkWriterFactory for ``FileSink.for_bulk_format``); ``formats.csv``: ``CsvSchema``,
``CsvReaderFormat.for_schema`` (a StreamFormat for ``FileSource.for_record_stream_format``)
and ``CsvBulkWriters.for_schema``. Records are Rows typed by a ``Types.ROW_NAMED`` row
type. Importing these modules never imports pyarrow; the tasks that read or write do.
"""

from streamkernel.datastream.formats.csv import CsvBulkWriters, CsvReaderFormat, CsvSchema, CsvSchemaBuilder
from streamkernel.datastream.formats.parquet import (
    AvroParquetReaders,
    AvroParquetWriters,
    ParquetBulkWriters,
    ParquetColumnarRowInputFormat,
)

__all__ = ["ParquetColumnarRowInputFormat", "ParquetBulkWriters", "AvroParquetReaders", "AvroParquetWriters",
           "CsvSchema", "CsvSchemaBuilder", "CsvReaderFormat", "CsvBulkWriters"]
