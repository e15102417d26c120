"""The keyed State objects of the RocksDB backend: Flink's ``RocksDBValueState`` & co.

Every call (de)serializes: a read is a RocksDB ``get`` and an unpickle, a write a pickle
and a ``put`` (the entry layout is in :mod:`~streamkernel.runtime.state.rocksdb_format`).
Semantics are the heap backend's (Flink/PyFlink): empty state reads as None (ListState: an
empty list), writing None clears, ``ListState.add(None)`` is an error. Values read are
fresh copies, so mutating one in place changes nothing until it is written back (as in
Flink's RocksDB backend; the heap backend hands out the stored object).

* ValueState, ReducingState, AggregatingState: one entry per (key, namespace);
  ``add`` is read-modify-write.
* ListState and MapState (:mod:`~streamkernel.runtime.state.rocksdb_collection_states`):
  one entry per element / per user key.

TTL follows the heap backend's :mod:`~streamkernel.runtime.state.ttl_states` exactly
(``now >= last_access + ttl`` is expired; OnCreateAndWrite / OnReadAndWrite;
NeverReturnExpired / ReturnExpiredIfNotCleanedUp; an expired value is removed by the read
that finds it): values are stored as ``(value, last_access_ms)`` pairs, per element for
lists and per user key for maps — the same stored form as the heap backend's snapshots.
One class per state type handles both, since a branch is nothing next to a pickle.
"""

from __future__ import annotations

import pickle
from typing import Any, Iterable, Optional

from streamkernel.datastream.state import (
    AggregatingState,
    ReducingState,
    StateTtlConfig,
    ValueState,
)
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.state.heap_states import reduce_callable
from streamkernel.runtime.state.rocksdb_format import (
    PICKLE_PROTOCOL,
    VOID_NAMESPACE_PART,
    encode_term,
    length_prefixed,
    name_part,
)

__all__ = [
    "LIVE_NAMESPACE",
    "MISSING",
    "RocksDBState",
    "RocksDBValueState",
    "RocksDBReducingState",
    "RocksDBAggregatingState",
    "dumps",
]

#: a state object created with this namespace reads the backend's current namespace at every call
LIVE_NAMESPACE = object()
#: what a read returns for an absent (or expired) entry: None is a value in map state
MISSING = object()
_loads = pickle.loads


