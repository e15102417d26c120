"""State backends: where the working state of a job lives, as ``pyflink.datastream.state_backend``.

- :class:`HashMapStateBackend` keeps state as Python objects in the TaskManager's memory
  (configuration value ``hashmap``, the default);
- :class:`EmbeddedRocksDBStateBackend` keeps it in an embedded RocksDB on local disk, for
  state larger than memory (configuration value ``rocksdb``).

The key is ``state.backend.type`` (1.x: ``state.backend``). Where *snapshots* of the state
go is the checkpoint storage's business (:mod:`streamkernel.datastream.checkpoint_storage`).
The 1.x classes :class:`MemoryStateBackend`, :class:`FsStateBackend` and
:class:`RocksDBStateBackend` are kept: each is the 2.x backend plus the checkpoint storage
it implied (:meth:`get_checkpoint_storage`).
"""

from __future__ import annotations

import os
from abc import ABC
from enum import Enum
from typing import Any, Dict, List, Mapping, Optional

from streamkernel.common.config_options import parse_boolean
from streamkernel.datastream.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError

__all__ = [
    "StateBackend",
    "HashMapStateBackend",
    "EmbeddedRocksDBStateBackend",
    "MemoryStateBackend",
    "FsStateBackend",
    "RocksDBStateBackend",
    "CustomStateBackend",
    "PredefinedOptions",
    "STATE_BACKEND_KEY",
    "state_backend_from_name",
    "state_backend_from_configuration",
]

STATE_BACKEND_KEY = "state.backend.type"
"""Configuration key naming the state backend (``hashmap`` or ``rocksdb``)."""

_LEGACY_STATE_BACKEND_KEY = "state.backend"
_INCREMENTAL_KEYS = ("execution.checkpointing.incremental", "state.backend.incremental")
_LOCALDIR_KEY = "state.backend.rocksdb.localdir"
_PREDEFINED_KEY = "state.backend.rocksdb.predefined-options"
_THREADS_KEY = "state.backend.rocksdb.checkpoint.transfer.thread.num"
_OPTIONS_FACTORY_KEY = "state.backend.rocksdb.options-factory"


class PredefinedOptions(Enum):
    """Pre-tuned RocksDB option profiles (``state.backend.rocksdb.predefined-options``).

    ``DEFAULT`` (no forced syncs), ``SPINNING_DISK_OPTIMIZED``,
    ``SPINNING_DISK_OPTIMIZED_HIGH_MEM`` and ``FLASH_SSD_OPTIMIZED``.
    """

    DEFAULT = 0
    SPINNING_DISK_OPTIMIZED = 1
    SPINNING_DISK_OPTIMIZED_HIGH_MEM = 2
    FLASH_SSD_OPTIMIZED = 3


class StateBackend(ABC):
    """Defines how the keyed and operator state of a running job is stored and accessed.

    Each backend knows its configuration value (:attr:`config_value`, the value of
    ``state.backend.type``) and writes itself as configuration keys (:meth:`to_configuration`).
    """

    config_value: str = ""
    """The value of ``state.backend.type`` that selects this backend."""

    def get_checkpoint_storage(self) -> Optional[CheckpointStorage]:
        """The checkpoint storage this backend implies (only the 1.x backends imply one)."""
        return None

    def to_configuration(self) -> Dict[str, str]:
        """This backend (and, for the 1.x classes, its storage) as Flink 2.x configuration keys."""
        conf: Dict[str, str] = {}
        storage = self.get_checkpoint_storage()
        if storage is not None:
            conf.update(storage.to_configuration())
        conf[STATE_BACKEND_KEY] = self.config_value
        return conf

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class HashMapStateBackend(StateBackend):
    """Keeps working state as objects in the memory of the TaskManagers.

    Fast; the state of all tasks of a TaskManager must fit into its memory.

    Example::

        >>> env.set_state_backend(HashMapStateBackend())
    """

    config_value = "hashmap"


