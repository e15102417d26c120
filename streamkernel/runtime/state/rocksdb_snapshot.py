"""Full snapshots and restores of the RocksDB keyed state backend (Flink's
``RocksFullSnapshotStrategy`` and ``RocksDBFullRestoreOperation``), in the heap backend's format.

A snapshot is one ordered scan of the database: entries come key group by key group and,
within a group, state by state and (key, namespace) by (key, namespace), so the elements of
a list and the user keys of a map are consecutive and are assembled into a list / a dict
as the heap backend stores them. With TTL, expired values are left out when the state's
cleanup strategy says so (``cleanup_full_snapshot`` or the default background cleanup), as
the heap backend does. A restore writes the entries of the owned key groups with write
batches; keys and namespaces are re-encoded, values re-pickled.
"""

from __future__ import annotations

import functools
import pickle
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Optional

from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.state.key_groups_snapshot import select_key_groups
from streamkernel.runtime.state.rocksdb_format import (
    VOID_NAMESPACE_PART,
    decode_term,
    encode_term,
    key_group_prefix,
    length_prefixed,
    split_entry_key,
)
from streamkernel.runtime.state.rocksdb_states import dumps
from streamkernel.runtime.state.ttl_states import purge_expired, unwrap_ttl, wrap_ttl

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.state.rocksdb import RocksDBKeyedStateBackend

__all__ = ["full_snapshot", "restore_snapshots"]

_WRITE_BATCH_ENTRIES = 10_000  # entries per write batch while restoring
_UNSET = object()


def full_snapshot(backend: "RocksDBKeyedStateBackend") -> dict:
    """Every entry of ``backend``'s database as a keyed snapshot (format: :mod:`~streamkernel.runtime.state.api`)."""
    now = backend._clock.now_ms()
    states: Dict[str, dict] = {
        name: {"type": meta.type, "ttl": meta.ttl, "key_groups": {}} for name, meta in backend._meta.items()
    }
    decoded: Dict[bytes, Any] = {}  # term bytes -> value, for keys and namespaces seen before

    def term(data: bytes) -> Any:
        value = decoded.get(data, _UNSET)
        if value is _UNSET:
            value = decoded[data] = decode_term(data)
        return value

    loads, by_name = pickle.loads, backend._meta_by_name
    it = backend._db.iter()
    it.seek_to_first()
    current: Any = None  # (group, name, key term, namespace term) of the value being assembled
    value: Any = None
    while True:
        entry = it.key() if it.valid() else None
        if entry is not None:
            group, name, key, ns, suffix = split_entry_key(entry)
            slot = (group, name, key, ns)
        if current is not None and (entry is None or slot != current):
            _add_entry(states, by_name[current[1]], current, value, term, now)
            current = None
        if entry is None:
            break
        meta = by_name.get(name)
        if meta is None:
            raise InvalidProgramError(f"RocksDB state at {backend.db_path}: an entry of an unknown state {name!r}")
        stored = loads(it.value())
        if current is None:
            current = slot
            value = [] if meta.type == "list" else {} if meta.type == "map" else stored
        if meta.type == "list":
            value.append(stored)
        elif meta.type == "map":
            value[term(suffix)] = stored
        it.next()
    return {"kind": "keyed", "max_parallelism": backend.max_parallelism, "states": states}


def _add_entry(states: Dict[str, dict], meta: Any, slot: tuple, value: Any, term: Any, now: int) -> None:
    group, _, key, ns = slot
    config = meta.ttl_config
    if meta.ttl and config is not None:
        strategies = config.get_cleanup_strategies()
        if strategies.in_full_snapshot() or strategies.is_cleanup_in_background():
            value = purge_expired(meta.type, value, now, config.get_ttl_millis())
            if value is None:
                return
    groups = states[meta.name]["key_groups"]
    groups.setdefault(group, []).append((term(key), term(ns) if ns else None, value))


def restore_snapshots(backend: "RocksDBKeyedStateBackend", snapshots: Iterable[Optional[dict]]) -> None:
    """Write the entries of ``backend``'s key groups from keyed snapshots (see ``RocksDBKeyedStateBackend.restore``)."""
    merged = select_key_groups(snapshots, backend.key_group_range, backend.max_parallelism)
    it = backend._db.iter()
    it.seek_to_first()
    replacing = it.valid()  # a fresh database (the normal case) needs no clearing
    del it
    now = backend._clock.now_ms()
    for name, state in merged["states"].items():
        meta = backend._meta.get(name)
        snapshot_ttl = bool(state.get("ttl"))
        if meta is None:
            meta = backend._register(name, state["type"], snapshot_ttl)
        elif meta.type != state["type"]:
            raise InvalidProgramError(
                f"restoring keyed state '{name}': the snapshot holds {state['type']} state, "
                f"this operator uses it as {meta.type} state"
            )
        convert: Optional[Callable[[Any], Any]] = None
        if snapshot_ttl != meta.ttl:
            convert = functools.partial(wrap_ttl, meta.type, now=now) if meta.ttl else functools.partial(unwrap_ttl, meta.type)
        _write_state(backend, meta, state["key_groups"], convert, replacing)


def _write_state(backend: "RocksDBKeyedStateBackend", meta: Any, key_groups: Dict[int, list], convert: Any,
                 replacing: bool) -> None:
    state_type, batch = meta.type, backend._batch()
    for group, entries in key_groups.items():
        prefix = key_group_prefix(group) + meta.name_part
        for key, namespace, value in entries:
            if convert is not None:
                value = convert(value)
            slot = prefix + length_prefixed(encode_term(key)) + (
                VOID_NAMESPACE_PART if namespace is None else length_prefixed(encode_term(namespace)))
            if replacing:
                for entry, _ in backend._scan(slot):
                    batch.delete(entry)
            if state_type == "list":
                for element in value:
                    batch.put(slot + backend._next_sequence(), dumps(element))
            elif state_type == "map":
                for user_key, element in value.items():
                    batch.put(slot + encode_term(user_key), dumps(element))
            else:
                batch.put(slot, dumps(value))
        if batch.len() >= _WRITE_BATCH_ENTRIES:
            backend._db.write(batch)
            batch = backend._batch()
    backend._db.write(batch)
