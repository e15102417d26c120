"""A TaskManager's network buffers (Flink's ``NetworkBufferPool``).

A TaskManager's network memory (``spec.flink_memory.network`` of its memory model, see
docs/memory.md) divided by ``taskmanager.memory.segment-size`` (32 KiB) is its number of
network buffers, as Flink's ``NettyShuffleEnvironmentConfiguration`` computes it. Every task
deployed on the TaskManager reserves the buffers its input gates and result partitions need at
least (:mod:`.buffer_requirements`) before it initialises; when the TaskManager has fewer left
the task fails at deployment with Flink's ``IOException`` text::

    Insufficient number of network buffers: required 5, but only 3 available. The total number
    of network buffers is currently set to 10 of 32768 bytes each. You can increase this number
    by setting the configuration keys 'taskmanager.memory.network.fraction',
    'taskmanager.memory.network.min', and 'taskmanager.memory.network.max'.

and the job fails or restarts as its restart strategy says. A task gives its buffers back
when it ends. streamkernel batches records instead of filling byte segments, so a buffer here
holds one batch (``taskmanager.network.batch-size`` records) whatever its bytes: the pool
counts buffers, it allocates no memory.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from streamkernel.common.options import TaskManagerMemoryOptions
from streamkernel.errors import IllegalConfigurationError, StreamKernelError

__all__ = ["NetworkBufferPool", "InsufficientNetworkBuffersError", "network_buffer_pool_from_config",
           "number_of_network_buffers", "network_buffer_metrics", "MIN_PAGE_SIZE"]

#: Flink's ``MemoryManager.MIN_PAGE_SIZE``: the smallest ``taskmanager.memory.segment-size``.
MIN_PAGE_SIZE = 4096
_INT_MAX = 2**31 - 1


class InsufficientNetworkBuffersError(StreamKernelError, IOError):
    """A task needs more network buffers than its TaskManager has left (Flink's ``IOException``
    from ``NetworkBufferPool.createBufferPool``)."""


class NetworkBufferPool:
    """A fixed number of network buffers that deployed tasks reserve and give back.

    >>> pool = NetworkBufferPool(10, 32768)
    >>> pool.reserve("Map (1/2)", 6); pool.available
    4
    >>> pool.reserve("Map (2/2)", 6)
    Traceback (most recent call last):
    ...
    streamkernel.runtime.network.buffer_pool.InsufficientNetworkBuffersError: Insufficient number of network \
buffers: required 6, but only 4 available. The total number of network buffers is currently set to 10 of 32768 \
bytes each. You can increase this number by setting the configuration keys 'taskmanager.memory.network.fraction', \
'taskmanager.memory.network.min', and 'taskmanager.memory.network.max'.
    >>> pool.release("Map (1/2)"); pool.available
    10
    """

    def __init__(self, total_number_of_memory_segments: int, memory_segment_size: int) -> None:
        if total_number_of_memory_segments < 0:
            raise ValueError(f"the number of network buffers must be >= 0, got {total_number_of_memory_segments}")
        self.total_number_of_memory_segments = total_number_of_memory_segments
        self.memory_segment_size = memory_segment_size
        self._lock = threading.Lock()
        self._reserved: dict[Any, int] = {}
        self._num_total_required_buffers = 0

    def reserve(self, owner: Any, required: int) -> None:
        """Reserve ``required`` buffers for ``owner`` (a task attempt), or raise
        :class:`InsufficientNetworkBuffersError` with Flink's message and reserve nothing."""
        if required < 0:
            raise ValueError(f"the number of buffers to reserve must be >= 0, got {required}")
        with self._lock:
            if owner in self._reserved:
                raise ValueError(f"{owner!r} already holds {self._reserved[owner]} network buffers")
            available = self.total_number_of_memory_segments - self._num_total_required_buffers
            if required > available:
                raise InsufficientNetworkBuffersError(
                    f"Insufficient number of network buffers: required {required}, but only {available} "
                    f"available. {self._config_description()}.")
            self._reserved[owner] = required
            self._num_total_required_buffers += required

    def release(self, owner: Any) -> None:
        """Give back what ``owner`` reserved (nothing if it reserved nothing)."""
        with self._lock:
            self._num_total_required_buffers -= self._reserved.pop(owner, 0)

    @property
    def required(self) -> int:
        """Buffers reserved by the deployed tasks (Flink's ``numTotalRequiredBuffers``)."""
        with self._lock:
            return self._num_total_required_buffers

    @property
    def available(self) -> int:
        """Buffers not reserved by any task."""
        return self.total_number_of_memory_segments - self.required

    def _config_description(self) -> str:
        return (f"The total number of network buffers is currently set to {self.total_number_of_memory_segments} "
                f"of {self.memory_segment_size} bytes each. You can increase this number by setting the "
                f"configuration keys '{TaskManagerMemoryOptions.NETWORK_MEMORY_FRACTION.key()}', "
                f"'{TaskManagerMemoryOptions.NETWORK_MEMORY_MIN.key()}', and "
                f"'{TaskManagerMemoryOptions.NETWORK_MEMORY_MAX.key()}'")

    def __repr__(self) -> str:
        return (f"NetworkBufferPool({self.required}/{self.total_number_of_memory_segments} buffers reserved, "
                f"{self.memory_segment_size} bytes each)")