class EmbeddedRocksDBStateBackend(StateBackend):
    """Keeps working state in an embedded RocksDB database on the TaskManager's local disk.

    State can exceed memory (it spills to disk); every access (de)serializes. Supports
    incremental checkpoints.

    Example::

        >>> env.set_state_backend(EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True))
    """

    config_value = "rocksdb"
    DEFAULT_NUMBER_OF_TRANSFER_THREADS = 4

    def __init__(self, enable_incremental_checkpointing: Optional[bool] = None) -> None:
        if enable_incremental_checkpointing not in (None, True, False):
            raise InvalidProgramError(
                "EmbeddedRocksDBStateBackend: enable_incremental_checkpointing must be None, "
                f"True or False, got {enable_incremental_checkpointing!r}"
            )
        self._incremental = enable_incremental_checkpointing
        self._db_storage_paths: List[str] = []
        self._predefined_options = PredefinedOptions.DEFAULT
        self._options_factory: Optional[str] = None
        self._transfer_threads: Optional[int] = None

    def set_db_storage_paths(self, *paths: str) -> None:
        """Directories for the local RocksDB files (spread across them); none: temp dirs."""
        checked = []
        for path in paths:
            if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
                raise InvalidProgramError(
                    f"{type(self).__name__}.set_db_storage_paths: each path must be a "
                    f"non-empty str or os.PathLike, got {path!r}"
                )
            checked.append(os.fspath(path))
        self._db_storage_paths = checked

    def get_db_storage_paths(self) -> List[str]:
        """The configured local RocksDB directories (empty: the TaskManager's temp dirs)."""
        return list(self._db_storage_paths)

    def is_incremental_checkpoints_enabled(self) -> bool:
        """Whether checkpoints upload only the files that changed since the last one."""
        return bool(self._incremental)

    def set_predefined_options(self, options: PredefinedOptions) -> None:
        """Choose a pre-tuned RocksDB option profile."""
        if not isinstance(options, PredefinedOptions):
            raise InvalidProgramError(
                f"{type(self).__name__}.set_predefined_options: options must be a "
                f"PredefinedOptions member, got {options!r}"
            )
        self._predefined_options = options

    def get_predefined_options(self) -> PredefinedOptions:
        """The RocksDB option profile (default ``PredefinedOptions.DEFAULT``)."""
        return self._predefined_options

    def set_options(self, options_factory_class_name: str) -> None:
        """Name the options factory applied on top of the predefined options.

        PyFlink takes a Java class name; streamkernel keeps the name as given (a dotted
        Python path to a factory callable is what its RocksDB backend looks for).
        """
        if not isinstance(options_factory_class_name, str) or not options_factory_class_name:
            raise InvalidProgramError(
                f"{type(self).__name__}.set_options: options_factory_class_name must be a "
                f"non-empty str, got {options_factory_class_name!r}"
            )
        self._options_factory = options_factory_class_name

    def get_options(self) -> Optional[str]:
        """The options factory name set with :meth:`set_options`, or None."""
        return self._options_factory

    def get_number_of_transfer_threads(self) -> int:
        """Threads used to upload/download files while snapshotting/restoring (default 4)."""
        if self._transfer_threads is None:
            return self.DEFAULT_NUMBER_OF_TRANSFER_THREADS
        return self._transfer_threads

    def set_number_of_transfer_threads(self, number_of_transfering_threads: int) -> None:
        """Set the threads used to transfer files while snapshotting/restoring (> 0)."""
        value = number_of_transfering_threads
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InvalidProgramError(
                f"{type(self).__name__}: the number of threads used to transfer files should "
                f"be greater than zero, got {value!r}"
            )
        self._transfer_threads = value

    def to_configuration(self) -> Dict[str, str]:
        """``state.backend.type: rocksdb`` plus the RocksDB settings that were set."""
        conf = super().to_configuration()
        if self._incremental is not None:
            conf[_INCREMENTAL_KEYS[0]] = "true" if self._incremental else "false"
        if self._db_storage_paths:
            conf[_LOCALDIR_KEY] = ",".join(self._db_storage_paths)
        if self._predefined_options is not PredefinedOptions.DEFAULT:
            conf[_PREDEFINED_KEY] = self._predefined_options.name
        if self._transfer_threads is not None:
            conf[_THREADS_KEY] = str(self._transfer_threads)
        if self._options_factory is not None:
            conf[_OPTIONS_FACTORY_KEY] = self._options_factory
        return conf

    def __repr__(self) -> str:
        return f"{type(self).__name__}(incremental={self.is_incremental_checkpoints_enabled()})"


