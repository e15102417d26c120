"""RocksDB states with several entries per key and namespace: Flink's ``RocksDBListState`` and ``RocksDBMapState``.

* ListState: one entry per *element* (suffix: an increasing sequence number), so ``add`` is
  one ``put`` whatever the list's length, and ``get`` is a range scan over the slot.
* MapState: one entry per *user key* (suffix: the user key's term), so ``get``/``put``/
  ``remove`` touch one entry; ``items()`` is a range scan.

TTL stamps are per element and per user key, as in the heap backend (see
:mod:`~streamkernel.runtime.state.rocksdb_states` for the shared rules).
"""

from __future__ import annotations

import pickle
from typing import Any, Dict, Iterable, List, Tuple

from streamkernel.datastream.state import ListState, MapState
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.state.rocksdb_format import decode_term, encode_term
from streamkernel.runtime.state.rocksdb_states import MISSING, RocksDBState, dumps

__all__ = ["RocksDBListState", "RocksDBMapState"]

_loads = pickle.loads


def _checked_list(name: str, values: Any, call: str) -> list:
    if values is None:
        raise InvalidProgramError(f"ListState '{name}'.{call}: the list of values must not be None (use clear())")
    copied = list(values)
    if None in copied:
        raise InvalidProgramError(f"ListState '{name}'.{call}: values must not contain None")
    return copied


class RocksDBListState(RocksDBState, ListState):
    """ListState: one entry per element; ``get()`` is a new list, ``[]`` when empty."""

    state_type = "list"
    _per_entry = True

    def get(self) -> List[Any]:
        """The elements of the current key (with TTL: the unexpired ones; expired ones are removed)."""
        entries = self._b._scan(self._slot())
        if self._ttl is None:
            return [_loads(raw) for _, raw in entries]
        if not entries:
            return []
        now = self._now()
        limit = now - self._ttl  # expired when last access <= now - ttl
        result, batch = [], self._b._batch()
        for entry, raw in entries:
            value, last_access = _loads(raw)
            if last_access <= limit:
                batch.delete(entry)
                if self._return_expired:
                    result.append(value)
                continue
            result.append(value)
            if self._on_read:
                batch.put(entry, dumps((value, now)))
        self._b._db.write(batch)
        return result

    def add(self, value: Any) -> None:
        """Append ``value`` (None is refused, as in Flink)."""
        if value is None:
            raise InvalidProgramError(f"ListState '{self.name}'.add: cannot add None to a ListState")
        self._b._db.put(self._slot() + self._b._next_sequence(), self._stored(value))

    def add_all(self, values: List[Any]) -> None:
        """Append every element of ``values`` (an empty list changes nothing)."""
        values = _checked_list(self.name, values, "add_all")
        if values:
            self._append(self._slot(), [self._stored(value) for value in values])

    def update(self, values: List[Any]) -> None:
        """Replace the elements with ``values`` (an empty list clears)."""
        values = _checked_list(self.name, values, "update")
        slot = self._slot()
        self._b._delete_prefix(slot)
        if values:
            self._append(slot, [self._stored(value) for value in values])

    def _append(self, slot: bytes, stored: List[bytes], batch: Any = None) -> None:
        b = self._b
        own = batch is None
        batch = b._batch() if own else batch
        for raw in stored:
            batch.put(slot + b._next_sequence(), raw)
        if own:
            b._db.write(batch)

    def merge_namespaces(self, target: Any, sources: Iterable[Any]) -> None:
        """Append the elements of ``sources`` (in order) to ``target``'s; sources are removed.

        With TTL, expired elements are dropped on the way.
        """
        b = self._b
        moved: List[bytes] = []
        batch = b._batch()
        for source in sources:
            if source == target:
                continue
            for entry, raw in b._scan(self._slot_of(source)):
                batch.delete(entry)
                moved.append(raw)
        if not moved:
            return
        target_slot = self._slot_of(target)
        if self._ttl is not None:
            now = self._now()
            moved = [raw for raw in moved if now < _loads(raw)[1] + self._ttl]
            for entry, raw in b._scan(target_slot):
                if now >= _loads(raw)[1] + self._ttl:
                    batch.delete(entry)
        self._append(target_slot, moved, batch)
        b._db.write(batch)


