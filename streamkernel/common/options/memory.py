"""The memory model's keys: the memory sections of Flink 2.x's ``TaskManagerOptions`` and
``JobManagerOptions`` (``taskmanager.memory.*``, ``jobmanager.memory.*``), with Flink's defaults
and deprecated keys. :mod:`streamkernel.runtime.memory` derives a process's breakdown from them
as Flink does (docs/memory.md)."""

from __future__ import annotations

from streamkernel.common.config_options import ConfigOptions
from streamkernel.common.time import Duration

__all__ = ["TaskManagerMemoryOptions", "JobManagerMemoryOptions", "AlgorithmOptions"]

_key = ConfigOptions.key
_MB = 1 << 20


class TaskManagerMemoryOptions:
    """The memory section of Flink's ``TaskManagerOptions``: a TaskManager's process memory =
    Flink memory (framework heap, task heap, managed, framework off-heap, task off-heap, network)
    + JVM metaspace + JVM overhead. Configure one of process.size, flink.size, or task.heap.size
    with managed.size; the other parts follow (``streamkernel memory taskmanager`` shows them)."""

    TOTAL_PROCESS_MEMORY = _key("taskmanager.memory.process.size").memory_type().no_default_value() \
        .with_description("Total process memory of a TaskManager: Flink memory + JVM metaspace + JVM overhead "
                          "(Flink's shipped config.yaml sets 1728m).")
    TOTAL_FLINK_MEMORY = _key("taskmanager.memory.flink.size").memory_type().no_default_value() \
        .with_description("Total Flink memory of a TaskManager: framework and task heap, managed, framework and "
                          "task off-heap, network memory (not JVM metaspace and overhead).")
    FRAMEWORK_HEAP_MEMORY = _key("taskmanager.memory.framework.heap.size").memory_type().default_value(128 * _MB) \
        .with_description("Heap memory of the TaskManager's framework (not for tasks).")
    TASK_HEAP_MEMORY = _key("taskmanager.memory.task.heap.size").memory_type().no_default_value() \
        .with_description("Heap memory for tasks (user functions, heap state); unset: Flink memory minus all "
                          "the other parts.")
    FRAMEWORK_OFF_HEAP_MEMORY = _key("taskmanager.memory.framework.off-heap.size").memory_type() \
        .default_value(128 * _MB).with_description("Off-heap (direct and native) memory of the framework.")
    TASK_OFF_HEAP_MEMORY = _key("taskmanager.memory.task.off-heap.size").memory_type().default_value(0) \
        .with_description("Off-heap (direct and native) memory for tasks.")
    MANAGED_MEMORY_SIZE = _key("taskmanager.memory.managed.size").memory_type().no_default_value() \
        .with_deprecated_keys("taskmanager.memory.size").with_description(
            "Managed memory (RocksDB, batch operators' sorting and caching), split among the slots; unset: "
            "managed.fraction of the Flink memory.")
    MANAGED_MEMORY_FRACTION = _key("taskmanager.memory.managed.fraction").float_type().default_value(0.4) \
        .with_description("Fraction of the Flink memory that is managed memory when managed.size is unset "
                          "(in [0, 1)).")
    MANAGED_MEMORY_CONSUMER_WEIGHTS = _key("taskmanager.memory.managed.consumer-weights").string_type() \
        .default_value("OPERATOR:70,STATE_BACKEND:70,PYTHON:30").with_description(
            "How a slot's managed memory is split among the kinds of consumers a job has in it: 'OPERATOR' (batch "
            "operators: sorting keyed inputs), 'STATE_BACKEND' (RocksDB), 'PYTHON' (PyFlink's Python workers: no "
            "streamkernel operator uses it); a map of names to integer weights >= 0. A consumer present alone "
            "gets the whole slot.")
    NETWORK_MEMORY_MIN = _key("taskmanager.memory.network.min").memory_type().default_value(64 * _MB) \
        .with_deprecated_keys("taskmanager.network.memory.min").with_description(
            "Smallest network memory (buffers between tasks).")
    NETWORK_MEMORY_MAX = _key("taskmanager.memory.network.max").memory_type().default_value((1 << 63) - 1) \
        .with_deprecated_keys("taskmanager.network.memory.max").with_description(
            "Largest network memory (default: unbounded, Long.MAX_VALUE bytes).")
    NETWORK_MEMORY_FRACTION = _key("taskmanager.memory.network.fraction").float_type().default_value(0.1) \
        .with_deprecated_keys("taskmanager.network.memory.fraction").with_description(
            "Fraction of the Flink memory that is network memory, capped to network.min/max (in [0, 1)).")
    JVM_METASPACE = _key("taskmanager.memory.jvm-metaspace.size").memory_type().default_value(256 * _MB) \
        .with_description("JVM metaspace of a TaskManager.")
    JVM_OVERHEAD_MIN = _key("taskmanager.memory.jvm-overhead.min").memory_type().default_value(192 * _MB) \
        .with_description("Smallest JVM overhead (thread stacks, code cache, GC space: native memory).")
    JVM_OVERHEAD_MAX = _key("taskmanager.memory.jvm-overhead.max").memory_type().default_value(1024 * _MB) \
        .with_description("Largest JVM overhead.")
    JVM_OVERHEAD_FRACTION = _key("taskmanager.memory.jvm-overhead.fraction").float_type().default_value(0.1) \
        .with_description("Fraction of the process memory that is JVM overhead, capped to jvm-overhead.min/max "
                          "(in [0, 1)).")
    MEMORY_SEGMENT_SIZE = _key("taskmanager.memory.segment-size").memory_type().default_value(32 * 1024) \
        .with_range(1).with_description("Size of a network buffer (and of managed memory's pages).")
    PROCESS_SIZE_WATCHDOG = _key("streamkernel.taskmanager.memory.watchdog.enabled").boolean_type() \
        .default_value(True).with_description(
            "Whether a process or spark TaskManager fails (and exits) when its resident set size exceeds its total "
            "process memory, as a container's OOM kill would; local TaskManagers only measure it.")
    PROCESS_SIZE_WATCHDOG_INTERVAL = _key("streamkernel.taskmanager.memory.watchdog.interval").duration_type() \
        .default_value(Duration.of_millis(500)).with_description(
            "How often a TaskManager process measures its resident set size against its total process memory.")


