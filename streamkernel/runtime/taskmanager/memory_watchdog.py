"""The process size, enforced: a TaskManager watches its own resident set size (RSS).

Flink runs a TaskManager in a container of ``taskmanager.memory.process.size``; a process that
grows beyond it is OOM-killed by the container, without a word. A ``process`` or ``spark``
TaskManager here is one Python process: :class:`ProcessMemoryWatchdog` measures its RSS every
``streamkernel.taskmanager.memory.watchdog.interval`` (a daemon thread reading
``/proc/self/statm``: psutil is not a dependency) and, above the TaskManager's total process
memory, fails it with a :class:`TaskManagerProcessSizeExceededError` that names the size, the
measured RSS and the keys to raise. The worker reports that error to the ResourceManager as
the cause of the TaskManager's loss and exits with code 137 (a container's OOM kill, 128 +
SIGKILL): the JobManager restarts the job by its restart strategy, on a replacement
TaskManager where the backend replaces lost ones. ``local`` TaskManagers (threads of the
kernel's process) only measure.

The same measurement estimates the task heap in use (what user functions and heap state hold
now): the RSS minus the process's own baseline (its RSS when the TaskManager started, before any
task ran: the interpreter, streamkernel and its libraries), minus the managed memory in use now
(what its slots' RocksDB shared resources and BATCH sorters use, :meth:`MemoryManager.metrics`, and
the TaskManager-wide RocksDB memory), minus the network buffers holding data now times the
segment size; at least 0. It is an *estimate*: Python
has no separate heap to measure, the allocator keeps freed memory for a while (the estimate falls
back only as memory is given back to the system), RocksDB's memory outside its block cache and
write buffers counts as task heap, and ``local`` TaskManagers share the kernel's process, so each
one's estimate includes what the kernel and the other TaskManagers allocated since it started.
Its figures are cheap (one ``/proc`` read, a sum over the slots and channels): the enforcing
thread computes them only when the RSS is above the size, for its advice.
:meth:`ProcessMemoryWatchdog.usage` is what the TaskManager's heartbeat carries
(``TaskExecutorHeartbeat.memory``); REST shows the estimate as ``heapUsed``.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from streamkernel.common.memory_size import MemorySize
from streamkernel.common.options import TaskManagerMemoryOptions
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.memory.breakdown import memory_configuration_info
from streamkernel.runtime.memory import TaskExecutorProcessSpec, task_executor_process_spec_from_config, \
    with_default_process_size
from streamkernel.runtime.taskmanager.gateway import TaskManagerLostError

__all__ = ["ProcessMemoryWatchdog", "TaskManagerProcessSizeExceededError", "MemoryUsage", "read_rss_bytes",
           "taskmanager_process_spec", "watchdog_interval_seconds", "OOM_EXIT_CODE", "managed_memory_in_use",
           "network_memory_in_use"]

_LOG = logging.getLogger(__name__)

#: The exit code of a TaskManager that exceeded its process size: a container's OOM kill (128 + SIGKILL).
OOM_EXIT_CODE = 137
_O = TaskManagerMemoryOptions


class TaskManagerProcessSizeExceededError(TaskManagerLostError):
    """A TaskManager's resident set size exceeded its total process memory (Flink: a container OOM kill)."""


@dataclass(frozen=True)
class MemoryUsage:
    """One measurement of a TaskManager's memory (bytes): what its heartbeat reports."""

    rss: int
    process_size: int
    task_heap: int
    task_heap_used_estimate: int
    enforced: bool
    #: the RSS when the TaskManager started, before any task ran
    baseline_rss: int = 0
    #: managed memory in use now (its slots' RocksDB shared resources)
    managed_used: int = 0
    #: network buffers holding data now x segment size
    network_used: int = 0

    @property
    def exceeded(self) -> bool:
        """True when the RSS is above the total process memory."""
        return self.rss > self.process_size

    def to_dict(self) -> dict[str, object]:
        """The heartbeat's form: ``rss``, ``process_size``, ``task_heap``, ``task_heap_used_estimate``,
        ``baseline_rss``, ``managed_used``, ``network_used`` (bytes), ``enforced``."""
        return {"rss": self.rss, "process_size": self.process_size, "task_heap": self.task_heap,
                "task_heap_used_estimate": self.task_heap_used_estimate, "enforced": self.enforced,
                "baseline_rss": self.baseline_rss, "managed_used": self.managed_used,
                "network_used": self.network_used}


