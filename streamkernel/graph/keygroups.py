"""Key groups: the unit in which keyed state is partitioned, stored and rescaled.

A key is hashed to one of ``max_parallelism`` key groups; each subtask of a keyed operator
owns a contiguous range of key groups. Restoring at another parallelism only moves whole
key groups, which is why max parallelism bounds rescaling.

The hash must be the same in every process and every run: a sender in one process routes
keys to state held in another, and checkpoints are restored elsewhere. Python's built-in
``hash()`` of ``str``/``bytes`` is salted per process, so :func:`stable_hash` is used
instead. The formulas for groups and ranges are Flink's ``KeyGroupRangeAssignment``.
"""

from __future__ import annotations

import math
import struct
import zlib
from typing import Any

from streamkernel.common.types import Row

__all__ = [
    "UPPER_BOUND_MAX_PARALLELISM",
    "DEFAULT_LOWER_BOUND_MAX_PARALLELISM",
    "default_max_parallelism",
    "stable_hash",
    "assign_to_key_group",
    "operator_index_for_key_group",
    "key_group_range_for_operator",
    "assign_key_to_operator",
]

UPPER_BOUND_MAX_PARALLELISM = 1 << 15
DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 1 << 7
_MASK32 = 0xFFFFFFFF


def default_max_parallelism(parallelism: int) -> int:
    """Flink's default: round_up_pow2(1.5 * parallelism), clamped to [128, 32768]."""
    wanted = parallelism + parallelism // 2
    pow2 = 1 << max(0, math.ceil(math.log2(max(wanted, 1))))
    return min(max(pow2, DEFAULT_LOWER_BOUND_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM)


def stable_hash(key: Any) -> int:
    """A 32-bit hash of ``key`` that is identical across processes and runs.

    Keys that compare equal in Python hash equally (``True``, ``1`` and ``1.0``). Supports
    None, bool, int, float, str, bytes and (nested) tuples/lists/Rows of them;
    other objects hash by their ``repr``, which must then be stable for the key's type.
    """
    if key is None:
        return 0
    if isinstance(key, int):  # bool too: True == 1 in Python, so they must be the same key
        return (key ^ (key >> 32)) & _MASK32
    if isinstance(key, float):
        if key.is_integer():
            return stable_hash(int(key))
        return zlib.crc32(struct.pack("<d", key))
    if isinstance(key, str):
        return zlib.crc32(key.encode("utf-8", "surrogatepass"))
    if isinstance(key, (bytes, bytearray, memoryview)):
        return zlib.crc32(bytes(key))
    if isinstance(key, Row):
        # Consistent with Row equality: values ordered by field name when the row is named.
        fields = key._fields
        values = key._values if fields is None else [v for _, v in sorted(zip(fields, key._values))]
        return stable_hash(tuple(values))
    if isinstance(key, (tuple, list)):
        h = 1
        for item in key:
            h = (31 * h + stable_hash(item)) & _MASK32
        return h
    return zlib.crc32(repr(key).encode("utf-8", "surrogatepass"))


def _murmur_fmix(h: int) -> int:
    """Flink's ``MathUtils.murmurHash``: spreads a 32-bit hash before the modulo."""
    h &= _MASK32
    h = (h * 0xCC9E2D51) & _MASK32
    h = ((h << 15) | (h >> 17)) & _MASK32
    h = (h * 0x1B873593) & _MASK32
    h = ((h << 13) | (h >> 19)) & _MASK32
    h = (h * 5 + 0xE6546B64) & _MASK32
    h ^= 4
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    h ^= h >> 16
    # Flink returns a non-negative int: murmur >= 0 ? murmur : -murmur (as signed 32-bit).
    signed = h - (1 << 32) if h & 0x80000000 else h
    return signed if signed >= 0 else (-signed if signed != -(1 << 31) else 0)


def assign_to_key_group(key: Any, max_parallelism: int) -> int:
    """The key group (0 .. max_parallelism-1) that ``key`` belongs to."""
    return _murmur_fmix(stable_hash(key)) % max_parallelism


def operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    """The subtask index that owns ``key_group`` at ``parallelism``."""
    return key_group * parallelism // max_parallelism


def key_group_range_for_operator(max_parallelism: int, parallelism: int, operator_index: int) -> range:
    """The contiguous key groups owned by subtask ``operator_index`` at ``parallelism``."""
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    end = ((operator_index + 1) * max_parallelism - 1) // parallelism
    return range(start, end + 1)


def assign_key_to_operator(key: Any, max_parallelism: int, parallelism: int) -> int:
    """The subtask index that processes ``key``."""
    return operator_index_for_key_group(max_parallelism, parallelism, assign_to_key_group(key, max_parallelism))