class JobManagerMemoryOptions:
    """The memory section of Flink's ``JobManagerOptions``: a JobManager's process memory = Flink
    memory (JVM heap, off-heap) + JVM metaspace + JVM overhead. Configure one of process.size,
    flink.size or heap.size."""

    TOTAL_PROCESS_MEMORY = _key("jobmanager.memory.process.size").memory_type().no_default_value() \
        .with_description("Total process memory of the JobManager (Flink's shipped config.yaml sets 1600m).")
    TOTAL_FLINK_MEMORY = _key("jobmanager.memory.flink.size").memory_type().no_default_value() \
        .with_description("Total Flink memory of the JobManager: JVM heap + off-heap.")
    JVM_HEAP_MEMORY = _key("jobmanager.memory.heap.size").memory_type().no_default_value() \
        .with_description("JVM heap of the JobManager; unset: Flink memory minus off-heap.")
    OFF_HEAP_MEMORY = _key("jobmanager.memory.off-heap.size").memory_type().default_value(128 * _MB) \
        .with_description("Off-heap (direct and native) memory of the JobManager.")
    JVM_DIRECT_MEMORY_LIMIT_ENABLED = _key("jobmanager.memory.enable-jvm-direct-memory-limit").boolean_type() \
        .default_value(False).with_description(
            "Whether the JobManager's JVM is started with -XX:MaxDirectMemorySize = off-heap.size.")
    JVM_METASPACE = _key("jobmanager.memory.jvm-metaspace.size").memory_type().default_value(256 * _MB) \
        .with_description("JVM metaspace of the JobManager.")
    JVM_OVERHEAD_MIN = _key("jobmanager.memory.jvm-overhead.min").memory_type().default_value(192 * _MB) \
        .with_description("Smallest JVM overhead of the JobManager.")
    JVM_OVERHEAD_MAX = _key("jobmanager.memory.jvm-overhead.max").memory_type().default_value(1024 * _MB) \
        .with_description("Largest JVM overhead of the JobManager.")
    JVM_OVERHEAD_FRACTION = _key("jobmanager.memory.jvm-overhead.fraction").float_type().default_value(0.1) \
        .with_description("Fraction of the process memory that is JVM overhead, capped to jvm-overhead.min/max "
                          "(in [0, 1)).")


class AlgorithmOptions:
    """Flink's ``AlgorithmOptions``: the external sorter of BATCH mode's keyed inputs."""

    SORT_SPILLING_THRESHOLD = _key("taskmanager.runtime.sort-spilling-threshold").float_type().default_value(0.8) \
        .with_range(0.0, 1.0).with_description(
            "A sorter spills its buffered records to disk once they take this fraction of its sort memory.")
    SPILLING_MAX_FAN = _key("taskmanager.runtime.max-fan").int_type().default_value(128).with_range(2) \
        .with_description("The most spill files a sorter merges at once; more are merged in rounds.")