def read_rss_bytes() -> Optional[int]:
    """This process's resident set size from ``/proc/self/statm`` (None where there is no /proc)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            resident_pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def managed_memory_in_use(memory_metrics: Mapping[Any, Mapping[str, Mapping[str, int]]]) -> int:
    """Bytes of managed memory in use now: the ``used`` of every consumer of every slot (its RocksDB
    shared resources, its BATCH sorters' ``operator`` memory) and of the TaskManager-wide RocksDB memory,
    from ``TaskExecutor.memory_metrics()`` (``{slot: {"managed": {"size"}, "rocksdb": {"used", ...}}}``)."""
    return sum(int(values.get("used", 0)) for slot in memory_metrics.values()
               for kind, values in slot.items() if kind != "managed")


def network_memory_in_use(metrics: Mapping[str, int]) -> int:
    """Bytes of network buffers holding data now (``Status.Shuffle.Netty.UsedMemory`` of
    ``TaskExecutor.metrics()``: buffers in use x segment size; 0 without network buffers)."""
    return int(metrics.get("Status.Shuffle.Netty.UsedMemory", 0))


def taskmanager_process_spec(configuration: Mapping[str, str]) -> TaskExecutorProcessSpec:
    """A TaskManager's memory spec from the cluster configuration (Flink's shipped 1728m when no size is
    configured); IllegalConfigurationError naming the keys when the calculation fails."""
    return task_executor_process_spec_from_config(with_default_process_size(configuration, "taskmanager"))


def watchdog_interval_seconds(configuration: Mapping[str, str]) -> float:
    """``streamkernel.taskmanager.memory.watchdog.interval`` in seconds (IllegalConfigurationError unless > 0)."""
    interval = _O.PROCESS_SIZE_WATCHDOG_INTERVAL.get(configuration)
    if interval.to_milliseconds() <= 0:
        raise IllegalConfigurationError(f"configuration key {_O.PROCESS_SIZE_WATCHDOG_INTERVAL.key()}: the interval "
                                        f"must be positive, got {interval}")
    return interval.to_milliseconds() / 1000


def _size_keys(configuration: Mapping[str, str]) -> str:
    """The key(s) that sized the process, as the advice names them."""
    if _O.TOTAL_PROCESS_MEMORY.is_set(configuration):
        return f"'{_O.TOTAL_PROCESS_MEMORY.key()}'"
    if _O.TOTAL_FLINK_MEMORY.is_set(configuration):
        return f"'{_O.TOTAL_FLINK_MEMORY.key()}' (or set '{_O.TOTAL_PROCESS_MEMORY.key()}')"
    if _O.TASK_HEAP_MEMORY.is_set(configuration) and _O.MANAGED_MEMORY_SIZE.is_set(configuration):
        return f"'{_O.TASK_HEAP_MEMORY.key()}' (or set '{_O.TOTAL_PROCESS_MEMORY.key()}')"
    return f"'{_O.TOTAL_PROCESS_MEMORY.key()}' (Flink's default 1728m applies)"


class ProcessMemoryWatchdog:
    """Measures a TaskManager's RSS against its total process memory (see the module docstring).

    ``enforce``: a daemon thread started by :meth:`start` calls ``on_exceeded`` once with the
    explaining error when the RSS exceeds the process size (then stops); without it the watchdog
    only measures (:meth:`usage`). ``read_rss`` is the measurement (tests replace it); ``baseline_rss``
    the process's own RSS before any task ran (default: measured now, and again by :meth:`start`);
    :meth:`attach` names the TaskExecutor whose managed memory and network buffers in use the task
    heap estimate subtracts.
    """

    def __init__(self, taskmanager_id: str, spec: TaskExecutorProcessSpec, configuration: Mapping[str, str], *,
                 enforce: bool, on_exceeded: Optional[Callable[[TaskManagerProcessSizeExceededError], None]] = None,
                 read_rss: Callable[[], Optional[int]] = read_rss_bytes,
                 baseline_rss: Optional[int] = None) -> None:
        self.taskmanager_id = taskmanager_id
        self.spec = spec
        #: Flink's REST ``memoryConfiguration`` of this TaskManager (bytes), computed once
        self.memory_configuration = memory_configuration_info(spec)
        self.enforce = bool(enforce) and _O.PROCESS_SIZE_WATCHDOG.get(configuration)
        self.interval_s = watchdog_interval_seconds(configuration)
        self._size_keys = _size_keys(configuration)
        self._on_exceeded = on_exceeded
        self._read_rss = read_rss
        self._fixed_baseline = baseline_rss is not None
        self.baseline_rss: int = baseline_rss if baseline_rss is not None else (read_rss() or 0)
        self._in_use: Callable[[], tuple[int, int]] = lambda: (0, 0)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @classmethod
    def from_configuration(cls, taskmanager_id: str, configuration: Mapping[str, str], *, enforce: bool,
                           on_exceeded: Optional[Callable[[TaskManagerProcessSizeExceededError], None]] = None,
                           ) -> "ProcessMemoryWatchdog":
        """The watchdog of a TaskManager started with the cluster's ``configuration`` (its spec computed once)."""
        return cls(taskmanager_id, taskmanager_process_spec(configuration), configuration, enforce=enforce,
                   on_exceeded=on_exceeded)

    def attach(self, task_executor: Any) -> None:
        """Subtract what ``task_executor``'s slots (managed memory) and channels (network buffers) use
        now from the task heap estimate (its ``memory_metrics()`` and ``metrics()``)."""
        self._in_use = lambda: (managed_memory_in_use(task_executor.memory_metrics()),
                                network_memory_in_use(task_executor.metrics()))

    def usage(self, in_use: Optional[tuple[int, int]] = None, rss: Optional[int] = None) -> Optional[MemoryUsage]:
        """Measure now (None where the RSS cannot be read). ``in_use``: the managed and network bytes in
        use when the caller has them already (else asked of the attached TaskExecutor); ``rss``: likewise."""
        rss = self._read_rss() if rss is None else rss
        if rss is None:
            return None
        total = self.spec.get_total_process_memory_size().get_bytes()
        task_heap = self.spec.flink_memory.task_heap.get_bytes()
        managed, network = self._in_use() if in_use is None else in_use
        estimate = max(0, rss - self.baseline_rss - managed - network)
        return MemoryUsage(rss, total, task_heap, estimate, self.enforce, self.baseline_rss, managed, network)

    def exceeded_error(self, usage: MemoryUsage) -> TaskManagerProcessSizeExceededError:
        """The error explaining ``usage`` above the process size: the size, the RSS, the keys to raise."""
        def size(n: int) -> str:
            return MemorySize(n).to_human_readable_string()

        advice = f"raise {self._size_keys}"
        if usage.task_heap_used_estimate > usage.task_heap:
            advice += (f"; the task heap in use (estimated: RSS minus the process's baseline, managed memory "
                       f"and network buffers in use: "
                       f"{size(usage.task_heap_used_estimate)}) exceeds the task heap "
                       f"'{_O.TASK_HEAP_MEMORY.key()}' ({size(usage.task_heap)})")
        return TaskManagerProcessSizeExceededError(
            f"TaskManager {self.taskmanager_id!r} exceeded its total process memory: resident set size "
            f"{size(usage.rss)} > {size(usage.process_size)} ('{_O.TOTAL_PROCESS_MEMORY.key()}'); in Flink its "
            f"container would be OOM-killed. To give it more memory, {advice}.")

    def check(self) -> Optional[TaskManagerProcessSizeExceededError]:
        """Measure; the explaining error when the RSS is above the process size, else None (the task heap
        estimate is computed only then: this runs every interval)."""
        rss = self._read_rss()
        if rss is None or rss <= self.spec.get_total_process_memory_size().get_bytes():
            return None
        usage = self.usage(rss=rss)
        return self.exceeded_error(usage) if usage is not None else None

    def start(self) -> None:
        """Measure the baseline (the TaskManager started, no task ran yet) and start the watching thread
        (enforcing watchdogs only; idempotent)."""
        if self._thread is not None:
            return
        if not self._fixed_baseline:
            self.baseline_rss = self._read_rss() or 0
        if not self.enforce:
            return
        if self._read_rss() is None:
            _LOG.warning("TaskManager %s: no /proc/self/statm, its process size is not enforced", self.taskmanager_id)
            return
        self._thread = threading.Thread(target=self._run, name=f"streamkernel-{self.taskmanager_id}-memory-watchdog",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            error = self.check()
            if error is not None:
                if self._on_exceeded is not None:
                    self._on_exceeded(error)
                return

    def stop(self) -> None:
        """Stop watching (returns at once)."""
        self._stop.set()

    def __repr__(self) -> str:
        mode = "enforcing" if self.enforce else "measuring"
        return (f"ProcessMemoryWatchdog({self.taskmanager_id!r}, {mode} "
                f"{self.spec.get_total_process_memory_size()}, every {self.interval_s:g} s)")
