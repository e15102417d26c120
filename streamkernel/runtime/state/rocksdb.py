"""The embedded-RocksDB keyed state backend (Flink's ``EmbeddedRocksDBStateBackend`` /
``RocksDBKeyedStateBackend``), through the ``rocksdict`` package.

One RocksDB database per operator subtask, in its own directory under the TaskManager's
working directory (or ``state.backend.rocksdb.localdir``): the working state lives on local
disk, not in Python objects, so it may exceed memory, and every access (de)serializes —
this backend is slower than ``hashmap`` by design. Entries are keyed by key group first
(:mod:`~streamkernel.runtime.state.rocksdb_format`), so a key group is a contiguous range.

Snapshots have exactly the heap backend's format (:mod:`~streamkernel.runtime.state.api`:
key group -> ``[(key, namespace, value)]``, lists as lists, maps as dicts, TTL values as
``(value, last_access)`` pairs): a checkpoint taken on one backend restores into the other
(Flink's canonical savepoint format). :meth:`RocksDBKeyedStateBackend.snapshot` is a full
scan of the database (no incremental checkpoints: the checkpoint storage receives the same
data the heap backend gives it). The write-ahead log is off, as in Flink: the database is
rebuilt from the last checkpoint after a failure, never reopened.
"""

from __future__ import annotations

import os
import pickle
import shutil
import uuid
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

import rocksdict

from streamkernel.errors import InvalidProgramError
from streamkernel.graph.keygroups import assign_to_key_group
from streamkernel.runtime.core.clock import Clock, SystemClock
from streamkernel.runtime.state.api import VOID_NAMESPACE
from streamkernel.runtime.state.heap import state_type_of
from streamkernel.runtime.state.rocksdb_collection_states import RocksDBListState, RocksDBMapState
from streamkernel.runtime.state.rocksdb_format import (
    decode_term,
    encode_term,
    key_group_prefix,
    length_prefixed,
    name_part,
    split_entry_key,
)
from streamkernel.runtime.state.rocksdb_snapshot import full_snapshot, restore_snapshots
from streamkernel.runtime.state.rocksdb_states import (
    LIVE_NAMESPACE,
    RocksDBAggregatingState,
    RocksDBReducingState,
    RocksDBValueState,
    dumps,
)

__all__ = ["RocksDBKeyedStateBackend", "MAX_KEY_GROUPS"]

#: the largest max parallelism the entry layout supports (Flink's limit too)
MAX_KEY_GROUPS = 1 << 15

_STATE_CLASSES: Dict[str, Callable[..., Any]] = {
    "value": RocksDBValueState,
    "list": RocksDBListState,
    "map": RocksDBMapState,
    "reducing": RocksDBReducingState,
    "aggregating": RocksDBAggregatingState,
}
_PARTITIONED_CACHE = 256  # namespace-bound state objects kept per state name (as the heap backend)
_loads = pickle.loads
_KEY_CACHE_SIZE = 1 << 16  # keys whose key group and bytes are kept (see _switch_key)
_UNSET = object()


class _StateMeta:
    """What the backend knows of one state name: its type, whether values carry TTL stamps."""

    __slots__ = ("name", "type", "ttl", "ttl_config", "encoded", "name_part")

    def __init__(self, name: str, state_type: str, ttl: bool) -> None:
        self.name = name
        self.type = state_type
        self.ttl = ttl
        self.ttl_config: Any = None
        self.name_part = name_part(name)
        self.encoded = self.name_part[2:]


class _Disposed:
    """Stands in for the database after ``dispose()``: any use is a clear error."""

    def __init__(self, owner: str) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        raise InvalidProgramError(f"{self._owner} was disposed (the task ended): its state is gone")


