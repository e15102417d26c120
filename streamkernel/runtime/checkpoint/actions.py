"""What the :class:`~streamkernel.runtime.checkpoint.coordinator.CheckpointCoordinator` asks its driver to do.

Plain frozen dataclasses, one per kind of instruction; the coordinator's event methods
return lists of them and the driver (the JobMaster) carries them out in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

__all__ = [
    "SubtaskKey",
    "TriggerCheckpoint",
    "CompleteCheckpoint",
    "NotifyCheckpointComplete",
    "AbortCheckpoint",
    "DiscardState",
    "TriggerRejected",
    "FailJob",
    "CheckpointAction",
]

#: A subtask: (job vertex id, subtask index), as the scheduler names it.
SubtaskKey = tuple[int, int]


@dataclass(frozen=True)
class TriggerCheckpoint:
    """Tell the ``targets`` (source subtasks) to take checkpoint ``checkpoint_id`` now;
    ``synchronous``/``drain``: the savepoint of a stop-with-savepoint (see ``CheckpointBarrier``)."""

    checkpoint_id: int
    timestamp: int
    is_savepoint: bool
    targets: tuple[SubtaskKey, ...]
    target_dir: Optional[str] = None
    synchronous: bool = False
    drain: bool = False


@dataclass(frozen=True)
class CompleteCheckpoint:
    """Every subtask acknowledged: write the metadata (``storage.finalize``, or
    ``storage.write_savepoint(target_dir, ...)`` for a savepoint), then report back with
    ``finalized`` or ``finalize_failed``. ``handles`` maps each subtask to what it acknowledged."""

    checkpoint_id: int
    timestamp: int
    is_savepoint: bool
    handles: Mapping[SubtaskKey, Any]
    target_dir: Optional[str] = None


@dataclass(frozen=True)
class NotifyCheckpointComplete:
    """Checkpoint ``checkpoint_id`` is complete: tell the ``targets`` (every running subtask)."""

    checkpoint_id: int
    targets: tuple[SubtaskKey, ...]


@dataclass(frozen=True)
class AbortCheckpoint:
    """Checkpoint ``checkpoint_id`` failed: discard its stored state, tell the ``targets``;
    a savepoint's requester learns ``reason``. ``synchronous``: a stop-with-savepoint's, whose
    tasks wait for its outcome (they are told, and resume)."""

    checkpoint_id: int
    reason: str
    is_savepoint: bool
    targets: tuple[SubtaskKey, ...]
    synchronous: bool = False


@dataclass(frozen=True)
class DiscardState:
    """A subtask acknowledged checkpoint ``checkpoint_id`` after it was aborted: delete ``handle``."""

    checkpoint_id: int
    subtask: SubtaskKey
    handle: Any


@dataclass(frozen=True)
class TriggerRejected:
    """A requested checkpoint or savepoint could not start (no id was assigned)."""

    reason: str
    is_savepoint: bool
    target_dir: Optional[str] = None


@dataclass(frozen=True)
class FailJob:
    """Too many consecutive checkpoint failures: fail the job (its restart strategy decides)."""

    reason: str


CheckpointAction = Union[TriggerCheckpoint, CompleteCheckpoint, NotifyCheckpointComplete, AbortCheckpoint,
                         DiscardState, TriggerRejected, FailJob]
