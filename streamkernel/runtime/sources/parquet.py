"""Reading Parquet files for a FileSource with ``ParquetColumnarRowInputFormat`` (pyarrow).

Splits are row groups: ``(path, row group index)``; each subtask reads the footers of
every file once (at open) to list them, and checks each file's columns against the row
type there, so a missing column or a column of another type fails the job before any
record is read, naming the file and the column. A split is decoded ``batch_size`` rows
at a time (only the columns of the row type) and turned into Rows named by the row type,
column by column: ``Array.to_pylist`` per column, a Python conversion only where a value
needs one (instants, maps, structs, BIG_INT from decimals), then one Row per row. A
restored split skips the rows already emitted (decoding them again: cheap next to
reading the rest).

Timestamps: a column stored as an instant (a UTC-adjusted Parquet timestamp, or INT96 as
Spark writes TIMESTAMP by default) becomes a naive ``datetime`` in local time, or in UTC
with ``is_utc_timestamp=True`` (an INSTANT field gets an Instant); a wall-clock timestamp
(TIMESTAMP_NTZ) is read as stored.
"""

from __future__ import annotations

import datetime
from typing import Any, Callable, Optional

from streamkernel.common.time import Instant
from streamkernel.common.typeinfo import RowTypeInfo, TypeInformation
from streamkernel.common.types import Row, RowKind
from streamkernel.datastream.formats.arrow_types import compatible, element_types, from_arrow_type, kind_of
from streamkernel.datastream.formats.parquet import ParquetColumnarRowInputFormat
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.sources.files import FormatReader, SplitCursor

__all__ = ["ParquetFormatReader", "make_rows", "import_pyarrow"]

_EPOCH = datetime.datetime(1970, 1, 1)
_INSERT = RowKind.INSERT
# Row's slot descriptors, called directly: four times faster than object.__setattr__ (hot path)
_SET_FIELDS = Row.__dict__["_fields"].__set__
_SET_VALUES = Row.__dict__["_values"].__set__
_SET_KIND = Row.__dict__["_row_kind"].__set__
_SET_FROM_DICT = Row.__dict__["_from_dict"].__set__


def import_pyarrow(what: str) -> Any:
    """``pyarrow.parquet``, or a clear error saying how to install it."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InvalidProgramError(f"{what} needs pyarrow: pip install 'streamkernel[spark]' (or pip install "
                                  f"pyarrow)") from None
    return pq


def make_rows(names: list[str], columns: list[list], num_rows: int) -> list[Row]:
    """One named Row per row of ``columns`` (the names list is shared by the rows; hot path)."""
    rows: list[Row] = []
    append, new = rows.append, Row.__new__
    set_fields, set_values, set_kind, set_from_dict, insert = (_SET_FIELDS, _SET_VALUES, _SET_KIND, _SET_FROM_DICT,
                                                               _INSERT)
    for values in (zip(*columns) if columns else ((),) * num_rows):
        row = new(Row)
        set_fields(row, names)
        set_values(row, list(values))
        set_kind(row, insert)
        set_from_dict(row, False)
        append(row)
    return rows


# ------------------------------------------------------------------ conversions
def _micros_to_datetime(utc: bool) -> Callable[[int], datetime.datetime]:
    if utc:
        return lambda us: _EPOCH + datetime.timedelta(microseconds=us)
    return lambda us: datetime.datetime.fromtimestamp(us // 10**6).replace(microsecond=us % 10**6)


def _micros_to_instant(us: int) -> Instant:
    return Instant(us // 10**6, (us % 10**6) * 1000)


def _value_converter(declared: TypeInformation, arrow_type: Any, utc: bool) -> Optional[Callable[[Any], Any]]:
    """How a (non-None) value from ``to_pylist`` becomes the declared type's value (None: as it is)."""
    import pyarrow.types as at

    if at.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    kind = kind_of(declared)
    if kind == "bigint":
        return int
    if at.is_timestamp(arrow_type):
        if kind == "instant":
            return lambda v: _micros_to_instant(_aware_micros(v))
        if arrow_type.tz is None:
            return lambda v: v.to_pydatetime() if hasattr(v, "to_pydatetime") else v
        to_datetime = _micros_to_datetime(utc)
        return lambda v: to_datetime(_aware_micros(v))
    if kind == "list":
        inner = _value_converter(element_types(declared)[0], arrow_type.value_type, utc)
        return None if inner is None else (lambda v: [None if e is None else inner(e) for e in v])
    if kind == "map":
        key_type, value_type = element_types(declared)
        k = _value_converter(key_type, arrow_type.key_type, utc) or (lambda x: x)
        val = _value_converter(value_type, arrow_type.item_type, utc) or (lambda x: x)
        return lambda v: {k(a): None if b is None else val(b) for a, b in v}
    if kind in ("row", "tuple"):
        fields = {arrow_type.field(i).name: arrow_type.field(i).type for i in range(arrow_type.num_fields)}
        names = (declared.get_field_names() if isinstance(declared, RowTypeInfo)
                 else list(fields))
        convs = [_value_converter(t, fields[n], utc) for n, t in zip(names, element_types(declared))]
        def values(v: dict) -> list:
            return [v[n] if c is None or v[n] is None else c(v[n]) for n, c in zip(names, convs)]

        if kind == "tuple":
            return lambda v: tuple(values(v))
        shared = list(names)
        return lambda v: make_rows(shared, [[x] for x in values(v)], 1)[0]
    return None


