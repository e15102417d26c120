"""TaskManagers: the workers that run subtasks in task slots, and the gateways to reach them.

One TaskManager implementation for every backend; only how it starts and how it is
reached differ (``docs/architecture.md``, "Scale out").

* :mod:`.gateway`: the narrow protocols every component talks through
  (TaskExecutorGateway, JobMasterGateway, ResourceManagerGateway) and their messages.
* :class:`TaskExecutor`: the TaskManager itself, the same for every backend.
* :mod:`.checkpoint_responder`: how tasks acknowledge checkpoints to their JobMaster and
  where they write their state.
* :mod:`.local`: the ``local`` backend, TaskManagers as objects of this process.
* :mod:`.remote`: TaskManagers in other processes seen from the JobManager (RPC listener,
  registration, loss, replacement, stop) around a :mod:`.launcher`:
  :mod:`.process` (child processes) or :mod:`.spark` (long-running Spark tasks, hosted by
  :mod:`.spark_host`, tracked by :mod:`.spark_hosts`, ended by :mod:`.spark_stop`; the
  session from :mod:`.spark_session`, slots checked by :mod:`.spark_resources`).
* :mod:`.worker`: the entry point a child process or a Spark task runs; with
  :mod:`.forwarding` and :mod:`.driver_services` for output and the collect and pandas
  sinks that live in the driver.

Importing this package does not import pyspark (only :mod:`.spark` does, when chosen).
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
