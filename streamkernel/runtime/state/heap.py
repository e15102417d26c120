"""The in-memory keyed state backend (Flink's ``HashMapStateBackend`` / ``HeapKeyedStateBackend``).

Keyed state is **organised by key group where it matters — at snapshot and restore time**:
:meth:`HeapKeyedStateBackend.snapshot` groups every entry by its key group
(:func:`~streamkernel.graph.keygroups.assign_to_key_group`) and :meth:`restore` keeps only
the key groups of this subtask's ``key_group_range``, which is what rescaling needs (a new
subtask receives whole key groups). Access, on the other hand, is a single dict lookup:
one plain dict per state name keyed by the key (or by ``(key, namespace)`` for
window-scoped state), with no key-group hashing per record. The operator sets
``backend.current_key`` / ``backend.current_namespace`` (plain attributes) before it
touches state; the State objects read them at every call.

Snapshots copy the state with a pickle round trip rather than ``copy.deepcopy``: both
give a snapshot the job can no longer mutate, pickle does it in C (3-6x faster on
dicts/lists of builtins, measured) and checkpoint storage pickles the snapshot anyway, so
values must be picklable; ``copy.deepcopy`` is the fallback for values that are not.
"""

from __future__ import annotations

import copy
import functools
import pickle
from typing import Any, Callable, Dict, Iterable, List, Optional

from streamkernel.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.keygroups import assign_to_key_group
from streamkernel.runtime.core.clock import Clock, SystemClock
from streamkernel.runtime.state.api import VOID_NAMESPACE
from streamkernel.runtime.state.heap_states import (
    HeapAggregatingState,
    HeapListState,
    HeapMapState,
    HeapReducingState,
    HeapValueState,
    NamespaceContext,
    StateTable,
)
from streamkernel.runtime.state.key_groups_snapshot import select_key_groups
from streamkernel.runtime.state.ttl_states import (
    TtlAggregatingState,
    TtlListState,
    TtlMapState,
    TtlReducingState,
    TtlValueState,
    purge_expired,
    unwrap_ttl,
    wrap_ttl,
)

__all__ = ["HeapKeyedStateBackend", "detach", "state_type_of"]

# descriptor class -> (state type name, class without TTL, class with TTL)
_STATE_CLASSES = (
    (ValueStateDescriptor, "value", HeapValueState, TtlValueState),
    (ListStateDescriptor, "list", HeapListState, TtlListState),
    (MapStateDescriptor, "map", HeapMapState, TtlMapState),
    (ReducingStateDescriptor, "reducing", HeapReducingState, TtlReducingState),
    (AggregatingStateDescriptor, "aggregating", HeapAggregatingState, TtlAggregatingState),
)
# get_partitioned_state keeps this many namespace-bound state objects per state name
_PARTITIONED_CACHE = 256


_TYPE_OF_CLASS: Dict[type, str] = {}  # descriptor class -> state type name, filled on first use


def state_type_of(descriptor: Any) -> str:
    """``"value"``, ``"list"``, ``"map"``, ``"reducing"`` or ``"aggregating"`` for a descriptor."""
    found = _TYPE_OF_CLASS.get(type(descriptor))
    if found is not None:
        return found
    for descriptor_class, type_name, _, _ in _STATE_CLASSES:
        if isinstance(descriptor, descriptor_class):
            _TYPE_OF_CLASS[type(descriptor)] = type_name
            return type_name
    raise InvalidProgramError(
        f"keyed state: expected a ValueStateDescriptor, ListStateDescriptor, MapStateDescriptor, "
        f"ReducingStateDescriptor or AggregatingStateDescriptor, got {type(descriptor).__name__}"
    )