class RocksDBKeyedStateBackend:
    """Keyed state of one operator subtask in an embedded RocksDB database (Flink's ``RocksDBKeyedStateBackend``).

    Implements :class:`~streamkernel.runtime.state.api.KeyedStateBackend`. The database is
    created in a new directory under ``working_dir``; :meth:`dispose` closes it and deletes
    the directory. ``ttl_clock`` is the processing-time clock of state TTL; ``options`` are
    ``rocksdict.Options`` (created in raw mode; see
    :func:`~streamkernel.runtime.state.rocksdb_options.rocksdb_options`); ``shared_resources``
    is the lease on the slot's shared block cache and write buffer manager that ``options``
    use (:mod:`~streamkernel.runtime.state.rocksdb_memory`), closed after the database.

    >>> import tempfile
    >>> from streamkernel.datastream.state import ValueStateDescriptor
    >>> backend = RocksDBKeyedStateBackend(128, range(0, 128), working_dir=tempfile.mkdtemp())
    >>> count = backend.get_state(ValueStateDescriptor("count"))
    >>> backend.current_key = "a"; count.update(1); backend.current_key = "b"; count.value() is None
    True
    >>> backend.dispose()
    """

    def __init__(self, max_parallelism: int, key_group_range: range, *, working_dir: str,
                 ttl_clock: Optional[Clock] = None, options: Optional["rocksdict.Options"] = None,
                 shared_resources: Any = None) -> None:
        if not 0 < max_parallelism <= MAX_KEY_GROUPS:
            raise InvalidProgramError(
                f"RocksDBKeyedStateBackend: max_parallelism must be in 1..{MAX_KEY_GROUPS}, got {max_parallelism}"
            )
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        self.key_type: Any = None  # key_by's key_type (set by the task): how keys hash to key groups
        self.current_key: Any = None
        self.current_namespace: Any = VOID_NAMESPACE
        self._clock = ttl_clock if ttl_clock is not None else SystemClock()
        self.working_dir = os.fspath(working_dir)
        self._created_working_dir = not os.path.isdir(self.working_dir)
        os.makedirs(self.working_dir, exist_ok=True)
        #: the database directory (unique, so a restarted attempt never meets a previous one's lock)
        self.db_path = os.path.join(self.working_dir, f"rocksdb-{uuid.uuid4().hex[:12]}")
        if options is None:
            options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        #: the lease on the slot's shared memory (None: this database's memory is its own)
        self.shared_resources = shared_resources
        self._db: Any = rocksdict.Rdict(self.db_path, options)
        write_options = rocksdict.WriteOptions()
        # rocksdict's stub declares disable_wal a method; at run time it is a settable attribute
        write_options.disable_wal = True  # type: ignore[method-assign,assignment]  # recovery is from checkpoints, never from this database
        self._db.set_write_options(write_options)
        self._meta: Dict[str, _StateMeta] = {}
        self._meta_by_name: Dict[bytes, _StateMeta] = {}  # by encoded name, as in entry keys
        self._states: Dict[str, Any] = {}
        self._partitioned: Dict[str, Dict[Any, Any]] = {}
        self._sequence = 0
        # the cached current key / namespace (see RocksDB states' _slot): object, key group bytes, parts
        self._key: Any = _UNSET
        self._key_parts: Dict[Any, Tuple[bytes, bytes]] = {}
        self._kg = b""
        self._key_part = b""
        self._ns: Any = _UNSET
        self._ns_part = b""

    # ------------------------------------------------------------------ used by the State objects
    def _switch_key(self, key: Any) -> None:
        """Cache the key group prefix and the bytes of a new current key.

        Recently seen keys keep theirs in a bounded dict: a key that comes back is one lookup,
        not a hash and an encoding (unhashable keys, which the heap backend refuses too, raise).
        """
        parts = self._key_parts.get(key)
        if parts is None:
            if len(self._key_parts) >= _KEY_CACHE_SIZE:
                self._key_parts.clear()
            parts = self._key_parts[key] = (
                key_group_prefix(assign_to_key_group(key, self.max_parallelism, self.key_type)),
                length_prefixed(encode_term(key)),
            )
        self._kg, self._key_part = parts
        self._key = key

    def _switch_namespace(self, namespace: Any) -> None:
        self._ns_part = length_prefixed(encode_term(namespace))
        self._ns = namespace

    def _next_sequence(self) -> bytes:
        """The suffix of a new list element: increasing, so elements keep their order."""
        self._sequence += 1
        return self._sequence.to_bytes(8, "big")

    def _batch(self) -> Any:
        return rocksdict.WriteBatch(raw_mode=True)

    def _scan(self, prefix: bytes, limit: Optional[int] = None) -> List[Tuple[bytes, bytes]]:
        """The (entry key, value) pairs whose key starts with ``prefix``, in key order."""
        it = self._db.iter()
        it.seek(prefix)
        found = []
        while it.valid():
            entry = it.key()
            if not entry.startswith(prefix):
                break
            found.append((entry, it.value()))
            if limit is not None and len(found) >= limit:
                break
            it.next()
        return found

    def _delete_prefix(self, prefix: bytes) -> None:
        entries = self._scan(prefix)
        if entries:
            batch = self._batch()
            for entry, _ in entries:
                batch.delete(entry)
            self._db.write(batch)

    def _state_entries(self, meta: _StateMeta) -> Iterator[Tuple[bytes, bytes]]:
        """Every entry of one state, key group by key group (a seek per key group present)."""
        it = self._db.iter()
        group = 0
        while group < MAX_KEY_GROUPS:
            prefix = key_group_prefix(group) + meta.name_part
            it.seek(prefix)
            if not it.valid():
                return
            entry = it.key()
            if entry.startswith(prefix):
                while it.valid() and (entry := it.key()).startswith(prefix):
                    yield entry, it.value()
                    it.next()
                group += 1
            else:
                group = max(group + 1, int.from_bytes(entry[:2], "big"))

    # ------------------------------------------------------------------ state access
    def get_state(self, descriptor: Any) -> Any:
        """The State object for ``descriptor``; the same object for the same state name."""
        state = self._states.get(getattr(descriptor, "name", ""))
        if state is not None:
            if state.state_type != state_type_of(descriptor):
                raise InvalidProgramError(
                    f"keyed state '{descriptor.name}' is already registered as {state.state_type} "
                    f"state; it cannot also be {state_type_of(descriptor)} state — use another name"
                )
            return state
        state = self._create_state(descriptor, LIVE_NAMESPACE)
        self._states[descriptor.name] = state
        return state

    def get_partitioned_state(self, descriptor: Any, namespace: Any) -> Any:
        """A State object bound to ``namespace`` (the current key is still read live)."""
        bound = self._partitioned.get(descriptor.name)
        if bound is not None:
            state = bound.get(namespace)
            if state is not None and state.state_type == state_type_of(descriptor):
                return state
        self.get_state(descriptor)  # registers the name and checks the type
        bound = self._partitioned.setdefault(descriptor.name, {})
        state = bound.get(namespace)
        if state is None:
            if len(bound) >= _PARTITIONED_CACHE:
                bound.clear()
            state = bound[namespace] = self._create_state(descriptor, namespace)
        return state

    def _create_state(self, descriptor: Any, namespace: Any) -> Any:
        state_type = state_type_of(descriptor)  # raises the explanatory error for non-descriptors
        config = descriptor.get_ttl_config()
        ttl = config is not None and config.is_enabled()
        meta = self._register(descriptor.name, state_type, ttl)
        if ttl:
            meta.ttl_config = config
        return _STATE_CLASSES[state_type](self, descriptor, namespace)

    def _register(self, name: str, state_type: str, ttl: bool) -> _StateMeta:
        meta = self._meta.get(name)
        if meta is None:
            meta = self._meta[name] = _StateMeta(name, state_type, ttl)
            self._meta_by_name[meta.encoded] = meta
        elif meta.type != state_type:
            raise InvalidProgramError(
                f"keyed state '{name}' holds {meta.type} state (restored or registered before); "
                f"it cannot be used as {state_type} state — use another name"
            )
        if meta.ttl != ttl:  # TTL switched on/off since the snapshot: convert the stored form
            now = self._clock.now_ms()
            batch = self._batch()
            for entry, raw in list(self._state_entries(meta)):
                value = _loads(raw)
                batch.put(entry, dumps((value, now) if ttl else value[0]))
            self._db.write(batch)
            meta.ttl = ttl
        return meta

    def value_dict(self, descriptor: Any) -> Optional[dict]:
        """None: RocksDB has no raw dict behind its state (operators fall back to the State API)."""
        self.get_state(descriptor)
        return None

    def namespaced_dict(self, descriptor: Any) -> Optional[dict]:
        """None: RocksDB has no raw dict behind its state (window operators use the general path)."""
        self.get_state(descriptor)
        return None

    def merge_namespaces(self, descriptor: Any, target: Any, sources: Iterable[Any]) -> None:
        """Merge list / reducing / aggregating state of ``sources`` into ``target`` (current key)."""
        self.get_state(descriptor).merge_namespaces(target, list(sources))

    def keys(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> List[Any]:
        """The keys that have an entry in ``state_name`` under ``namespace`` (key group order)."""
        meta = self._meta.get(state_name)
        if meta is None:
            return []
        wanted = b"" if namespace is None else encode_term(namespace)
        found: Dict[bytes, None] = {}
        for entry, _ in self._state_entries(meta):
            _, _, key, ns, _ = split_entry_key(entry)
            if ns == wanted:
                found[key] = None
        return [decode_term(key) for key in found]

    def keys_and_namespaces(self, state_name: str) -> List[Tuple[Any, Any]]:
        """Every (key, namespace) with an entry in ``state_name`` (Flink's ``getKeysAndNamespaces``)."""
        meta = self._meta.get(state_name)
        if meta is None:
            return []
        found: Dict[Tuple[bytes, bytes], None] = {}
        for entry, _ in self._state_entries(meta):
            _, _, key, ns, _ = split_entry_key(entry)
            found[(key, ns)] = None
        return [(decode_term(key), None if not ns else decode_term(ns)) for key, ns in found]

    def state_names(self) -> List[str]:
        """The names of every registered or restored state."""
        return list(self._meta)

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict:
        """All keyed state grouped by key group, in the heap backend's format (one full scan).

        The result is made of fresh objects: later state changes cannot alter it.
        """
        return full_snapshot(self)

    def restore(self, snapshots: Iterable[Optional[dict]]) -> None:
        """Write the entries of this backend's key groups from keyed snapshots (of either backend).

        Several snapshots (from the old subtasks, when rescaling) may be given; entries of
        key groups outside ``key_group_range`` are ignored. The max parallelism cannot change.
        An entry replaces what the backend holds for its (key, namespace).
        """
        restore_snapshots(self, snapshots)

    # ------------------------------------------------------------------ lifecycle
    def dispose(self) -> None:
        """Close the database and delete its directory (and the working dir if it made it and it is empty).

        The State objects handed out raise a clear error afterwards. Calling it again does nothing.
        """
        db = self._db
        if isinstance(db, _Disposed):
            return
        self._db = _Disposed(f"RocksDBKeyedStateBackend at {self.db_path}")
        self._partitioned.clear()
        try:
            db.close()
        finally:
            del db
            if self.shared_resources is not None:  # after the database: the cache must outlive it
                self.shared_resources.close()
            shutil.rmtree(self.db_path, ignore_errors=True)
            if self._created_working_dir:
                try:
                    os.rmdir(self.working_dir)
                except OSError:
                    pass  # not empty: other backends' databases live there too

    def __repr__(self) -> str:
        return (
            f"RocksDBKeyedStateBackend(max_parallelism={self.max_parallelism}, "
            f"key_groups={self.key_group_range.start}..{self.key_group_range.stop - 1}, "
            f"states={sorted(self._meta)}, path={self.db_path!r})"
        )

