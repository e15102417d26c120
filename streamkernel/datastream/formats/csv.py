"""CSV files: read as Rows by a FileSource, written by a FileSink (PyFlink's ``formats.csv``).

::

    schema = (CsvSchema.builder()
              .add_number_column("id", number_type=Types.INT())
              .add_string_column("name")
              .add_array_column("tags", separator=";", element_type=Types.STRING())
              .set_use_header()
              .build())
    source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), "/data/csv").build()
    ds = env.from_source(source, WatermarkStrategy.no_watermarks(), "csv-source")
    # records: Row(id=1, name='a', tags=['x', 'y']); their type is schema.get_type_info()

    ds.sink_to(FileSink.for_bulk_format("/data/out", CsvBulkWriters.for_schema(schema)).build())

Reading: each file is a split; columns are taken by position; with ``set_use_header()`` (or
``set_skip_first_data_row()``) the first line of every file is skipped, and with
``set_strict_headers()`` it must name the schema's columns. Quoted fields may span lines.
An empty field (or the ``set_null_value`` literal) is None, except in string columns where
only the null literal is; a row with fewer fields than columns gets None for the rest, one
with more, or a field that does not parse, fails the job naming the file, line and
column. Restored from a checkpoint a file is re-parsed up to the rows already emitted (as
Flink's stream formats do).

Writing: one line per record (Rows and tuples by position, dicts by name), with a header
line at the top of every part file when the schema uses a header; None is written as the
null literal (empty by default), booleans as ``true``/``false``, arrays joined by their
separator.

Differences from PyFlink: column types are ``Types.*`` (PyFlink's are Table API
``DataTypes``); ``add_column(name, type_info)`` (a streamkernel extra) adds columns of other
types (``Types.SQL_DATE()``, ``SQL_TIMESTAMP()``, ``BIG_DEC()`` ... read from ISO text).
"""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.common.serialization import RowDataBulkWriterFactory
from streamkernel.common.typeinfo import RowTypeInfo, TypeInformation, Types
from streamkernel.common.typeinfo.basic import BasicType, BasicTypeInfo
from streamkernel.datastream.connectors.file_system import StreamFormat
from streamkernel.datastream.formats.arrow_types import kind_of
from streamkernel.errors import InvalidProgramError

__all__ = ["CsvSchema", "CsvSchemaBuilder", "CsvReaderFormat", "CsvBulkWriters", "CsvBulkWriterFactory"]

_NUMBERS = (BasicType.BYTE, BasicType.SHORT, BasicType.INT, BasicType.LONG, BasicType.FLOAT, BasicType.DOUBLE,
            BasicType.BIG_INT, BasicType.BIG_DEC)
_SCALARS = ("string", "bool", "int", "float", "decimal", "bigint", "date", "time", "timestamp")


def _one_char(value: Any, what: str) -> str:
    if not isinstance(value, str) or len(value) != 1:
        raise InvalidProgramError(f"CsvSchema: {what} must be a single character, got {value!r}")
    return value


class CsvColumn:
    """One column of a :class:`CsvSchema`: its name, type and (arrays) element separator."""

    __slots__ = ("name", "type_info", "array_separator")

    def __init__(self, name: str, type_info: TypeInformation, array_separator: Optional[str] = None) -> None:
        self.name = name
        self.type_info = type_info
        self.array_separator = array_separator

    @property
    def is_array(self) -> bool:
        """True for an array column (``add_array_column``)."""
        return kind_of(self.type_info) == "list"

    def __repr__(self) -> str:
        return f"CsvColumn({self.name!r}, {self.type_info!r})"


class CsvSchema:
    """The columns of a CSV file and how it is written (PyFlink's ``CsvSchema``, Jackson's model).

    Build one with :meth:`builder`. Plain data: the reader and writer read its attributes.
    """

    def __init__(self, columns: list[CsvColumn], *, column_separator: str = ",", quote_char: Optional[str] = '"',
                 escape_char: Optional[str] = None, line_separator: str = "\n", null_value: Optional[str] = None,
                 allow_comments: bool = False, use_header: bool = False, skip_first_data_row: bool = False,
                 strict_headers: bool = False, array_element_separator: str = ";") -> None:
        self.columns = list(columns)
        self.column_separator = column_separator
        self.quote_char = quote_char
        self.escape_char = escape_char
        self.line_separator = line_separator
        self.null_value = null_value
        self.allow_comments = allow_comments
        self.use_header = use_header
        self.skip_first_data_row = skip_first_data_row
        self.strict_headers = strict_headers
        self.array_element_separator = array_element_separator

    @staticmethod
    def builder() -> "CsvSchemaBuilder":
        """A :class:`CsvSchemaBuilder`."""
        return CsvSchemaBuilder()

    def get_type_info(self) -> RowTypeInfo:
        """The type of the records: ``Types.ROW_NAMED(column names, column types)``."""
        return Types.ROW_NAMED([c.name for c in self.columns], [c.type_info for c in self.columns])

    def column_names(self) -> list[str]:
        """The column names, in order."""
        return [c.name for c in self.columns]

    def size(self) -> int:
        """The number of columns."""
        return len(self.columns)

    def __len__(self) -> int:
        return self.size()

    def __repr__(self) -> str:
        columns = ", ".join(f"{c.name} {c.type_info.type_name}" for c in self.columns)
        return f"CsvSchema([{columns}], separator={self.column_separator!r}, header={self.use_header})"


