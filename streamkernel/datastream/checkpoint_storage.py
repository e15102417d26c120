"""Checkpoint storage: where completed checkpoints (state snapshots and metadata) are written.

As ``pyflink.datastream.checkpoint_storage``. The state backend decides where *working*
state lives; the checkpoint storage decides where its *snapshots* go:

- :class:`JobManagerCheckpointStorage` keeps snapshots in the JobManager's memory (small
  state, local experiments); configuration value ``jobmanager``;
- :class:`FileSystemCheckpointStorage` writes them below a directory, one folder per
  checkpoint; configuration value ``filesystem``.

Configuration keys: ``execution.checkpointing.storage`` (1.x ``state.checkpoint-storage``)
and ``execution.checkpointing.dir`` (1.x ``state.checkpoints.dir``).
"""

from __future__ import annotations

import os
from abc import ABC
from typing import Any, Dict, Mapping, Optional, Union

from streamkernel.errors import InvalidProgramError

__all__ = [
    "CheckpointStorage",
    "JobManagerCheckpointStorage",
    "FileSystemCheckpointStorage",
    "CustomCheckpointStorage",
    "CHECKPOINT_STORAGE_KEY",
    "CHECKPOINT_DIR_KEY",
]

CHECKPOINT_STORAGE_KEY = "execution.checkpointing.storage"
"""Configuration key naming the checkpoint storage (``jobmanager`` or ``filesystem``)."""

CHECKPOINT_DIR_KEY = "execution.checkpointing.dir"
"""Configuration key of the checkpoint directory (1.x: ``state.checkpoints.dir``)."""

PathLike = Union[str, "os.PathLike[str]"]


def _path_or_none(path: Optional[PathLike], argument: str, owner: str) -> Optional[str]:
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise InvalidProgramError(
            f"{owner}: {argument} must be a non-empty path (str or os.PathLike), got {path!r}"
        )
    return os.fspath(path)


class CheckpointStorage(ABC):
    """Defines how state backends store their checkpoints for fault tolerance.

    Each kind knows its configuration value (:attr:`config_value`) and writes itself as
    configuration keys (:meth:`to_configuration`).
    """

    config_value: str = ""
    """The value of ``execution.checkpointing.storage`` that selects this storage."""

    def get_checkpoint_path(self) -> Optional[str]:
        """The base directory of checkpoints, or None."""
        return None

    def get_savepoint_path(self) -> Optional[str]:
        """The base directory of savepoints, or None (then the configured default is used)."""
        return None

    def to_configuration(self) -> Dict[str, str]:
        """This storage as Flink 2.x configuration keys."""
        conf = {CHECKPOINT_STORAGE_KEY: self.config_value}
        path = self.get_checkpoint_path()
        if path is not None:
            conf[CHECKPOINT_DIR_KEY] = path
        return conf

    def _key(self) -> tuple:
        return (self.config_value, self.get_checkpoint_path())

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))


class JobManagerCheckpointStorage(CheckpointStorage):
    """Keeps checkpoints in the JobManager's memory; only for small state and experiments.

    Example::

        >>> env.get_checkpoint_config().set_checkpoint_storage(JobManagerCheckpointStorage())
    """

    DEFAULT_MAX_STATE_SIZE = 5 * 1024 * 1024
    """The default largest size of one state snapshot (5 MiB)."""

    config_value = "jobmanager"

    def __init__(self, checkpoint_path: Optional[PathLike] = None,
                 max_state_size: Optional[int] = None) -> None:
        self._checkpoint_path = _path_or_none(
            checkpoint_path, "checkpoint_path", "JobManagerCheckpointStorage"
        )
        if max_state_size is None:
            max_state_size = self.DEFAULT_MAX_STATE_SIZE
        if isinstance(max_state_size, bool) or not isinstance(max_state_size, int) \
                or max_state_size <= 0:
            raise InvalidProgramError(
                f"JobManagerCheckpointStorage: max_state_size must be a positive number of "
                f"bytes, got {max_state_size!r}"
            )
        self._max_state_size = max_state_size

    def get_checkpoint_path(self) -> Optional[str]:
        """Where checkpoint metadata is persisted as well, or None (memory only)."""
        return self._checkpoint_path

    def get_max_state_size(self) -> int:
        """The largest size, in bytes, of one state snapshot."""
        return self._max_state_size

    def _key(self) -> tuple:
        return super()._key() + (self._max_state_size,)

    def __repr__(self) -> str:
        return (
            f"JobManagerCheckpointStorage(checkpoint_path={self._checkpoint_path!r}, "
            f"max_state_size={self._max_state_size})"
        )


