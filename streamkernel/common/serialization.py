"""Serialization schemas, encoders and type serializers: records to bytes and back.

Connectors use a :class:`SerializationSchema` to turn records into bytes (sinks) and a
:class:`DeserializationSchema` for the reverse (sources); a file sink writes records with
an :class:`Encoder`. Unlike PyFlink's JVM-backed classes these really serialize in
Python, and users may subclass them.
"""

from __future__ import annotations

import abc
import codecs
from typing import Any, BinaryIO, Generic, TypeVar

from streamkernel.common.typeinfo import TypeInformation, Types
from streamkernel.errors import InvalidProgramError

__all__ = [
    "SerializationSchema",
    "DeserializationSchema",
    "SimpleStringSchema",
    "ByteArraySchema",
    "Encoder",
    "SimpleStringEncoder",
    "BulkWriter",
    "BulkWriterFactory",
    "RowDataBulkWriterFactory",
    "TypeSerializer",
]

T = TypeVar("T")


def _check_charset(charset: str) -> str:
    try:
        return codecs.lookup(charset).name
    except (LookupError, TypeError):
        raise InvalidProgramError(f"Unknown charset {charset!r}") from None


class SerializationSchema(abc.ABC):
    """Describes how to turn a record into bytes (for sinks such as Kafka)."""

    def open(self) -> None:
        """Called once before the first record; override for setup."""

    @abc.abstractmethod
    def serialize(self, element: Any) -> bytes:
        """The bytes of ``element``."""


class DeserializationSchema(abc.ABC):
    """Describes how to turn bytes delivered by a source into records, and their type."""

    def open(self) -> None:
        """Called once before the first message; override for setup."""

    @abc.abstractmethod
    def deserialize(self, message: bytes) -> Any:
        """The record in ``message``."""

    def is_end_of_stream(self, next_element: Any) -> bool:
        """True if ``next_element`` signals the end of the stream (never, by default)."""
        return False

    def get_produced_type(self) -> TypeInformation:
        """The type of the records produced (pickled Python objects by default)."""
        return Types.PICKLED_BYTE_ARRAY()


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
    """Strings to bytes and back in ``charset`` (UTF-8 by default).

        >>> schema = SimpleStringSchema()
        >>> schema.deserialize(schema.serialize("héllo"))
        'héllo'
    """

    def __init__(self, charset: str = "UTF-8") -> None:
        self._charset = _check_charset(charset)

    def serialize(self, element: str) -> bytes:
        return element.encode(self._charset)

    def deserialize(self, message: bytes) -> str:
        return bytes(message).decode(self._charset)

    def get_produced_type(self) -> TypeInformation:
        return Types.STRING()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SimpleStringSchema) and self._charset == other._charset

    def __hash__(self) -> int:
        return hash(("SimpleStringSchema", self._charset))


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """Bytes passed through unchanged, both ways."""

    def serialize(self, element: bytes) -> bytes:
        return bytes(element)

    def deserialize(self, message: bytes) -> bytes:
        return bytes(message)

    def get_produced_type(self) -> TypeInformation:
        return Types.PRIMITIVE_ARRAY(Types.BYTE())


class Encoder(abc.ABC):
    """Writes records to an output stream, one after another (used by file sinks)."""

    @abc.abstractmethod
    def encode(self, element: Any, stream: BinaryIO) -> None:
        """Writes ``element`` to ``stream``."""

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> "SimpleStringEncoder":
        """An encoder writing ``str(element)`` and a newline per record, in ``charset_name``."""
        return SimpleStringEncoder(charset_name)


class SimpleStringEncoder(Encoder):
    """Writes ``str(element)`` followed by a newline, in the given charset."""

    def __init__(self, charset_name: str = "UTF-8") -> None:
        self._charset = _check_charset(charset_name)

    def encode(self, element: Any, stream: BinaryIO) -> None:
        stream.write(str(element).encode(self._charset))
        stream.write(b"\n")


class BulkWriter(abc.ABC):
    """Writes records into one file in a bulk-encoded format (Flink's ``BulkWriter``).

    Bulk formats (Parquet, ORC ...) encode many records at once, so a file can only be cut
    when the writer finishes it: a :class:`FileSink` with a bulk format rolls its part
    files at every checkpoint. The sink calls ``add_elements`` per batch of records,
    ``flush`` to push buffered data to the stream, and ``finish`` once, last (write
    footers; the sink closes the stream itself).
    """

    def add_elements(self, elements: list) -> None:
        """Adds a batch of records (by default one ``add_element`` call each)."""
        for element in elements:
            self.add_element(element)

    @abc.abstractmethod
    def add_element(self, element: Any) -> None:
        """Adds one record."""

    def flush(self) -> None:
        """Writes what is buffered to the stream."""

    @abc.abstractmethod
    def finish(self) -> None:
        """Completes the file (footer); no record is added afterwards."""


class BulkWriterFactory:
    """Creates the :class:`BulkWriter` of each part file (PyFlink's ``BulkWriterFactory``).

    Subclass it and define ``create(stream)`` for a format of your own; the built-in
    factories (``ParquetBulkWriters.for_row_type``, ``CsvBulkWriters.for_schema``) are
    descriptions the runtime turns into writers.
    """

    def create(self, stream: BinaryIO) -> BulkWriter:
        """A writer of records into ``stream`` (a new part file opened for writing)."""
        raise NotImplementedError(f"{type(self).__name__} must define create(stream) -> BulkWriter")


class RowDataBulkWriterFactory(BulkWriterFactory):
    """A :class:`BulkWriterFactory` for records of a row type (Rows, tuples or dicts)."""

    def __init__(self, row_type: TypeInformation) -> None:
        self._row_type = row_type

    def get_row_type(self) -> TypeInformation:
        """The row type of the records written."""
        return self._row_type


class TypeSerializer(abc.ABC, Generic[T]):
    """Serializes values of one type to a binary stream and back (PyFlink's TypeSerializer)."""

    @abc.abstractmethod
    def serialize(self, element: T, stream: BinaryIO) -> None:
        """Writes ``element`` to ``stream``."""

    @abc.abstractmethod
    def deserialize(self, stream: BinaryIO) -> T:
        """Reads one value from ``stream``."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
