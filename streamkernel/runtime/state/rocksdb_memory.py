"""Bounding the RocksDB instances of a slot (Flink's ``RocksDBMemoryConfiguration`` and
``RocksDBMemoryControllerUtils``).

With ``state.backend.rocksdb.memory.managed: true`` (the default), every RocksDB instance of a
slot (all keyed operators of all subtasks in it) shares ONE block cache and ONE write buffer
manager charged to that cache, sized from the slot's managed memory
(:class:`~streamkernel.runtime.memory.memory_manager.MemoryManager`);
``state.backend.rocksdb.memory.fixed-per-slot`` gives a fixed size instead. Of that total
memory ``M`` and ``state.backend.rocksdb.memory.write-buffer-ratio`` ``r``, Flink's formulas give

* cache capacity = ``(3 - r) * M / 3`` (:func:`calculate_actual_cache_capacity`),
* write buffer manager capacity = ``2 * M * r / 3`` (:func:`calculate_write_buffer_manager_capacity`):

RocksDB's write buffer manager may overshoot its capacity by half before it flushes, so the
memtables' memory is at most ``M * r`` and the cache holds the rest. The memtables are charged
to the cache, so the cache's usage is the slot's RocksDB memory. Index and filter blocks go
into the cache too (``cache_index_and_filter_blocks``, top-level index pinned), as Flink sets.
``state.backend.rocksdb.memory.high-prio-pool-ratio`` is validated as Flink validates it, but
rocksdict's ``Cache`` does not expose the LRU cache's high-priority pool: RocksDB's default
pool applies. With ``managed: false`` and no fixed size per slot, the TaskManager's
``state.backend.rocksdb.memory.fixed-per-tm`` (a cluster-level option) gives ONE cache and write
buffer manager, with the same formulas, to every RocksDB instance of every slot of the
TaskManager (:func:`allocate_taskmanager_shared_resources`); without it each instance keeps
RocksDB's own defaults (its own block cache, unbounded write buffers).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Dict, Optional

from streamkernel.common.options import RocksDBOptions
from streamkernel.errors import IllegalConfigurationError

__all__ = ["RocksDBMemoryConfiguration", "RocksDBSharedResources", "calculate_actual_cache_capacity",
           "calculate_write_buffer_manager_capacity", "allocate_rocksdb_shared_resources",
           "sanity_check_arena_block_size", "ROCKSDB_RESOURCE_KIND",
           "allocate_taskmanager_shared_resources", "taskmanager_shared_memory_size"]

#: the kind of the slot's shared resource (``MemoryManager`` lease) that RocksDB instances share
ROCKSDB_RESOURCE_KIND = "rocksdb"
#: RocksDB's write buffer size (every predefined profile keeps it); its arena blocks are 1/8 of it
DEFAULT_WRITE_BUFFER_SIZE = 64 << 20

_LOG = logging.getLogger(__name__)


def calculate_actual_cache_capacity(total_memory_size: int, write_buffer_ratio: float) -> int:
    """The shared cache's capacity: ``(3 - r) * M / 3`` truncated (Flink's ``calculateActualCacheCapacity``).

    >>> calculate_actual_cache_capacity(300 << 20, 0.5)
    262144000
    """
    return int((3 - write_buffer_ratio) * total_memory_size / 3)


def calculate_write_buffer_manager_capacity(total_memory_size: int, write_buffer_ratio: float) -> int:
    """The write buffer manager's capacity: ``2 * M * r / 3`` truncated (Flink's
    ``calculateWriteBufferManagerCapacity``).

    >>> calculate_write_buffer_manager_capacity(300 << 20, 0.5)
    104857600
    """
    return int(2 * total_memory_size * write_buffer_ratio / 3)


def sanity_check_arena_block_size(write_buffer_size: int, write_buffer_manager_capacity: int) -> bool:
    """False (and Flink's warning logged) when a memtable's arena block (``write_buffer_size / 8``)
    exceeds the write buffer manager's mutable limit (7/8 of its capacity): RocksDB would then
    flush its memtables constantly (Flink's ``sanityCheckArenaBlockSize``)."""
    arena_block_size = write_buffer_size // 8
    mutable_limit = write_buffer_manager_capacity * 7 // 8
    if arena_block_size < mutable_limit:
        return True
    _LOG.warning(
        "RocksDBStateBackend performance will be poor because of the current Flink memory configuration! RocksDB "
        "will flush memtable constantly, causing high IO and CPU. Typically the easiest fix is to increase task "
        "manager managed memory size. If running locally, see the parameter taskmanager.memory.managed.size. "
        "Details: arenaBlockSize %d > mutableLimit %d (writeBufferSize = %d, arenaBlockSizeConfigured = 0, "
        "defaultArenaBlockSize = %d, writeBufferManagerCapacity = %d)",
        arena_block_size, mutable_limit, write_buffer_size, arena_block_size, write_buffer_manager_capacity)
    return False


@dataclass(frozen=True)
class RocksDBMemoryConfiguration:
    """The settings of RocksDB's memory (Flink's ``RocksDBMemoryConfiguration``)."""

    use_managed_memory: bool = True
    #: bytes shared by the slot's instances; None: the slot's managed memory (if managed)
    fixed_memory_per_slot: Optional[int] = None
    write_buffer_ratio: float = 0.5
    high_priority_pool_ratio: float = 0.1

    @classmethod
    def from_configuration(cls, configuration: Mapping[str, Any]) -> "RocksDBMemoryConfiguration":
        """Read and :meth:`validate` the ``state.backend.rocksdb.memory.*`` keys."""
        fixed = RocksDBOptions.FIX_PER_SLOT_MEMORY_SIZE
        config = cls(
            use_managed_memory=RocksDBOptions.USE_MANAGED_MEMORY.get(configuration),
            fixed_memory_per_slot=fixed.get(configuration) if fixed.is_set(configuration) else None,
            write_buffer_ratio=RocksDBOptions.WRITE_BUFFER_RATIO.get(configuration),
            high_priority_pool_ratio=RocksDBOptions.HIGH_PRIORITY_POOL_RATIO.get(configuration))
        config.validate()
        return config

    def validate(self) -> None:
        """Both ratios in (0, 1), and the write buffers plus the high-priority pool smaller than
        the cache (Flink's check), else :class:`IllegalConfigurationError` naming the keys."""
        for option, value in ((RocksDBOptions.WRITE_BUFFER_RATIO, self.write_buffer_ratio),
                              (RocksDBOptions.HIGH_PRIORITY_POOL_RATIO, self.high_priority_pool_ratio)):
            if not 0 < value < 1:
                raise IllegalConfigurationError(
                    f"Invalid value {value!r} for key '{option.key()}': expected a ratio in (0, 1)")
        if 2 * self.write_buffer_ratio / (3 - self.write_buffer_ratio) + self.high_priority_pool_ratio >= 1.0:
            raise IllegalConfigurationError(
                f"Invalid configuration: writeBufferRatio {self.write_buffer_ratio} with highPriPoolRatio "
                f"{self.high_priority_pool_ratio} ('{RocksDBOptions.WRITE_BUFFER_RATIO.key()}' and "
                f"'{RocksDBOptions.HIGH_PRIORITY_POOL_RATIO.key()}'): the write buffers, 2r/(3-r) of the "
                "cache, and the high-priority pool must together stay below the cache's capacity")
        if self.fixed_memory_per_slot is not None and self.fixed_memory_per_slot <= 0:
            raise IllegalConfigurationError(
                f"Invalid value {self.fixed_memory_per_slot!r} for key "
                f"'{RocksDBOptions.FIX_PER_SLOT_MEMORY_SIZE.key()}': Total memory per slot must be > 0")

    @property
    def is_bounded(self) -> bool:
        """Whether the slot's instances share bounded memory (a fixed size or the managed memory)."""
        return self.fixed_memory_per_slot is not None or self.use_managed_memory


class RocksDBSharedResources:
    """The block cache and write buffer manager shared by the RocksDB instances of one slot."""

    def __init__(self, total_memory_size: int, write_buffer_ratio: float, high_priority_pool_ratio: float) -> None:
        import rocksdict

        self.total_memory_size = int(total_memory_size)
        self.cache_capacity = calculate_actual_cache_capacity(self.total_memory_size, write_buffer_ratio)
        self.write_buffer_manager_capacity = calculate_write_buffer_manager_capacity(
            self.total_memory_size, write_buffer_ratio)
        self.high_priority_pool_ratio = high_priority_pool_ratio
        sanity_check_arena_block_size(DEFAULT_WRITE_BUFFER_SIZE, self.write_buffer_manager_capacity)
        self.cache = rocksdict.Cache(self.cache_capacity)
        self.write_buffer_manager = rocksdict.WriteBufferManager.new_write_buffer_manager_with_cache(
            self.write_buffer_manager_capacity, False, self.cache)

    def apply_to(self, options: Any, table: Any) -> None:
        """Make ``options`` (``rocksdict.Options``) use the shared cache (through the block-based
        ``table`` options, given their profile's settings) and write buffer manager."""
        table.set_block_cache(self.cache)
        table.set_cache_index_and_filter_blocks(True)
        table.set_pin_top_level_index_and_filter(True)
        options.set_block_based_table_factory(table)
        options.set_write_buffer_manager(self.write_buffer_manager)

    def metrics(self) -> Dict[str, int]:
        """Sizes and what is used now, in bytes: ``used`` is the cache's usage, which includes the
        memtables charged to it (``write_buffer_usage``)."""
        return {
            "capacity": self.total_memory_size,
            "cache_capacity": self.cache_capacity,
            "write_buffer_manager_capacity": self.write_buffer_manager_capacity,
            "used": int(self.cache.get_usage()),
            "pinned": int(self.cache.get_pinned_usage()),
            "write_buffer_usage": int(self.write_buffer_manager.get_usage()),
        }

    def __repr__(self) -> str:
        return (f"RocksDBSharedResources(total={self.total_memory_size}, cache={self.cache_capacity}, "
                f"write_buffers={self.write_buffer_manager_capacity})")


def allocate_rocksdb_shared_resources(config: RocksDBMemoryConfiguration, memory_manager: Any,
                                      fraction: float = 1.0, taskmanager_resources: Any = None) -> Optional[Any]:
    """A lease on the slot's :class:`RocksDBSharedResources` (``lease.resource``), or None when
    RocksDB's memory is not bounded (``managed: false`` without a fixed size) or its ``fraction``
    of the slot's managed memory is empty (as Flink, which then leaves RocksDB unbounded).

    Flink's choice (``RocksDBSharedResourcesFactory.from``): fixed-per-slot, else managed, else
    the TaskManager-wide fixed size (:func:`allocate_taskmanager_shared_resources`)."""
    if not config.is_bounded:
        return allocate_taskmanager_shared_resources(taskmanager_resources)
    if memory_manager is None:
        return None
    fixed = config.fixed_memory_per_slot
    if fixed is None:
        fixed = memory_manager.compute_memory_size(fraction)
        if fixed <= 0:
            return None

    def create(size: int) -> RocksDBSharedResources:
        return RocksDBSharedResources(size, config.write_buffer_ratio, config.high_priority_pool_ratio)

    return memory_manager.get_shared_memory_resource_for_managed_memory(ROCKSDB_RESOURCE_KIND, create, size=fixed)


# ---------------------------------------------------------------- TaskManager-wide (fixed-per-tm)

def taskmanager_shared_memory_size(taskmanager_configuration: Mapping[str, Any]) -> int:
    """``state.backend.rocksdb.memory.fixed-per-tm`` of the TaskManager's configuration in bytes,
    0 when unset (Flink's ``getTmSharedMemorySize``); a wrong value raises
    :class:`IllegalConfigurationError` naming the key.

    >>> taskmanager_shared_memory_size({"state.backend.rocksdb.memory.fixed-per-tm": "64m"})
    67108864
    """
    option = RocksDBOptions.FIX_PER_TM_MEMORY_SIZE
    return int(option.get(taskmanager_configuration)) if option.is_set(taskmanager_configuration) else 0


def allocate_taskmanager_shared_resources(taskmanager_resources: Any) -> Optional[Any]:
    """A lease on the :class:`RocksDBSharedResources` shared by every RocksDB instance of every
    slot of the TaskManager (Flink's ``TM_SHARED_UNMANAGED``), or None when the TaskManager sets
    no ``fixed-per-tm`` size (each instance then keeps RocksDB's own caches).

    ``taskmanager_resources`` is the TaskManager's
    :class:`~streamkernel.runtime.memory.shared_resources.TaskManagerSharedResources`; the size
    and the ratios come from ITS configuration (a cluster-level option, as Flink reads it from
    the TaskManager's), never from the job's."""
    if taskmanager_resources is None:
        return None
    configuration = taskmanager_resources.configuration
    size = taskmanager_shared_memory_size(configuration)
    if size <= 0:
        return None
    tm_config = RocksDBMemoryConfiguration.from_configuration(configuration)

    def create(total: int) -> RocksDBSharedResources:
        return RocksDBSharedResources(total, tm_config.write_buffer_ratio, tm_config.high_priority_pool_ratio)

    return taskmanager_resources.get_or_allocate_shared_resource(ROCKSDB_RESOURCE_KIND, create, size)