def dumps(value: Any) -> bytes:
    """The stored bytes of a value: a pickle (protocol 5), by cloudpickle for what pickle
    cannot write (lambdas, classes defined in a notebook); readable by ``pickle.loads``."""
    try:
        return pickle.dumps(value, PICKLE_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        try:
            import cloudpickle

            return cloudpickle.dumps(value, PICKLE_PROTOCOL)
        except Exception:  # noqa: BLE001 - report pickle's own reason
            raise InvalidProgramError(
                f"the rocksdb state backend cannot store a {type(value).__name__} value ({exc}): its "
                "state values must be picklable; keep such objects out of state or use the hashmap backend"
            ) from None


class RocksDBState:
    """What every RocksDB State object shares: the entry key of the current key and namespace,
    the TTL rules, ``clear`` and ``merge_namespaces`` (of one entry per key and namespace)."""

    state_type = ""
    _per_entry = False  # list and map state: several entries per (key, namespace)

    def __init__(self, backend: Any, descriptor: Any, namespace: Any = LIVE_NAMESPACE) -> None:
        self._b = backend
        self._descriptor = descriptor
        self.name: str = descriptor.name
        self._name_part = name_part(descriptor.name)
        self._fixed = namespace
        config = descriptor.get_ttl_config()
        self._ttl: Optional[int] = None
        if config is not None and config.is_enabled():
            self._ttl = config.get_ttl_millis()
            self._now = backend._clock.now_ms
            self._on_read = config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite
            self._return_expired = (
                config.get_state_visibility() is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
            )

    # ------------------------------------------------------------------ entry keys
    def _slot(self) -> bytes:
        """The entry key (list/map: the prefix of the entries) of the current key and namespace.

        The key's group and bytes are computed once per key change and cached by the backend.
        """
        b = self._b
        key = b.current_key
        if key is not b._key and key != b._key:
            b._switch_key(key)
        ns = b.current_namespace if self._fixed is LIVE_NAMESPACE else self._fixed
        if ns is None:
            return b._kg + self._name_part + b._key_part + VOID_NAMESPACE_PART
        if ns is not b._ns and ns != b._ns:
            b._switch_namespace(ns)
        return b._kg + self._name_part + b._key_part + b._ns_part

    def _slot_of(self, namespace: Any) -> bytes:
        """The entry key of the current key in an explicit ``namespace``."""
        b = self._b
        key = b.current_key
        if key is not b._key and key != b._key:
            b._switch_key(key)
        ns_part = VOID_NAMESPACE_PART if namespace is None else length_prefixed(encode_term(namespace))
        return b._kg + self._name_part + b._key_part + ns_part

    # ------------------------------------------------------------------ stored values
    def _stored(self, value: Any) -> bytes:
        """The bytes of a value as stored: the value, or ``(value, now)`` with TTL."""
        return dumps(value if self._ttl is None else (value, self._now()))

    def _read(self, entry: bytes) -> Any:
        """The user value of ``entry`` under the TTL read rules (see the module docstring), or MISSING."""
        db = self._b._db
        raw = db.get(entry)
        if raw is None:
            return MISSING
        if self._ttl is None:
            return _loads(raw)
        value, last_access = _loads(raw)
        now = self._now()
        if now >= last_access + self._ttl:
            db.delete(entry)
            return value if self._return_expired else MISSING
        if self._on_read:
            db.put(entry, dumps((value, now)))
        return value

    def _fold_input(self, entry: bytes, now: int) -> Any:
        """The current value to fold a new one into (Flink's ``getUnexpired``), or MISSING."""
        raw = self._b._db.get(entry)
        if raw is None:
            return MISSING
        if self._ttl is None:
            return _loads(raw)
        value, last_access = _loads(raw)
        if now >= last_access + self._ttl and not self._return_expired:
            return MISSING
        return value

    # ------------------------------------------------------------------ shared operations
    def clear(self) -> None:
        """Remove the entry (entries) of the current key and namespace."""
        slot = self._slot()
        if self._per_entry:
            self._b._delete_prefix(slot)
        else:
            self._b._db.delete(slot)

    def merge_namespaces(self, target: Any, sources: Iterable[Any]) -> None:
        """Merge the entries of ``sources`` into ``target`` for the current key (Flink's order:
        sources folded in order, then ``merge(target, folded)``); sources are removed."""
        db = self._b._db
        merged, emptied = MISSING, []
        for source in sources:
            if source == target:
                continue
            slot = self._slot_of(source)
            raw = db.get(slot)
            if raw is None:
                continue
            emptied.append(slot)
            value = _loads(raw)
            merged = value if merged is MISSING else self._merge_stored(merged, value)
        if merged is MISSING:
            return
        slot = self._slot_of(target)
        raw = db.get(slot)
        merged = merged if raw is None else self._merge_stored(_loads(raw), merged)
        batch = self._b._batch()
        for source_slot in emptied:
            batch.delete(source_slot)
        batch.put(slot, dumps(merged))
        self._b._db.write(batch)

    def _merge_stored(self, a: Any, b: Any) -> Any:
        raise InvalidProgramError(
            f"state '{self.name}': {self.state_type} state cannot be merged; only list, reducing "
            "and aggregating state merge (session windows)"
        )

    def _unexpired(self, stored: Any, now: int) -> Any:
        if now >= stored[1] + self._ttl and not self._return_expired:
            return MISSING
        return stored[0]

    def _merge_folded(self, a: Any, b: Any, merge: Any) -> Any:
        """Merge two stored accumulators (with TTL: Flink's TtlMergingState rules)."""
        if self._ttl is None:
            return merge(a, b)
        now = self._now()
        left, right = self._unexpired(a, now), self._unexpired(b, now)
        if left is MISSING:
            return b
        if right is MISSING:
            return a
        return (merge(left, right), now)

    def __repr__(self) -> str:
        return f"{type(self).__name__}('{self.name}')"


class RocksDBValueState(RocksDBState, ValueState):
    """ValueState: one value per key; ``value()`` is None until ``update``; ``update(None)`` clears."""

    state_type = "value"

    def value(self) -> Any:
        """The value of the current key (a fresh copy), or None."""
        if self._ttl is None:
            raw = self._b._db.get(self._slot())
            return None if raw is None else _loads(raw)
        found = self._read(self._slot())
        return None if found is MISSING else found

    def update(self, value: Any) -> None:
        """Set the value of the current key (None removes it)."""
        if value is None:
            self.clear()
        else:
            self._b._db.put(self._slot(), self._stored(value))


class RocksDBReducingState(RocksDBState, ReducingState):
    """ReducingState: ``add`` reads, reduces and writes back; ``get()`` None when empty."""

    state_type = "reducing"

    def __init__(self, backend: Any, descriptor: Any, namespace: Any = LIVE_NAMESPACE) -> None:
        super().__init__(backend, descriptor, namespace)
        self._reduce = reduce_callable(descriptor.get_reduce_function())

    def get(self) -> Any:
        """The reduced value of the current key, or None."""
        found = self._read(self._slot())
        return None if found is MISSING else found

    def add(self, value: Any) -> None:
        """Reduce ``value`` into the state (``add(None)`` clears, as in Flink)."""
        if value is None:
            self.clear()
            return
        slot = self._slot()
        now = self._now() if self._ttl is not None else 0
        current = self._fold_input(slot, now)
        reduced = value if current is MISSING else self._reduce(current, value)
        self._b._db.put(slot, dumps(reduced if self._ttl is None else (reduced, now)))

    def _merge_stored(self, a: Any, b: Any) -> Any:
        return self._merge_folded(a, b, self._reduce)


class RocksDBAggregatingState(RocksDBState, AggregatingState):
    """AggregatingState: keeps an accumulator; ``get()`` is ``get_result(acc)``, None when empty."""

    state_type = "aggregating"

    def __init__(self, backend: Any, descriptor: Any, namespace: Any = LIVE_NAMESPACE) -> None:
        super().__init__(backend, descriptor, namespace)
        function = descriptor.get_agg_function()
        self._function = function
        self._create = function.create_accumulator
        self._add = function.add
        self._result = function.get_result

    def get(self) -> Any:
        """``get_result`` of the current key's accumulator, or None when there is none."""
        acc = self._read(self._slot())
        return None if acc is MISSING else self._result(acc)

    def add(self, value: Any) -> None:
        """Add ``value`` to the accumulator (created on first add; ``add(None)`` clears)."""
        if value is None:
            self.clear()
            return
        slot = self._slot()
        now = self._now() if self._ttl is not None else 0
        acc = self._fold_input(slot, now)
        acc = self._add(value, self._create() if acc is MISSING else acc)
        self._b._db.put(slot, dumps(acc if self._ttl is None else (acc, now)))

    def _merge_stored(self, a: Any, b: Any) -> Any:
        merge = getattr(self._function, "merge", None)
        if not callable(merge):
            raise InvalidProgramError(
                f"AggregatingState '{self.name}': the AggregateFunction "
                f"{type(self._function).__name__} needs merge(acc_a, acc_b) to merge windows"
            )
        return self._merge_folded(a, b, merge)
