"""Checkpoint storage: a directory per job, a folder per checkpoint (Flink's ``FsCheckpointStorageAccess``).

Layout::

    <checkpoint dir>/<job id>/chk-<n>/<vertex id>-<subtask>.state   one pickled task snapshot per subtask
    <checkpoint dir>/<job id>/chk-<n>/_metadata                     JSON, written last
    <savepoint dir>/savepoint-<job id prefix>-<random>/...          the same layout

The directories may be local paths, ``file://`` URLs or any URL fsspec can write
(``memory://``, ``s3://`` ...; :mod:`.filesystem`). Locally every file is written under a
temporary name, fsynced and renamed (:mod:`.files`); elsewhere in one write. A
checkpoint directory is complete only once its ``_metadata`` exists, and its state files
must match the sizes and SHA-256 checksums recorded there. :meth:`CheckpointStorage.latest_completed`
skips a torn or corrupt checkpoint (missing metadata, a missing, truncated or modified
file), falls back to the previous complete one and keeps the reasons in
:attr:`CheckpointStorage.skipped_checkpoints` for the JobMaster to tell the user. A local
directory of the storage that became a file while the job ran (the base directory or the
job's) fails writing, listing and restoring with :class:`~streamkernel.errors.CheckpointStorageError`
naming the directory and its configuration key, not the operating system's ``[Errno 20]``.

Tasks write their state files directly (``write_task_state``); the JobMaster, once every
subtask acknowledged, writes the metadata (``finalize``) — or, for a savepoint, moves the
files into the savepoint directory and writes its metadata there (``write_savepoint``).
Completed checkpoints beyond ``execution.checkpointing.num-retained`` (default 1) are
deleted; savepoints never are. Handles may also be task snapshots handed over in memory
(tasks without storage): ``finalize`` writes those files itself.

Deviation from Flink: ``execution.checkpointing.storage: jobmanager`` also ends up on disk
here (the JobMaster writes the snapshots it received), so such checkpoints are restorable
after the kernel restarts; without a configured directory, checkpoints go to
``./checkpoints`` and savepoints to ``./savepoints`` under the current working directory
(the notebook's), where Flink would refuse a savepoint without a directory.
"""

from __future__ import annotations

import os
import pickle
import re
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional, Union

from streamkernel.common.config_options import ConfigOption
from streamkernel.common.options import CheckpointingOptions
from streamkernel.errors import CheckpointCorruptedError, CheckpointStorageError, IllegalConfigurationError
from streamkernel.runtime.checkpoint import filesystem as fs
from streamkernel.runtime.checkpoint.channel_state import snapshot_channel_stats
from streamkernel.runtime.checkpoint.metadata import (
    METADATA_FILE,
    CheckpointMetadata,
    CompletedCheckpoint,
    FileMetadata,
    JobCheckpointInfo,
    state_file_name,
)

__all__ = [
    "StateHandle",
    "SkippedCheckpoint",
    "CheckpointStorage",
    "load_checkpoint",
    "resolve_checkpoint_dir",
    "resolve_savepoint_dir",
    "CHECKPOINTS_DIRECTORY",
    "SAVEPOINT_DIRECTORY",
    "NUM_RETAINED",
    "DEFAULT_CHECKPOINT_DIR",
    "DEFAULT_SAVEPOINT_DIR",
]



def _keys(option: ConfigOption[Any]) -> tuple[str, ...]:
    return (option.key(),) + option.deprecated_keys()


CHECKPOINTS_DIRECTORY = _keys(CheckpointingOptions.CHECKPOINTS_DIRECTORY)
"""Keys of the checkpoint base directory (2.x, then 1.x)."""
SAVEPOINT_DIRECTORY = _keys(CheckpointingOptions.SAVEPOINT_DIRECTORY)
"""Keys of the default savepoint directory (2.x, then 1.x)."""
NUM_RETAINED = _keys(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS)
"""Keys of how many completed checkpoints are kept (default 1)."""
DEFAULT_CHECKPOINT_DIR = "checkpoints"
"""Checkpoints go to this directory under the working directory when none is configured."""
DEFAULT_SAVEPOINT_DIR = "savepoints"
"""Savepoints go to this directory under the working directory when none is given or configured."""

