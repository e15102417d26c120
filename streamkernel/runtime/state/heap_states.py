"""The keyed State objects of the in-memory (``hashmap``) backend: Flink's ``HeapValueState`` & co.

Each state name has one :class:`StateTable`: two plain dicts, ``plain`` (key -> value, for
the VOID namespace) and ``spaced`` ((key, namespace) -> value, for window-scoped state).
A State object holds both dicts and a *context* it reads ``current_key`` and
``current_namespace`` from at every call: the backend itself, or a
:class:`NamespaceContext` for state bound to a fixed namespace (trigger contexts).

Hot path: ``value()`` / ``update()`` / ``add()`` are one attribute read of the context and
one dict operation, no key-group hashing and no allocation beyond the (key, namespace)
tuple of namespaced state. Semantics follow Flink/PyFlink: empty state reads as None
(ListState: an empty list), writing None clears (ValueState.update, ReducingState.add,
AggregatingState.add), ``ListState.add(None)`` is an error.

The classes with TTL (:mod:`streamkernel.runtime.state.ttl_states`) subclass these and
store ``(value, last_access_ms)`` pairs instead of bare values.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from streamkernel.datastream.state import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    ValueState,
)
from streamkernel.errors import InvalidProgramError

__all__ = [
    "StateTable",
    "NamespaceContext",
    "HeapValueState",
    "HeapListState",
    "HeapMapState",
    "HeapReducingState",
    "HeapAggregatingState",
    "reduce_callable",
]

_MISSING = object()


class StateTable:
    """The entries of one keyed state name: ``plain`` (key -> value) and ``spaced`` ((key, ns) -> value).

    Flink's ``StateTable``; here organised by key for access speed, and grouped by key
    group only when a snapshot is taken. ``ttl`` says whether values are ``(value, ts)`` pairs.
    """

    __slots__ = ("name", "type", "ttl", "ttl_config", "plain", "spaced")

    def __init__(self, name: str, state_type: str, ttl: bool = False) -> None:
        self.name = name
        self.type = state_type
        self.ttl = ttl
        self.ttl_config: Any = None
        self.plain: Dict[Any, Any] = {}
        self.spaced: Dict[Tuple[Any, Any], Any] = {}

    def __len__(self) -> int:
        return len(self.plain) + len(self.spaced)


class NamespaceContext:
    """A key context whose namespace is fixed: the current key is the backend's, read live.

    Used for state bound to one namespace (``get_partitioned_state``; Flink sets the
    namespace on the state object instead).
    """

    __slots__ = ("_backend", "current_namespace")

    def __init__(self, backend: Any, namespace: Any) -> None:
        self._backend = backend
        self.current_namespace = namespace

    @property
    def current_key(self) -> Any:
        """The backend's current key."""
        return self._backend.current_key


def reduce_callable(function: Any) -> Any:
    """The two-argument callable of a ReduceFunction (``.reduce``) or of a plain callable."""
    reduce = getattr(function, "reduce", None)
    return reduce if callable(reduce) else function


class _HeapState:
    """Shared plumbing: the two dicts of the table and the key context."""

    state_type = ""

    def __init__(self, context: Any, table: StateTable, descriptor: Any) -> None:
        self._ctx = context
        self._table = table
        self._plain = table.plain
        self._spaced = table.spaced
        self._descriptor = descriptor
        self.name = table.name

    def _slot(self) -> Tuple[dict, Any]:
        """(dict, dict key) of the current key and namespace."""
        ctx = self._ctx
        ns = ctx.current_namespace
        if ns is None:
            return self._plain, ctx.current_key
        return self._spaced, (ctx.current_key, ns)

    def _namespace_slot(self, namespace: Any) -> Tuple[dict, Any]:
        if namespace is None:
            return self._plain, self._ctx.current_key
        return self._spaced, (self._ctx.current_key, namespace)

    def clear(self) -> None:
        """Remove the entry of the current key (and namespace)."""
        ctx = self._ctx
        ns = ctx.current_namespace
        if ns is None:
            self._plain.pop(ctx.current_key, None)
        else:
            self._spaced.pop((ctx.current_key, ns), None)

    def merge_namespaces(self, target: Any, sources: Iterable[Any]) -> None:
        """Merge the entries of ``sources`` into ``target`` for the current key (Flink's order:
        sources folded in order, then ``merge(target, folded)``); sources are removed."""
        merged = _MISSING
        for source in sources:
            if source == target:
                continue
            table, slot = self._namespace_slot(source)
            value = table.pop(slot, _MISSING)
            if value is _MISSING:
                continue
            merged = value if merged is _MISSING else self._merge_values(merged, value)
        if merged is _MISSING:
            return
        table, slot = self._namespace_slot(target)
        current = table.get(slot, _MISSING)
        table[slot] = merged if current is _MISSING else self._merge_values(current, merged)

    def _merge_values(self, a: Any, b: Any) -> Any:
        raise InvalidProgramError(
            f"state '{self.name}': {self.state_type} state cannot be merged; only list, reducing "
            "and aggregating state merge (session windows)"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}('{self.name}')"


