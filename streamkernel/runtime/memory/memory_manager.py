"""The managed memory of one task slot (Flink's ``MemoryManager``, one per ``TaskSlot``).

A TaskManager's managed memory (``taskmanager.memory.managed.*``) is split evenly among its
slots; each slot's :class:`MemoryManager` hands its share to the consumers of that slot. Here
the consumer is the RocksDB state backend: every RocksDB instance of a slot leases the same
*shared resource* (one block cache and one write buffer manager,
:mod:`streamkernel.runtime.state.rocksdb_memory`), created by the first lease and dropped when
the last lease is closed, as Flink's ``getSharedMemoryResourceForManagedMemory`` does.
:meth:`MemoryManager.metrics` reports what each shared resource uses now.

:func:`managed_memory_per_slot` derives a slot's share from the cluster configuration with
Flink's memory calculation (:mod:`streamkernel.runtime.memory`), once per TaskManager.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Callable, Dict, Optional

__all__ = ["MemoryManager", "SharedResourceLease", "managed_memory_per_slot"]


def managed_memory_per_slot(configuration: Mapping[str, Any], slots: int) -> int:
    """Each of ``slots`` slots' share (bytes) of the managed memory that Flink's calculation
    gives the cluster ``configuration`` (Flink's shipped 1728m process size when it sizes none).

    Raises :class:`~streamkernel.errors.IllegalConfigurationError` naming the memory keys that
    are wrong or conflict.

    >>> managed_memory_per_slot({"taskmanager.memory.managed.size": "512m"}, 2)
    268435456
    """
    from streamkernel.runtime.memory import task_executor_process_spec_from_config, with_default_process_size

    spec = task_executor_process_spec_from_config(with_default_process_size(configuration, "taskmanager"))
    return spec.flink_memory.managed.divide(max(1, int(slots))).get_bytes()


class SharedResourceLease:
    """One consumer's hold on a slot's shared resource; :meth:`close` gives it back (idempotent)."""

    def __init__(self, manager: "MemoryManager", kind: str, resource: Any) -> None:
        self._manager = manager
        self.kind = kind
        #: the shared resource (for RocksDB: a ``RocksDBSharedResources``)
        self.resource = resource
        self._closed = False

    def close(self) -> None:
        """Release this lease; the resource is dropped with its last lease."""
        if not self._closed:
            self._closed = True
            self._manager._release(self.kind)


class MemoryManager:
    """The managed memory of one slot: ``size`` bytes, handed out as shared resources.

    >>> manager = MemoryManager(64 << 20, slot_index=0)
    >>> lease = manager.get_shared_memory_resource_for_managed_memory("demo", lambda size: {"size": size})
    >>> lease.resource, manager.metrics()["demo"]["leases"]
    ({'size': 67108864}, 1)
    >>> lease.close(); manager.metrics()
    {}
    """

    def __init__(self, size: int, slot_index: int = 0) -> None:
        if size < 0:
            raise ValueError(f"slot {slot_index}: managed memory size must be >= 0, got {size}")
        self.size = int(size)
        self.slot_index = slot_index
        self._lock = threading.Lock()
        self._shared: Dict[str, list] = {}  # kind -> [resource, lease count]

    def get_shared_memory_resource_for_managed_memory(
            self, kind: str, initializer: Callable[[int], Any], size: Optional[int] = None) -> SharedResourceLease:
        """A lease on the slot's shared resource ``kind``; the first lease creates it with
        ``initializer(size)`` (``size`` defaults to the slot's whole managed memory)."""
        with self._lock:
            entry = self._shared.get(kind)
            if entry is None:
                entry = self._shared[kind] = [initializer(self.size if size is None else int(size)), 0]
            entry[1] += 1
            return SharedResourceLease(self, kind, entry[0])

    def _release(self, kind: str) -> None:
        with self._lock:
            entry = self._shared.get(kind)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] <= 0:
                del self._shared[kind]
                close = getattr(entry[0], "close", None)
                if close is not None:
                    close()

    def metrics(self) -> Dict[str, Dict[str, int]]:
        """Per shared resource kind: its ``metrics()`` (sizes and usage in bytes) and its ``leases``."""
        with self._lock:
            entries = [(kind, entry[0], entry[1]) for kind, entry in self._shared.items()]
        report: Dict[str, Dict[str, int]] = {}
        for kind, resource, leases in entries:
            measure = getattr(resource, "metrics", None)
            values = dict(measure()) if callable(measure) else (dict(resource) if isinstance(resource, dict) else {})
            values["leases"] = leases
            report[kind] = values
        return report

    def __repr__(self) -> str:
        return f"MemoryManager(slot={self.slot_index}, size={self.size}, shared={sorted(self._shared)})"
