"""Resources shared by every slot of one TaskManager (Flink's ``SharedResources``).

A slot's :class:`~streamkernel.runtime.memory.memory_manager.MemoryManager` shares resources
among the tasks of that slot; :class:`TaskManagerSharedResources` shares them among all the
tasks of the TaskManager, whatever their slot. The RocksDB state backend uses it for
``state.backend.rocksdb.memory.fixed-per-tm`` (Flink's ``TM_SHARED_UNMANAGED``): one block
cache and one write buffer manager for every RocksDB instance of the TaskManager, created by
the first lease and dropped with the last. The memory is not managed memory: it is the fixed
size that option configures, read from the TaskManager's (cluster) configuration, which this
object carries.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Callable, Dict, Optional

__all__ = ["SharedResources", "SharedResourceLease", "TaskManagerSharedResources"]


class SharedResourceLease:
    """One consumer's hold on a shared resource; :meth:`close` gives it back (idempotent)."""

    def __init__(self, owner: "SharedResources", kind: str, resource: Any) -> None:
        self._owner = owner
        self.kind = kind
        #: the shared resource (for RocksDB: a ``RocksDBSharedResources``)
        self.resource = resource
        self._closed = False

    def close(self) -> None:
        """Release this lease; the resource is dropped (closed) with its last lease."""
        if not self._closed:
            self._closed = True
            self._owner._release(self.kind)


class SharedResources:
    """Resources shared by kind, each with its count of leases: the first lease creates one, the
    last one's close drops (and closes) it. A slot's ``MemoryManager`` and a TaskManager's
    :class:`TaskManagerSharedResources` each hold one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shared: Dict[str, list] = {}  # kind -> [resource, lease count]

    def lease(self, kind: str, initializer: Callable[[int], Any], size: int) -> SharedResourceLease:
        """A lease on resource ``kind``; the first lease creates it with ``initializer(size)``,
        the others get the same object."""
        with self._lock:
            entry = self._shared.get(kind)
            if entry is None:
                entry = self._shared[kind] = [initializer(int(size)), 0]
            entry[1] += 1
            return SharedResourceLease(self, kind, entry[0])

    def _release(self, kind: str) -> None:
        with self._lock:
            entry = self._shared.get(kind)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self._shared[kind]
        close = getattr(entry[0], "close", None)
        if close is not None:
            close()

    def kinds(self) -> list[str]:
        """The kinds of resource held now, sorted."""
        with self._lock:
            return sorted(self._shared)

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


class TaskManagerSharedResources(SharedResources):
    """The resources the tasks of one TaskManager share, by kind, each with its count of leases.

    ``configuration`` is the TaskManager's configuration (cluster-level options such as
    ``state.backend.rocksdb.memory.fixed-per-tm`` are read from it).

    >>> shared = TaskManagerSharedResources()
    >>> first = shared.get_or_allocate_shared_resource("demo", lambda size: {"size": size}, 1024)
    >>> second = shared.get_or_allocate_shared_resource("demo", lambda size: {"size": -1}, 1024)
    >>> first.resource is second.resource, shared.metrics()["demo"]["leases"]
    (True, 2)
    >>> first.close(); second.close(); shared.metrics()
    {}
    """

    def __init__(self, configuration: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__()
        #: the TaskManager's configuration (its cluster-level options)
        self.configuration: Mapping[str, Any] = dict(configuration or {})

    def get_or_allocate_shared_resource(self, kind: str, initializer: Callable[[int], Any],
                                        size: int) -> SharedResourceLease:
        """A lease on the TaskManager's resource ``kind`` (Flink's ``getOrAllocateSharedResource``)."""
        return self.lease(kind, initializer, size)

    def __repr__(self) -> str:
        return f"TaskManagerSharedResources(shared={self.kinds()})"
