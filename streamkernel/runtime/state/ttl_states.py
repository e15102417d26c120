"""Keyed state with time-to-live: Flink's ``TtlValueState`` & co. for the heap backend.

A state whose descriptor has a :class:`~streamkernel.datastream.state_ttl_config.StateTtlConfig`
gets one of these classes (chosen once, in ``get_state``, so state without TTL pays
nothing). Values are stored as ``(value, last_access_ms)`` pairs — per element for list
state, per user key for map state — and a value is *expired* when
``now >= last_access_ms + ttl`` (Flink's rule), ``now`` coming from the backend's clock
(processing time, the only TTL time characteristic).

* ``UpdateType.OnCreateAndWrite``: writes refresh the timestamp; ``OnReadAndWrite``: reads too.
* ``StateVisibility.NeverReturnExpired``: an expired value reads as absent;
  ``ReturnExpiredIfNotCleanedUp``: it is returned by the read that finds it, and removed.
* Cleanup: an expired value is removed when a read finds it, and the backend drops expired
  values from snapshots (``cleanup_full_snapshot``, or the default background cleanup).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from streamkernel.datastream.state_ttl_config import StateTtlConfig
from streamkernel.runtime.state.heap_states import (
    HeapAggregatingState,
    HeapListState,
    HeapMapState,
    HeapReducingState,
    HeapValueState,
    StateTable,
)

__all__ = [
    "TtlValueState",
    "TtlListState",
    "TtlMapState",
    "TtlReducingState",
    "TtlAggregatingState",
    "wrap_ttl",
    "unwrap_ttl",
    "purge_expired",
]

_MISSING = object()


class _TtlSupport:
    """TTL settings bound once per state object: ttl (ms), clock, update type and visibility."""

    def _init_ttl(self, config: StateTtlConfig, now: Callable[[], int]) -> None:
        self._ttl = config.get_ttl_millis()
        self._now = now
        self._on_read = config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite
        self._return_expired = (
            config.get_state_visibility()
            is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
        )

    def _read(self, table: dict, slot: Any) -> Any:
        """The user value under ``slot`` with Flink's TTL read rules, or _MISSING."""
        entry = table.get(slot)
        if entry is None:
            return _MISSING
        now = self._now()
        if now >= entry[1] + self._ttl:
            del table[slot]
            return entry[0] if self._return_expired else _MISSING
        if self._on_read:
            table[slot] = (entry[0], now)
        return entry[0]

    def _unexpired(self, entry: Any, now: int) -> Any:
        """The value of an entry for folding (Flink's ``getUnexpired``), or _MISSING."""
        if entry is _MISSING or entry is None:
            return _MISSING
        if now >= entry[1] + self._ttl and not self._return_expired:
            return _MISSING
        return entry[0]


class TtlValueState(_TtlSupport, HeapValueState):
    """ValueState with TTL."""

    def __init__(self, context: Any, table: StateTable, descriptor: Any, now: Callable[[], int]) -> None:
        super().__init__(context, table, descriptor)
        self._init_ttl(descriptor.get_ttl_config(), now)

    def value(self) -> Any:
        """The unexpired value of the current key, or None."""
        found = self._read(*self._slot())
        return None if found is _MISSING else found

    def update(self, value: Any) -> None:
        """Set the value (and its timestamp); None clears."""
        if value is None:
            self.clear()
            return
        table, slot = self._slot()
        table[slot] = (value, self._now())


class TtlListState(_TtlSupport, HeapListState):
    """ListState with TTL per element."""

    def __init__(self, context: Any, table: StateTable, descriptor: Any, now: Callable[[], int]) -> None:
        super().__init__(context, table, descriptor)
        self._init_ttl(descriptor.get_ttl_config(), now)

    def get(self) -> List[Any]:
        """The unexpired elements (a new list; expired ones are removed from the state)."""
        table, slot = self._slot()
        entries = table.get(slot)
        if not entries:
            return []
        now = self._now()
        limit = now - self._ttl  # expired when ts <= now - ttl
        live = [entry for entry in entries if entry[1] > limit]
        result = [entry[0] for entry in (entries if self._return_expired else live)]
        if self._on_read:
            live = [(entry[0], now) for entry in live]
        if live:
            table[slot] = live
        else:
            del table[slot]
        return result

    def add(self, value: Any) -> None:
        """Append ``value`` with the current time."""
        super().add((value, self._now()) if value is not None else None)

    def add_all(self, values: List[Any]) -> None:
        """Append every element of ``values``."""
        checked = self._checked(values, "add_all")
        now = self._now()
        if checked:
            table, slot = self._slot()
            table.setdefault(slot, []).extend((value, now) for value in checked)

    def update(self, values: List[Any]) -> None:
        """Replace the elements with ``values`` (an empty list clears)."""
        checked = self._checked(values, "update")
        now = self._now()
        table, slot = self._slot()
        if checked:
            table[slot] = [(value, now) for value in checked]
        else:
            table.pop(slot, None)

    def _merge_values(self, a: list, b: list) -> list:
        now = self._now()
        return [entry for entry in a + b if now < entry[1] + self._ttl]


