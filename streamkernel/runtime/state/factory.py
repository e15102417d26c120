"""Choosing a keyed state backend from the job's configuration (Flink's ``StateBackendLoader``).

``state.backend.type`` (1.x: ``state.backend``) names it: ``hashmap`` (the default; also
the 1.x values ``jobmanager`` and ``filesystem``) gives a
:class:`~streamkernel.runtime.state.heap.HeapKeyedStateBackend`, ``rocksdb`` a
:class:`~streamkernel.runtime.state.rocksdb.RocksDBKeyedStateBackend` (imported only then,
so ``rocksdict`` is needed only by jobs that use it). The RocksDB settings of
:class:`~streamkernel.datastream.state_backend.EmbeddedRocksDBStateBackend` map as follows:

* ``state.backend.rocksdb.localdir`` (``set_db_storage_paths``): the database goes under one
  of these directories (chosen by a stable hash of the subtask's working directory, so
  subtasks spread across them), in ``<localdir>/<job id>/<vertex-subtask-node>/``;
  without it, under the subtask's working directory inside the TaskManager's.
* ``state.backend.rocksdb.predefined-options`` and ``state.backend.rocksdb.options-factory``:
  see :mod:`~streamkernel.runtime.state.rocksdb_options`.
* ``state.backend.rocksdb.memory.*``: the RocksDB instances of a slot share one block cache
  and write buffer manager sized from the slot's managed memory (``memory_manager``, the
  slot's :class:`~streamkernel.runtime.memory.memory_manager.MemoryManager`), or, with
  ``managed: false`` and the TaskManager's ``fixed-per-tm``, one cache for all its slots
  (``shared_resources``); see :mod:`~streamkernel.runtime.state.rocksdb_memory`.
* incremental checkpoints and transfer threads are accepted and have no effect: snapshots
  are full (the same format as the heap backend's) and written by the task.
"""

from __future__ import annotations

import os
import zlib
from typing import Any, Mapping, Optional

from streamkernel.datastream.state_backend import EmbeddedRocksDBStateBackend, state_backend_from_configuration
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.core.clock import Clock
from streamkernel.runtime.state.api import KeyedStateBackend

__all__ = ["create_keyed_backend"]


def create_keyed_backend(configuration: Mapping[str, str], max_parallelism: int, key_group_range: range, *,
                         working_dir: str, clock: Clock, memory_manager: Optional[Any] = None,
                         memory_fraction: float = 1.0, shared_resources: Optional[Any] = None) -> KeyedStateBackend:
    """The keyed state backend of one operator subtask, as ``configuration`` chooses.

    ``working_dir`` is the subtask's own directory (an on-disk backend keeps its files
    there); ``clock`` is the processing-time clock of state TTL; ``memory_manager`` is the
    slot's managed memory (None: RocksDB's memory is not shared nor bounded), of which RocksDB
    gets ``memory_fraction`` (the job graph's ``STATE_BACKEND`` fraction of the slot).
    ``shared_resources`` is the TaskManager's resources shared by all its slots (a
    :class:`~streamkernel.runtime.memory.shared_resources.TaskManagerSharedResources`, for
    ``state.backend.rocksdb.memory.fixed-per-tm``). Raises
    :class:`~streamkernel.errors.IllegalConfigurationError` for an unknown backend name,
    naming ``hashmap`` and ``rocksdb``.

    >>> from streamkernel.runtime.core.clock import SystemClock
    >>> create_keyed_backend({}, 128, range(128), working_dir="/tmp/unused", clock=SystemClock())
    HeapKeyedStateBackend(max_parallelism=128, key_groups=0..127, states=[])
    """
    chosen = state_backend_from_configuration(configuration)
    if not isinstance(chosen, EmbeddedRocksDBStateBackend):
        from streamkernel.runtime.state.heap import HeapKeyedStateBackend

        return HeapKeyedStateBackend(max_parallelism, key_group_range, ttl_clock=clock)
    try:
        from streamkernel.runtime.state.rocksdb import RocksDBKeyedStateBackend
        from streamkernel.runtime.state.rocksdb_memory import (
            RocksDBMemoryConfiguration,
            allocate_rocksdb_shared_resources,
        )
        from streamkernel.runtime.state.rocksdb_options import rocksdb_options
    except ImportError as exc:
        raise IllegalConfigurationError(
            f"configuration 'state.backend.type': 'rocksdb' needs the rocksdict package ({exc}); "
            "install it with: pip install 'streamkernel[rocksdb]' (or use 'hashmap')"
        ) from None
    lease = allocate_rocksdb_shared_resources(RocksDBMemoryConfiguration.from_configuration(configuration),
                                              memory_manager, memory_fraction, shared_resources)
    try:
        options = rocksdb_options(chosen.get_predefined_options().name, chosen.get_options(),
                                  shared=None if lease is None else lease.resource)
        return RocksDBKeyedStateBackend(max_parallelism, key_group_range, ttl_clock=clock, options=options,
                                        working_dir=_database_parent(working_dir, chosen.get_db_storage_paths()),
                                        shared_resources=lease)
    except BaseException:
        if lease is not None:
            lease.close()
        raise


def _database_parent(working_dir: str, storage_paths: list) -> str:
    """Where the subtask's database directory goes: its working dir, or one of the local dirs."""
    if not storage_paths:
        return working_dir
    base = storage_paths[zlib.crc32(os.fspath(working_dir).encode("utf-8", "surrogatepass")) % len(storage_paths)]
    parts = os.path.normpath(os.path.abspath(working_dir)).split(os.sep)
    return os.path.join(os.path.abspath(base), *parts[-2:])