def _page_size(configuration: Mapping[str, Any]) -> int:
    """``taskmanager.memory.segment-size`` checked as Flink's ``ConfigurationParserUtils.getPageSize``."""
    option = TaskManagerMemoryOptions.MEMORY_SEGMENT_SIZE
    size = int(option.get(configuration))
    key = option.source_key(configuration)
    if size < MIN_PAGE_SIZE:
        raise IllegalConfigurationError(f"Invalid configuration value for {key} : {size} - Minimum memory segment "
                                        f"size is {MIN_PAGE_SIZE}")
    if size & (size - 1):
        raise IllegalConfigurationError(f"Invalid configuration value for {key} : {size} - Memory segment size "
                                        f"must be a power of 2.")
    return size


def number_of_network_buffers(configuration: Mapping[str, Any], spec: Any = None) -> tuple[int, int]:
    """``(buffers, segment size)`` of a TaskManager started with ``configuration``: its network
    memory (``spec``'s, or Flink's calculation with Flink's shipped process size when none is set)
    divided by the segment size (Flink's ``calculateNumberOfNetworkBuffers``). A bad memory key
    raises :class:`~streamkernel.errors.IllegalConfigurationError` naming it.

        >>> number_of_network_buffers({"taskmanager.memory.process.size": "1728m"})
        (4096, 32768)
    """
    page_size = _page_size(configuration)
    if spec is None:
        from streamkernel.runtime.memory import task_executor_process_spec_from_config, with_default_process_size

        spec = task_executor_process_spec_from_config(with_default_process_size(configuration, "taskmanager"))
    network_bytes = spec.flink_memory.network.get_bytes()
    buffers = network_bytes // page_size
    if buffers > _INT_MAX:
        raise IllegalConfigurationError(
            f"The given number of memory bytes ({network_bytes}) corresponds to more than MAX_INT pages "
            f"('{TaskManagerMemoryOptions.NETWORK_MEMORY_MAX.key()}' is too large for "
            f"'{TaskManagerMemoryOptions.MEMORY_SEGMENT_SIZE.key()}' {page_size}).")
    return int(buffers), page_size


def network_buffer_pool_from_config(configuration: Mapping[str, Any], spec: Any = None) -> NetworkBufferPool:
    """The NetworkBufferPool of a TaskManager started with ``configuration`` (and its memory ``spec``,
    when computed already: once per TaskManager, at its start)."""
    buffers, page_size = number_of_network_buffers(configuration, spec)
    return NetworkBufferPool(buffers, page_size)


def buffers_in_use(tasks: Iterable[Any]) -> int:
    """Buffers holding data now in the input channels of ``tasks`` (a task's gate: its invokable's)."""
    used = 0
    for task in tasks:
        gate = getattr(getattr(task, "invokable", None), "gate", None)
        for channel in getattr(gate, "channels", ()):
            used += channel.queued()
    return used


def network_buffer_metrics(pool: NetworkBufferPool, tasks: Iterable[Any]) -> dict[str, int]:
    """A TaskManager's network buffer metrics by Flink's names (``Status.Shuffle.Netty.*``): total,
    used (holding data in its tasks' input channels now), available, ``RequestedMemoryUsage``
    (the buffers its deployed tasks reserved, in percent of the total: Flink's requested memory,
    over 100 when they asked for more than there is), and streamkernel's ``RequiredMemorySegments``
    (those buffers); ``*Memory`` in bytes."""
    total = pool.total_number_of_memory_segments
    used = min(total, buffers_in_use(tasks))
    size = pool.memory_segment_size
    prefix = "Status.Shuffle.Netty."
    return {f"{prefix}TotalMemorySegments": total, f"{prefix}UsedMemorySegments": used,
            f"{prefix}AvailableMemorySegments": total - used, f"{prefix}RequiredMemorySegments": pool.required,
            f"{prefix}RequestedMemoryUsage": pool.required * 100 // total if total else 0,
            f"{prefix}TotalMemory": total * size, f"{prefix}UsedMemory": used * size,
            f"{prefix}AvailableMemory": (total - used) * size}
