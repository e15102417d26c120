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
