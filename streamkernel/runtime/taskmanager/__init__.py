"""TaskManagers: the workers that run subtasks in task slots, and the gateways to reach them.

* :mod:`.gateway`: the narrow protocols every component talks through
  (TaskExecutorGateway, JobMasterGateway, ResourceManagerGateway) and their messages.
* :class:`TaskExecutor`: the TaskManager itself, the same for every backend.
* :mod:`.local`: the ``local`` backend, TaskManagers as objects of this process.
* :mod:`.checkpoint_responder`: how tasks acknowledge checkpoints to their JobMaster and
  where they write their state.
"""

from __future__ import annotations

from streamkernel.runtime.taskmanager.checkpoint_responder import TaskCheckpointResponder, task_checkpoint_storage
from streamkernel.runtime.taskmanager.gateway import (
    AllocatedSlot,
    JobMasterGateway,
    ResourceManagerGateway,
    SlotReport,
    SlotStatus,
    TaskExecutionState,
    TaskExecutorGateway,
    TaskExecutorHeartbeat,
    TaskExecutorRegistration,
    TaskExecutorStoppedError,
    TaskStatus,
)
from streamkernel.runtime.taskmanager.local import local_taskmanager_id, start_local_taskmanagers
from streamkernel.runtime.taskmanager.task_executor import TaskExecutor, TaskFactory

__all__ = [
    "AllocatedSlot",
    "JobMasterGateway",
    "ResourceManagerGateway",
    "SlotReport",
    "SlotStatus",
    "TaskExecutionState",
    "TaskExecutorGateway",
    "TaskExecutorHeartbeat",
    "TaskExecutorRegistration",
    "TaskExecutorStoppedError",
    "TaskStatus",
    "TaskExecutor",
    "TaskFactory",
    "start_local_taskmanagers",
    "local_taskmanager_id",
    "TaskCheckpointResponder",
    "task_checkpoint_storage",
]
