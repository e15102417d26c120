"""The JobManager's memory: Flink's ``JobManagerFlinkMemoryUtils`` and ``JobManagerProcessUtils``.

    >>> spec = job_manager_process_spec_from_config({"jobmanager.memory.process.size": "1600m"})
    >>> spec.flink_memory.jvm_heap.get_bytes(), spec.get_jvm_overhead_size().get_bytes()
    (1073741824, 201326592)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamkernel.common.memory_size import MemorySize
from streamkernel.common.options import JobManagerMemoryOptions as J
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.memory.fractions import described, read_memory
from streamkernel.runtime.memory.process import (
    CommonProcessMemorySpec,
    JvmMetaspaceAndOverhead,
    ProcessMemoryOptions,
    memory_process_spec_from_config,
)

__all__ = ["JobManagerFlinkMemory", "JobManagerProcessSpec", "job_manager_process_spec_from_config",
           "JM_PROCESS_MEMORY_OPTIONS"]

Config = Mapping[str, Any]
_LOG = logging.getLogger(__name__)
#: Flink's ``JobManagerOptions.MIN_JVM_HEAP_SIZE``: a smaller heap is warned about
MIN_JVM_HEAP_SIZE = MemorySize(128 << 20)

#: The JobManager's keys of the common process memory calculation.
JM_PROCESS_MEMORY_OPTIONS = ProcessMemoryOptions(
    (J.JVM_HEAP_MEMORY,), J.TOTAL_FLINK_MEMORY, J.TOTAL_PROCESS_MEMORY, J.JVM_METASPACE, J.JVM_OVERHEAD_MIN,
    J.JVM_OVERHEAD_MAX, J.JVM_OVERHEAD_FRACTION)


@dataclass(frozen=True)
class JobManagerFlinkMemory:
    """The Flink memory of the JobManager (Flink's ``JobManagerFlinkMemory``)."""

    jvm_heap: MemorySize
    off_heap: MemorySize

    def get_jvm_heap_memory_size(self) -> MemorySize:
        """The JVM heap (-Xmx)."""
        return self.jvm_heap

    def get_jvm_direct_memory_size(self) -> MemorySize:
        """The off-heap memory (-XX:MaxDirectMemorySize when the limit is enabled)."""
        return self.off_heap

    def get_total_flink_memory_size(self) -> MemorySize:
        """JVM heap + off-heap."""
        return self.jvm_heap.add(self.off_heap)


@dataclass(frozen=True)
class JobManagerProcessSpec(CommonProcessMemorySpec):
    """Every part of the JobManager's process memory in bytes (Flink's ``JobManagerProcessSpec``)."""

    flink_memory: JobManagerFlinkMemory
    jvm_metaspace_and_overhead: JvmMetaspaceAndOverhead
    jvm_direct_memory_limit_enabled: bool = False

    def jvm_parameters(self) -> str:
        """The JVM options Flink starts the JobManager with (BashJavaUtils' first result line)."""
        heap = self.flink_memory.jvm_heap.get_bytes()
        direct = (f" -XX:MaxDirectMemorySize={self.flink_memory.off_heap.get_bytes()}"
                  if self.jvm_direct_memory_limit_enabled else "")
        return f"-Xmx{heap} -Xms{heap}{direct} -XX:MaxMetaspaceSize={self.get_jvm_metaspace_size().get_bytes()}"

    def to_dynamic_configs(self) -> dict[str, int]:
        """The memory keys and byte values Flink passes the JobManager as ``-D``."""
        return {
            J.JVM_HEAP_MEMORY.key(): self.flink_memory.jvm_heap.get_bytes(),
            J.OFF_HEAP_MEMORY.key(): self.flink_memory.off_heap.get_bytes(),
            J.JVM_METASPACE.key(): self.get_jvm_metaspace_size().get_bytes(),
            J.JVM_OVERHEAD_MIN.key(): self.get_jvm_overhead_size().get_bytes(),
            J.JVM_OVERHEAD_MAX.key(): self.get_jvm_overhead_size().get_bytes(),
        }


def job_manager_process_spec_from_config(configuration: Config) -> JobManagerProcessSpec:
    """The JobManager's memory from its configuration, byte for byte as Flink 2.x derives it
    (``JobManagerProcessUtils.processSpecFromConfig``); inconsistent settings raise
    :class:`IllegalConfigurationError` naming the keys and sizes that conflict."""
    flink, jvm = memory_process_spec_from_config(JM_PROCESS_MEMORY_OPTIONS, configuration, _from_heap,
                                                 _from_total_flink)
    return JobManagerProcessSpec(flink, jvm, J.JVM_DIRECT_MEMORY_LIMIT_ENABLED.get(configuration))


def _from_heap(configuration: Config) -> JobManagerFlinkMemory:
    """Flink 2.x: with the total Flink memory also set, an unset off-heap size is what is left of it."""
    heap = read_memory(J.JVM_HEAP_MEMORY, configuration)
    off_heap = read_memory(J.OFF_HEAP_MEMORY, configuration)
    if not J.TOTAL_FLINK_MEMORY.is_set(configuration):
        return _flink_memory(heap, off_heap)
    total = read_memory(J.TOTAL_FLINK_MEMORY, configuration)
    either = "Please, make the configuration consistent or configure only one option: either JVM Heap or Total Flink Memory."
    if J.OFF_HEAP_MEMORY.is_set(configuration):
        if heap.add(off_heap) != total:
            raise IllegalConfigurationError(
                f"Sum of the configured JVM Heap Memory {described(J.JVM_HEAP_MEMORY, configuration, heap)} and the "
                f"configured Off-heap Memory {described(J.OFF_HEAP_MEMORY, configuration, off_heap)} does not match "
                f"the configured Total Flink Memory {described(J.TOTAL_FLINK_MEMORY, configuration, total)}. {either}")
        return _flink_memory(heap, off_heap)
    if total.get_bytes() < heap.get_bytes():
        raise IllegalConfigurationError(
            f"The configured JVM Heap Memory {described(J.JVM_HEAP_MEMORY, configuration, heap)} exceeds the "
            f"configured Total Flink Memory {described(J.TOTAL_FLINK_MEMORY, configuration, total)}. {either}")
    derived = total.subtract(heap)
    if derived != off_heap:  # off_heap: the default (unset)
        _LOG.info("The Off-Heap Memory size (%s) is derived the configured Total Flink Memory size (%s) minus the "
                  "configured JVM Heap Memory size (%s). The default Off-Heap Memory size (%s) is ignored.",
                  derived.to_human_readable_string(), total.to_human_readable_string(),
                  heap.to_human_readable_string(), off_heap.to_human_readable_string())
    return _flink_memory(heap, derived)


def _from_total_flink(configuration: Config, total: MemorySize) -> JobManagerFlinkMemory:
    off_heap = read_memory(J.OFF_HEAP_MEMORY, configuration)
    if total.get_bytes() <= off_heap.get_bytes():
        where = (described(J.TOTAL_FLINK_MEMORY, configuration, total) if J.TOTAL_FLINK_MEMORY.is_set(configuration)
                 else f"({total.to_human_readable_string()}, derived from "
                      f"'{J.TOTAL_PROCESS_MEMORY.source_key(configuration)}')")
        raise IllegalConfigurationError(
            f"The Total Flink Memory {where} is not more than the configured Off-heap Memory "
            f"{described(J.OFF_HEAP_MEMORY, configuration, off_heap)}.")
    return _flink_memory(total.subtract(off_heap), off_heap)


def _flink_memory(heap: MemorySize, off_heap: MemorySize) -> JobManagerFlinkMemory:
    """The JobManager's Flink memory; a heap below Flink's recommended minimum is warned about."""
    if heap.get_bytes() < MIN_JVM_HEAP_SIZE.get_bytes():
        _LOG.warning("The configured or derived JVM heap memory size (%s) is less than its recommended minimum "
                     "value (%s)", heap.to_human_readable_string(), MIN_JVM_HEAP_SIZE.to_human_readable_string())
    return JobManagerFlinkMemory(heap, off_heap)
