"""MemorySize: a number of bytes, viewable in binary units (as PyFlink's and Flink's MemorySize)."""

from __future__ import annotations

import functools
from typing import Any

from streamkernel.common.config_options import parse_memory_size
from streamkernel.errors import InvalidProgramError

__all__ = ["MemorySize"]

_UNITS = ((1 << 40, "tb"), (1 << 30, "gb"), (1 << 20, "mb"), (1 << 10, "kb"))


@functools.total_ordering
class MemorySize:
    """An immutable amount of memory in bytes (1 kb = 1024 bytes).

    Example::

        >>> MemorySize.of_mebi_bytes(64).get_kibi_bytes()
        65536
        >>> str(MemorySize.parse("1 gb"))
        '1 gb'
    """

    __slots__ = ("_bytes",)

    def __init__(self, bytes_size: int) -> None:
        if isinstance(bytes_size, bool) or not isinstance(bytes_size, int) or bytes_size < 0:
            raise InvalidProgramError(
                f"MemorySize: bytes_size must be an int >= 0, got {bytes_size!r}"
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


MemorySize.ZERO = MemorySize(0)  # type: ignore[attr-defined]