class CsvSchemaBuilder:
    """Builds a :class:`CsvSchema` column by column (PyFlink's ``CsvSchemaBuilder``)."""

    def __init__(self) -> None:
        self._columns: list[CsvColumn] = []
        self._options: dict[str, Any] = {}

    def build(self) -> CsvSchema:
        """The schema."""
        names = [c.name for c in self._columns]
        if len(set(names)) != len(names):
            raise InvalidProgramError(f"CsvSchema: column names must be unique, got {names}")
        separator = self._options.get("array_element_separator", ";")
        columns = [CsvColumn(c.name, c.type_info, separator if c.array_separator is None else c.array_separator)
                   if c.is_array else c for c in self._columns]
        return CsvSchema(columns, **self._options)

    def _add(self, name: str, type_info: TypeInformation, separator: Optional[str] = None) -> "CsvSchemaBuilder":
        if not isinstance(name, str) or not name:
            raise InvalidProgramError(f"CsvSchema: a column name must be a non-empty str, got {name!r}")
        self._columns.append(CsvColumn(name, type_info, separator))
        return self

    def add_array_column(self, name: str, separator: str = ";",
                         element_type: TypeInformation = Types.STRING()) -> "CsvSchemaBuilder":
        """An array column (``Types.LIST(element_type)``) whose elements are separated by ``separator``."""
        if kind_of(element_type) not in _SCALARS:
            raise InvalidProgramError(f"CsvSchema.add_array_column({name!r}): element_type must be a basic type "
                                      f"(Types.STRING(), INT() ...), got {element_type!r}")
        if not isinstance(separator, str):
            raise InvalidProgramError(f"CsvSchema.add_array_column({name!r}): separator must be a str, "
                                      f"got {separator!r}")
        return self._add(name, Types.LIST(element_type), separator)

    def add_boolean_column(self, name: str) -> "CsvSchemaBuilder":
        """A boolean column (``true`` / ``false``)."""
        return self._add(name, Types.BOOLEAN())

    def add_number_column(self, name: str, number_type: TypeInformation = Types.LONG()) -> "CsvSchemaBuilder":
        """A number column of ``number_type`` (Types.LONG() by default: PyFlink's BIGINT)."""
        if not isinstance(number_type, BasicTypeInfo) or number_type._basic_type not in _NUMBERS:
            raise InvalidProgramError(f"CsvSchema.add_number_column({name!r}): number_type must be a numeric type "
                                      f"(Types.INT(), LONG(), DOUBLE(), BIG_DEC() ...), got {number_type!r}")
        return self._add(name, number_type)

    def add_string_column(self, name: str) -> "CsvSchemaBuilder":
        """A string column."""
        return self._add(name, Types.STRING())

    def add_column(self, name: str, type_info: TypeInformation = Types.STRING()) -> "CsvSchemaBuilder":
        """A column of any basic type, e.g. ``Types.SQL_DATE()`` (ISO text); a streamkernel extra."""
        if kind_of(type_info) not in _SCALARS:
            raise InvalidProgramError(f"CsvSchema.add_column({name!r}): type_info must be a basic, date, time or "
                                      f"timestamp type (arrays: add_array_column), got {type_info!r}")
        return self._add(name, type_info)

    def add_columns_from(self, schema: CsvSchema) -> "CsvSchemaBuilder":
        """Every column of ``schema``."""
        self._columns.extend(schema.columns)
        return self

    def clear_columns(self) -> "CsvSchemaBuilder":
        """Removes every column."""
        self._columns.clear()
        return self

    def set_allow_comments(self, allow: bool = True) -> "CsvSchemaBuilder":
        """Skip lines starting with ``#``."""
        self._options["allow_comments"] = bool(allow)
        return self

    def set_any_property_name(self, name: str) -> "CsvSchemaBuilder":
        """Accepted for PyFlink compatibility (Jackson's catch-all property); no effect here."""
        return self

    def disable_array_element_separator(self) -> "CsvSchemaBuilder":
        """Array columns without their own separator hold one element."""
        self._options["array_element_separator"] = ""
        return self

    def remove_array_element_separator(self, index: int) -> "CsvSchemaBuilder":
        """Column ``index`` (an array column) holds one element."""
        column = self._columns[index]
        self._columns[index] = CsvColumn(column.name, column.type_info, "")
        return self

    def set_array_element_separator(self, separator: str) -> "CsvSchemaBuilder":
        """The default separator of array elements (``;``)."""
        self._options["array_element_separator"] = separator
        return self

    def set_column_separator(self, char: str) -> "CsvSchemaBuilder":
        """The field separator (``,``)."""
        self._options["column_separator"] = _one_char(char, "the column separator")
        return self

    def disable_escape_char(self) -> "CsvSchemaBuilder":
        """No escape character (the default)."""
        self._options["escape_char"] = None
        return self

    def set_escape_char(self, char: str) -> "CsvSchemaBuilder":
        """The character escaping a separator or quote in a field."""
        self._options["escape_char"] = _one_char(char, "the escape char")
        return self

    def set_line_separator(self, separator: str) -> "CsvSchemaBuilder":
        """The line separator written (``\\n``); reading recognizes ``\\n``, ``\\r`` and ``\\r\\n``."""
        if not isinstance(separator, str) or not separator:
            raise InvalidProgramError(f"CsvSchema: the line separator must be a non-empty str, got {separator!r}")
        self._options["line_separator"] = separator
        return self

    def set_null_value(self, null_value: str) -> "CsvSchemaBuilder":
        """The literal standing for None (by default an empty field, in non-string columns)."""
        self._options["null_value"] = null_value
        return self

    def disable_quote_char(self) -> "CsvSchemaBuilder":
        """Fields are never quoted."""
        self._options["quote_char"] = None
        return self

    def set_quote_char(self, char: str) -> "CsvSchemaBuilder":
        """The quote character (``"``)."""
        self._options["quote_char"] = _one_char(char, "the quote char")
        return self

    def set_skip_first_data_row(self, skip: bool = True) -> "CsvSchemaBuilder":
        """Skip the first line of every file."""
        self._options["skip_first_data_row"] = bool(skip)
        return self

    def set_strict_headers(self, strict: bool = True) -> "CsvSchemaBuilder":
        """The header line must name the schema's columns, in order."""
        self._options["strict_headers"] = bool(strict)
        return self

    def set_use_header(self, use: bool = True) -> "CsvSchemaBuilder":
        """The first line of every file is a header (skipped when reading, written when writing)."""
        self._options["use_header"] = bool(use)
        return self

    def size(self) -> int:
        """The number of columns so far."""
        return len(self._columns)

    def __len__(self) -> int:
        return self.size()


