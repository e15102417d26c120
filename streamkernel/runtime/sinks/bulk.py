"""Bulk writers of a bulk-format FileSink: one per part file, made from the sink's BulkWriterFactory.

:func:`create_bulk_writer` turns the factory (plan data) into a writer for a freshly opened
part file: ``ParquetBulkWriters.for_row_type`` -> ``parquet.ParquetBulkWriter`` (pyarrow),
``CsvBulkWriters.for_schema`` -> :class:`CsvBulkWriter`, a factory of your own ->
``factory.create(stream)``.
"""

from __future__ import annotations

import csv
import io
from typing import Any, BinaryIO

from streamkernel.common.serialization import BulkWriter, BulkWriterFactory
from streamkernel.datastream.formats.csv import CsvBulkWriterFactory
from streamkernel.datastream.formats.parquet import ParquetWriterFactory
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.sinks.parquet import RecordShapeError, positional_values
from streamkernel.runtime.sources.csv import csv_dialect

__all__ = ["create_bulk_writer", "CsvBulkWriter", "RecordShapeError"]


def create_bulk_writer(factory: BulkWriterFactory, stream: BinaryIO, where: str) -> BulkWriter:
    """The writer of one part file (``where`` names the sink subtask in errors)."""
    if isinstance(factory, ParquetWriterFactory):
        from streamkernel.runtime.sinks.parquet import ParquetBulkWriter

        return ParquetBulkWriter(factory, stream, where)
    if isinstance(factory, CsvBulkWriterFactory):
        return CsvBulkWriter(factory, stream)
    writer = factory.create(stream)
    if not isinstance(writer, BulkWriter) and not callable(getattr(writer, "add_element", None)):
        raise InvalidProgramError(f"{where}: {type(factory).__name__}.create(stream) must return a BulkWriter, "
                                  f"got {writer!r}")
    return writer


def _text(value: Any, separator: str = "") -> Any:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (list, tuple)):
        return separator.join("" if v is None else str(_text(v)) for v in value)
    return value


class CsvBulkWriter(BulkWriter):
    """Writes records as CSV lines of a :class:`~streamkernel.datastream.formats.csv.CsvSchema`
    (a header line first when the schema uses a header)."""

    def __init__(self, factory: CsvBulkWriterFactory, stream: BinaryIO) -> None:
        schema = factory.schema
        self._stream = stream
        self._charset = "utf-8"
        self._names = schema.column_names()
        self._null = schema.null_value if schema.null_value is not None else ""
        self._separators = [c.array_separator if c.is_array else None for c in schema.columns]
        self._text = io.StringIO()
        self._writer = csv.writer(self._text, **csv_dialect(schema))
        if schema.use_header:
            self._writer.writerow(self._names)

    def add_element(self, element: Any) -> None:
        """Adds one record."""
        self.add_elements([element])

    def add_elements(self, elements: list) -> None:
        """Writes one line per record."""
        null, separators, names = self._null, self._separators, self._names
        for record in elements:
            values = positional_values(record, names)
            row = []
            for value, separator in zip(values, separators):
                if value is None:
                    row.append(null)
                elif separator is not None or isinstance(value, bool):
                    row.append(_text(value, separator or ""))
                else:
                    row.append(value)
            try:
                self._writer.writerow(row)
            except csv.Error as exc:
                raise RecordShapeError(record, f"cannot be written as a CSV line: {exc}") from None
        self.flush()

    def flush(self) -> None:
        """Writes the buffered lines to the part file."""
        text = self._text.getvalue()
        if text:
            self._stream.write(text.encode(self._charset))
            self._text.seek(0)
            self._text.truncate()

    def finish(self) -> None:
        """Writes what is left (CSV has no footer)."""
        self.flush()
