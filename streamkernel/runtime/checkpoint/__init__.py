"""Checkpoints on the JobManager's side: deciding, storing, restoring (no running task needed).

* :mod:`.coordinator`: the :class:`CheckpointCoordinator`, a pure state machine (events
  in, actions out) that triggers checkpoints, collects acknowledgements, completes, aborts
  and fails the job after too many failures; :mod:`.actions` are its outputs,
  :mod:`.settings` its configuration and :class:`CheckpointPlan`.
* :mod:`.storage`, :mod:`.metadata`, :mod:`.files`: a directory per job, a folder per
  checkpoint, atomic files with checksums, retention, savepoints, validation on load.
* :mod:`.restore`: the restored state of each subtask of a (possibly rescaled) job.
* :mod:`.history`: checkpoint statistics for ``%flink checkpoints`` and widgets.

The task's side (snapshotting an operator chain, barriers) lives in
:mod:`streamkernel.runtime.tasks.task_checkpoint` and :mod:`streamkernel.runtime.tasks.barriers`; the
public reader of checkpoint contents in :mod:`streamkernel.state`.
"""

from __future__ import annotations

from streamkernel.runtime.checkpoint.coordinator import (
    AbortCheckpoint,
    CheckpointAction,
    CheckpointCoordinator,
    CheckpointCoordinatorConfiguration,
    CheckpointPlan,
    CompleteCheckpoint,
    DiscardState,
    FailJob,
    NotifyCheckpointComplete,
    PendingCheckpoint,
    TriggerCheckpoint,
    TriggerRejected,
)
from streamkernel.runtime.checkpoint.history import (
    CheckpointStats,
    CheckpointStatsHistory,
    CheckpointStatsSnapshot,
    CheckpointStatus,
    RestoredCheckpointStats,
    SubtaskCheckpointStats,
)
from streamkernel.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    CompletedCheckpoint,
    JobCheckpointInfo,
    OperatorMetadata,
    VertexMetadata,
)
from streamkernel.runtime.checkpoint.restore import (
    assign_restored_state,
    ignore_unclaimed_state,
    recovery_path,
)
from streamkernel.runtime.checkpoint.storage import (
    CheckpointStorage,
    SkippedCheckpoint,
    StateHandle,
    load_checkpoint,
    resolve_checkpoint_dir,
    resolve_savepoint_dir,
)

__all__ = [
    "AbortCheckpoint",
    "CheckpointAction",
    "CheckpointCoordinator",
    "CheckpointCoordinatorConfiguration",
    "CheckpointPlan",
    "CompleteCheckpoint",
    "DiscardState",
    "FailJob",
    "NotifyCheckpointComplete",
    "PendingCheckpoint",
    "TriggerCheckpoint",
    "TriggerRejected",
    "CheckpointStats",
    "CheckpointStatsHistory",
    "CheckpointStatsSnapshot",
    "CheckpointStatus",
    "RestoredCheckpointStats",
    "SubtaskCheckpointStats",
    "CheckpointMetadata",
    "CompletedCheckpoint",
    "JobCheckpointInfo",
    "OperatorMetadata",
    "VertexMetadata",
    "assign_restored_state",
    "ignore_unclaimed_state",
    "recovery_path",
    "CheckpointStorage",
    "SkippedCheckpoint",
    "StateHandle",
    "load_checkpoint",
    "resolve_checkpoint_dir",
    "resolve_savepoint_dir",
]