class TtlMapState(_TtlSupport, HeapMapState):
    """MapState with TTL per user key."""

    def __init__(self, context: Any, table: StateTable, descriptor: Any, now: Callable[[], int]) -> None:
        super().__init__(context, table, descriptor)
        self._init_ttl(descriptor.get_ttl_config(), now)

    def _entries(self) -> Tuple[Optional[dict], Any, Any]:
        table, slot = self._slot()
        return table.get(slot), table, slot

    def get(self, key: Any) -> Any:
        """The unexpired value mapped to ``key``, or None."""
        found, table, slot = self._entries()
        if found is None:
            return None
        value = self._read(found, key)
        if not found:
            del table[slot]
        return None if value is _MISSING else value

    def contains(self, key: Any) -> bool:
        """Whether ``key`` has an (unexpired, or returnable) mapping."""
        found, table, slot = self._entries()
        if found is None:
            return False
        value = self._read(found, key)
        if not found:
            del table[slot]
        return value is not _MISSING

    def put(self, key: Any, value: Any) -> None:
        """Map ``key`` to ``value`` with the current time."""
        super().put(key, (value, self._now()))

    def put_all(self, dict_value: Dict[Any, Any]) -> None:
        """Copy every mapping of ``dict_value`` into the state."""
        now = self._now()
        super().put_all({key: (value, now) for key, value in dict_value.items()})

    def items(self) -> List[Tuple[Any, Any]]:
        """All (key, value) mappings that are not expired (expired ones are removed)."""
        found, table, slot = self._entries()
        if not found:
            return []
        now = self._now()
        limit = now - self._ttl
        result = []
        for key, entry in list(found.items()):
            if entry[1] <= limit:
                del found[key]
                if not self._return_expired:
                    continue
            elif self._on_read:
                found[key] = (entry[0], now)
            result.append((key, entry[0]))
        if not found:
            del table[slot]
        return result

    def keys(self) -> List[Any]:
        """All unexpired user keys."""
        return [key for key, _ in self.items()]

    def values(self) -> List[Any]:
        """All unexpired values."""
        return [value for _, value in self.items()]

    def is_empty(self) -> bool:
        """True if no unexpired mapping is left."""
        found, table, slot = self._entries()
        if not found:
            return True
        limit = self._now() - self._ttl
        for key in [key for key, entry in found.items() if entry[1] <= limit]:
            del found[key]
        if not found:
            del table[slot]
            return True
        return False


class _TtlFolding(_TtlSupport):
    """Reducing / aggregating state with TTL: the accumulator is one (value, ts) entry."""

    def _fold(self, value: Any, combine: Callable[[Any], Any]) -> None:
        if value is None:
            self.clear()  # type: ignore[attr-defined]
            return
        table, slot = self._slot()  # type: ignore[attr-defined]
        now = self._now()
        current = self._unexpired(table.get(slot, _MISSING), now)
        table[slot] = (combine(current), now)

    def _merge_values(self, a: Any, b: Any) -> Any:
        now = self._now()
        left, right = self._unexpired(a, now), self._unexpired(b, now)
        if left is _MISSING:  # a is expired: b wins (expired or not)
            return b
        if right is _MISSING:
            return a
        return (self._merge_accumulators(left, right), now)

    def _merge_accumulators(self, a: Any, b: Any) -> Any:
        raise NotImplementedError


class TtlReducingState(_TtlFolding, HeapReducingState):
    """ReducingState with TTL."""

    def __init__(self, context: Any, table: StateTable, descriptor: Any, now: Callable[[], int]) -> None:
        super().__init__(context, table, descriptor)
        self._init_ttl(descriptor.get_ttl_config(), now)

    def get(self) -> Any:
        """The reduced value, or None when empty or expired."""
        found = self._read(*self._slot())
        return None if found is _MISSING else found

    def add(self, value: Any) -> None:
        """Reduce ``value`` into the (unexpired) state."""
        reduce = self._reduce
        self._fold(value, lambda current: value if current is _MISSING else reduce(current, value))

    def _merge_accumulators(self, a: Any, b: Any) -> Any:
        return self._reduce(a, b)


class TtlAggregatingState(_TtlFolding, HeapAggregatingState):
    """AggregatingState with TTL."""

    def __init__(self, context: Any, table: StateTable, descriptor: Any, now: Callable[[], int]) -> None:
        super().__init__(context, table, descriptor)
        self._init_ttl(descriptor.get_ttl_config(), now)

    def get(self) -> Any:
        """``get_result`` of the unexpired accumulator, or None."""
        found = self._read(*self._slot())
        return None if found is _MISSING else self._result(found)

    def add(self, value: Any) -> None:
        """Add ``value`` to the (unexpired, else new) accumulator."""
        create, add = self._create, self._add
        self._fold(value, lambda acc: add(value, create() if acc is _MISSING else acc))

    def _merge_accumulators(self, a: Any, b: Any) -> Any:
        return HeapAggregatingState._merge_values(self, a, b)


# ------------------------------------------------------------------ stored-form helpers
def wrap_ttl(state_type: str, value: Any, now: int) -> Any:
    """The TTL form of a stored value (restoring a snapshot taken without TTL into TTL state)."""
    if state_type == "list":
        return [(element, now) for element in value]
    if state_type == "map":
        return {key: (element, now) for key, element in value.items()}
    return (value, now)


def unwrap_ttl(state_type: str, value: Any) -> Any:
    """The plain form of a TTL-stored value (restoring TTL state into state without TTL)."""
    if state_type == "list":
        return [entry[0] for entry in value]
    if state_type == "map":
        return {key: entry[0] for key, entry in value.items()}
    return value[0]


def purge_expired(state_type: str, value: Any, now: int, ttl: int) -> Any:
    """A TTL-stored value without its expired parts, or None if nothing is left."""
    limit = now - ttl
    if state_type == "list":
        live_entries = [entry for entry in value if entry[1] > limit]
        return live_entries or None
    if state_type == "map":
        live = {key: entry for key, entry in value.items() if entry[1] > limit}
        return live or None
    return value if value[1] > limit else None