class MemoryStateBackend(HashMapStateBackend):
    """1.x: :class:`HashMapStateBackend` with :class:`JobManagerCheckpointStorage`.

    Prefer ``env.set_state_backend(HashMapStateBackend())`` and
    ``env.get_checkpoint_config().set_checkpoint_storage(JobManagerCheckpointStorage())``.
    """

    DEFAULT_MAX_STATE_SIZE = JobManagerCheckpointStorage.DEFAULT_MAX_STATE_SIZE

    def __init__(self, checkpoint_path: Optional[str] = None, savepoint_path: Optional[str] = None,
                 max_state_size: Optional[int] = None,
                 using_asynchronous_snapshots: Optional[bool] = None) -> None:
        _check_async_flag(using_asynchronous_snapshots, "MemoryStateBackend")
        self._storage = JobManagerCheckpointStorage(checkpoint_path, max_state_size)
        self._savepoint_path = None if savepoint_path is None else os.fspath(savepoint_path)

    def get_checkpoint_storage(self) -> JobManagerCheckpointStorage:
        """The implied :class:`JobManagerCheckpointStorage`."""
        return self._storage

    def get_max_state_size(self) -> int:
        """The largest size, in bytes, of one state snapshot."""
        return self._storage.get_max_state_size()

    def get_checkpoint_path(self) -> Optional[str]:
        """Where checkpoint metadata is persisted as well, or None."""
        return self._storage.get_checkpoint_path()

    def get_savepoint_path(self) -> Optional[str]:
        """The default savepoint directory given to the constructor, or None."""
        return self._savepoint_path

    def is_using_asynchronous_snapshots(self) -> bool:
        """Snapshots are always asynchronous now: True."""
        return True


class FsStateBackend(HashMapStateBackend):
    """1.x: :class:`HashMapStateBackend` with :class:`FileSystemCheckpointStorage`.

    Prefer ``env.set_state_backend(HashMapStateBackend())`` and
    ``env.get_checkpoint_config().set_checkpoint_storage_dir(uri)``.
    """

    def __init__(self, checkpoint_directory_uri: Optional[str] = None,
                 default_savepoint_directory_uri: Optional[str] = None,
                 file_state_size_threshold: Optional[int] = None,
                 write_buffer_size: Optional[int] = None,
                 using_asynchronous_snapshots: Optional[bool] = None) -> None:
        if checkpoint_directory_uri is None:
            raise InvalidProgramError(
                "FsStateBackend: the parameter 'checkpoint_directory_uri' is required"
            )
        _check_async_flag(using_asynchronous_snapshots, "FsStateBackend")
        self._storage = FileSystemCheckpointStorage(
            checkpoint_directory_uri, file_state_size_threshold,
            -1 if write_buffer_size is None else write_buffer_size,
        )
        self._savepoint_path = (
            None if default_savepoint_directory_uri is None
            else os.fspath(default_savepoint_directory_uri)
        )

    def get_checkpoint_storage(self) -> FileSystemCheckpointStorage:
        """The implied :class:`FileSystemCheckpointStorage`."""
        return self._storage

    def get_checkpoint_path(self) -> str:
        """The base directory of checkpoints."""
        return self._storage.get_checkpoint_path()

    def get_savepoint_path(self) -> Optional[str]:
        """The default savepoint directory given to the constructor, or None."""
        return self._savepoint_path

    def get_min_file_size_threshold(self) -> int:
        """State below this size (bytes) is stored inline in the checkpoint metadata."""
        return self._storage.get_min_file_size_threshold()

    def get_write_buffer_size(self) -> int:
        """The write buffer size (bytes) of checkpoint streams."""
        return self._storage.get_write_buffer_size()

    def is_using_asynchronous_snapshots(self) -> bool:
        """Snapshots are always asynchronous now: True."""
        return True

    def __repr__(self) -> str:
        return f"FsStateBackend('{self.get_checkpoint_path()}')"


class RocksDBStateBackend(EmbeddedRocksDBStateBackend):
    """1.x: :class:`EmbeddedRocksDBStateBackend` with :class:`FileSystemCheckpointStorage`.

    Give ``checkpoint_data_uri`` (the checkpoint directory) or a ``checkpoint_stream_backend``
    (e.g. an :class:`FsStateBackend`) whose storage receives the snapshots.
    """

    def __init__(self, checkpoint_data_uri: Optional[str] = None,
                 enable_incremental_checkpointing: Optional[bool] = None,
                 checkpoint_stream_backend: Optional[StateBackend] = None) -> None:
        super().__init__(enable_incremental_checkpointing)
        if checkpoint_data_uri is not None:
            self._checkpoint_backend: StateBackend = FsStateBackend(checkpoint_data_uri)
        elif isinstance(checkpoint_stream_backend, StateBackend):
            self._checkpoint_backend = checkpoint_stream_backend
        else:
            raise InvalidProgramError(
                "RocksDBStateBackend: give checkpoint_data_uri (the checkpoint directory) or a "
                "checkpoint_stream_backend (a StateBackend such as FsStateBackend)"
            )

    def get_checkpoint_backend(self) -> StateBackend:
        """The backend whose checkpoint storage receives the RocksDB snapshots."""
        return self._checkpoint_backend

    def get_checkpoint_storage(self) -> Optional[CheckpointStorage]:
        """The checkpoint storage of :meth:`get_checkpoint_backend`."""
        return self._checkpoint_backend.get_checkpoint_storage()

    def get_number_of_transfering_threads(self) -> int:
        """1.x spelling of :meth:`get_number_of_transfer_threads`."""
        return self.get_number_of_transfer_threads()

    def set_number_of_transfering_threads(self, number_of_transfering_threads: int) -> None:
        """1.x spelling of :meth:`set_number_of_transfer_threads`."""
        self.set_number_of_transfer_threads(number_of_transfering_threads)