class HeapValueState(_HeapState, ValueState):
    """ValueState: one value per key; ``value()`` is None until ``update``; ``update(None)`` clears."""

    state_type = "value"

    def value(self) -> Any:
        """The value of the current key, or None."""
        ctx = self._ctx
        ns = ctx.current_namespace
        if ns is None:
            return self._plain.get(ctx.current_key)
        return self._spaced.get((ctx.current_key, ns))

    def update(self, value: Any) -> None:
        """Set the value of the current key (None removes it)."""
        ctx = self._ctx
        ns = ctx.current_namespace
        if value is None:
            self.clear()
        elif ns is None:
            self._plain[ctx.current_key] = value
        else:
            self._spaced[(ctx.current_key, ns)] = value


class HeapListState(_HeapState, ListState):
    """ListState: a list per key; ``get()`` is ``[]`` when empty.

    ``get()`` returns the stored list itself (as Flink's heap backend does): do not modify it.
    """

    state_type = "list"

    def get(self) -> List[Any]:
        """The elements of the current key (an empty list when there are none)."""
        ctx = self._ctx
        ns = ctx.current_namespace
        if ns is None:
            found = self._plain.get(ctx.current_key)
        else:
            found = self._spaced.get((ctx.current_key, ns))
        return [] if found is None else found

    def add(self, value: Any) -> None:
        """Append ``value`` (None is refused, as in Flink)."""
        if value is None:
            raise InvalidProgramError(f"ListState '{self.name}'.add: cannot add None to a ListState")
        table, slot = self._slot()
        found = table.get(slot)
        if found is None:
            table[slot] = [value]
        else:
            found.append(value)

    def add_all(self, values: List[Any]) -> None:
        """Append every element of ``values`` (an empty list changes nothing)."""
        values = self._checked(values, "add_all")
        if not values:
            return
        table, slot = self._slot()
        found = table.get(slot)
        if found is None:
            table[slot] = values
        else:
            found.extend(values)

    def update(self, values: List[Any]) -> None:
        """Replace the elements with ``values`` (an empty list clears)."""
        values = self._checked(values, "update")
        table, slot = self._slot()
        if values:
            table[slot] = values
        else:
            table.pop(slot, None)

    def _checked(self, values: Any, call: str) -> list:
        if values is None:
            raise InvalidProgramError(
                f"ListState '{self.name}'.{call}: the list of values must not be None (use clear())"
            )
        copied = list(values)
        if None in copied:
            raise InvalidProgramError(f"ListState '{self.name}'.{call}: values must not contain None")
        return copied

    def _merge_values(self, a: list, b: list) -> list:
        return a + b


