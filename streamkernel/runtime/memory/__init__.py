"""Flink's memory model of the TaskManager and the JobManager, computed exactly as Flink 2.x
computes it (docs/memory.md).

* :func:`task_executor_process_spec_from_config` -> :class:`TaskExecutorProcessSpec`: framework
  heap, task heap, managed, framework off-heap, task off-heap, network, JVM metaspace and JVM
  overhead in bytes, and the managed memory of each slot;
* :func:`job_manager_process_spec_from_config` -> :class:`JobManagerProcessSpec`: JVM heap,
  off-heap, JVM metaspace and JVM overhead;
* :func:`with_default_process_size`: the process size of Flink's shipped config.yaml when no
  size is configured (Flink's calculation itself, like ``BashJavaUtils``, refuses an empty one).

Inconsistent settings raise :class:`~streamkernel.errors.IllegalConfigurationError` naming the
keys and sizes that conflict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamkernel.common.options import JobManagerMemoryOptions, TaskManagerMemoryOptions
from streamkernel.runtime.memory.jobmanager import (
    JobManagerFlinkMemory,
    JobManagerProcessSpec,
    job_manager_process_spec_from_config,
)
from streamkernel.runtime.memory.process import JvmMetaspaceAndOverhead
from streamkernel.runtime.memory.taskmanager import (
    TaskExecutorFlinkMemory,
    TaskExecutorProcessSpec,
    task_executor_process_spec_from_config,
)

__all__ = ["TaskExecutorFlinkMemory", "TaskExecutorProcessSpec", "task_executor_process_spec_from_config",
           "JobManagerFlinkMemory", "JobManagerProcessSpec", "job_manager_process_spec_from_config",
           "JvmMetaspaceAndOverhead", "with_default_process_size", "DEFAULT_PROCESS_SIZES"]

#: The process sizes of Flink 2.x's shipped conf/config.yaml.
DEFAULT_PROCESS_SIZES = {"taskmanager": "1728m", "jobmanager": "1600m"}


def with_default_process_size(configuration: Mapping[str, Any], process: str) -> dict[str, Any]:
    """``configuration`` plus Flink's shipped config.yaml's process size of ``process``
    (``"taskmanager"``: 1728m, ``"jobmanager"``: 1600m) when it sizes that process by no key at
    all (neither process nor Flink size nor the required fine-grained sizes)."""
    options: Any = TaskManagerMemoryOptions if process == "taskmanager" else JobManagerMemoryOptions
    if process not in DEFAULT_PROCESS_SIZES:
        raise ValueError(f"process must be 'taskmanager' or 'jobmanager', got {process!r}")
    fine = ((options.TASK_HEAP_MEMORY, options.MANAGED_MEMORY_SIZE) if process == "taskmanager"
            else (options.JVM_HEAP_MEMORY,))
    sized = (options.TOTAL_PROCESS_MEMORY.is_set(configuration) or options.TOTAL_FLINK_MEMORY.is_set(configuration)
             or all(option.is_set(configuration) for option in fine))
    result = dict(configuration)
    if not sized:
        result[options.TOTAL_PROCESS_MEMORY.key()] = DEFAULT_PROCESS_SIZES[process]
    return result