class CustomStateBackend(StateBackend):
    """A state backend chosen by its configuration value (PyFlink wraps a Java object here)."""

    def __init__(self, backend_type: str) -> None:
        if not isinstance(backend_type, str) or not backend_type:
            raise InvalidProgramError(
                f"CustomStateBackend: backend_type must be a non-empty str, got {backend_type!r}"
            )
        self.config_value = backend_type

    def __repr__(self) -> str:
        return f"CustomStateBackend('{self.config_value}')"


def _check_async_flag(flag: Any, owner: str) -> None:
    if flag not in (None, True, False):
        raise InvalidProgramError(
            f"{owner}: using_asynchronous_snapshots must be None, True or False, got {flag!r}"
        )


_BY_NAME = {
    "hashmap": HashMapStateBackend,
    "rocksdb": EmbeddedRocksDBStateBackend,
    # 1.x values: the storage part is configured by the checkpoint storage keys.
    "jobmanager": HashMapStateBackend,
    "filesystem": HashMapStateBackend,
}


def state_backend_from_name(name: str, key: str = STATE_BACKEND_KEY) -> StateBackend:
    """The backend for a ``state.backend.type`` value: ``hashmap`` or ``rocksdb``.

    The 1.x values ``jobmanager`` and ``filesystem`` give a :class:`HashMapStateBackend`
    (their storage part is set by the checkpoint storage keys). Raises
    :class:`IllegalConfigurationError` naming ``key`` for anything else.
    """
    backend_class = _BY_NAME.get(str(name).strip().lower())
    if backend_class is None:
        raise IllegalConfigurationError(
            f"configuration {key!r}: unknown state backend {name!r}; use 'hashmap' (memory) "
            "or 'rocksdb' (embedded RocksDB on disk)"
        )
    return backend_class()


def state_backend_from_configuration(conf: Mapping[str, str]) -> Optional[StateBackend]:
    """The backend a configuration names (with its RocksDB settings), or None if it names none."""
    key = STATE_BACKEND_KEY if STATE_BACKEND_KEY in conf else _LEGACY_STATE_BACKEND_KEY
    if key not in conf:
        return None
    backend = state_backend_from_name(conf[key], key)
    if isinstance(backend, EmbeddedRocksDBStateBackend):
        for incremental_key in _INCREMENTAL_KEYS:
            if incremental_key in conf:
                backend._incremental = parse_boolean(conf[incremental_key], incremental_key)
                break
        if conf.get(_LOCALDIR_KEY):
            backend.set_db_storage_paths(*[p.strip() for p in conf[_LOCALDIR_KEY].split(",") if p.strip()])
        if _PREDEFINED_KEY in conf:
            try:
                backend.set_predefined_options(PredefinedOptions[conf[_PREDEFINED_KEY].strip().upper()])
            except KeyError:
                raise IllegalConfigurationError(
                    f"configuration {_PREDEFINED_KEY!r}: expected one of "
                    f"{', '.join(m.name for m in PredefinedOptions)}, got {conf[_PREDEFINED_KEY]!r}"
                ) from None
        if conf.get(_OPTIONS_FACTORY_KEY):
            backend.set_options(conf[_OPTIONS_FACTORY_KEY])
        if _THREADS_KEY in conf:
            try:
                backend.set_number_of_transfer_threads(int(conf[_THREADS_KEY]))
            except (ValueError, InvalidProgramError):
                raise IllegalConfigurationError(
                    f"configuration {_THREADS_KEY!r}: expected a positive integer, "
                    f"got {conf[_THREADS_KEY]!r}"
                ) from None
    return backend
