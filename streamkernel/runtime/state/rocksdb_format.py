"""How the RocksDB keyed state backend lays out its entries: key bytes and value bytes.

One RocksDB database holds every keyed state of one operator subtask (Flink uses a column
family per state; here the state name is part of the key). An entry's key is::

    key group (2 bytes, big-endian)
    | len(state name) (2 bytes) | state name (UTF-8)
    | len(key term) (4 bytes)   | key term
    | len(namespace term) (4 bytes) | namespace term   (empty for the VOID namespace)
    | suffix    value / reducing / aggregating: nothing;
                list: the element's sequence number (8 bytes, big-endian, so elements keep
                      their order); map: the user key's term

The key group comes first, so all entries of a key group are contiguous (a snapshot or a
restore of a key group is a range scan) and, within a group, all entries of a state; the
length prefixes make every part unambiguous, so the entries of one (key, namespace) of a
list or map state are exactly those starting with its *slot* (everything before the suffix).

A *term* is the deterministic byte form of a key, namespace or map user key: equal values
must give equal bytes, as they are the same dict key in the heap backend. Keys equal in
Python (``True``, ``1``, ``1.0``) are canonicalised to ``int`` first (like
:func:`~streamkernel.graph.keygroups.stable_hash`), ``str``/``int``/``bytes``/``None``/
:class:`~streamkernel.datastream.windows.TimeWindow` have a short form, anything else is
pickled without the pickle memo (the memo would make ``("a", "a")`` serialize differently
depending on whether both strings are the same object). Values are ordinary pickles
(protocol 5).
"""

from __future__ import annotations

import io
import pickle
import struct
from typing import Any, Tuple

from streamkernel.datastream.windows import TimeWindow
from streamkernel.errors import InvalidProgramError

__all__ = [
    "PICKLE_PROTOCOL",
    "VOID_NAMESPACE_PART",
    "encode_term",
    "decode_term",
    "length_prefixed",
    "name_part",
    "key_group_prefix",
    "split_entry_key",
]

#: the pickle protocol of values and of pickled terms
PICKLE_PROTOCOL = 5
#: the namespace part of an entry of the VOID namespace (length 0, no term)
VOID_NAMESPACE_PART = b"\x00\x00\x00\x00"

_TIME_WINDOW = struct.Struct(">qq")
_KEY_GROUP_PREFIXES = tuple(group.to_bytes(2, "big") for group in range(1 << 15))


def _canonical(value: Any) -> Any:
    """``value`` with bools and integral floats as ints (also inside tuples)."""
    kind = type(value)
    if kind is bool:
        return int(value)
    if kind is float and value.is_integer():
        return int(value)
    if kind is tuple:
        return tuple(_canonical(item) for item in value)
    return value


def _pickle_without_memo(value: Any) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, PICKLE_PROTOCOL)
    pickler.fast = True  # no memo: equal values give equal bytes (terms are never recursive)
    pickler.dump(value)
    return buffer.getvalue()


def encode_term(value: Any) -> bytes:
    """The deterministic bytes of a key, namespace or map user key (see the module docstring)."""
    kind = type(value)
    if kind is str:
        return b"s" + value.encode("utf-8", "surrogatepass")
    if kind is int:
        return b"i" + str(value).encode("ascii")
    if value is None:
        return b"n"
    if kind is TimeWindow:
        return b"w" + _TIME_WINDOW.pack(value.start, value.end)
    if kind is bytes:
        return b"b" + value
    value = _canonical(value)
    if type(value) is int:
        return b"i" + str(value).encode("ascii")
    try:
        return b"p" + _pickle_without_memo(value)
    except (pickle.PicklingError, TypeError, AttributeError, ValueError) as exc:
        raise InvalidProgramError(
            f"the rocksdb state backend cannot use {value!r:.80} as a key, namespace or map key ({exc}): "
            "it must be picklable (str, int, tuples of them, ...)"
        ) from None


def decode_term(data: bytes) -> Any:
    """The value of a term written by :func:`encode_term` (canonicalised: ``True`` reads as ``1``)."""
    tag = data[:1]
    if tag == b"s":
        return data[1:].decode("utf-8", "surrogatepass")
    if tag == b"i":
        return int(data[1:])
    if tag == b"n":
        return None
    if tag == b"w":
        return TimeWindow(*_TIME_WINDOW.unpack(data[1:]))
    if tag == b"b":
        return bytes(data[1:])
    if tag == b"p":
        return pickle.loads(data[1:])
    raise ValueError(f"RocksDB state: unknown term tag {tag!r} (the database was not written by streamkernel)")


def length_prefixed(term: bytes) -> bytes:
    """``term`` behind its 4-byte length: the key or namespace part of an entry key."""
    return len(term).to_bytes(4, "big") + term


def name_part(state_name: str) -> bytes:
    """The state-name part of an entry key (2-byte length, UTF-8 name)."""
    encoded = state_name.encode("utf-8", "surrogatepass")
    if len(encoded) > 0xFFFF:
        raise ValueError(f"RocksDB state: the state name {state_name[:40]!r}... is longer than 65535 bytes")
    return len(encoded).to_bytes(2, "big") + encoded


def key_group_prefix(key_group: int) -> bytes:
    """The first two bytes of every entry of ``key_group``."""
    return _KEY_GROUP_PREFIXES[key_group]


def split_entry_key(entry: bytes) -> Tuple[int, bytes, bytes, bytes, bytes]:
    """``(key_group, name bytes, key term, namespace term, suffix)`` of an entry key."""
    name_end = 4 + int.from_bytes(entry[2:4], "big")
    key_end = name_end + 4 + int.from_bytes(entry[name_end:name_end + 4], "big")
    ns_end = key_end + 4 + int.from_bytes(entry[key_end:key_end + 4], "big")
    return (
        int.from_bytes(entry[:2], "big"),
        entry[4:name_end],
        entry[name_end + 4:key_end],
        entry[key_end + 4:ns_end],
        entry[ns_end:],
    )

