"""Serialization schemas, encoders and TypeSerializer."""

from __future__ import annotations

import io
import pickle

import pytest

from streamkernel.common import ByteArraySchema, Encoder, SimpleStringSchema, TypeSerializer, Types
from streamkernel.errors import InvalidProgramError


def test_simple_string_schema_round_trips_in_its_charset():
    utf8 = SimpleStringSchema()
    assert utf8.serialize("héllo") == "héllo".encode("utf-8")
    assert utf8.deserialize(utf8.serialize("héllo")) == "héllo"
    latin = SimpleStringSchema("ISO-8859-1")
    assert latin.serialize("é") == b"\xe9"
    assert latin.deserialize(bytearray(b"\xe9")) == "é"
    assert utf8.get_produced_type() == Types.STRING()
    assert not utf8.is_end_of_stream("x")
    assert pickle.loads(pickle.dumps(latin)) == latin and latin != utf8


def test_unknown_charset_is_rejected():
    with pytest.raises(InvalidProgramError, match="no-such-charset"):
        SimpleStringSchema("no-such-charset")


def test_byte_array_schema_passes_bytes_through():
    schema = ByteArraySchema()
    assert schema.serialize(bytearray(b"ab")) == b"ab"
    assert schema.deserialize(memoryview(b"cd")) == b"cd"
    assert schema.get_produced_type() == Types.PRIMITIVE_ARRAY(Types.BYTE())


def test_simple_string_encoder_writes_lines():
    stream = io.BytesIO()
    encoder = Encoder.simple_string_encoder()
    for element in ("a", 1, ("t", 2)):
        encoder.encode(element, stream)
    assert stream.getvalue().decode("utf-8").splitlines() == ["a", "1", "('t', 2)"]


def test_type_serializer_subclass_round_trips():
    class IntSerializer(TypeSerializer[int]):
        def serialize(self, element, stream):
            stream.write(element.to_bytes(8, "big", signed=True))

        def deserialize(self, stream):
            return int.from_bytes(stream.read(8), "big", signed=True)

    serializer = IntSerializer()
    buffer = io.BytesIO()
    for value in (5, -7):
        serializer.serialize(value, buffer)
    buffer.seek(0)
    assert [serializer.deserialize(buffer), serializer.deserialize(buffer)] == [5, -7]
    assert serializer == IntSerializer() and repr(serializer) == "IntSerializer()"
    with pytest.raises(TypeError):
        TypeSerializer()  # type: ignore[abstract]
