"""The state backend contract between operators, the Task and checkpoints.

Keyed state lives in a :class:`KeyedStateBackend` per keyed operator subtask. The operator
sets ``backend.current_key`` (and, for window-scoped state, ``current_namespace``) before it
touches state; the State objects returned by ``get_state`` read and write the entry of that
key (and namespace). State is snapshotted **by key group** so that restoring at another
parallelism can hand whole key groups to the new subtasks.

Snapshot format (plain picklable data, the same for every backend)::

    {"kind": "keyed", "max_parallelism": 128,
     "states": {state_name: {"type": "value"|"list"|"map"|"reducing"|"aggregating",
                             "key_groups": {key_group: [(key, namespace, value), ...]}}}}

Operator state (list / union list / broadcast) lives in an :class:`OperatorStateBackend`
per operator subtask and is snapshotted as ``{"kind": "operator", "states": {name:
{"mode": "split"|"union"|"broadcast", "entries": [...] or {...}}}}``.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Protocol

__all__ = ["VOID_NAMESPACE", "KeyedStateBackend", "OperatorStateBackend"]

#: the namespace of ordinary keyed state (window operators use the window as namespace)
VOID_NAMESPACE = None


class KeyedStateBackend(Protocol):
    """Keyed state of one operator subtask, for the key groups it owns."""

    current_key: Any
    current_namespace: Any
    max_parallelism: int
    key_group_range: range
    #: key_by's ``key_type`` (None: pickled keys): how a key hashes to its key group
    key_type: Any

    def get_state(self, descriptor: Any) -> Any:
        """The State object (ValueState, ListState, MapState, ReducingState, AggregatingState)
        for a descriptor; the same object for the same state name."""

    def get_partitioned_state(self, descriptor: Any, namespace: Any) -> Any:
        """A State object bound to a fixed ``namespace`` (e.g. a window) instead of the current one."""

    def merge_namespaces(self, descriptor: Any, target: Any, sources: Iterable[Any]) -> None:
        """Merge the state of ``sources`` namespaces into ``target`` for the current key (session windows)."""

    def keys(self, state_name: str, namespace: Any = VOID_NAMESPACE) -> Iterable[Any]:
        """The keys that have an entry in ``state_name`` (for inspection and state queries)."""

    def snapshot(self) -> dict:
        """All keyed state, grouped by key group (see the module docstring)."""

    def restore(self, snapshots: Iterable[dict]) -> None:
        """Load the entries of the key groups this backend owns from one or more snapshots."""

    def dispose(self) -> None:
        """Release resources (files of an on-disk backend)."""


class OperatorStateBackend(Protocol):
    """Non-keyed state of one operator subtask: list, union list and broadcast state."""

    def get_list_state(self, descriptor: Any) -> Any:
        """Split-redistributed list state (round-robin on rescale)."""

    def get_union_list_state(self, descriptor: Any) -> Any:
        """Union list state (every subtask gets all entries on restore)."""

    def get_broadcast_state(self, descriptor: Any) -> Any:
        """Broadcast (map) state, identical on every subtask."""

    def snapshot(self) -> dict:
        """All operator state (see the module docstring)."""

    def restore(self, snapshot: Optional[dict]) -> None:
        """Load the state assigned to this subtask."""
