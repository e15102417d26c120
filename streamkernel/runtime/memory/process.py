"""The process memory common to the JobManager and the TaskManager: Flink's ``ProcessMemoryUtils``.

Total process memory = total Flink memory + JVM metaspace + JVM overhead. One of three sets of
keys sizes it, tried in this order (as Flink does):

1. the required fine-grained keys (TaskManager: task heap and managed; JobManager: heap): the
   Flink memory is their sum with the other parts, the overhead the fraction of the process
   memory that makes it up (``deriveWithInverseFraction``) unless process.size is also set;
2. the total Flink memory: the parts are derived from it, then metaspace and overhead likewise;
3. the total process memory: the overhead is its fraction (capped), the metaspace configured,
   and the Flink memory what is left.

With none of them set the calculation fails, as Flink's ``BashJavaUtils`` does on an empty
configuration (Flink's start scripts ship a config.yaml setting process.size).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Protocol, TypeVar

from streamkernel.common.config_options import ConfigOption
from streamkernel.common.memory_size import MemorySize
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.memory.fractions import (
    derive_with_fraction,
    derive_with_inverse_fraction,
    described,
    java_double,
    range_fraction,
    read_memory,
)

__all__ = ["JvmMetaspaceAndOverhead", "ProcessMemoryOptions", "FlinkMemory", "memory_process_spec_from_config"]

_LOG = logging.getLogger(__name__)


class CommonProcessMemorySpec:
    """What a TaskManager's and the JobManager's process specs share (Flink's ``CommonProcessMemorySpec``):
    the totals and the JVM's own parts, from ``flink_memory`` and ``jvm_metaspace_and_overhead``."""

    flink_memory: Any
    jvm_metaspace_and_overhead: "JvmMetaspaceAndOverhead"

    def get_total_flink_memory_size(self) -> MemorySize:
        """The Flink memory (``*.memory.flink.size``)."""
        return self.flink_memory.get_total_flink_memory_size()

    def get_total_process_memory_size(self) -> MemorySize:
        """Flink memory + JVM metaspace + JVM overhead (``*.memory.process.size``)."""
        return self.get_total_flink_memory_size().add(self.jvm_metaspace_and_overhead.total())

    def get_jvm_metaspace_size(self) -> MemorySize:
        """The JVM metaspace."""
        return self.jvm_metaspace_and_overhead.metaspace

    def get_jvm_overhead_size(self) -> MemorySize:
        """The JVM overhead."""
        return self.jvm_metaspace_and_overhead.overhead


@dataclass(frozen=True)
class JvmMetaspaceAndOverhead:
    """The JVM's own memory outside the Flink memory."""

    metaspace: MemorySize
    overhead: MemorySize

    def total(self) -> MemorySize:
        """Metaspace + overhead."""
        return self.metaspace.add(self.overhead)


class ProcessMemoryOptions(NamedTuple):
    """The keys of one kind of process (Flink's ``ProcessMemoryOptions``)."""

    required_fine_grained: tuple[ConfigOption[int], ...]
    total_flink: ConfigOption[int]
    total_process: ConfigOption[int]
    jvm_metaspace: ConfigOption[int]
    jvm_overhead_min: ConfigOption[int]
    jvm_overhead_max: ConfigOption[int]
    jvm_overhead_fraction: ConfigOption[float]


class FlinkMemory(Protocol):
    """The Flink memory of a process: its parts add up to a total."""

    def get_total_flink_memory_size(self) -> MemorySize:
        """The sum of the parts."""


FM = TypeVar("FM", bound=FlinkMemory)
#: how Flink names the JVM overhead in its logs of a size capped to its min or max
JVM_OVERHEAD = "jvm overhead memory"
Config = Mapping[str, Any]


def memory_process_spec_from_config(
        options: ProcessMemoryOptions, configuration: Config,
        from_fine_grained: Callable[[Config], FM],
        from_total_flink: Callable[[Config, MemorySize], FM]) -> tuple[FM, JvmMetaspaceAndOverhead]:
    """The Flink memory and the JVM metaspace and overhead of a process (Flink's
    ``ProcessMemoryUtils.memoryProcessSpecFromConfig``); IllegalConfigurationError names the keys
    and sizes that conflict."""
    if all(option.is_set(configuration) for option in options.required_fine_grained):
        flink = from_fine_grained(configuration)
        return flink, _jvm_from_total_flink(options, configuration, flink.get_total_flink_memory_size())
    if options.total_flink.is_set(configuration):
        total_flink = read_memory(options.total_flink, configuration)
        flink = from_total_flink(configuration, total_flink)
        return flink, _jvm_from_total_flink(options, configuration, total_flink)
    if options.total_process.is_set(configuration):
        total_process = read_memory(options.total_process, configuration)
        jvm = _jvm_from_total_process(options, configuration, total_process)
        return from_total_flink(configuration, total_process.subtract(jvm.total())), jvm
    required = " and ".join(option.key() for option in options.required_fine_grained)
    raise IllegalConfigurationError(
        f"Either required fine-grained memory ({required}), or Total Flink Memory size "
        f"({options.total_flink.key()}), or Total Process Memory size ({options.total_process.key()}) need to be "
        f"configured explicitly.")


def _overhead_range(options: ProcessMemoryOptions, configuration: Config) -> Any:
    return range_fraction(options.jvm_overhead_min, options.jvm_overhead_max, options.jvm_overhead_fraction,
                          configuration)


def _jvm_from_total_process(options: ProcessMemoryOptions, configuration: Config,
                            total_process: MemorySize) -> JvmMetaspaceAndOverhead:
    metaspace = read_memory(options.jvm_metaspace, configuration)
    overhead = derive_with_fraction(JVM_OVERHEAD, total_process, _overhead_range(options, configuration))
    jvm = JvmMetaspaceAndOverhead(metaspace, overhead)
    if jvm.total().get_bytes() > total_process.get_bytes():
        raise IllegalConfigurationError(
            f"Sum of configured JVM Metaspace {described(options.jvm_metaspace, configuration, metaspace)} and JVM "
            f"Overhead ({overhead.to_human_readable_string()}, from '{options.jvm_overhead_fraction.key()}' and "
            f"its min/max) exceed configured Total Process Memory "
            f"{described(options.total_process, configuration, total_process)}.")
    return jvm


def _jvm_from_total_flink(options: ProcessMemoryOptions, configuration: Config,
                          total_flink: MemorySize) -> JvmMetaspaceAndOverhead:
    metaspace = read_memory(options.jvm_metaspace, configuration)
    flink_and_metaspace = total_flink.add(metaspace)
    if options.total_process.is_set(configuration):
        total_process = read_memory(options.total_process, configuration)
        if total_process.get_bytes() < flink_and_metaspace.get_bytes():
            raise IllegalConfigurationError(
                f"The configured Total Process Memory size {described(options.total_process, configuration, total_process)}"
                f" is less than the sum of the derived Total Flink Memory size "
                f"({total_flink.to_human_readable_string()}) and the configured or default JVM Metaspace size "
                f"{described(options.jvm_metaspace, configuration, metaspace)}.")
        overhead = total_process.subtract(flink_and_metaspace)
        rf = _overhead_range(options, configuration)
        if not rf.min_size.get_bytes() <= overhead.get_bytes() <= rf.max_size.get_bytes():
            raise IllegalConfigurationError(
                f"Derived JVM Overhead size ({overhead.to_human_readable_string()}: "
                f"'{options.total_process.source_key(configuration)}' minus the Total Flink Memory and JVM Metaspace) "
                f"is not in configured JVM Overhead range [{rf.min_size.to_human_readable_string()}, "
                f"{rf.max_size.to_human_readable_string()}] ('{options.jvm_overhead_min.source_key(configuration)}', "
                f"'{options.jvm_overhead_max.source_key(configuration)}').")
        if options.jvm_overhead_fraction.is_set(configuration) and overhead != total_process.multiply(rf.fraction):
            _LOG.info("The derived JVM Overhead size (%s) does not match the configured or default JVM Overhead "
                      "fraction (%s) from the configured Total Process Memory size (%s). The derived JVM Overhead "
                      "size will be used.", overhead.to_human_readable_string(), java_double(rf.fraction),
                      total_process.to_human_readable_string())
        return JvmMetaspaceAndOverhead(metaspace, overhead)
    overhead = derive_with_inverse_fraction(JVM_OVERHEAD, flink_and_metaspace, _overhead_range(options, configuration))
    return JvmMetaspaceAndOverhead(metaspace, overhead)
