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
import operator
import pickle
import struct
import zlib
from typing import Any, Optional

from streamkernel.common.types import Row

__all__ = [
    "UPPER_BOUND_MAX_PARALLELISM",
    "DEFAULT_LOWER_BOUND_MAX_PARALLELISM",
    "default_max_parallelism",
    "stable_hash",
    "typed_key_hash",
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


def _canonical(key: Any) -> Any:
    """``key`` with every bool and integral float replaced by the equal int (recursively in
    tuples and lists): keys equal in Python must hash equally, or a sender's and a keyed
    subtask's per-key caches (dicts) could disagree about a key's group."""
    kind = type(key)
    if kind is bool:
        return int(key)
    if kind is float:
        return int(key) if key.is_integer() else key
    if kind is tuple or kind is list:
        return kind(_canonical(item) for item in key)
    return key


_POW31 = [1]  # 31**i mod 2**32


def _java_byte_array_hash(data: bytes) -> int:
    """Java's ``Arrays.hashCode(byte[])`` (signed bytes), as an unsigned 32-bit int."""
    n = len(data)
    while len(_POW31) <= n:
        _POW31.append((_POW31[-1] * 31) & _MASK32)
    # 31**n + sum(b[i] * 31**(n-1-i)): the last byte gets power 0, hence reversed()
    return (_POW31[n] + sum(map(operator.mul, reversed(memoryview(data).cast("b")), _POW31))) & _MASK32


def stable_hash(key: Any) -> int:
    """A 32-bit hash of ``key`` that is identical across processes and runs: PyFlink's.

    PyFlink's ``key_by`` without ``key_type`` keys the Java side by ``Row(pickled key)``;
    Flink hashes that Row as ``62 + Arrays.hashCode(cloudpickle.dumps(key))`` (``RowUtils``:
    row kind INSERT, one field). For None, int, float, str, bytes and (nested) tuples and
    lists of them, whose pickles are the same in every process, this is that hash, so a key
    goes to the subtask PyFlink sends it to; bools and integral floats hash as the equal
    int (keys equal in Python hash equally: ``True``, ``1`` and ``1.0``). Rows and other
    objects, whose pickles name streamkernel's classes (or are not stable), hash by their
    values, or by their ``repr``, which must then be stable for the key's type.
    """
    kind = type(key)
    if kind is str or kind is int or kind is bytes or key is None:
        return (62 + _java_byte_array_hash(pickle.dumps(key, 5))) & _MASK32
    if kind is bool or kind is float or kind is tuple or kind is list:
        canonical = _canonical(key)
        if _picklable_stably(canonical):
            return (62 + _java_byte_array_hash(pickle.dumps(canonical, 5))) & _MASK32
    if isinstance(key, Row):
        # Consistent with Row equality: values ordered by field name when the row is named.
        fields = key._fields
        values = key._values if fields is None else [v for _, v in sorted(zip(fields, key._values))]
        return _legacy_hash(tuple(values))
    return _legacy_hash(key)


_STABLE_LEAVES = (str, int, float, bytes, type(None))


def _picklable_stably(key: Any, seen: Optional[list] = None) -> bool:
    """Whether ``key`` (canonical) pickles to the same bytes in every process and for every
    object of its value: its leaves are plain, and no str, bytes, tuple or list value occurs
    twice in it (pickle writes a second occurrence of the *same object* as a reference to the
    first, two equal objects in full, so such a key's pickle depends on object identity, and
    equal keys must hash equally wherever they are computed)."""
    kind = type(key)
    if kind is int or kind is float or key is None:
        return True
    if kind is str or kind is bytes or kind is tuple or kind is list:
        if seen is None:
            seen = []
        elif key != () and any(type(other) is kind and other == key for other in seen):
            return False
        seen.append(key)
        return kind in _STABLE_LEAVES or all(_picklable_stably(item, seen) for item in key)
    return False


def _legacy_hash(key: Any) -> int:
    """The hash of keys whose pickle is not PyFlink's or not stable (Rows, objects)."""
    if key is None:
        return 0
    if isinstance(key, int):  # bool too: True == 1 in Python, so they must be the same key
        return (key ^ (key >> 32)) & _MASK32
    if isinstance(key, float):
        if key.is_integer():
            return _legacy_hash(int(key))
        return zlib.crc32(struct.pack("<d", key))
    if isinstance(key, str):
        return zlib.crc32(key.encode("utf-8", "surrogatepass"))
    if isinstance(key, (bytes, bytearray, memoryview)):
        return zlib.crc32(bytes(key))
    if isinstance(key, Row):
        return stable_hash(key)
    if isinstance(key, (tuple, list)):
        h = 1
        for item in key:
            h = (31 * h + _legacy_hash(item)) & _MASK32
        return h
    return zlib.crc32(repr(key).encode("utf-8", "surrogatepass"))


def _java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()`` (over UTF-16 code units), unsigned 32-bit."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for unit in struct.unpack(f">{len(data) // 2}H", data):
        h = (31 * h + unit) & _MASK32
    return h


def _java_long_hash(value: int) -> int:
    """Java's ``Long.hashCode(v)``: ``(int) (v ^ (v >>> 32))``, unsigned 32-bit."""
    value &= 0xFFFFFFFFFFFFFFFF
    return (value ^ (value >> 32)) & _MASK32


def _java_basic_hash(basic: str, value: Any) -> Optional[int]:
    """Java's hashCode of ``value`` as PyFlink's basic type ``basic`` holds it (None: not known)."""
    if basic == "STRING":
        return _java_string_hash(value) if isinstance(value, str) else None
    if basic in ("INT", "SHORT", "BYTE"):
        return int(value) & _MASK32
    if basic == "LONG":
        return _java_long_hash(int(value))
    if basic == "BOOLEAN":
        return 1231 if value else 1237
    if basic == "DOUBLE":
        value = float(value)
        bits = 0x7FF8000000000000 if value != value else struct.unpack(">q", struct.pack(">d", value))[0]
        return _java_long_hash(bits)
    if basic == "FLOAT":
        value = float(value)
        return 0x7FC00000 if value != value else struct.unpack(">I", struct.pack(">f", value))[0]
    return None


def _java_hash(value: Any, type_info: Any) -> Optional[int]:
    """Java's hashCode of ``value`` held as ``type_info`` (PyFlink's Java object for it);
    None for a type whose Java hash is not written out here."""
    from streamkernel.common.typeinfo.basic import BasicTypeInfo, InstantTypeInfo
    from streamkernel.common.typeinfo.composite import RowTypeInfo, TupleTypeInfo

    if value is None:
        return 0
    if isinstance(type_info, BasicTypeInfo) and not isinstance(type_info, InstantTypeInfo):
        return _java_basic_hash(type_info.type_name, value)
    if isinstance(type_info, (RowTypeInfo, TupleTypeInfo)):
        field_types = type_info.get_field_types()
        values = list(value)
        if len(values) != len(field_types):
            return None
        hashes = [_java_hash(v, t) for v, t in zip(values, field_types)]
        if any(h is None for h in hashes):
            return None
        h = 0
        if isinstance(type_info, TupleTypeInfo):  # TupleN.hashCode: 31 * result + field.hashCode()
            for field_hash in hashes:
                h = (31 * h + field_hash) & _MASK32  # type: ignore[operator]
            return h
        h = 1  # Row.hashCode: RowUtils.deepHashCodeRow (INSERT), a null field counts 0
        for v, field_hash in zip(values, hashes):
            h = (31 * h + (0 if v is None else 31 + field_hash)) & _MASK32  # type: ignore[operator]
        return h
    return None


def typed_key_hash(key: Any, key_type: Any) -> int:
    """The hash of ``key`` for ``key_by(..., key_type=key_type)``: PyFlink keys the Java side
    by ``Row.of(key as key_type)``, hashed ``62 + key.hashCode()`` (31 for a null key). For
    basic types, TUPLE and ROW of them this is Java's hash; for other key types (and keys that
    do not fit their key_type) it is :func:`stable_hash`, as without ``key_type``."""
    if key_type is None:
        return stable_hash(key)
    if key is None:
        return 31
    try:
        h = _java_hash(key, key_type)
    except (TypeError, ValueError, OverflowError, struct.error):
        h = None
    return stable_hash(key) if h is None else (62 + h) & _MASK32


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


#: bound of the process-wide key -> key group cache of each max parallelism (cleared when full)
KEY_GROUP_CACHE_SIZE = 1 << 16

#: max parallelism -> {str, int or bytes key: key group}: the groups computed in this process
_key_group_caches: dict[int, dict] = {}


def assign_to_key_group(key: Any, max_parallelism: int, key_type: Any = None) -> int:
    """The key group (0 .. max_parallelism-1) that ``key`` (of key_by's ``key_type``) belongs to.

    PyFlink's hash costs a few microseconds in Python (a pickle, a polynomial over its bytes,
    murmur), so the groups of plain ``str``, ``int`` and ``bytes`` keys without ``key_type``
    are cached for the whole process: every job of a TaskManager, and both ends of a keyed
    exchange in it (the sender's routing and the keyed operator's ownership check), compute
    a key's group once.
    """
    if key_type is None:
        kind = type(key)
        if kind is str or kind is int or kind is bytes:
            cache = _key_group_caches.get(max_parallelism)
            if cache is None:
                cache = _key_group_caches.setdefault(max_parallelism, {})
            group = cache.get(key)
            if group is None:
                group = _murmur_fmix(stable_hash(key)) % max_parallelism
                if len(cache) >= KEY_GROUP_CACHE_SIZE:
                    cache.clear()
                cache[key] = group
            return group
        return _murmur_fmix(stable_hash(key)) % max_parallelism
    return _murmur_fmix(typed_key_hash(key, key_type)) % max_parallelism


def operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    """The subtask index that owns ``key_group`` at ``parallelism``."""
    return key_group * parallelism // max_parallelism


def key_group_range_for_operator(max_parallelism: int, parallelism: int, operator_index: int) -> range:
    """The contiguous key groups owned by subtask ``operator_index`` at ``parallelism``."""
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    end = ((operator_index + 1) * max_parallelism - 1) // parallelism
    return range(start, end + 1)


def assign_key_to_operator(key: Any, max_parallelism: int, parallelism: int, key_type: Any = None) -> int:
    """The subtask index that processes ``key`` (of key_by's ``key_type``)."""
    return operator_index_for_key_group(max_parallelism, parallelism,
                                        assign_to_key_group(key, max_parallelism, key_type))
