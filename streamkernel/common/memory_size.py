"""MemorySize: a number of bytes with Flink's arithmetic (as PyFlink's and Flink's ``MemorySize``).

The memory model (:mod:`streamkernel.runtime.memory`) computes with it exactly as Flink does:
``add``/``subtract`` are exact 64-bit operations, ``multiply`` multiplies the byte count by the
decimal text of the double (Java's ``BigDecimal.valueOf(double)``) and truncates towards zero, and
``to_human_readable_string`` writes sizes as Flink's log and error messages do.
"""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Any

from streamkernel.common.config_values import parse_memory_size
from streamkernel.errors import InvalidProgramError

__all__ = ["MemorySize"]

_UNITS = ((1 << 40, "tb"), (1 << 30, "gb"), (1 << 20, "mb"), (1 << 10, "kb"))
_LONG_MAX = (1 << 63) - 1


def _check_long(value: int, operation: str) -> int:
    if value > _LONG_MAX:
        raise ArithmeticError(f"MemorySize.{operation}: long overflow")
    if value < 0:
        raise InvalidProgramError(f"MemorySize.{operation}: the result ({value} bytes) is negative")
    return value


@functools.total_ordering
class MemorySize:
    """An immutable amount of memory in bytes (1 kb = 1024 bytes).

    Example::

        >>> MemorySize.of_mebi_bytes(64).get_kibi_bytes()
        65536
        >>> str(MemorySize.parse("1 gb"))
        '1 gb'
        >>> MemorySize.parse("1728m").multiply(0.10000000149011612).get_bytes()
        181193935
    """

    __slots__ = ("_bytes",)

    ZERO: "MemorySize"
    MAX_VALUE: "MemorySize"

    def __init__(self, bytes_size: int) -> None:
        if isinstance(bytes_size, bool) or not isinstance(bytes_size, int) or not 0 <= bytes_size <= _LONG_MAX:
            raise InvalidProgramError(
                f"MemorySize: bytes_size must be an int >= 0 (64-bit), got {bytes_size!r}"
            )
        self._bytes = bytes_size

    @staticmethod
    def of_mebi_bytes(mebi_bytes: int) -> "MemorySize":
        """A size of ``mebi_bytes`` MiB."""
        if isinstance(mebi_bytes, bool) or not isinstance(mebi_bytes, int) or mebi_bytes < 0:
            raise InvalidProgramError(
                f"MemorySize.of_mebi_bytes: mebi_bytes must be an int >= 0, got {mebi_bytes!r}"
            )
        return MemorySize(mebi_bytes << 20)

    @staticmethod
    def parse(text: str) -> "MemorySize":
        """Parse Flink's notation: ``'64 mb'``, ``'1g'``, ``'512 kb'`` or a number of bytes."""
        return MemorySize(parse_memory_size(text))

    def get_bytes(self) -> int:
        """The size in bytes."""
        return self._bytes

    def get_kibi_bytes(self) -> int:
        """The size in kibibytes (1024 bytes), rounded down."""
        return self._bytes >> 10

    def get_mebi_bytes(self) -> int:
        """The size in mebibytes (1024 KiB), rounded down."""
        return self._bytes >> 20

    def get_gibi_bytes(self) -> int:
        """The size in gibibytes (1024 MiB), rounded down."""
        return self._bytes >> 30

    def get_tebi_bytes(self) -> int:
        """The size in tebibytes (1024 GiB), rounded down."""
        return self._bytes >> 40

    def get_java_memory_size(self) -> "MemorySize":
        """There is no JVM in streamkernel: returns this object."""
        return self

    def add(self, other: "MemorySize") -> "MemorySize":
        """The sum (Flink: ``Math.addExact``; ArithmeticError on a 64-bit overflow)."""
        return MemorySize(_check_long(self._bytes + other._bytes, "add"))

    def subtract(self, other: "MemorySize") -> "MemorySize":
        """The difference; :class:`InvalidProgramError` when it would be negative."""
        return MemorySize(_check_long(self._bytes - other._bytes, "subtract"))

    def multiply(self, multiplier: float) -> "MemorySize":
        """``bytes * multiplier`` rounded towards zero, computed as Flink computes it: exactly, on
        the shortest decimal text of the double (``BigDecimal.valueOf(double)``)."""
        if multiplier < 0:
            raise InvalidProgramError(f"MemorySize.multiply: multiplier must be >= 0, got {multiplier!r}")
        product = Decimal(self._bytes) * Decimal(repr(float(multiplier)))
        return MemorySize(_check_long(int(product), "multiply"))

    def divide(self, by: int) -> "MemorySize":
        """``bytes // by`` (Flink: integer division by a positive long)."""
        if by <= 0:
            raise InvalidProgramError(f"MemorySize.divide: divisor must be > 0, got {by!r}")
        return MemorySize(self._bytes // by)

    def to_human_readable_string(self) -> str:
        """Flink's ``toHumanReadableString``: ``'1.563gb (1677721600 bytes)'``, ``'1024.000mb (1073741824
        bytes)'``, ``'0 bytes'``."""
        unit = next(((size, label) for size, label in _UNITS if self._bytes > size), None)
        if unit is None:  # Flink picks the largest unit strictly below the size: 1 gb is '1024.000mb'
            return f"{self._bytes} bytes"
        size, label = unit
        # Java's %.3f rounds the double's decimal digits HALF_UP
        value = Decimal(repr(self._bytes / size)).quantize(Decimal("0.001"), rounding="ROUND_HALF_UP")
        return f"{value}{label} ({self._bytes} bytes)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemorySize) and other._bytes == self._bytes

    def __lt__(self, other: "MemorySize") -> bool:
        if not isinstance(other, MemorySize):
            return NotImplemented
        return self._bytes < other._bytes

    def __hash__(self) -> int:
        return hash(("MemorySize", self._bytes))

    def __reduce__(self) -> Any:
        return (MemorySize, (self._bytes,))

    def __str__(self) -> str:
        """Flink's notation with the largest exact unit: ``'64 mb'``, ``'1500 bytes'``."""
        if self._bytes:
            for size, label in _UNITS:
                if self._bytes % size == 0:
                    return f"{self._bytes // size} {label}"
        return f"{self._bytes} bytes"

    def __repr__(self) -> str:
        return f"MemorySize({self._bytes})"


MemorySize.ZERO = MemorySize(0)
MemorySize.MAX_VALUE = MemorySize(_LONG_MAX)