class HeapMapState(_HeapState, MapState):
    """MapState: a dict of user keys to values per key; an emptied map is removed.

    ``keys()``, ``values()`` and ``items()`` return lists (copies), so the state may be
    modified while iterating them.
    """

    state_type = "map"

    def _map(self) -> Optional[dict]:
        ctx = self._ctx
        ns = ctx.current_namespace
        if ns is None:
            return self._plain.get(ctx.current_key)
        return self._spaced.get((ctx.current_key, ns))

    def get(self, key: Any) -> Any:
        """The value mapped to ``key``, or None."""
        found = self._map()
        return None if found is None else found.get(key)

    def put(self, key: Any, value: Any) -> None:
        """Map ``key`` to ``value``."""
        table, slot = self._slot()
        found = table.get(slot)
        if found is None:
            table[slot] = {key: value}
        else:
            found[key] = value

    def put_all(self, dict_value: Dict[Any, Any]) -> None:
        """Copy every mapping of ``dict_value`` into the state."""
        if not dict_value:
            return
        table, slot = self._slot()
        found = table.get(slot)
        if found is None:
            table[slot] = dict(dict_value)
        else:
            found.update(dict_value)

    def remove(self, key: Any) -> None:
        """Delete the mapping of ``key`` (no error if there is none)."""
        table, slot = self._slot()
        found = table.get(slot)
        if found is not None:
            found.pop(key, None)
            if not found:
                del table[slot]

    def contains(self, key: Any) -> bool:
        """Whether ``key`` has a mapping."""
        found = self._map()
        return found is not None and key in found

    def items(self) -> List[Tuple[Any, Any]]:
        """All (key, value) mappings."""
        found = self._map()
        return [] if found is None else list(found.items())

    def keys(self) -> List[Any]:
        """All user keys."""
        found = self._map()
        return [] if found is None else list(found)

    def values(self) -> List[Any]:
        """All values."""
        found = self._map()
        return [] if found is None else list(found.values())

    def is_empty(self) -> bool:
        """True if the current key has no mappings."""
        return not self._map()


class HeapReducingState(_HeapState, ReducingState):
    """ReducingState: ``add`` combines with the descriptor's reduce function; ``get()`` None when empty."""

    state_type = "reducing"

    def __init__(self, context: Any, table: StateTable, descriptor: Any) -> None:
        super().__init__(context, table, descriptor)
        self._reduce = reduce_callable(descriptor.get_reduce_function())

    def get(self) -> Any:
        """The reduced value of the current key, or None."""
        ctx = self._ctx
        ns = ctx.current_namespace
        if ns is None:
            return self._plain.get(ctx.current_key)
        return self._spaced.get((ctx.current_key, ns))

    def add(self, value: Any) -> None:
        """Reduce ``value`` into the state (``add(None)`` clears, as in Flink)."""
        if value is None:
            self.clear()
            return
        table, slot = self._slot()
        current = table.get(slot, _MISSING)
        table[slot] = value if current is _MISSING else self._reduce(current, value)

    def _merge_values(self, a: Any, b: Any) -> Any:
        return self._reduce(a, b)


class HeapAggregatingState(_HeapState, AggregatingState):
    """AggregatingState: keeps an accumulator; ``get()`` is ``get_result(acc)``, None when empty."""

    state_type = "aggregating"

    def __init__(self, context: Any, table: StateTable, descriptor: Any) -> None:
        super().__init__(context, table, descriptor)
        function = descriptor.get_agg_function()
        self._function = function
        self._create = function.create_accumulator
        self._add = function.add
        self._result = function.get_result

    def get(self) -> Any:
        """``get_result`` of the current key's accumulator, or None when there is none."""
        table, slot = self._slot()
        acc = table.get(slot, _MISSING)
        return None if acc is _MISSING else self._result(acc)

    def add(self, value: Any) -> None:
        """Add ``value`` to the accumulator (created on first add; ``add(None)`` clears)."""
        if value is None:
            self.clear()
            return
        table, slot = self._slot()
        acc = table.get(slot, _MISSING)
        table[slot] = self._add(value, self._create() if acc is _MISSING else acc)

    def _merge_values(self, a: Any, b: Any) -> Any:
        merge = getattr(self._function, "merge", None)
        if not callable(merge):
            raise InvalidProgramError(
                f"AggregatingState '{self.name}': the AggregateFunction "
                f"{type(self._function).__name__} needs merge(acc_a, acc_b) to merge windows"
            )
        return merge(a, b)
