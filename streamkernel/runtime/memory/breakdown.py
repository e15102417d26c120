"""The breakdown of a process's memory as the seeds draw it (a text box of sizes in MiB and shares of
the total), and as Flink's configuration keys with byte values (JSON)."""

from __future__ import annotations

from typing import Optional, Union

from streamkernel.common.memory_size import MemorySize
from streamkernel.runtime.memory.jobmanager import JobManagerProcessSpec
from streamkernel.runtime.memory.taskmanager import TaskExecutorProcessSpec

__all__ = ["render_breakdown", "breakdown_keys", "memory_configuration_info"]

_Spec = Union[TaskExecutorProcessSpec, JobManagerProcessSpec]


def breakdown_keys(spec: _Spec) -> dict[str, int]:
    """Flink's keys with byte values: the ``-D`` entries Flink starts the process with, plus the
    totals (``*.memory.flink.size`` and ``*.memory.process.size``)."""
    prefix = "taskmanager" if isinstance(spec, TaskExecutorProcessSpec) else "jobmanager"
    keys = {f"{prefix}.memory.process.size": spec.get_total_process_memory_size().get_bytes(),
            f"{prefix}.memory.flink.size": spec.get_total_flink_memory_size().get_bytes()}
    keys.update(spec.to_dynamic_configs())
    return keys


def memory_configuration_info(spec: TaskExecutorProcessSpec) -> dict[str, int]:
    """Flink's REST ``TaskExecutorMemoryConfiguration`` of a TaskManager (``/taskmanagers/:id``
    ``memoryConfiguration``): every component in bytes."""
    memory = spec.flink_memory
    return {"frameworkHeap": memory.framework_heap.get_bytes(), "taskHeap": memory.task_heap.get_bytes(),
            "frameworkOffHeap": memory.framework_off_heap.get_bytes(), "taskOffHeap": memory.task_off_heap.get_bytes(),
            "networkMemory": memory.network.get_bytes(), "managedMemory": memory.managed.get_bytes(),
            "jvmMetaspace": spec.jvm_metaspace_and_overhead.metaspace.get_bytes(),
            "jvmOverhead": spec.jvm_metaspace_and_overhead.overhead.get_bytes(),
            "totalFlinkMemory": spec.get_total_flink_memory_size().get_bytes(),
            "totalProcessMemory": spec.get_total_process_memory_size().get_bytes()}


def _rows(spec: _Spec) -> list[tuple[int, str, MemorySize]]:
    rows: list[tuple[int, str, MemorySize]] = [(0, "Total process memory", spec.get_total_process_memory_size()),
                                               (1, "Flink memory", spec.get_total_flink_memory_size())]
    memory = spec.flink_memory
    if isinstance(spec, TaskExecutorProcessSpec):
        tm = spec.flink_memory
        rows += [(2, "Framework heap", tm.framework_heap), (2, "Task heap", tm.task_heap),
                 (2, "Managed memory", tm.managed), (2, "Framework off-heap", tm.framework_off_heap),
                 (2, "Task off-heap", tm.task_off_heap), (2, "Network memory", tm.network)]
    else:
        rows += [(2, "JVM heap", memory.get_jvm_heap_memory_size()),
                 (2, "Off-heap memory", memory.get_jvm_direct_memory_size())]
    rows += [(1, "JVM metaspace", spec.get_jvm_metaspace_size()), (1, "JVM overhead", spec.get_jvm_overhead_size())]
    return rows


def _mib(size: MemorySize) -> str:
    return f"{size.get_bytes() / (1 << 20):,.1f} MiB"


def render_breakdown(spec: _Spec, title: str, slots: Optional[int] = None) -> str:
    """A text box: each part's size in MiB and its share of the total process memory; with
    ``slots``, each slot's managed memory (a TaskManager's)."""
    total = spec.get_total_process_memory_size().get_bytes() or 1
    lines = []
    for depth, name, size in _rows(spec):
        label = ("  " * depth + ("- " if depth else "") + name)
        lines.append(f"{label:<28}{_mib(size):>16}{100 * size.get_bytes() / total:>8.1f}%")
    if slots is not None and isinstance(spec, TaskExecutorProcessSpec):
        share = spec.get_managed_memory_per_slot()
        lines.append(f"{'Managed memory per slot':<28}{_mib(share):>16}  ({slots} slots)")
    width = max(len(line) for line in lines + [title])
    top = "+" + "-" * (width + 2) + "+"
    body = [f"| {line:<{width}} |" for line in [title, "-" * width] + lines]
    return "\n".join([top, *body, top])