_CHECKPOINT_DIR = re.compile(r"^chk-(\d+)$")
SubtaskKey = tuple[int, int]
PathLike = Union[str, "os.PathLike[str]"]


def _configured(conf: Mapping[str, Any], option: ConfigOption[str], default: str) -> tuple[str, str]:
    """(the key the user set it with, the value); the option's key naming the default when none
    is set (an empty value counts as unset). The user's key is the Flink 1.x one when the 2.x
    key holds the same value: the environment writes a 1.x key again under its 2.x name
    (``state.checkpoints.dir`` as ``execution.checkpointing.dir``) and keeps the user's."""
    set_keys = {k: conf[k] for k in _keys(option) if conf.get(k) not in (None, "")}
    if not set_keys:
        return option.key(), default
    return option.source_key(set_keys), str(option.get(set_keys))


def resolve_checkpoint_dir(conf: Mapping[str, Any]) -> str:
    """The checkpoint base directory: ``execution.checkpointing.dir`` (or 1.x
    ``state.checkpoints.dir``), else ``./checkpoints``; a local one made absolute.

    Resolve it once in the JobManager and hand it to the TaskManagers, so they all write
    where the JobManager reads, whatever their working directory. Raises
    IllegalConfigurationError naming the key for a location checkpoints cannot go to
    (:func:`.filesystem.check_location`: an unknown or uninstalled scheme, a regular file).
    """
    key, value = _configured(conf, CheckpointingOptions.CHECKPOINTS_DIRECTORY, DEFAULT_CHECKPOINT_DIR)
    return fs.check_location(value, key)


def resolve_savepoint_dir(conf: Mapping[str, Any], target_dir: Optional[PathLike] = None) -> str:
    """Where a savepoint goes: ``target_dir``, else ``execution.checkpointing.savepoint-dir``
    (1.x ``state.savepoints.dir``), else ``./savepoints``; checked as :func:`resolve_checkpoint_dir`,
    and ``target_dir``, a person's choice for this savepoint, as :func:`.filesystem.check_target_directory`
    (its length, its characters, that it can be written)."""
    if target_dir is not None:
        return fs.check_target_directory(target_dir, "savepoint target directory")
    key, value = _configured(conf, CheckpointingOptions.SAVEPOINT_DIRECTORY, DEFAULT_SAVEPOINT_DIR)
    return fs.check_location(value, key)


@dataclass(frozen=True)
class StateHandle:
    """Where a subtask's state for one checkpoint was written (Flink's ``StreamStateHandle``):
    the file, its size and its SHA-256; ``unaligned`` / ``persisted_data``: whether the
    subtask took the checkpoint unaligned and the bytes of in-flight records it stored."""

    path: str
    size: int
    sha256: str
    unaligned: bool = False
    persisted_data: int = 0


@dataclass(frozen=True)
class SkippedCheckpoint:
    """A checkpoint directory that recovery refused, and why."""

    checkpoint_id: int
    path: str
    reason: str

    def __str__(self) -> str:
        return f"checkpoint {self.checkpoint_id} ({self.path}) skipped: {self.reason}"


