"""What a TaskManager lends its tasks for checkpoints: a responder and a storage factory.

A task that took a checkpoint answers through its ``TaskServices.checkpoint_responder``
(``acknowledge`` / ``decline``, called from the task's thread); the TaskManager's
:class:`TaskCheckpointResponder` forwards the answer to the task's JobMaster (Flink's
``RpcCheckpointResponder``), which only enqueues it, so a task never waits for the JobMaster.

Where a task writes its state is ``TaskServices.checkpoint_storage``, a factory
``(job_id, configuration) -> storage`` with ``write_task_state``. :func:`task_checkpoint_storage`
is the TaskManager's: the job's checkpoint directory (the JobMaster resolved it to an
absolute path or a URL in the job's configuration; written through the same
:mod:`~streamkernel.runtime.checkpoint.filesystem` as the JobMaster's files: durably on the
local disk, through fsspec elsewhere), or, when the job asks for
``execution.checkpointing.storage: jobmanager`` (1.x ``state.checkpoint-storage``), no file
at all: the snapshot itself is the handle and the JobMaster writes it when the checkpoint
completes (Flink's JobManagerCheckpointStorage sends state to the JobManager too).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Optional

from streamkernel.common.options import CheckpointingOptions
from streamkernel.runtime.checkpoint.storage import CheckpointStorage
from streamkernel.runtime.checkpoint.checkpoint_metrics import CheckpointMetrics
from streamkernel.runtime.core.deployment import ExecutionAttemptId

__all__ = ["TaskCheckpointResponder", "InMemoryTaskStateHandover", "task_checkpoint_storage",
           "CHECKPOINT_STORAGE_KEYS"]

_LOG = logging.getLogger(__name__)

CHECKPOINT_STORAGE_KEYS = ((CheckpointingOptions.CHECKPOINT_STORAGE.key(),)
                           + CheckpointingOptions.CHECKPOINT_STORAGE.deprecated_keys())
"""Keys naming the checkpoint storage (2.x, then 1.x): ``filesystem`` (default here) or ``jobmanager``."""


class TaskCheckpointResponder:
    """Forwards a task's checkpoint answers to the JobMaster of its job.

    ``job_master_of(attempt_id)`` gives the JobMasterGateway the attempt reports to, or
    None when it is unknown here or its TaskManager plays dead (then nothing is sent).
    """

    def __init__(self, job_master_of: Callable[[ExecutionAttemptId], Optional[Any]]) -> None:
        self._job_master_of = job_master_of

    def acknowledge(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, handle: Any,
                    metrics: Optional[CheckpointMetrics] = None) -> None:
        """The task stored its state for ``checkpoint_id`` (``handle`` says where; ``metrics``: what
        it measured of its part)."""
        job_master = self._job_master_of(attempt_id)
        if job_master is None:
            return
        try:
            job_master.acknowledge_checkpoint(attempt_id, checkpoint_id, handle, metrics)
        except Exception:  # noqa: BLE001 - a JobMaster gone must not kill the task's thread
            _LOG.exception("could not acknowledge checkpoint %d of %s", checkpoint_id, attempt_id)

    def decline(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, reason: str) -> None:
        """The task could not take ``checkpoint_id``."""
        job_master = self._job_master_of(attempt_id)
        if job_master is None:
            return
        try:
            job_master.decline_checkpoint(attempt_id, checkpoint_id, reason)
        except Exception:  # noqa: BLE001
            _LOG.exception("could not decline checkpoint %d of %s", checkpoint_id, attempt_id)


class InMemoryTaskStateHandover:
    """``execution.checkpointing.storage: jobmanager``: nothing is written by the task; the
    snapshot is handed to the JobMaster as the acknowledgement's handle."""

    def write_task_state(self, checkpoint_id: int, vertex_id: int, subtask_index: int, snapshot: dict) -> dict:
        """The snapshot itself (the JobMaster writes it when the checkpoint completes)."""
        return snapshot


def task_checkpoint_storage(job_id: str, configuration: Mapping[str, Any]) -> Any:
    """The storage a task of ``job_id`` writes its checkpoint state to (see the module docstring)."""
    kind = CheckpointingOptions.CHECKPOINT_STORAGE.get(configuration) or "filesystem"
    if kind.strip().lower() == "jobmanager":
        return InMemoryTaskStateHandover()
    return CheckpointStorage.from_configuration(job_id, configuration)
