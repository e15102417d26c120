"""The Parquet bulk writer of a FileSink part file (``ParquetBulkWriters.for_row_type``; pyarrow).

Each batch of records (Rows, tuples and lists by position, dicts by field name) is
converted column by column into an Arrow record batch as it arrives (so a record that
does not fit the row type fails the job at once, naming the record, the column and the
value); the batches become one **row group** once they hold about ``parquet.block.size``
bytes, and at ``finish`` (the sink rolls bulk part files at every checkpoint), which also
writes the footer.
"""

from __future__ import annotations

from typing import Any, BinaryIO, Callable, Optional

from streamkernel.common.serialization import BulkWriter
from streamkernel.common.typeinfo import RowTypeInfo, TypeInformation
from streamkernel.common.types import Row
from streamkernel.datastream.formats.arrow_types import element_types, kind_of, to_arrow_schema
from streamkernel.datastream.formats.parquet import ParquetWriterFactory
from streamkernel.runtime.sources.parquet import import_pyarrow

__all__ = ["ParquetBulkWriter", "RecordShapeError", "positional_values", "batch_values"]


class RecordShapeError(TypeError):
    """A record that cannot be laid out as the row type's fields (carries the record)."""

    def __init__(self, record: Any, problem: str) -> None:
        super().__init__(problem)
        self.record = record


def positional_values(record: Any, names: list[str]) -> Any:
    """The field values of ``record`` in the order of ``names`` (Rows, tuples, lists, dicts)."""
    if isinstance(record, Row):
        if record._fields is None or record._fields == names:
            values = record._values
        else:
            try:
                return record.get_fields_by_names(names)
            except Exception:
                raise RecordShapeError(record, f"the Row has fields {record._fields}, the row type {names}") from None
    elif isinstance(record, (tuple, list)):
        values = record
    elif isinstance(record, dict):
        try:
            return [record[name] for name in names]
        except KeyError as exc:
            raise RecordShapeError(record, f"the dict has no key {exc.args[0]!r} (the row type's fields: "
                                           f"{names})") from None
    else:
        raise RecordShapeError(record, f"a {type(record).__name__} is not a row: send Rows, tuples or dicts "
                                       f"with the fields {names}")
    if len(values) != len(names):
        raise RecordShapeError(record, f"{len(values)} values for the {len(names)} fields {names}")
    return values


def batch_values(records: list, names: list[str]) -> list:
    """``positional_values`` of every record; a batch of Rows of the row type's fields, or of
    tuples, takes a fast path without a call per record (hot path)."""
    first = records[0]
    values: Any = None
    if type(first) is Row:
        fields = first._fields
        if (fields is None or fields == names) and all(
                type(r) is Row and (r._fields is fields or r._fields == fields) for r in records):
            values = [r._values for r in records]
    elif type(first) is tuple and all(type(r) is tuple for r in records):
        values = records
    if values is None or any(len(v) != len(names) for v in values):
        return [positional_values(record, names) for record in records]
    return values


def _to_arrow_value(type_info: TypeInformation) -> Optional[Callable[[Any], Any]]:
    """How a Python value becomes what pyarrow accepts for the column (None: as it is)."""
    kind = kind_of(type_info)
    if kind == "instant":
        return lambda v: v.seconds * 10**6 + v.nanos // 1000 if hasattr(v, "nanos") else v
    if kind == "list":
        inner = _to_arrow_value(element_types(type_info)[0])
        return None if inner is None else (lambda v: [None if e is None else inner(e) for e in v])
    if kind == "map":
        key_type, value_type = element_types(type_info)
        k = _to_arrow_value(key_type) or (lambda x: x)
        val = _to_arrow_value(value_type) or (lambda x: x)
        return lambda v: [(k(a), None if b is None else val(b)) for a, b in dict(v).items()]
    if kind in ("row", "tuple"):
        names = (type_info.get_field_names() if isinstance(type_info, RowTypeInfo)
                 else [f"f{i}" for i in range(len(element_types(type_info)))])
        convs = [_to_arrow_value(t) for t in element_types(type_info)]
        return lambda v: {n: (x if c is None or x is None else c(x))
                          for n, c, x in zip(names, convs, positional_values(v, names))}
    return None


class ParquetBulkWriter(BulkWriter):
    """Writes the records of one part file as Parquet row groups (see the module docstring)."""

    def __init__(self, factory: ParquetWriterFactory, stream: BinaryIO, where: str) -> None:
        import_pyarrow(f"{where}: writing Parquet files")
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._pa = pa
        row_type: RowTypeInfo = factory.get_row_type()  # type: ignore[assignment]
        self._where = where
        self._names = row_type.get_field_names()
        self._types = row_type.get_field_types()
        self._schema = to_arrow_schema(row_type, factory.utc_timestamp)
        self._converters = [_to_arrow_value(t) for t in self._types]
        self._writer = pq.ParquetWriter(stream, self._schema, compression=factory.compression.lower()
                                        if factory.compression != "UNCOMPRESSED" else "none")
        self._block_size = factory.block_size
        self._batches: list = []  # converted, not written yet
        self._batched_bytes = 0

    def add_element(self, element: Any) -> None:
        """Adds one record."""
        self.add_elements([element])

    def add_elements(self, elements: list) -> None:
        """Adds a batch of records (an Arrow record batch; a row group when enough bytes gathered)."""
        if elements:
            self._convert(elements)
            if self._batched_bytes >= self._block_size:
                self._write_row_group()

    def _convert(self, records: list) -> None:
        pa = self._pa
        names = self._names
        rows = batch_values(records, names)
        arrays = []
        for i, (column, converter, field) in enumerate(zip(zip(*rows), self._converters, self._schema)):
            values = column if converter is None else [None if v is None else converter(v) for v in column]
            try:
                arrays.append(pa.array(values, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
                bad = self._first_bad(values, field.type)
                raise RecordShapeError(records[bad], f"column {names[i]!r} ({self._types[i]!r}, Parquet "
                                                     f"{field.type}) cannot hold {column[bad]!r}: {exc}") from None
        batch = pa.RecordBatch.from_arrays(arrays, schema=self._schema)
        self._batches.append(batch)
        self._batched_bytes += batch.nbytes

    def _first_bad(self, values: Any, arrow_type: Any) -> int:
        for index, value in enumerate(values):
            try:
                self._pa.array([value], type=arrow_type)
            except Exception:
                return index
        return 0

    def _write_row_group(self) -> None:
        if self._batches:
            table = self._pa.Table.from_batches(self._batches, schema=self._schema)
            self._writer.write_table(table, row_group_size=max(1, table.num_rows))
        self._batches, self._batched_bytes = [], 0

    def flush(self) -> None:
        """Writes what is buffered as a row group."""
        self._write_row_group()

    def finish(self) -> None:
        """Writes the last row group and the footer."""
        self.flush()
        self._writer.close()

    def discard(self) -> None:
        """The part file is abandoned (the task failed or was cancelled): write nothing more, not
        even when pyarrow's writer is garbage collected after the sink closed the stream."""
        self._batches = []
        self._writer.is_open = False