def detach(data: Any) -> Any:
    """A deep copy of plain snapshot data that later mutation of ``data`` cannot reach.

    A pickle round trip (C speed); ``copy.deepcopy`` when something is not picklable.
    """
    try:
        return pickle.loads(pickle.dumps(data, pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(data)


def _ttl_enabled(descriptor: StateDescriptor) -> bool:
    config = descriptor.get_ttl_config()
    return config is not None and config.is_enabled()


class HeapKeyedStateBackend:
    """Keyed state of one operator subtask, in memory (Flink's ``HeapKeyedStateBackend``).

    Implements :class:`~streamkernel.runtime.state.api.KeyedStateBackend`. ``ttl_clock`` is
    the processing-time clock of state TTL (default: the wall clock).

    >>> from streamkernel.datastream.state import ValueStateDescriptor
    >>> backend = HeapKeyedStateBackend(128, range(0, 128))
    >>> count = backend.get_state(ValueStateDescriptor("count"))
    >>> backend.current_key = "a"; count.update(1); backend.current_key = "b"; count.value() is None
    True
    """

    def __init__(self, max_parallelism: int, key_group_range: range, *, ttl_clock: Optional[Clock] = None) -> None:
        if max_parallelism <= 0:
            raise InvalidProgramError(f"HeapKeyedStateBackend: max_parallelism must be positive, got {max_parallelism}")
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        self.key_type: Any = None  # key_by's key_type (set by the task): how keys hash to key groups
        self.current_key: Any = None
        self.current_namespace: Any = VOID_NAMESPACE
        self._clock = ttl_clock if ttl_clock is not None else SystemClock()
        self._tables: Dict[str, StateTable] = {}
        self._states: Dict[str, Any] = {}
        self._partitioned: Dict[str, Dict[Any, Any]] = {}

    # ------------------------------------------------------------------ state access
    def get_state(self, descriptor: Any) -> Any:
        """The State object for ``descriptor``; the same object for the same state name.

        The class is chosen here, once: TTL state only when the descriptor has a TTL config.
        """
        state = self._states.get(getattr(descriptor, "name", ""))
        if state is not None:
            if state.state_type != state_type_of(descriptor):
                raise InvalidProgramError(
                    f"keyed state '{descriptor.name}' is already registered as {state.state_type} "
                    f"state; it cannot also be {state_type_of(descriptor)} state — use another name"
                )
            return state
        state = self._create_state(self, descriptor)
        self._states[descriptor.name] = state
        return state

    def get_partitioned_state(self, descriptor: Any, namespace: Any) -> Any:
        """A State object bound to ``namespace`` (the current key is still read live).

        Objects are cached per (name, namespace) a little, so trigger contexts that ask for
        the same window again get the same object.
        """
        bound = self._partitioned.get(descriptor.name)
        if bound is not None:
            state = bound.get(namespace)
            if state is not None and state.state_type == state_type_of(descriptor):
                return state  # the common case: one dict lookup per level
        self.get_state(descriptor)  # registers the name and checks the type
        bound = self._partitioned.setdefault(descriptor.name, {})
        state = bound.get(namespace)
        if state is None:
            if len(bound) >= _PARTITIONED_CACHE:
                bound.clear()
            state = bound[namespace] = self._create_state(NamespaceContext(self, namespace), descriptor)
        return state

    def _create_state(self, context: Any, descriptor: Any) -> Any:
        for descriptor_class, type_name, plain_class, ttl_class in _STATE_CLASSES:  # noqa: B007 - used after break
            if isinstance(descriptor, descriptor_class):
                break
        else:
            state_type_of(descriptor)  # raises the explanatory error
        ttl = _ttl_enabled(descriptor)
        table = self._table(descriptor.name, type_name, ttl)
        if ttl:
            table.ttl_config = descriptor.get_ttl_config()
            return ttl_class(context, table, descriptor, self._clock.now_ms)
        return plain_class(context, table, descriptor)

    def _table(self, name: str, state_type: str, ttl: bool) -> StateTable:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = StateTable(name, state_type, ttl)
        elif table.type != state_type:
            raise InvalidProgramError(
                f"keyed state '{name}' holds {table.type} state (restored or registered before); "
                f"it cannot be used as {state_type} state — use another name"
            )
        if table.ttl != ttl:  # TTL switched on/off since the snapshot: convert the stored form
            now = self._clock.now_ms()
            for entries in (table.plain, table.spaced):
                for slot, value in entries.items():
                    entries[slot] = wrap_ttl(state_type, value, now) if ttl else unwrap_ttl(state_type, value)
            table.ttl = ttl
        return table

    def value_dict(self, descriptor: ValueStateDescriptor) -> Optional[dict]:
        """The dict (key -> value) behind a ValueState in the VOID namespace, or None with TTL.

        A fast path for built-in operators (running reduce): one dict operation per record
        instead of two State method calls. Writes must never store None (None means empty).
        Not part of the backend protocol: other backends may not have it.
        """
        state = self.get_state(descriptor)
        return None if self._tables[descriptor.name].ttl else state._plain

    def namespaced_dict(self, descriptor: Any) -> Optional[dict]:
        """The dict ((key, namespace) -> stored value) behind any state's non-VOID namespaces,
        or None with TTL.

        The window operator's fast path keeps its panes here directly; the entries are
        snapshotted and rescaled by key group like any keyed state. Values are what the
        State class stores (reducing: the value, aggregating: the accumulator, list: a list,
        map: a dict); never store None. Not part of the backend protocol.
        """
        state = self.get_state(descriptor)
        return None if self._tables[descriptor.name].ttl else state._spaced

    def merge_namespaces(self, descriptor: Any, target: Any, sources: Iterable[Any]) -> None:
        """Merge list / reducing / aggregating state of ``sources`` into ``target`` (current key)."""
        self.get_state(descriptor).merge_namespaces(target, list(sources))

    def keys(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> List[Any]:
        """The keys that have an entry in ``state_name`` under ``namespace``."""
        table = self._tables.get(state_name)
        if table is None:
            return []
        if namespace is None:
            return list(table.plain)
        return [key for key, ns in table.spaced if ns == namespace]

    def state_names(self) -> List[str]:
        """The names of every registered or restored state."""
        return list(self._tables)

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict:
        """All keyed state grouped by key group (format in :mod:`streamkernel.runtime.state.api`).

        The result is detached: later state changes by the job do not alter it.
        """
        max_parallelism, key_type = self.max_parallelism, self.key_type
        key_groups_of: Dict[Any, int] = {}  # one hash per distinct key, shared by all states
        now = self._clock.now_ms()
        states: Dict[str, dict] = {}
        for name, table in self._tables.items():
            purge = self._snapshot_purge(table)
            groups: Dict[int, list] = {}
            for key, value in table.plain.items():
                if purge is not None and (value := purge(table.type, value, now, table.ttl_config.get_ttl_millis())) is None:
                    continue
                group = key_groups_of.get(key)
                if group is None:
                    group = key_groups_of[key] = assign_to_key_group(key, max_parallelism, key_type)
                groups.setdefault(group, []).append((key, None, value))
            for (key, namespace), value in table.spaced.items():
                if purge is not None and (value := purge(table.type, value, now, table.ttl_config.get_ttl_millis())) is None:
                    continue
                group = key_groups_of.get(key)
                if group is None:
                    group = key_groups_of[key] = assign_to_key_group(key, max_parallelism, key_type)
                groups.setdefault(group, []).append((key, namespace, value))
            states[name] = {"type": table.type, "ttl": table.ttl, "key_groups": groups}
        return detach({"kind": "keyed", "max_parallelism": max_parallelism, "states": states})

    @staticmethod
    def _snapshot_purge(table: StateTable) -> Optional[Callable[..., Any]]:
        """purge_expired when expired values are to be left out of snapshots, else None."""
        config = table.ttl_config
        if not table.ttl or config is None:
            return None
        strategies = config.get_cleanup_strategies()
        if strategies.in_full_snapshot() or strategies.is_cleanup_in_background():
            return purge_expired
        return None

    def restore(self, snapshots: Iterable[Optional[dict]]) -> None:
        """Load the entries of this backend's key groups from keyed snapshots (copied).

        Several snapshots (from the old subtasks, when rescaling) may be given; entries of
        key groups outside ``key_group_range`` are ignored. The max parallelism cannot change.
        """
        merged = select_key_groups(snapshots, self.key_group_range, self.max_parallelism)
        now = self._clock.now_ms()
        for name, state in detach(merged["states"]).items():
            table = self._tables.get(name)
            if table is None:
                table = self._tables[name] = StateTable(name, state["type"], bool(state.get("ttl")))
            elif table.type != state["type"]:
                raise InvalidProgramError(
                    f"restoring keyed state '{name}': the snapshot holds {state['type']} state, "
                    f"this operator uses it as {table.type} state"
                )
            convert: Optional[Callable[[Any], Any]] = None
            if bool(state.get("ttl")) != table.ttl:
                convert = functools.partial(wrap_ttl, table.type, now=now) if table.ttl else functools.partial(
                    unwrap_ttl, table.type)
            plain, spaced = table.plain, table.spaced
            for entries in state["key_groups"].values():
                for key, namespace, value in entries:
                    if convert is not None:
                        value = convert(value)
                    if namespace is None:
                        plain[key] = value
                    else:
                        spaced[(key, namespace)] = value

    def dispose(self) -> None:
        """Drop all state (the State objects handed out stay valid and see empty state)."""
        for table in self._tables.values():
            table.plain.clear()
            table.spaced.clear()
        self._partitioned.clear()

    def __repr__(self) -> str:
        return (
            f"HeapKeyedStateBackend(max_parallelism={self.max_parallelism}, "
            f"key_groups={self.key_group_range.start}..{self.key_group_range.stop - 1}, "
            f"states={sorted(self._tables)})"
        )
