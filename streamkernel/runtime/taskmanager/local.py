"""The ``local`` backend: TaskManagers as objects in the kernel's own process.

Nothing is started but the TaskExecutor objects: their tasks are threads of this process,
and all of them share one in-process shuffle environment, so a channel between two
TaskManagers is a queue like any other. This is the default backend: no JVM, no child
process, a cluster starts instantly.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional

from streamkernel.runtime.core.clock import Clock
from streamkernel.runtime.taskmanager.task_executor import TaskExecutor, TaskFactory

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway

__all__ = ["start_local_taskmanagers", "local_taskmanager_id"]


def local_taskmanager_id(index: int) -> str:
    """The id of the ``index``-th (from 0) local TaskManager: ``"taskmanager-1"`` ..."""
    return f"taskmanager-{index + 1}"


def start_local_taskmanagers(count: int, slots_per_taskmanager: int, resource_manager: ResourceManagerGateway, *,
                             shuffle: Any, clock: Clock, working_dir: str, first_index: int = 0,
                             task_factory: Optional[TaskFactory] = None,
                             network_buffers: Optional[tuple[int, int]] = None) -> list[TaskExecutor]:
    """Create ``count`` TaskExecutors in this process and register each with the ResourceManager.

    Every TaskManager gets its own working directory under ``working_dir`` and shares
    ``shuffle`` and ``clock`` with the others. ``network_buffers``: ``(buffers, segment size)``
    of each TaskManager's own NetworkBufferPool (None: buffers are not accounted).
    """
    from streamkernel.runtime.network.buffer_pool import NetworkBufferPool
    from streamkernel.runtime.tasks.task import TaskServices  # lazy: the Task pulls in the operators

    started: list[TaskExecutor] = []
    for index in range(first_index, first_index + count):
        taskmanager_id = local_taskmanager_id(index)
        directory = os.path.join(working_dir, taskmanager_id)
        os.makedirs(directory, exist_ok=True)
        pool = None if network_buffers is None else NetworkBufferPool(*network_buffers)
        services = TaskServices(shuffle=shuffle, clock=clock, taskmanager_id=taskmanager_id, working_dir=directory,
                                network_buffer_pool=pool)
        taskmanager = TaskExecutor(taskmanager_id, slots_per_taskmanager, services, task_factory)
        taskmanager.register_at(resource_manager)
        started.append(taskmanager)
    return started