class CheckpointStorage:
    """The checkpoints of one job below ``base_dir`` (see the module docstring).

    >>> import tempfile
    >>> storage = CheckpointStorage(tempfile.mkdtemp(), "job-1")
    >>> storage.latest_completed() is None
    True
    """

    def __init__(self, base_dir: PathLike, job_id: str, num_retained: int = 1,
                 directory_key: str = CHECKPOINTS_DIRECTORY[0]) -> None:
        if num_retained < 1:
            raise IllegalConfigurationError(
                f"{NUM_RETAINED[0]}: at least one completed checkpoint must be retained, got {num_retained}")
        self.base_dir = fs.normalize(base_dir)
        self.job_id = str(job_id)
        self.num_retained = num_retained
        #: the configuration key ``base_dir`` came from, named in errors about it
        self.directory_key = directory_key
        #: the checkpoints the last ``latest_completed`` refused (newest first), with reasons
        self.skipped_checkpoints: list[SkippedCheckpoint] = []

    @classmethod
    def from_configuration(cls, job_id: str, conf: Mapping[str, Any]) -> "CheckpointStorage":
        """A job's storage as configured (directory and ``execution.checkpointing.num-retained``);
        also the ``(job_id, configuration) -> storage`` factory tasks use."""
        set_keys = {k: conf[k] for k in NUM_RETAINED if conf.get(k) not in (None, "")}  # "": unset
        key, _ = _configured(conf, CheckpointingOptions.CHECKPOINTS_DIRECTORY, DEFAULT_CHECKPOINT_DIR)
        return cls(resolve_checkpoint_dir(conf), job_id, CheckpointingOptions.MAX_RETAINED_CHECKPOINTS.get(set_keys),
                   key)

    @property
    def job_dir(self) -> str:
        """``<base dir>/<job id>``: every checkpoint of the job lives below it."""
        return fs.join(self.base_dir, self.job_id)

    def checkpoint_dir(self, checkpoint_id: int) -> str:
        """``<base dir>/<job id>/chk-<n>``."""
        return fs.join(self.job_dir, f"chk-{checkpoint_id}")

    # ------------------------------------------------------------------ writing
    def write_task_state(self, checkpoint_id: int, vertex_id: int, subtask_index: int, snapshot: dict) -> StateHandle:
        """Write one subtask's snapshot (atomically) into ``chk-<n>``; called by the task."""
        directory = self.checkpoint_dir(checkpoint_id)
        path = fs.join(directory, state_file_name(vertex_id, subtask_index))
        try:
            with self._directory_in_use(directory):
                fs.makedirs(directory)
                size, sha256 = fs.write_pickle(path, snapshot)
        except (pickle.PicklingError, TypeError, AttributeError) as error:  # say whose state it was
            raise TypeError(f"checkpoint {checkpoint_id}: the state of subtask {subtask_index} of vertex "
                            f"{vertex_id} cannot be pickled: {error}") from error
        unaligned, persisted = snapshot_channel_stats(snapshot)
        return StateHandle(path, size, sha256, unaligned, persisted)

    def finalize(self, checkpoint_id: int, handles: Mapping[SubtaskKey, Any], job_info: JobCheckpointInfo,
                 *, timestamp: Optional[int] = None, apply_retention: bool = True) -> CompletedCheckpoint:
        """Complete checkpoint ``checkpoint_id``: write its ``_metadata`` (last, atomically), then
        delete completed checkpoints beyond the retained number (``apply_retention`` False: the
        caller does, with :meth:`apply_retention`, once the checkpoint is recorded elsewhere: with
        high availability an older checkpoint is deleted only after ZooKeeper points past it)."""
        directory = self.checkpoint_dir(checkpoint_id)
        with self._directory_in_use(directory):
            fs.makedirs(directory)
            files = [self._place(directory, checkpoint_id, subtask, handle, move=False)
                     for subtask, handle in sorted(handles.items())]
            completed = self._write_metadata(directory, checkpoint_id, files, job_info, timestamp, False)
        if apply_retention:
            self.apply_retention()
        return completed

    def write_savepoint(self, target_dir: Optional[PathLike], checkpoint_id: int, handles: Mapping[SubtaskKey, Any],
                        job_info: JobCheckpointInfo, *, timestamp: Optional[int] = None,
                        conf: Optional[Mapping[str, Any]] = None) -> CompletedCheckpoint:
        """Complete savepoint ``checkpoint_id`` in ``<target dir>/savepoint-<job id prefix>-<random>/``:
        the subtasks' files move there from ``chk-<n>``, then ``_metadata`` is written.

        ``target_dir`` None: the configured savepoint directory (``conf``), else ``./savepoints``.
        """
        base = resolve_savepoint_dir(conf or {}, target_dir)
        directory = fs.join(base, f"savepoint-{self.job_id[:6]}-{uuid.uuid4().hex[:12]}")
        fs.makedirs(directory, exist_ok=False)
        files = [self._place(directory, checkpoint_id, subtask, handle, move=True)
                 for subtask, handle in sorted(handles.items())]
        completed = self._write_metadata(directory, checkpoint_id, files, job_info, timestamp, True)
        self.discard(checkpoint_id)  # the staging folder the tasks wrote into
        return completed

    def _place(self, directory: str, checkpoint_id: int, subtask: SubtaskKey, handle: Any,
               move: bool) -> Optional[FileMetadata]:
        """The file of one subtask in ``directory``: written now for an in-memory snapshot,
        moved there (savepoints), or checked to be there already (checkpoints)."""
        vertex_id, subtask_index = subtask
        name = state_file_name(vertex_id, subtask_index)
        target = fs.join(directory, name)
        if handle is None:
            return None
        if isinstance(handle, dict):  # a snapshot handed over in memory
            size, sha256 = fs.write_pickle(target, handle)
            return FileMetadata(vertex_id, subtask_index, name, size, sha256)
        if not isinstance(handle, StateHandle):
            raise TypeError(f"checkpoint {checkpoint_id}: subtask {subtask_index} of vertex {vertex_id} "
                            f"acknowledged with a {type(handle).__name__}, not a StateHandle or a snapshot")
        source = handle.path
        if not fs.same_path(source, target):
            if not move:
                raise IllegalConfigurationError(
                    f"checkpoint {checkpoint_id}: subtask {subtask_index} of vertex {vertex_id} wrote its state to "
                    f"{source}, outside the checkpoint directory {directory}; the TaskManagers and the "
                    "JobManager must share the checkpoint directory (set execution.checkpointing.dir to an "
                    "absolute path they all see)")
            fs.move(source, target, handle.size, handle.sha256)
        return FileMetadata(vertex_id, subtask_index, name, handle.size, handle.sha256)

    def _write_metadata(self, directory: str, checkpoint_id: int, files: list, job_info: JobCheckpointInfo,
                        timestamp: Optional[int], is_savepoint: bool) -> CompletedCheckpoint:
        metadata = CheckpointMetadata(
            job_id=self.job_id, job_name=job_info.job_name, checkpoint_id=checkpoint_id,
            timestamp=int(time.time() * 1000) if timestamp is None else timestamp, is_savepoint=is_savepoint,
            operators=dict(job_info.operators), vertices=dict(job_info.vertices),
            files=tuple(f for f in files if f is not None))
        data = metadata.to_json().encode("utf-8")
        fs.write_bytes(fs.join(directory, METADATA_FILE), data)
        return CompletedCheckpoint(directory, metadata, len(data))

    # ------------------------------------------------------------------ reading
    def checkpoint_ids(self) -> list[int]:
        """The ids of every ``chk-<n>`` folder of the job (complete or not), newest first."""
        with self._directory_in_use(self.job_dir):
            names = fs.listdir(self.job_dir)
        return sorted((int(m.group(1)) for m in map(_CHECKPOINT_DIR.match, names) if m), reverse=True)

    def max_checkpoint_id(self) -> int:
        """The highest checkpoint id used in the job's directory (0: none); a new coordinator
        should start after it so that no id is reused."""
        ids = self.checkpoint_ids()
        return ids[0] if ids else 0

    def latest_completed(self) -> Optional[CompletedCheckpoint]:
        """The newest checkpoint whose metadata parses and whose files all match it, or None.

        Newer checkpoints that fail these checks are skipped and listed, with the reason,
        in :attr:`skipped_checkpoints`.
        """
        found, self.skipped_checkpoints = _latest_valid(self.job_dir, self.checkpoint_ids())
        return found

    def load(self, path_or_checkpoint: Union[PathLike, CompletedCheckpoint]) -> CompletedCheckpoint:
        """A checkpoint or savepoint, validated: see :func:`load_checkpoint`."""
        return load_checkpoint(path_or_checkpoint)

    # ------------------------------------------------------------------ deleting
    def discard(self, checkpoint_id: int) -> None:
        """Delete ``chk-<n>`` (an aborted checkpoint, or a savepoint's staging folder)."""
        fs.rmtree(self.checkpoint_dir(checkpoint_id))

    def discard_state(self, handle: Any) -> None:
        """Delete one state file written for an aborted checkpoint (a late acknowledgement),
        and its folder if that leaves it empty and without metadata."""
        if not isinstance(handle, StateHandle):
            return
        try:
            fs.remove(handle.path)
        except OSError:
            return
        fs.remove_empty_dir(fs.dirname(handle.path))

    def apply_retention(self) -> None:
        """Keep the newest ``num_retained`` completed checkpoints; delete older completed ones.

        Folders without metadata are left alone: they may belong to a checkpoint (or a
        savepoint being staged) still in progress; aborted ones are discarded by the JobMaster.
        """
        completed = [cid for cid in self.checkpoint_ids()
                     if fs.exists(fs.join(self.checkpoint_dir(cid), METADATA_FILE))]
        for checkpoint_id in completed[self.num_retained:]:
            self.discard(checkpoint_id)

    def on_job_end(self, status: Any, retention: Any) -> list[str]:
        """The job reached a terminal status: delete its checkpoints if the externalized
        checkpoint retention says so (Flink's rules); returns the deleted folders.

        ``NO_EXTERNALIZED_CHECKPOINTS`` deletes them whenever the job ends;
        ``DELETE_ON_CANCELLATION`` keeps them when the job FAILED (or was suspended);
        ``RETAIN_ON_CANCELLATION`` deletes them only when the job FINISHED. Savepoints are
        never deleted.
        """
        status_name = getattr(status, "name", str(status)).upper()
        retention_name = getattr(retention, "name", str(retention)).upper()
        keep_on = {"NO_EXTERNALIZED_CHECKPOINTS": set(),
                   "DELETE_ON_CANCELLATION": {"FAILED", "SUSPENDED"},
                   "RETAIN_ON_CANCELLATION": {"FAILED", "SUSPENDED", "CANCELED"}}
        if retention_name not in keep_on:
            raise IllegalConfigurationError(f"on_job_end: unknown externalized checkpoint retention {retention!r}")
        if status_name not in ("FINISHED", "CANCELED", "FAILED", "SUSPENDED") or status_name in keep_on[retention_name]:
            return []
        deleted = []
        for checkpoint_id in self.checkpoint_ids():
            self.discard(checkpoint_id)
            deleted.append(self.checkpoint_dir(checkpoint_id))
        fs.remove_empty_dir(self.job_dir)
        return deleted

    # ------------------------------------------------------------------ errors
    @contextmanager
    def _directory_in_use(self, path: str) -> Iterator[None]:
        """Work below ``path``: an OSError there becomes a CheckpointStorageError naming the directory
        and :attr:`directory_key` when a directory on the way is a file now (else it passes unchanged)."""
        try:
            yield
        except OSError as error:
            problem = None if isinstance(error, CheckpointStorageError) else self._not_a_directory(path)
            if problem is None:
                raise
            raise problem from None

    def _not_a_directory(self, path: str) -> Optional[CheckpointStorageError]:
        """The error about the first of the base directory, the job's directory ... down to ``path``
        that exists and is not a directory (local storage only), or None."""
        if not fs.is_local(self.base_dir):
            return None
        relative = os.path.relpath(fs.normalize(path), self.base_dir)
        parts = [] if relative == "." or relative.startswith("..") else relative.split(os.sep)
        candidate = self.base_dir
        for part in [""] + parts:
            candidate = os.path.join(candidate, part) if part else candidate
            if os.path.lexists(candidate) and not os.path.isdir(candidate):
                where = (f"({self.directory_key})" if candidate == self.base_dir
                         else f"(below {self.directory_key} '{self.base_dir}')")
                return CheckpointStorageError(
                    f"The checkpoint directory '{candidate}' {where} is no longer a directory: a file is there now, "
                    f"so the checkpoints of job {self.job_id} can be neither written, restored nor cleaned up; "
                    f"remove the file (the checkpoints it replaced are gone) or set {self.directory_key} to "
                    "another directory")
        return None

    def __repr__(self) -> str:
        return f"CheckpointStorage({self.job_dir!r}, num_retained={self.num_retained})"


