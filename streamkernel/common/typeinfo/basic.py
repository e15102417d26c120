"""Leaf types: basic types (STRING, INT, ...), Instant, SQL date/time/timestamp, pickled bytes.

The date, time and timestamp conversions are PyFlink's (days since the epoch, microseconds
of the day, epoch microseconds in local time).
"""

from __future__ import annotations

import calendar
import datetime
import time
from enum import Enum
from typing import Any

from streamkernel.common.typeinfo.type_information import TypeInformation

__all__ = [
    "BasicType",
    "BasicTypeInfo",
    "InstantTypeInfo",
    "PickledBytesTypeInfo",
    "DateTypeInfo",
    "TimeTypeInfo",
    "TimestampTypeInfo",
]


class BasicType(Enum):
    """The basic types and their Java names."""

    STRING = "String"
    BYTE = "Byte"
    BOOLEAN = "Boolean"
    SHORT = "Short"
    INT = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    CHAR = "Char"
    BIG_INT = "BigInteger"
    BIG_DEC = "BigDecimal"
    INSTANT = "Instant"


class BasicTypeInfo(TypeInformation):
    """Type information for primitive types (int, long, double, ...), String, BigInteger and BigDecimal."""

    def __init__(self, basic_type: BasicType) -> None:
        self._basic_type = basic_type

    def _key(self) -> tuple:
        return (self._basic_type,)

    @property
    def type_name(self) -> str:
        return self._basic_type.name

    def __repr__(self) -> str:
        return self._basic_type.value


class InstantTypeInfo(BasicTypeInfo):
    """Type information for :class:`~streamkernel.common.time.Instant` (internal: epoch microseconds)."""

    def __init__(self, basic_type: BasicType = BasicType.INSTANT) -> None:
        super().__init__(basic_type)

    def need_conversion(self) -> bool:
        return True

    def to_internal_type(self, obj: Any) -> Any:
        return None if obj is None else obj.to_epoch_milli() * 1000

    def from_internal_type(self, obj: Any) -> Any:
        from streamkernel.common.time import Instant

        return None if obj is None else Instant.of_epoch_milli(obj // 1000)


class PickledBytesTypeInfo(TypeInformation):
    """Values are arbitrary Python objects, serialized with pickle (PyFlink's default type)."""

    @property
    def type_name(self) -> str:
        return "PICKLED_BYTE_ARRAY"

    def __repr__(self) -> str:
        return "PickledByteArrayTypeInfo"


class DateTypeInfo(TypeInformation):
    """Type information for ``datetime.date`` (internal: days since the epoch)."""

    EPOCH_ORDINAL = datetime.datetime(1970, 1, 1).toordinal()

    @property
    def type_name(self) -> str:
        return "SQL_DATE"

    def need_conversion(self) -> bool:
        return True

    def to_internal_type(self, d: Any) -> Any:
        return None if d is None else d.toordinal() - self.EPOCH_ORDINAL

    def from_internal_type(self, v: Any) -> Any:
        return None if v is None else datetime.date.fromordinal(v + self.EPOCH_ORDINAL)

    def __repr__(self) -> str:
        return "DateTypeInfo"


class TimeTypeInfo(TypeInformation):
    """Type information for ``datetime.time`` (internal: microseconds of the day, as PyFlink)."""

    EPOCH_ORDINAL = calendar.timegm(time.localtime(0)) * 10**6

    @property
    def type_name(self) -> str:
        return "SQL_TIME"

    def need_conversion(self) -> bool:
        return True

    def to_internal_type(self, t: Any) -> Any:
        if t is None:
            return None
        if t.tzinfo is not None:
            offset = t.utcoffset() or datetime.timedelta()
            offset_us = (offset.days * 86400 + offset.seconds) * 10**6 + offset.microseconds
        else:
            offset_us = self.EPOCH_ORDINAL
        seconds = (t.hour * 60 + t.minute) * 60 + t.second
        return seconds * 10**6 + t.microsecond - offset_us

    def from_internal_type(self, t: Any) -> Any:
        if t is None:
            return None
        seconds, microseconds = divmod(t + self.EPOCH_ORDINAL, 10**6)
        minutes, seconds = divmod(seconds, 60)
        hours, minutes = divmod(minutes, 60)
        return datetime.time(hours, minutes, seconds, microseconds)

    def __repr__(self) -> str:
        return "TimeTypeInfo"


class TimestampTypeInfo(TypeInformation):
    """Type information for ``datetime.datetime`` (internal: epoch microseconds, local time as PyFlink)."""

    @property
    def type_name(self) -> str:
        return "SQL_TIMESTAMP"

    def need_conversion(self) -> bool:
        return True

    def to_internal_type(self, dt: Any) -> Any:
        if dt is None:
            return None
        seconds = calendar.timegm(dt.utctimetuple()) if dt.tzinfo else time.mktime(dt.timetuple())
        return int(seconds) * 10**6 + dt.microsecond

    def from_internal_type(self, ts: Any) -> Any:
        if ts is None:
            return None
        return datetime.datetime.fromtimestamp(ts // 10**6).replace(microsecond=ts % 10**6)

    def __repr__(self) -> str:
        return "TimestampTypeInfo"