def _aware_micros(value: datetime.datetime) -> int:
    """Epoch microseconds of a datetime from Arrow (aware: its instant; naive: taken as UTC)."""
    if hasattr(value, "to_pydatetime"):
        value = value.to_pydatetime()
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    delta = value - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds


def _column_converter(declared: TypeInformation, arrow_type: Any, instant: bool, utc: bool) -> Callable[[Any], list]:
    """``f(arrow array) -> list of Python values`` for one top-level column."""
    import pyarrow as pa
    import pyarrow.types as at

    if at.is_timestamp(arrow_type):  # vectorized: cast to epoch microseconds once per batch
        to_micros = pa.timestamp("us", tz=arrow_type.tz)
        if kind_of(declared) == "instant":
            to_value: Callable[[int], Any] = _micros_to_instant
        elif arrow_type.tz is not None or instant:
            to_value = _micros_to_datetime(utc)
        else:  # a wall-clock time: as stored
            to_value = _micros_to_datetime(True)

        def timestamps(array: Any) -> list:
            micros = array.cast(to_micros, safe=False).cast(pa.int64()).to_pylist()
            return [None if us is None else to_value(us) for us in micros]

        return timestamps
    if at.is_date64(arrow_type):
        return lambda array: array.cast(pa.date32()).to_pylist()
    convert = _value_converter(declared, arrow_type, utc)
    if convert is None:
        return lambda array: array.to_pylist()
    return lambda array: [None if v is None else convert(v) for v in array.to_pylist()]


# ------------------------------------------------------------------ the reader
class _FilePlan:
    """What to read from one file: its row groups, the columns and how each becomes Python values."""

    __slots__ = ("num_row_groups", "columns", "names", "converters")

    def __init__(self, num_row_groups: int, columns: list[str], names: list[str],
                 converters: list[Callable[[Any], list]]) -> None:
        self.num_row_groups = num_row_groups
        self.columns = columns
        self.names = names
        self.converters = converters

    def to_rows(self, batch: Any) -> list[Row]:
        columns = [convert(batch.column(i)) for i, convert in enumerate(self.converters)]
        return make_rows(self.names, columns, batch.num_rows)