def _validated(directory: str) -> CompletedCheckpoint:
    """The completed checkpoint in ``directory`` with every file checked; raises CheckpointCorruptedError."""
    metadata_path = fs.join(directory, METADATA_FILE)
    try:
        text = fs.read_bytes(metadata_path).decode("utf-8")
    except FileNotFoundError:
        raise CheckpointCorruptedError(
            metadata_path, "is missing: the checkpoint never completed (a crash or failure while it was "
                           "written), so its state files are not a consistent checkpoint") from None
    except (OSError, UnicodeDecodeError) as error:
        raise CheckpointCorruptedError(metadata_path, f"cannot be read ({error})") from None
    completed = CompletedCheckpoint(directory, CheckpointMetadata.from_json(text, metadata_path),
                                    len(text.encode("utf-8")))
    match = _CHECKPOINT_DIR.match(fs.basename(directory))
    if match and int(match.group(1)) != completed.checkpoint_id:
        raise CheckpointCorruptedError(
            metadata_path, f"describes checkpoint {completed.checkpoint_id}, not {match.group(1)}")
    completed.verify()
    return completed


def _latest_valid(job_dir: str, checkpoint_ids: list[int]) -> tuple[Optional[CompletedCheckpoint],
                                                                     list[SkippedCheckpoint]]:
    skipped: list[SkippedCheckpoint] = []
    for checkpoint_id in checkpoint_ids:
        directory = fs.join(job_dir, f"chk-{checkpoint_id}")
        try:
            return _validated(directory), skipped
        except CheckpointCorruptedError as error:
            skipped.append(SkippedCheckpoint(checkpoint_id, directory, str(error)))
    return None, skipped


