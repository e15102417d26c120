"""Operator state: non-keyed state of one operator subtask (Flink's ``DefaultOperatorStateBackend``).

Three kinds, differing only in how they are redistributed when a job is restored,
possibly at another parallelism (:func:`redistribute_operator_state`):

* **list state** (``get_list_state``, mode ``"split"``): the lists of all old subtasks are
  concatenated and divided evenly into contiguous parts, one per new subtask (Flink's
  even-split redistribution); with an unchanged parallelism every subtask keeps its own.
* **union list state** (``get_union_list_state``, mode ``"union"``): every new subtask
  gets the full concatenation.
* **broadcast state** (``get_broadcast_state``, mode ``"broadcast"``): a map that is the
  same on every subtask; new subtask ``i`` gets a copy of old subtask ``i % old_parallelism``
  (Flink's rule; with the same parallelism each keeps its own).

Snapshot format: ``{"kind": "operator", "states": {name: {"mode": "split"|"union"|"broadcast",
"entries": [...] (list modes) or {...} (broadcast)}}}``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from streamkernel.datastream.state import (
    BroadcastState,
    ListState,
    ListStateDescriptor,
    MapStateDescriptor,
    OperatorStateStore,
    ReadOnlyBroadcastState,
)
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.state.heap import detach

__all__ = [
    "OperatorListState",
    "HeapBroadcastState",
    "ReadOnlyBroadcastStateView",
    "DefaultOperatorStateBackend",
    "redistribute_operator_state",
]


class OperatorListState(ListState):
    """A list of elements held by one operator subtask (list or union list operator state)."""

    def __init__(self, name: str, mode: str, elements: Optional[list] = None) -> None:
        self.name = name
        self.mode = mode
        self._elements: list = elements if elements is not None else []

    def get(self) -> List[Any]:
        """The elements (the stored list; do not modify it)."""
        return self._elements

    def add(self, value: Any) -> None:
        """Append ``value`` (None is refused, as in Flink)."""
        if value is None:
            raise InvalidProgramError(f"operator ListState '{self.name}'.add: cannot add None")
        self._elements.append(value)

    def add_all(self, values: List[Any]) -> None:
        """Append every element of ``values``."""
        self._elements.extend(self._checked(values, "add_all"))

    def update(self, values: List[Any]) -> None:
        """Replace the elements with ``values``."""
        self._elements[:] = self._checked(values, "update")

    def clear(self) -> None:
        """Remove every element."""
        self._elements.clear()

    def _checked(self, values: Any, call: str) -> list:
        if values is None:
            raise InvalidProgramError(f"operator ListState '{self.name}'.{call}: values must not be None")
        copied = list(values)
        if None in copied:
            raise InvalidProgramError(f"operator ListState '{self.name}'.{call}: values must not contain None")
        return copied

    def __repr__(self) -> str:
        return f"OperatorListState('{self.name}', {self.mode}, {len(self._elements)} elements)"


class HeapBroadcastState(BroadcastState):
    """Broadcast state: a map that every subtask of the operator holds identically."""

    def __init__(self, name: str, entries: Optional[dict] = None) -> None:
        self.name = name
        self._map: dict = entries if entries is not None else {}

    def get(self, key: Any) -> Any:
        """The value mapped to ``key``, or None."""
        return self._map.get(key)

    def put(self, key: Any, value: Any) -> None:
        """Map ``key`` to ``value``."""
        self._map[key] = value

    def put_all(self, dict_value: Dict[Any, Any]) -> None:
        """Copy every mapping of ``dict_value``."""
        self._map.update(dict_value)

    def remove(self, key: Any) -> None:
        """Delete the mapping of ``key`` (no error if there is none)."""
        self._map.pop(key, None)

    def contains(self, key: Any) -> bool:
        """Whether ``key`` has a mapping."""
        return key in self._map

    def items(self) -> List[Tuple[Any, Any]]:
        """All (key, value) mappings (a list: the state may change while iterating it)."""
        return list(self._map.items())

    def keys(self) -> List[Any]:
        """All keys."""
        return list(self._map)

    def values(self) -> List[Any]:
        """All values."""
        return list(self._map.values())

    def is_empty(self) -> bool:
        """True if there are no mappings."""
        return not self._map

    def clear(self) -> None:
        """Remove every mapping."""
        self._map.clear()

    def __repr__(self) -> str:
        return f"HeapBroadcastState('{self.name}', {len(self._map)} entries)"


class ReadOnlyBroadcastStateView(ReadOnlyBroadcastState):
    """The read-only view of a broadcast state given to the non-broadcast side (``process_element``)."""

    def __init__(self, state: HeapBroadcastState) -> None:
        self._state = state
        self.name = state.name

    def get(self, key: Any) -> Any:
        """The value mapped to ``key``, or None."""
        return self._state.get(key)

    def contains(self, key: Any) -> bool:
        """Whether ``key`` has a mapping."""
        return self._state.contains(key)

    def items(self) -> List[Tuple[Any, Any]]:
        """All (key, value) mappings."""
        return self._state.items()

    def keys(self) -> List[Any]:
        """All keys."""
        return self._state.keys()

    def values(self) -> List[Any]:
        """All values."""
        return self._state.values()

    def is_empty(self) -> bool:
        """True if there are no mappings."""
        return self._state.is_empty()

    def clear(self) -> None:
        """Not allowed: the non-broadcast side may only read broadcast state."""
        raise InvalidProgramError(
            f"broadcast state '{self.name}' is read-only here; modify it in process_broadcast_element"
        )

    def __repr__(self) -> str:
        return f"ReadOnlyBroadcastStateView('{self.name}')"


class DefaultOperatorStateBackend(OperatorStateStore):
    """Operator state (list, union list, broadcast) of one operator subtask, in memory.

    Implements :class:`~streamkernel.runtime.state.api.OperatorStateBackend` and PyFlink's
    ``OperatorStateStore``. A name has one kind: asking for it as another kind raises.
    """

    def __init__(self) -> None:
        self._states: Dict[str, Any] = {}

    def get_list_state(self, state_descriptor: ListStateDescriptor) -> OperatorListState:
        """List state, split evenly across subtasks when the parallelism changes."""
        return self._get(state_descriptor, ListStateDescriptor, "split")

    def get_union_list_state(self, state_descriptor: ListStateDescriptor) -> OperatorListState:
        """Union list state: every subtask gets all elements on restore."""
        return self._get(state_descriptor, ListStateDescriptor, "union")

    def get_broadcast_state(self, state_descriptor: MapStateDescriptor) -> HeapBroadcastState:
        """Broadcast (map) state, identical on every subtask."""
        return self._get(state_descriptor, MapStateDescriptor, "broadcast")

    def get_read_only_broadcast_state(self, state_descriptor: MapStateDescriptor) -> ReadOnlyBroadcastStateView:
        """A read-only view of the broadcast state (for the non-broadcast input)."""
        return ReadOnlyBroadcastStateView(self.get_broadcast_state(state_descriptor))

    def _get(self, descriptor: Any, expected: type[Any], mode: str) -> Any:
        if not isinstance(descriptor, expected):
            raise InvalidProgramError(
                f"operator state ({mode}): expected a {expected.__name__}, got {type(descriptor).__name__}"
            )
        state = self._states.get(descriptor.name)
        if state is None:
            state = self._states[descriptor.name] = (
                HeapBroadcastState(descriptor.name) if mode == "broadcast"
                else OperatorListState(descriptor.name, mode)
            )
        elif _mode_of(state) != mode:
            raise InvalidProgramError(
                f"operator state '{descriptor.name}' is {_mode_of(state)} state; it cannot also be "
                f"used as {mode} state — use another name"
            )
        return state

    def state_names(self) -> List[str]:
        """The names of every registered or restored operator state."""
        return list(self._states)

    def snapshot(self) -> dict:
        """All operator state, detached from later changes (see the module docstring)."""
        states = {
            name: {"mode": _mode_of(state), "entries": state._map if _mode_of(state) == "broadcast" else state._elements}
            for name, state in self._states.items()
        }
        return detach({"kind": "operator", "states": states})

    def restore(self, snapshot: Optional[dict]) -> None:
        """Load the operator state assigned to this subtask (a redistributed snapshot; copied)."""
        if not snapshot:
            return
        if snapshot.get("kind") != "operator":
            raise InvalidProgramError(f"operator state restore: expected an operator snapshot, got kind {snapshot.get('kind')!r}")
        for name, state in detach(snapshot["states"]).items():
            mode, entries = state["mode"], state["entries"]
            existing = self._states.get(name)
            if existing is not None and _mode_of(existing) != mode:
                raise InvalidProgramError(
                    f"restoring operator state '{name}': the snapshot holds {mode} state, this "
                    f"operator uses it as {_mode_of(existing)} state"
                )
            if mode == "broadcast":
                self._states[name] = HeapBroadcastState(name, dict(entries))
            elif mode in ("split", "union"):
                self._states[name] = OperatorListState(name, mode, list(entries))
            else:
                raise InvalidProgramError(f"restoring operator state '{name}': unknown mode {mode!r}")

    def dispose(self) -> None:
        """Drop all operator state."""
        self._states.clear()

    def __repr__(self) -> str:
        return f"DefaultOperatorStateBackend({sorted(self._states)})"


def _mode_of(state: Any) -> str:
    return "broadcast" if isinstance(state, HeapBroadcastState) else state.mode


def redistribute_operator_state(snapshots: List[Optional[dict]], new_parallelism: int) -> List[dict]:
    """The operator snapshots of an operator's old subtasks, reassigned to ``new_parallelism`` subtasks.

    Split list state: concatenated in old-subtask order and divided evenly into contiguous
    parts (the first ``total % new_parallelism`` parts one element longer), or kept per
    subtask when the parallelism is unchanged. Union list state: everyone gets all elements.
    Broadcast state: new subtask ``i`` gets old subtask ``i % old_parallelism``'s map.
    Entries are not copied (``restore`` copies).
    """
    if new_parallelism <= 0:
        raise InvalidProgramError(f"redistribute_operator_state: new_parallelism must be positive, got {new_parallelism}")
    old = [snapshot["states"] if snapshot else {} for snapshot in snapshots]
    old_parallelism = len(old)
    modes: Dict[str, str] = {}
    for states in old:
        for name, state in states.items():
            if modes.setdefault(name, state["mode"]) != state["mode"]:
                raise InvalidProgramError(
                    f"operator state '{name}' is {modes[name]} state in one snapshot and {state['mode']} in another"
                )
    result: List[dict] = [{"kind": "operator", "states": {}} for _ in range(new_parallelism)]
    for name, mode in modes.items():
        parts = [states[name]["entries"] if name in states else None for states in old]
        if mode == "broadcast":
            for index, target in enumerate(result):
                source = parts[index % old_parallelism] if old_parallelism else None
                if source is None:  # that subtask had no copy: take any that has one
                    source = next((part for part in parts if part is not None), {})
                target["states"][name] = {"mode": mode, "entries": source}
            continue
        elements = [element for part in parts if part for element in part]
        for index, target in enumerate(result):
            if mode == "union":
                entries = list(elements)
            elif old_parallelism == new_parallelism:
                entries = list(parts[index] or [])
            else:
                entries = elements[_split_start(len(elements), new_parallelism, index):
                                   _split_start(len(elements), new_parallelism, index + 1)]
            target["states"][name] = {"mode": mode, "entries": entries}
    return result


def _split_start(total: int, parts: int, index: int) -> int:
    """Where part ``index`` starts when ``total`` elements are split into ``parts`` near-equal parts."""
    base, extra = divmod(total, parts)
    return index * base + min(index, extra)