class CsvReaderFormat(StreamFormat):
    """The StreamFormat reading CSV files into Rows of a :class:`CsvSchema`'s type."""

    def __init__(self, schema: CsvSchema, charset_name: str = "UTF-8") -> None:
        super().__init__("csv", charset_name)
        self.schema = schema

    @staticmethod
    def for_schema(schema: CsvSchema) -> "CsvReaderFormat":
        """A format reading files laid out as ``schema`` says."""
        if not isinstance(schema, CsvSchema):
            raise InvalidProgramError(f"CsvReaderFormat.for_schema: expected a CsvSchema "
                                      f"(CsvSchema.builder()...build()), got {schema!r}")
        if not schema.columns:
            raise InvalidProgramError("CsvReaderFormat.for_schema: the schema has no columns")
        return CsvReaderFormat(schema)

    def get_produced_type(self) -> RowTypeInfo:
        """The schema's row type."""
        return self.schema.get_type_info()

    def __repr__(self) -> str:
        return f"CsvReaderFormat.for_schema({self.schema!r})"


class CsvBulkWriterFactory(RowDataBulkWriterFactory):
    """Describes the CSV writer of each part file (made by :meth:`CsvBulkWriters.for_schema`)."""

    def __init__(self, schema: CsvSchema) -> None:
        super().__init__(schema.get_type_info())
        self.schema = schema

    def __repr__(self) -> str:
        return f"CsvBulkWriterFactory({self.schema!r})"


class CsvBulkWriters:
    """Builds the :class:`CsvBulkWriterFactory` for ``FileSink.for_bulk_format``."""

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvBulkWriterFactory:
        """Writes records as CSV lines laid out as ``schema`` says."""
        if not isinstance(schema, CsvSchema) or not schema.columns:
            raise InvalidProgramError(f"CsvBulkWriters.for_schema: expected a CsvSchema with columns, got {schema!r}")
        return CsvBulkWriterFactory(schema)
