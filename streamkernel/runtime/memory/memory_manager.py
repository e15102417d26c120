"""The managed memory of one task slot (Flink's ``MemoryManager``, one per ``TaskSlot``).

A TaskManager's managed memory (``taskmanager.memory.managed.*``) is split evenly among its
slots; each slot's :class:`MemoryManager` hands its share to the consumers of that slot, each
by the fraction of the slot the job graph gave it (:mod:`streamkernel.graph.managed_memory`):

* the RocksDB state backend: every RocksDB instance of a slot leases the same *shared
  resource* (one block cache and one write buffer manager,
  :mod:`streamkernel.runtime.state.rocksdb_memory`), created by the first lease and dropped when
  the last lease is closed, as Flink's ``getSharedMemoryResourceForManagedMemory`` does;
* BATCH mode's sorters (:mod:`streamkernel.runtime.operators.external_sorter`) *reserve* their
  pages (:meth:`MemoryManager.reserve_memory`, Flink's ``allocatePages``) and release them when
  they are done; a reservation beyond what is left fails with Flink's message.

:meth:`MemoryManager.metrics` reports what each consumer uses now.

:func:`managed_memory_per_slot` derives a slot's share from the cluster configuration with
Flink's memory calculation (:mod:`streamkernel.runtime.memory`), once per TaskManager.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Callable, Dict, Optional

from streamkernel.runtime.memory.shared_resources import SharedResourceLease, SharedResources

__all__ = ["MemoryManager", "SharedResourceLease", "MemoryReservationError", "managed_memory_per_slot",
           "DEFAULT_PAGE_SIZE"]

#: Flink's default page size: ``taskmanager.memory.segment-size``'s default
DEFAULT_PAGE_SIZE = 32 * 1024


class MemoryReservationError(RuntimeError):
    """A consumer asked a slot for more managed memory than it has left (Flink's ``MemoryReservationException``)."""


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


class MemoryManager:
    """The managed memory of one slot: ``size`` bytes, handed out as shared resources.

    >>> manager = MemoryManager(64 << 20, slot_index=0)
    >>> lease = manager.get_shared_memory_resource_for_managed_memory("demo", lambda size: {"size": size})
    >>> lease.resource, manager.metrics()["demo"]["leases"]
    ({'size': 67108864}, 1)
    >>> lease.close(); manager.metrics()
    {}
    """

    def __init__(self, size: int, slot_index: int = 0, page_size: int = DEFAULT_PAGE_SIZE) -> None:
        if size < 0:
            raise ValueError(f"slot {slot_index}: managed memory size must be >= 0, got {size}")
        self.size = int(size)
        self.slot_index = slot_index
        self.page_size = int(page_size)
        self._lock = threading.Lock()
        self._shared = SharedResources()
        self._reserved: Dict[Any, list] = {}  # owner -> [reserved bytes, bytes in use, runs spilled]

    def compute_memory_size(self, fraction: float) -> int:
        """The bytes ``fraction`` of this slot is (Flink's ``computeMemorySize``: rounded down)."""
        return int(self.size * float(fraction))

    def compute_number_of_pages(self, fraction: float) -> int:
        """The pages of ``page_size`` that ``fraction`` of this slot holds (Flink's ``computeNumberOfPages``)."""
        return int((self.size // self.page_size) * float(fraction))

    def reserve_memory(self, owner: Any, size: int) -> None:
        """Reserve ``size`` bytes for ``owner`` (added to what it holds); raises
        :class:`MemoryReservationError` when the slot's reservations leave less (the shared
        resources take their fraction of the slot, which the job graph keeps apart)."""
        with self._lock:
            available = self.size - sum(r[0] for r in self._reserved.values())
            if size > available:
                raise MemoryReservationError(
                    f"Could not allocate {size} bytes, only {max(0, available)} bytes are remaining "
                    f"(slot {self.slot_index}: {self.size} bytes of managed memory)")
            self._reserved.setdefault(owner, [0, 0, 0])[0] += int(size)

    def report_usage(self, owner: Any, used: int, spilled_runs: Optional[int] = None) -> None:
        """What ``owner`` holds of its reservation now (bytes) and, for a sorter, how many runs it
        has spilled to disk so far; for :meth:`metrics`."""
        with self._lock:
            entry = self._reserved.get(owner)
            if entry is not None:
                entry[1] = int(used)
                if spilled_runs is not None:
                    entry[2] = int(spilled_runs)

    def release_memory(self, owner: Any) -> None:
        """Give back everything ``owner`` reserved (idempotent)."""
        with self._lock:
            self._reserved.pop(owner, None)

    def get_shared_memory_resource_for_managed_memory(
            self, kind: str, initializer: Callable[[int], Any], size: Optional[int] = None) -> SharedResourceLease:
        """A lease on the slot's shared resource ``kind``; the first lease creates it with
        ``initializer(size)`` (``size`` defaults to the slot's whole managed memory)."""
        return self._shared.lease(kind, initializer, self.size if size is None else int(size))

    def metrics(self) -> Dict[str, Dict[str, int]]:
        """Per shared resource kind: its ``metrics()`` (sizes and usage in bytes) and its ``leases``;
        ``"operator"`` (when some consumer reserved memory): the bytes ``reserved``, ``used`` now, the
        ``reservations`` and the ``spilled_runs`` of the sorters among them."""
        with self._lock:
            reserved = list(self._reserved.values())
        report: Dict[str, Dict[str, int]] = {}
        if reserved:
            report["operator"] = {"reserved": sum(r[0] for r in reserved), "used": sum(r[1] for r in reserved),
                                  "reservations": len(reserved), "spilled_runs": sum(r[2] for r in reserved)}
        report.update(self._shared.metrics())
        return report

    def __repr__(self) -> str:
        return f"MemoryManager(slot={self.slot_index}, size={self.size}, shared={self._shared.kinds()})"
