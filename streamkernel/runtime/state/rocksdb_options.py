"""RocksDB options of the ``rocksdb`` state backend: Flink's ``PredefinedOptions`` and options factory.

``state.backend.rocksdb.predefined-options`` picks a profile (as in Flink):

* ``DEFAULT``: RocksDB's defaults, no fsync;
* ``SPINNING_DISK_OPTIMIZED``: level compaction with dynamic level sizes, 4 background
  jobs, unlimited open files, no fsync;
* ``SPINNING_DISK_OPTIMIZED_HIGH_MEM``: the above with large memtables (64 MB, 4 of them),
  256 MB SST files, a 256 MB block cache, 128 KB blocks and bloom filters;
* ``FLASH_SSD_OPTIMIZED``: 4 background jobs, unlimited open files, no fsync.

``state.backend.rocksdb.options-factory`` (``EmbeddedRocksDBStateBackend.set_options``)
names a Python callable, ``"package.module.function"`` or ``"package.module:function"``,
called with the ``rocksdict.Options`` after the profile (and the slot's shared memory,
:mod:`~streamkernel.runtime.state.rocksdb_memory`); it changes them in place or returns
new ones (which must be in raw mode).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Optional

import rocksdict

from streamkernel.errors import IllegalConfigurationError

__all__ = ["OPTIONS_FACTORY_KEY", "rocksdb_options"]

#: configuration key naming a Python options factory (Flink: a Java ``RocksDBOptionsFactory`` class)
OPTIONS_FACTORY_KEY = "state.backend.rocksdb.options-factory"


def _spinning_disk(options: Any, table: Any = None) -> None:
    options.set_compaction_style(rocksdict.DBCompactionStyle.level())
    options.set_level_compaction_dynamic_level_bytes(True)
    options.increase_parallelism(4)
    options.set_max_background_jobs(4)
    options.set_max_open_files(-1)
    options.set_use_fsync(False)


def _spinning_disk_high_mem(options: Any, table: Any = None) -> None:
    _spinning_disk(options)
    options.set_write_buffer_size(64 << 20)
    options.set_max_write_buffer_number(4)
    options.set_min_write_buffer_number_to_merge(3)
    options.set_target_file_size_base(256 << 20)
    options.set_max_bytes_for_level_base(1 << 30)
    if table is None:  # a shared cache replaces the profile's own (Flink's managed memory)
        table = rocksdict.BlockBasedOptions()
        table.set_block_cache(rocksdict.Cache(256 << 20))
    table.set_block_size(128 << 10)
    table.set_bloom_filter(10, False)
    options.set_block_based_table_factory(table)


def _flash_ssd(options: Any, table: Any = None) -> None:
    options.increase_parallelism(4)
    options.set_max_background_jobs(4)
    options.set_max_open_files(-1)
    options.set_use_fsync(False)


_PROFILES: dict = {
    "DEFAULT": lambda options, table=None: options.set_use_fsync(False),
    "SPINNING_DISK_OPTIMIZED": _spinning_disk,
    "SPINNING_DISK_OPTIMIZED_HIGH_MEM": _spinning_disk_high_mem,
    "FLASH_SSD_OPTIMIZED": _flash_ssd,
}


def _load_factory(name: str) -> Callable[[Any], Any]:
    module_name, sep, attribute = name.partition(":")
    if not sep:
        module_name, _, attribute = name.rpartition(".")
    try:
        factory = getattr(importlib.import_module(module_name), attribute) if module_name else None
    except (ImportError, AttributeError) as exc:
        raise IllegalConfigurationError(
            f"configuration {OPTIONS_FACTORY_KEY!r}: cannot load {name!r} ({exc}); give a Python "
            "callable as 'package.module.function' or 'package.module:function'"
        ) from None
    if not callable(factory):
        raise IllegalConfigurationError(
            f"configuration {OPTIONS_FACTORY_KEY!r}: {name!r} is not a callable taking rocksdict.Options"
        )
    return factory


def rocksdb_options(predefined: str = "DEFAULT", options_factory: Optional[str] = None,
                    shared: Any = None) -> "rocksdict.Options":
    """``rocksdict.Options`` (raw mode) for a predefined profile, then the slot's ``shared``
    block cache and write buffer manager (a
    :class:`~streamkernel.runtime.state.rocksdb_memory.RocksDBSharedResources`, or None), then
    the named options factory."""
    profile = _PROFILES.get(str(predefined).strip().upper())
    if profile is None:
        raise IllegalConfigurationError(
            f"configuration 'state.backend.rocksdb.predefined-options': expected one of "
            f"{', '.join(_PROFILES)}, got {predefined!r}"
        )
    options = rocksdict.Options(raw_mode=True)
    if shared is None:
        profile(options)
    else:
        table = rocksdict.BlockBasedOptions()
        profile(options, table)
        shared.apply_to(options, table)
    if options_factory:
        returned = _load_factory(options_factory)(options)
        if returned is not None:
            if not isinstance(returned, rocksdict.Options):
                raise IllegalConfigurationError(
                    f"configuration {OPTIONS_FACTORY_KEY!r}: {options_factory!r} returned "
                    f"{type(returned).__name__}, expected rocksdict.Options or None"
                )
            options = returned
    return options