class FileSystemCheckpointStorage(CheckpointStorage):
    """Writes checkpoints as files below ``checkpoint_path`` (one ``chk-<n>`` folder per checkpoint).

    State smaller than the file size threshold is stored inline in the metadata file.

    Example::

        >>> env.get_checkpoint_config().set_checkpoint_storage(
        ...     FileSystemCheckpointStorage("file:///tmp/checkpoints"))
    """

    MAX_FILE_STATE_THRESHOLD = 1024 * 1024
    """The largest allowed file size threshold (1 MiB)."""

    DEFAULT_FILE_STATE_THRESHOLD = 20 * 1024
    """The file size threshold used when none is configured (20 KiB, as Flink)."""

    DEFAULT_WRITE_BUFFER_SIZE = 4 * 1024
    """The write buffer size used when none is configured (4 KiB, as Flink)."""

    config_value = "filesystem"

    def __init__(self, checkpoint_path: Optional[PathLike] = None,
                 file_state_size_threshold: Optional[int] = None,
                 write_buffer_size: int = -1) -> None:
        if checkpoint_path is None:
            raise InvalidProgramError(
                "FileSystemCheckpointStorage: checkpoint_path must not be None; give the "
                "directory checkpoints are written to, e.g. 'file:///tmp/checkpoints'"
            )
        self._checkpoint_path = _path_or_none(
            checkpoint_path, "checkpoint_path", "FileSystemCheckpointStorage"
        )
        if file_state_size_threshold is None:
            file_state_size_threshold = -1
        if isinstance(file_state_size_threshold, bool) \
                or not isinstance(file_state_size_threshold, int) \
                or not -1 <= file_state_size_threshold <= self.MAX_FILE_STATE_THRESHOLD:
            raise InvalidProgramError(
                "FileSystemCheckpointStorage: file_state_size_threshold must be in "
                f"[-1, {self.MAX_FILE_STATE_THRESHOLD}] bytes (-1: the configured default), "
                f"got {file_state_size_threshold!r}"
            )
        if isinstance(write_buffer_size, bool) or not isinstance(write_buffer_size, int) \
                or write_buffer_size < -1:
            raise InvalidProgramError(
                "FileSystemCheckpointStorage: write_buffer_size must be >= -1 bytes "
                f"(-1: the configured default), got {write_buffer_size!r}"
            )
        self._file_state_size_threshold = file_state_size_threshold
        self._write_buffer_size = write_buffer_size

    def get_checkpoint_path(self) -> str:
        """The base directory of checkpoints."""
        return self._checkpoint_path  # type: ignore[return-value]

    def get_min_file_size_threshold(self) -> int:
        """State below this size (bytes) is stored inline in the metadata instead of a file."""
        if self._file_state_size_threshold >= 0:
            return self._file_state_size_threshold
        return self.DEFAULT_FILE_STATE_THRESHOLD

    def get_write_buffer_size(self) -> int:
        """The write buffer size (bytes) of checkpoint streams."""
        if self._write_buffer_size >= 0:
            return self._write_buffer_size
        return self.DEFAULT_WRITE_BUFFER_SIZE

    def _key(self) -> tuple:
        return super()._key() + (self._file_state_size_threshold, self._write_buffer_size)

    def __repr__(self) -> str:
        return f"FileSystemCheckpointStorage('{self._checkpoint_path}')"


class CustomCheckpointStorage(CheckpointStorage):
    """A checkpoint storage chosen by its configuration value, with its own configuration keys.

    PyFlink wraps a Java object here; streamkernel keeps the name (``storage_type``) and the
    extra keys, for a storage the runtime knows by that name.
    """

    def __init__(self, storage_type: str, configuration: Optional[Mapping[str, Any]] = None) -> None:
        if not isinstance(storage_type, str) or not storage_type:
            raise InvalidProgramError(
                f"CustomCheckpointStorage: storage_type must be a non-empty str, got {storage_type!r}"
            )
        self.config_value = storage_type
        self._configuration = {str(k): str(v) for k, v in (configuration or {}).items()}

    def to_configuration(self) -> Dict[str, str]:
        """The storage type and its extra configuration keys."""
        conf = dict(self._configuration)
        conf[CHECKPOINT_STORAGE_KEY] = self.config_value
        return conf

    def _key(self) -> tuple:
        return (self.config_value, tuple(sorted(self._configuration.items())))

    def __repr__(self) -> str:
        return f"CustomCheckpointStorage('{self.config_value}')"
