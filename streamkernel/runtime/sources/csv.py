"""Reading CSV files for a FileSource with ``CsvReaderFormat`` (Python's csv module).

Each file is one split; a cursor parses it with ``csv.reader`` (so quoted fields may span
lines), skips the header line (``use_header`` / ``skip_first_data_row``; checked against
the column names with ``strict_headers``), blank lines and, with ``allow_comments``,
lines starting with ``#``, and turns every row into a Row named by the schema: fields by
position, each parsed by its column's type (:func:`field_parser`). A restored split
re-parses the rows already emitted and skips them. Errors name the file, the line and
the column.
"""

from __future__ import annotations

import csv
import datetime
import decimal
from typing import Any, Callable, Optional

from streamkernel.datastream.formats.arrow_types import element_types, kind_of
from streamkernel.datastream.formats.csv import CsvColumn, CsvReaderFormat, CsvSchema
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.sources.files import FormatReader, SplitCursor
from streamkernel.runtime.sources.parquet import make_rows

__all__ = ["CsvFormatReader", "field_parser", "csv_dialect"]


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError(f"not a boolean (true / false): {text!r}")


_PARSERS: dict[str, Callable[[str], Any]] = {
    "string": str, "int": int, "bigint": int, "float": float, "bool": _boolean, "decimal": decimal.Decimal,
    "date": datetime.date.fromisoformat, "time": datetime.time.fromisoformat,
    "timestamp": datetime.datetime.fromisoformat,
}


def field_parser(column: CsvColumn, null_value: Optional[str]) -> Callable[[str], Any]:
    """``f(field text) -> value`` for one column (None for the null literal, or for an empty
    field outside string columns); raises ValueError (or decimal.InvalidOperation) on bad text."""
    kind = kind_of(column.type_info)
    if kind == "list":
        element_kind = kind_of(element_types(column.type_info)[0])
        parse_element = _PARSERS[element_kind]  # type: ignore[index]
        separator = column.array_separator

        def parse(text: str) -> Any:
            if text == null_value or (null_value is None and text == "" and element_kind != "string"):
                return None
            parts = text.split(separator) if separator else [text]
            return [parse_element(part) for part in parts]

        return parse
    parse_scalar = _PARSERS[kind]  # type: ignore[index]
    if kind == "string":
        if null_value is None:
            return str
        return lambda text: None if text == null_value else text
    return lambda text: None if text == null_value or text == "" else parse_scalar(text)


def csv_dialect(schema: CsvSchema) -> dict[str, Any]:
    """The ``csv.reader`` / ``csv.writer`` arguments for a schema."""
    options: dict[str, Any] = {"delimiter": schema.column_separator, "lineterminator": schema.line_separator,
                               "escapechar": schema.escape_char, "doublequote": schema.escape_char is None,
                               "strict": True}
    if schema.quote_char is None:
        options["quoting"] = csv.QUOTE_NONE
    else:
        options["quotechar"] = schema.quote_char
    return options


class _CsvCursor(SplitCursor):
    def __init__(self, path: str, fmt: CsvReaderFormat, parsers: list, where: str, skip: int) -> None:
        schema = fmt.schema
        self._path = path
        self._where = where
        self._schema = schema
        self._names = schema.column_names()
        self._parsers = parsers
        self._file = open(path, "r", encoding=fmt.charset_name, newline="")
        options = csv_dialect(schema)
        options.pop("lineterminator")  # reading recognizes \n, \r and \r\n
        self._reader = csv.reader(self._file, **options)
        self._header_pending = schema.use_header or schema.skip_first_data_row
        self._skip = skip

    def _error(self, problem: str) -> InvalidProgramError:
        return InvalidProgramError(f"{self._where}: CSV file {self._path!r}, line {self._reader.line_num}: {problem}")

    def _fields(self) -> Optional[list[str]]:
        """The next data row's fields (None at the end of the file)."""
        try:
            for fields in self._reader:
                if not fields or (self._schema.allow_comments and fields[0].startswith("#")):
                    continue
                if self._header_pending:
                    self._header_pending = False
                    if self._schema.strict_headers and [f.strip() for f in fields] != self._names:
                        raise self._error(f"the header {fields} does not name the schema's columns {self._names}")
                    continue
                return fields
        except csv.Error as exc:
            raise self._error(f"malformed CSV ({exc})") from exc
        return None

    def read(self, max_records: int) -> list:
        while self._skip:
            if self._fields() is None:
                return []
            self._skip -= 1
        width = len(self._parsers)
        columns: list[list] = [[] for _ in range(width)]
        count = 0
        while count < max_records:
            fields = self._fields()
            if fields is None:
                break
            if len(fields) > width:
                raise self._error(f"{len(fields)} fields, but the schema has {width} columns {self._names}")
            fields += [None] * (width - len(fields))  # type: ignore[list-item]
            for i, (parse, text) in enumerate(zip(self._parsers, fields)):
                try:
                    columns[i].append(None if text is None else parse(text))
                except (ValueError, decimal.InvalidOperation) as exc:
                    raise self._error(f"column {self._names[i]!r} ({self._schema.columns[i].type_info!r}) "
                                      f"cannot hold {text!r}: {exc}") from None
            count += 1
        return make_rows(self._names, columns, count)

    def close(self) -> None:
        self._file.close()


class CsvFormatReader(FormatReader):
    """Reads whole CSV files (one split each) into Rows of the schema's row type."""

    def __init__(self, csv_format: CsvReaderFormat, where: str) -> None:
        self._format = csv_format
        self._where = where
        schema = csv_format.schema
        self._parsers = [field_parser(column, schema.null_value) for column in schema.columns]

    def open_split(self, split: Any, skip: int) -> SplitCursor:
        """A cursor over the file ``split``, after its first ``skip`` rows."""
        return _CsvCursor(split, self._format, self._parsers, self._where, skip)