class RocksDBMapState(RocksDBState, MapState):
    """MapState: one entry per user key; ``keys()``, ``values()`` and ``items()`` return lists.

    They come in the order of the user keys' bytes (the heap backend: insertion order).
    """

    state_type = "map"
    _per_entry = True

    def get(self, key: Any) -> Any:
        """The value mapped to ``key``, or None."""
        found = self._read(self._slot() + encode_term(key))
        return None if found is MISSING else found

    def put(self, key: Any, value: Any) -> None:
        """Map ``key`` to ``value``."""
        self._b._db.put(self._slot() + encode_term(key), self._stored(value))

    def put_all(self, dict_value: Dict[Any, Any]) -> None:
        """Copy every mapping of ``dict_value`` into the state."""
        if not dict_value:
            return
        slot, batch = self._slot(), self._b._batch()
        for key, value in dict_value.items():
            batch.put(slot + encode_term(key), self._stored(value))
        self._b._db.write(batch)

    def remove(self, key: Any) -> None:
        """Delete the mapping of ``key`` (no error if there is none)."""
        self._b._db.delete(self._slot() + encode_term(key))

    def contains(self, key: Any) -> bool:
        """Whether ``key`` has a mapping (with TTL: an unexpired, or returnable, one)."""
        if self._ttl is None:
            return self._b._db.get(self._slot() + encode_term(key)) is not None
        return self._read(self._slot() + encode_term(key)) is not MISSING

    def items(self) -> List[Tuple[Any, Any]]:
        """All (key, value) mappings (with TTL: expired ones are removed)."""
        slot = self._slot()
        start = len(slot)
        entries = self._b._scan(slot)
        if self._ttl is None:
            return [(decode_term(entry[start:]), _loads(raw)) for entry, raw in entries]
        if not entries:
            return []
        now = self._now()
        limit = now - self._ttl
        result, batch = [], self._b._batch()
        for entry, raw in entries:
            value, last_access = _loads(raw)
            if last_access <= limit:
                batch.delete(entry)
                if not self._return_expired:
                    continue
            elif self._on_read:
                batch.put(entry, dumps((value, now)))
            result.append((decode_term(entry[start:]), value))
        self._b._db.write(batch)
        return result

    def keys(self) -> List[Any]:
        """All user keys."""
        return [key for key, _ in self.items()]

    def values(self) -> List[Any]:
        """All values."""
        return [value for _, value in self.items()]

    def is_empty(self) -> bool:
        """True if the current key has no (unexpired) mappings."""
        entries = self._b._scan(self._slot(), limit=None if self._ttl is not None else 1)
        if self._ttl is None or not entries:
            return not entries
        limit = self._now() - self._ttl
        batch, live = self._b._batch(), False
        for entry, raw in entries:
            if _loads(raw)[1] <= limit:
                batch.delete(entry)
            else:
                live = True
        self._b._db.write(batch)
        return not live

    def merge_namespaces(self, target: Any, sources: Iterable[Any]) -> None:
        """Map state does not merge; a single non-empty namespace is moved (as the heap backend does)."""
        b = self._b
        filled = [ns for ns in [target, *(s for s in sources if s != target)] if b._scan(self._slot_of(ns), limit=1)]
        if len(filled) > 1:
            self._merge_stored(None, None)  # raises the explanatory error
        if not filled or filled[0] == target:
            return
        batch, target_slot = b._batch(), self._slot_of(target)
        source_slot = self._slot_of(filled[0])
        for entry, raw in b._scan(source_slot):
            batch.delete(entry)
            batch.put(target_slot + entry[len(source_slot):], raw)
        b._db.write(batch)
