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

import functools
import math
import pickle
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

    None, int, float, str, bytes and tuples of them hash as PyFlink's ``key_by`` without a
    ``key_type`` hashes them (:func:`pyflink_key_hash`), so a key goes to the subtask it goes
    to in PyFlink (bools and whole floats as the equal int).
    """
    plain = _plain_key(key)
    if plain is not _NOT_PLAIN:
        return pyflink_key_hash(plain)
    return _structural_hash(key)


_NOT_PLAIN = object()
_PLAIN_TYPES = (type(None), int, str, bytes, float)


def _plain_key(key: Any) -> Any:
    """``key`` with bools and whole floats as ints (also inside tuples), or _NOT_PLAIN for a key
    of another type (Rows, lists, objects) and for a tuple whose pickle could depend on object
    identity (the same str, bytes or tuple value twice: pickle shares one object, not two equal
    ones, and equal keys must hash equally wherever they are computed)."""
    kind = type(key)
    if kind is bool or (kind is float and key.is_integer()):
        return int(key)
    if kind in _PLAIN_TYPES:
        return key
    if kind is tuple:
        shared: set = set()
        return _plain_tuple(key, shared)
    return _NOT_PLAIN


def _plain_tuple(key: tuple, shared: set) -> Any:
    items = []
    for item in key:
        kind = type(item)
        if kind is tuple:
            item = _plain_tuple(item, shared)
            if item is _NOT_PLAIN:
                return _NOT_PLAIN
        else:
            item = _plain_key(item)
            if item is _NOT_PLAIN:
                return _NOT_PLAIN
        if type(item) in (str, bytes, tuple) and item != ():
            if item in shared:
                return _NOT_PLAIN
            shared.add(item)
        items.append(item)
    return tuple(items)


@functools.lru_cache(maxsize=1 << 16)
def pyflink_key_hash(key: Any) -> int:
    """The hash Flink computes for a PyFlink ``key_by`` key without a ``key_type``.

    PyFlink pickles the key (``cloudpickle.dumps``: pickle protocol 5 for these types) and
    wraps the bytes in a one-field ``Row``; Java's ``Row.hashCode`` is
    ``31 * kind + deepHashCode([bytes])`` = ``62 + Arrays.hashCode(bytes)`` for an INSERT row.
    """
    h = 1
    for byte in pickle.dumps(key, protocol=5):
        h = (31 * h + (byte - 256 if byte > 127 else byte)) & _MASK32
    return (62 + h) & _MASK32


def _structural_hash(key: Any) -> int:
    """The hash of keys PyFlink would pickle with their class (Rows, lists, other objects)."""
    if key is None:
        return 0
    if isinstance(key, int):  # bool too: True == 1 in Python, so they must be the same key
        return (key ^ (key >> 32)) & _MASK32
    if isinstance(key, float):
        if key.is_integer():
            return _structural_hash(int(key))
        return zlib.crc32(struct.pack("<d", key))
    if isinstance(key, str):
        return zlib.crc32(key.encode("utf-8", "surrogatepass"))
    if isinstance(key, (bytes, bytearray, memoryview)):
        return zlib.crc32(bytes(key))
    if isinstance(key, Row):
        # Consistent with Row equality: values ordered by field name when the row is named.
        fields = key._fields
        values = key._values if fields is None else [v for _, v in sorted(zip(fields, key._values))]
        return _structural_hash(tuple(values))
    if isinstance(key, (tuple, list)):
        h = 1
        for item in key:
            h = (31 * h + _structural_hash(item)) & _MASK32
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