class _RowGroupCursor(SplitCursor):
    def __init__(self, parquet_file: Any, plan: _FilePlan, row_group: int, skip: int, batch_size: int) -> None:
        self._file = parquet_file
        self._plan = plan
        self._batches = parquet_file.iter_batches(batch_size=batch_size, row_groups=[row_group],
                                                  columns=plan.columns, use_threads=False)
        self._skip = skip
        self._pending: list[Row] = []  # decoded, not yet emitted

    def read(self, max_records: int) -> list:
        while len(self._pending) < max_records:
            batch = next(self._batches, None)
            if batch is None:
                break
            if self._skip >= batch.num_rows:
                self._skip -= batch.num_rows
                continue
            if self._skip:
                batch, self._skip = batch.slice(self._skip), 0
            self._pending.extend(self._plan.to_rows(batch))
        out = self._pending[:max_records]
        del self._pending[:max_records]
        return out

    def close(self) -> None:
        self._file.close()


class ParquetFormatReader(FormatReader):
    """Lists the row groups of Parquet files and reads them into Rows of the format's row type."""

    def __init__(self, parquet_format: ParquetColumnarRowInputFormat, where: str) -> None:
        self._pq = import_pyarrow(f"{where}: reading Parquet files")
        self._format = parquet_format
        self._where = where
        self._plans: dict[str, _FilePlan] = {}

    def _open(self, path: str) -> Any:
        try:
            return self._pq.ParquetFile(path, coerce_int96_timestamp_unit="us")
        except Exception as exc:  # ArrowInvalid, OSError ...
            raise InvalidProgramError(f"{self._where}: cannot read {path!r} as a Parquet file: {exc}") from exc

    def _plan(self, path: str) -> _FilePlan:
        plan = self._plans.get(path)
        if plan is None:
            parquet_file = self._open(path)
            try:
                plan = self._plans[path] = self._make_plan(path, parquet_file)
            finally:
                parquet_file.close()
        return plan

    def _make_plan(self, path: str, parquet_file: Any) -> _FilePlan:
        fmt = self._format
        schema = parquet_file.schema_arrow
        int96 = {parquet_file.schema.column(i).path for i in range(len(parquet_file.schema))
                 if parquet_file.schema.column(i).physical_type == "INT96"}
        where = f"{self._where}: Parquet file {path!r}"
        if fmt.row_type is None:
            names = list(schema.names)
            columns = names
            types = [from_arrow_type(schema.field(n).type, n, where) for n in names]
        else:
            names = fmt.row_type.get_field_names()
            types = fmt.row_type.get_field_types()
            columns = [self._find_column(schema, name, where) for name in names]
            for name, column, declared in zip(names, columns, types):
                arrow_type = schema.field(column).type
                if not compatible(declared, arrow_type):
                    try:
                        found = f" ({from_arrow_type(arrow_type, column, where)!r})"
                    except InvalidProgramError:
                        found = ", a type streamkernel cannot read"
                    raise InvalidProgramError(
                        f"{where}: column {column!r} holds {arrow_type}{found}, but the row type declares field "
                        f"{name!r} as {declared!r}; fix the row type or leave the field out")
        converters = [_column_converter(t, schema.field(c).type, c in int96, fmt.is_utc_timestamp)
                      for c, t in zip(columns, types)]
        return _FilePlan(parquet_file.metadata.num_row_groups, columns, list(names), converters)

    def _find_column(self, schema: Any, name: str, where: str) -> str:
        if name in schema.names:
            return name
        if not self._format.is_case_sensitive:
            for column in schema.names:
                if column.lower() == name.lower():
                    return column
        raise InvalidProgramError(f"{where} has no column {name!r} (its columns: {', '.join(schema.names)}); the row "
                                  f"type {self._format.row_type.type_name} declares it")  # type: ignore[union-attr]

    def splits(self, path: str) -> list:
        """``(path, row group)`` for every row group of the file (none for a file without rows)."""
        return [(path, group) for group in range(self._plan(path).num_row_groups)]

    def open_split(self, split: Any, skip: int) -> SplitCursor:
        """A cursor over one row group, after its first ``skip`` rows."""
        path, row_group = split
        plan = self._plan(path)
        return _RowGroupCursor(self._open(path), plan, int(row_group), skip, self._format.batch_size)