def load_checkpoint(path_or_checkpoint: Union[PathLike, CompletedCheckpoint]) -> CompletedCheckpoint:
    """A checkpoint or savepoint to restore or read, validated (metadata and every file's
    size and checksum).

    Accepts a ``chk-<n>`` or savepoint directory, its ``_metadata`` file, a job's
    checkpoint directory (``<checkpoint dir>/<job id>``: its latest valid checkpoint), or a
    :class:`CompletedCheckpoint`. Raises :class:`FileNotFoundError` when nothing is there
    and :class:`CheckpointCorruptedError`, naming the file and what is wrong, otherwise.
    """
    if isinstance(path_or_checkpoint, CompletedCheckpoint):
        return _validated(path_or_checkpoint.path)
    path = fs.check_location(path_or_checkpoint, "checkpoint or savepoint path", directory=False)
    if fs.basename(path) == METADATA_FILE and fs.exists(path) and not fs.isdir(path):
        path = fs.dirname(path)
    if not fs.isdir(path):
        raise FileNotFoundError(f"no checkpoint or savepoint at {path}")
    if fs.exists(fs.join(path, METADATA_FILE)):
        return _validated(path)
    ids = sorted((int(m.group(1)) for m in map(_CHECKPOINT_DIR.match, fs.listdir(path)) if m), reverse=True)
    if not ids:
        return _validated(path)  # raises: no _metadata here
    found, skipped = _latest_valid(path, ids)
    if found is None:
        raise CheckpointCorruptedError(path, "holds no restorable checkpoint: "
                                             + "; ".join(s.reason for s in skipped))
    return found
