"""The ``local`` backend: TaskManagers as objects in the kernel's own process.

Nothing is started but the TaskExecutor objects: their tasks are threads of this process,
and all of them share one in-process shuffle environment, so a channel between two
TaskManagers is a queue like any other. This is the default backend: no JVM, no child
process, a cluster starts instantly.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Optional

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
                             configuration: Optional[Mapping[str, str]] = None) -> list[TaskExecutor]:
    """Create ``count`` TaskExecutors in this process and register each with the ResourceManager.

    Every TaskManager gets its own working directory under ``working_dir`` and shares
    ``shuffle`` and ``clock`` with the others. Given the cluster's ``configuration``, each measures
    the process's memory against its ``taskmanager.memory.process.size`` (never enforced: the
    process is the kernel's) and reports it in its heartbeats, has its own network buffers (its
    network memory / segment size) that its tasks reserve at deployment, and gives each slot its
    share of the managed memory (Flink's defaults without a configuration).
    """
    from streamkernel.runtime.memory.memory_manager import managed_memory_per_slot
    from streamkernel.runtime.network.buffer_pool import network_buffer_pool_from_config
    from streamkernel.runtime.taskmanager.memory_watchdog import ProcessMemoryWatchdog, taskmanager_process_spec
    from streamkernel.runtime.tasks.task import TaskServices  # lazy: the Task pulls in the operators

    started: list[TaskExecutor] = []
    for index in range(first_index, first_index + count):
        taskmanager_id = local_taskmanager_id(index)
        directory = os.path.join(working_dir, taskmanager_id)
        os.makedirs(directory, exist_ok=True)
        spec = None if configuration is None else taskmanager_process_spec(configuration)  # once per TaskManager
        pool = None if spec is None else network_buffer_pool_from_config(configuration or {}, spec)
        services = TaskServices(shuffle=shuffle, clock=clock, taskmanager_id=taskmanager_id, working_dir=directory,
                                network_buffer_pool=pool)
        managed = (managed_memory_per_slot({}, slots_per_taskmanager) if spec is None
                   else spec.flink_memory.managed.divide(max(1, slots_per_taskmanager)).get_bytes())
        taskmanager = TaskExecutor(taskmanager_id, slots_per_taskmanager, services, task_factory,
                                   managed_memory_per_slot=managed, configuration=configuration)
        if configuration is not None and spec is not None:
            taskmanager.memory_watchdog = ProcessMemoryWatchdog(taskmanager_id, spec, configuration, enforce=False)
            taskmanager.memory_watchdog.attach(taskmanager)  # its baseline: the kernel's process now
        taskmanager.register_at(resource_manager)
        started.append(taskmanager)
    return started
