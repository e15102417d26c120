"""A TaskManager's memory: Flink's ``TaskExecutorFlinkMemoryUtils`` and ``TaskExecutorProcessUtils``.

    >>> spec = task_executor_process_spec_from_config({"taskmanager.memory.process.size": "1728m"})
    >>> spec.flink_memory.managed.get_bytes(), spec.flink_memory.network.get_bytes()
    (536870920, 134217730)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamkernel.common.memory_size import MemorySize
from streamkernel.common.options import TaskManagerMemoryOptions as T
from streamkernel.common.options import TaskManagerOptions
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.memory.fractions import (
    derive_with_fraction,
    derive_with_inverse_fraction,
    described,
    java_double,
    range_fraction,
    read_memory,
)
from streamkernel.runtime.memory.process import (
    CommonProcessMemorySpec,
    JvmMetaspaceAndOverhead,
    ProcessMemoryOptions,
    memory_process_spec_from_config,
)

__all__ = ["TaskExecutorFlinkMemory", "TaskExecutorProcessSpec", "task_executor_process_spec_from_config",
           "TM_PROCESS_MEMORY_OPTIONS"]

Config = Mapping[str, Any]
_LOG = logging.getLogger(__name__)

#: The TaskManager's keys of the common process memory calculation.
TM_PROCESS_MEMORY_OPTIONS = ProcessMemoryOptions(
    (T.TASK_HEAP_MEMORY, T.MANAGED_MEMORY_SIZE), T.TOTAL_FLINK_MEMORY, T.TOTAL_PROCESS_MEMORY, T.JVM_METASPACE,
    T.JVM_OVERHEAD_MIN, T.JVM_OVERHEAD_MAX, T.JVM_OVERHEAD_FRACTION)


@dataclass(frozen=True)
class TaskExecutorFlinkMemory:
    """The Flink memory of a TaskManager, part by part (Flink's ``TaskExecutorFlinkMemory``)."""

    framework_heap: MemorySize
    framework_off_heap: MemorySize
    task_heap: MemorySize
    task_off_heap: MemorySize
    network: MemorySize
    managed: MemorySize

    def get_jvm_heap_memory_size(self) -> MemorySize:
        """Framework heap + task heap (the JVM's -Xmx)."""
        return self.framework_heap.add(self.task_heap)

    def get_jvm_direct_memory_size(self) -> MemorySize:
        """Framework off-heap + task off-heap + network (the JVM's -XX:MaxDirectMemorySize)."""
        return self.framework_off_heap.add(self.task_off_heap).add(self.network)

    def get_total_flink_memory_size(self) -> MemorySize:
        """JVM heap + JVM direct + managed."""
        return self.get_jvm_heap_memory_size().add(self.get_jvm_direct_memory_size()).add(self.managed)


@dataclass(frozen=True)
class TaskExecutorProcessSpec(CommonProcessMemorySpec):
    """Every part of a TaskManager's process memory in bytes, and its slots (Flink's
    ``TaskExecutorProcessSpec``)."""

    flink_memory: TaskExecutorFlinkMemory
    jvm_metaspace_and_overhead: JvmMetaspaceAndOverhead
    num_slots: int = 1

    def get_managed_memory_per_slot(self) -> MemorySize:
        """Each slot's share of the managed memory (Flink: managed / number of slots)."""
        return self.flink_memory.managed.divide(self.num_slots)

    def jvm_parameters(self) -> str:
        """The JVM options Flink starts the TaskManager with (the first line of BashJavaUtils' result)."""
        heap = self.flink_memory.get_jvm_heap_memory_size().get_bytes()
        return (f"-Xmx{heap} -Xms{heap} -XX:MaxDirectMemorySize={self.flink_memory.get_jvm_direct_memory_size().get_bytes()}"
                f" -XX:MaxMetaspaceSize={self.get_jvm_metaspace_size().get_bytes()}")

    def to_dynamic_configs(self) -> dict[str, int]:
        """The memory keys and byte values Flink passes the TaskManager as ``-D`` (BashJavaUtils'
        ``GET_TM_RESOURCE_PARAMS``: network and overhead min = max = their size)."""
        memory = self.flink_memory
        return {
            T.FRAMEWORK_HEAP_MEMORY.key(): memory.framework_heap.get_bytes(),
            T.TASK_HEAP_MEMORY.key(): memory.task_heap.get_bytes(),
            T.MANAGED_MEMORY_SIZE.key(): memory.managed.get_bytes(),
            T.FRAMEWORK_OFF_HEAP_MEMORY.key(): memory.framework_off_heap.get_bytes(),
            T.TASK_OFF_HEAP_MEMORY.key(): memory.task_off_heap.get_bytes(),
            T.NETWORK_MEMORY_MIN.key(): memory.network.get_bytes(),
            T.NETWORK_MEMORY_MAX.key(): memory.network.get_bytes(),
            T.JVM_METASPACE.key(): self.get_jvm_metaspace_size().get_bytes(),
            T.JVM_OVERHEAD_MIN.key(): self.get_jvm_overhead_size().get_bytes(),
            T.JVM_OVERHEAD_MAX.key(): self.get_jvm_overhead_size().get_bytes(),
        }


def task_executor_process_spec_from_config(configuration: Config) -> TaskExecutorProcessSpec:
    """A TaskManager's memory from its configuration, byte for byte as Flink 2.x derives it
    (``TaskExecutorProcessUtils.processSpecFromConfig``). Inconsistent settings raise
    :class:`IllegalConfigurationError` ("TaskManager memory configuration failed: ...") naming
    the keys and sizes that conflict."""
    try:
        slots = TaskManagerOptions.NUM_TASK_SLOTS.get(configuration)
        flink, jvm = memory_process_spec_from_config(
            TM_PROCESS_MEMORY_OPTIONS, configuration, _from_fine_grained, _from_total_flink)
    except IllegalConfigurationError as error:
        raise IllegalConfigurationError(f"TaskManager memory configuration failed: {error}") from None
    return TaskExecutorProcessSpec(flink, jvm, slots)


def _fixed_parts(configuration: Config) -> tuple[MemorySize, MemorySize, MemorySize]:
    return (read_memory(T.FRAMEWORK_HEAP_MEMORY, configuration), read_memory(T.FRAMEWORK_OFF_HEAP_MEMORY, configuration),
            read_memory(T.TASK_OFF_HEAP_MEMORY, configuration))


def _network_range(configuration: Config) -> Any:
    return range_fraction(T.NETWORK_MEMORY_MIN, T.NETWORK_MEMORY_MAX, T.NETWORK_MEMORY_FRACTION, configuration)


def _managed(configuration: Config, total_flink: MemorySize) -> MemorySize:
    if T.MANAGED_MEMORY_SIZE.is_set(configuration):
        return read_memory(T.MANAGED_MEMORY_SIZE, configuration)
    rf = range_fraction(T.NETWORK_MEMORY_MIN, T.NETWORK_MEMORY_MAX, T.MANAGED_MEMORY_FRACTION, configuration,
                        MemorySize.ZERO, MemorySize.MAX_VALUE)
    return derive_with_fraction("managed memory", total_flink, rf)


def _sum_exceeds(parts: list[tuple[str, Any, MemorySize]], configuration: Config, total: MemorySize) -> str:
    named = ", ".join(f"{name} {described(option, configuration, size)}" for name, option, size in parts)
    if T.TOTAL_FLINK_MEMORY.is_set(configuration):
        whole = f"configured Total Flink Memory {described(T.TOTAL_FLINK_MEMORY, configuration, total)}"
    else:
        whole = (f"Total Flink Memory ({total.to_human_readable_string()}) derived from "
                 f"'{T.TOTAL_PROCESS_MEMORY.source_key(configuration)}' minus JVM Metaspace and Overhead")
    return f"Sum of configured {named} exceed {whole}."


def _network_rest(configuration: Config, parts: list[tuple[str, Any, MemorySize]], total_flink: MemorySize) -> MemorySize:
    """The network memory as what is left of the Flink memory, checked against network min/max."""
    rest = MemorySize.ZERO
    for _, _, size in parts:
        rest = rest.add(size)
    if rest.get_bytes() > total_flink.get_bytes():
        raise IllegalConfigurationError(_sum_exceeds(parts, configuration, total_flink))
    network = total_flink.subtract(rest)
    rf = _network_range(configuration)
    if not rf.min_size.get_bytes() <= network.get_bytes() <= rf.max_size.get_bytes():
        raise IllegalConfigurationError(
            f"If Total Flink, Task Heap and (or) Managed Memory sizes are explicitly configured then the Network "
            f"Memory size is the rest of the Total Flink memory after subtracting all other configured types of "
            f"memory, but the derived Network Memory ({network.to_human_readable_string()}) is not in configured "
            f"Network Memory range [{rf.min_size.to_human_readable_string()}, {rf.max_size.to_human_readable_string()}]"
            f" ('{T.NETWORK_MEMORY_MIN.source_key(configuration)}', '{T.NETWORK_MEMORY_MAX.source_key(configuration)}').")
    if T.NETWORK_MEMORY_FRACTION.is_set(configuration) and network != total_flink.multiply(rf.fraction):
        _LOG.info("The derived Network Memory size (%s) does not match the configured Network Memory fraction (%s) "
                  "from the configured Total Flink Memory size (%s). The derived Network Memory size will be used.",
                  network.to_human_readable_string(), java_double(rf.fraction), total_flink.to_human_readable_string())
    return network


def _from_fine_grained(configuration: Config) -> TaskExecutorFlinkMemory:
    framework_heap, framework_off_heap, task_off_heap = _fixed_parts(configuration)
    task_heap = read_memory(T.TASK_HEAP_MEMORY, configuration)
    managed = read_memory(T.MANAGED_MEMORY_SIZE, configuration)
    parts = [("Framework Heap Memory", T.FRAMEWORK_HEAP_MEMORY, framework_heap),
             ("Framework Off-Heap Memory", T.FRAMEWORK_OFF_HEAP_MEMORY, framework_off_heap),
             ("Task Heap Memory", T.TASK_HEAP_MEMORY, task_heap),
             ("Task Off-Heap Memory", T.TASK_OFF_HEAP_MEMORY, task_off_heap),
             ("Managed Memory", T.MANAGED_MEMORY_SIZE, managed)]
    if T.TOTAL_FLINK_MEMORY.is_set(configuration):
        network = _network_rest(configuration, parts, read_memory(T.TOTAL_FLINK_MEMORY, configuration))
    else:
        rest = framework_heap.add(framework_off_heap).add(task_heap).add(task_off_heap).add(managed)
        network = derive_with_inverse_fraction("network memory", rest, _network_range(configuration))
    return TaskExecutorFlinkMemory(framework_heap, framework_off_heap, task_heap, task_off_heap, network, managed)


def _from_total_flink(configuration: Config, total_flink: MemorySize) -> TaskExecutorFlinkMemory:
    framework_heap, framework_off_heap, task_off_heap = _fixed_parts(configuration)
    managed = _managed(configuration, total_flink)
    if T.TASK_HEAP_MEMORY.is_set(configuration):
        task_heap = read_memory(T.TASK_HEAP_MEMORY, configuration)
        parts = [("Framework Heap Memory", T.FRAMEWORK_HEAP_MEMORY, framework_heap),
                 ("Framework Off-Heap Memory", T.FRAMEWORK_OFF_HEAP_MEMORY, framework_off_heap),
                 ("Task Heap Memory", T.TASK_HEAP_MEMORY, task_heap),
                 ("Task Off-Heap Memory", T.TASK_OFF_HEAP_MEMORY, task_off_heap),
                 ("Managed Memory", T.MANAGED_MEMORY_SIZE if T.MANAGED_MEMORY_SIZE.is_set(configuration)
                  else T.MANAGED_MEMORY_FRACTION, managed)]
        network = _network_rest(configuration, parts, total_flink)
    else:
        network = derive_with_fraction("network memory", total_flink, _network_range(configuration))
        rest = framework_heap.add(framework_off_heap).add(task_off_heap).add(managed).add(network)
        if rest.get_bytes() > total_flink.get_bytes():
            parts = [("Framework Heap Memory", T.FRAMEWORK_HEAP_MEMORY, framework_heap),
                     ("Framework Off-Heap Memory", T.FRAMEWORK_OFF_HEAP_MEMORY, framework_off_heap),
                     ("Task Off-Heap Memory", T.TASK_OFF_HEAP_MEMORY, task_off_heap),
                     ("Managed Memory", T.MANAGED_MEMORY_SIZE if T.MANAGED_MEMORY_SIZE.is_set(configuration)
                      else T.MANAGED_MEMORY_FRACTION, managed),
                     ("Network Memory", T.NETWORK_MEMORY_FRACTION, network)]
            raise IllegalConfigurationError(_sum_exceeds(parts, configuration, total_flink))
        task_heap = total_flink.subtract(rest)
    return TaskExecutorFlinkMemory(framework_heap, framework_off_heap, task_heap, task_off_heap, network, managed)
