"""The managed memory of BATCH mode's sorters, and their spilling (Flink's ``ExternalSorter``).

A keyed operator in BATCH mode sorts its whole input by key before it sees a record
(:mod:`.batch_sorting`). Flink's sorter works in managed memory: it is given a fraction of its
slot's managed memory (:mod:`streamkernel.graph.managed_memory`), allocates that many pages
(``taskmanager.memory.segment-size`` each) and, when the records it holds pass
``taskmanager.runtime.sort-spilling-threshold`` of its sort memory, writes them sorted to a spill
file under the TaskManager's temporary directories; at the end it merges the spilled runs
(``taskmanager.runtime.max-fan`` at most at once, in rounds) with what is still in memory.
Fewer than 12 pages is Flink's "Too little memory provided to sorter" error.

Here the same, with one difference: Flink keeps the records serialized in its pages, so it knows
their size to the byte; streamkernel keeps them as Python objects until it spills, and *estimates*
their size (:func:`estimate_batch_size`: ``sys.getsizeof`` through a few levels of a sample of
each batch, plus what a buffered record costs in the sorter's lists). The sorter reserves its
sort memory from its slot's :class:`~streamkernel.runtime.memory.memory_manager.MemoryManager`
(and reports what it holds), so the slot's managed memory shows it.

:class:`SpillingRuns` writes and reads the runs: sorted ``(sort key, timestamp, sequence,
timestamp or None, value)`` entries, pickled in chunks (cloudpickle for what pickle refuses);
its directory is removed when the sorter is closed, also after a failure.
"""

from __future__ import annotations

import heapq
import os
import pickle
import shutil
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional

from streamkernel.errors import StreamKernelError

__all__ = ["SortMemory", "InsufficientSortMemoryError", "SpillingRuns", "ManagedSortBuffer", "open_sort_buffers",
           "estimate_batch_size", "sort_memory", "check_sort_memory", "MIN_SORTER_PAGES"]

MIN_NUM_WRITE_BUFFERS = 2
MAX_NUM_WRITE_BUFFERS = 4
MIN_NUM_SORT_MEM_SEGMENTS = 10
#: the fewest pages a sorter works with (Flink: write buffers + sort segments)
MIN_SORTER_PAGES = MIN_NUM_WRITE_BUFFERS + MIN_NUM_SORT_MEM_SEGMENTS
#: what one buffered record costs besides itself: a slot in the values and timestamps lists, a timestamp
RECORD_OVERHEAD = 48
_SAMPLES = 8
_CHUNK = 4096


class InsufficientSortMemoryError(StreamKernelError, ValueError):
    """A sorter's share of its slot's managed memory is below Flink's minimum of 12 pages."""


@dataclass(frozen=True)
class SortMemory:
    """What a sorter has: its pages, how many of them buffer spill writes, its merge fan-in, and
    the bytes of records it holds before it spills."""

    pages: int
    page_size: int
    write_buffers: int
    max_fan: int
    spilling_threshold: float

    @property
    def sort_memory(self) -> int:
        """Bytes of the pages that hold records (all but the write buffers)."""
        return (self.pages - self.write_buffers) * self.page_size

    @property
    def start_spilling_bytes(self) -> int:
        """Records held beyond this many bytes are spilled (``sort-spilling-threshold`` of the sort memory)."""
        return int(self.spilling_threshold * self.sort_memory)

    @property
    def reserved_bytes(self) -> int:
        """Every page's bytes: what the sorter reserves from its slot."""
        return self.pages * self.page_size


def sort_memory(pages: int, page_size: int, max_fan: int, spilling_threshold: float, where: str = "") -> SortMemory:
    """Flink's split of a sorter's ``pages`` (``ExternalSorterBuilder.doBuild``, spilling on, no
    large-record handler); fewer than :data:`MIN_SORTER_PAGES` raises
    :class:`InsufficientSortMemoryError` with Flink's message, then ``where`` (who, which keys).

    >>> sort_memory(1000, 32768, 128, 0.8).write_buffers, sort_memory(100, 32768, 128, 0.8).max_fan
    (10, 98)
    """
    if pages < MIN_SORTER_PAGES:
        raise InsufficientSortMemoryError(
            f"Too little memory provided to sorter to perform task. Required are at least {MIN_SORTER_PAGES} pages. "
            f"Current page size is {page_size} bytes." + (f" {where}" if where else ""))
    if max_fan + MIN_NUM_WRITE_BUFFERS > pages:
        write_buffers, max_fan = MIN_NUM_WRITE_BUFFERS, pages - MIN_NUM_WRITE_BUFFERS
    else:
        auxiliary = pages // 100
        write_buffers = MAX_NUM_WRITE_BUFFERS if auxiliary >= MAX_NUM_WRITE_BUFFERS \
            else max(MIN_NUM_WRITE_BUFFERS, auxiliary)
    return SortMemory(pages, page_size, write_buffers, max_fan, spilling_threshold)


def _deep_size(value: Any, depth: int = 3) -> int:
    size = sys.getsizeof(value)
    if depth <= 0:
        return size
    if isinstance(value, (tuple, list)):
        return size + sum(_deep_size(v, depth - 1) for v in value)
    if isinstance(value, dict):
        return size + sum(_deep_size(k, depth - 1) + _deep_size(v, depth - 1) for k, v in value.items())
    inner = getattr(value, "_values", None)  # a Row
    if isinstance(inner, (list, tuple)):
        return size + _deep_size(inner, depth - 1)
    return size


def estimate_batch_size(values: list) -> int:
    """The estimated bytes ``values`` hold in a sorter: a few evenly spaced records measured
    through three levels of containers, times their number, plus :data:`RECORD_OVERHEAD` each.

    >>> estimate_batch_size([]) , estimate_batch_size([b"x" * 1000]) > 1000
    (0, True)
    """
    n = len(values)
    if n == 0:
        return 0
    step = max(1, n // _SAMPLES)
    sample = values[::step][:_SAMPLES]
    return n * (sum(_deep_size(v) for v in sample) // len(sample) + RECORD_OVERHEAD)


def _dump(chunk: list, out: Any) -> None:
    try:
        pickle.dump(chunk, out, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        import cloudpickle

        cloudpickle.dump(chunk, out, protocol=pickle.HIGHEST_PROTOCOL)


class SpillingRuns:
    """A sorter's spilled runs: files of sorted entries in a directory of its own under ``parent``."""

    def __init__(self, parent: str, max_fan: int, prefix: str = "sort-") -> None:
        self._parent = parent
        self._prefix = prefix
        self._max_fan = max(2, max_fan)
        self._directory: Optional[str] = None
        self._runs: list[str] = []
        #: how many runs were written, merges included (a metric and a test's hook)
        self.spilled = 0

    def __len__(self) -> int:
        return len(self._runs)

    def write(self, entries: Iterable[tuple]) -> None:
        """Write one run of ``entries``, already sorted."""
        if self._directory is None:
            os.makedirs(self._parent, exist_ok=True)
            self._directory = tempfile.mkdtemp(prefix=self._prefix, dir=self._parent)
        path = os.path.join(self._directory, f"run-{self.spilled:06d}")
        with open(path, "wb") as out:
            chunk: list = []
            for entry in entries:
                chunk.append(entry)
                if len(chunk) >= _CHUNK:
                    _dump(chunk, out)
                    chunk = []
            if chunk:
                _dump(chunk, out)
        self._runs.append(path)
        self.spilled += 1

    @staticmethod
    def _read(path: str) -> Iterator[tuple]:
        with open(path, "rb") as source:
            while True:
                try:
                    chunk = pickle.load(source)
                except EOFError:
                    return
                yield from chunk

    def merged(self, in_memory: list) -> Iterator[tuple]:
        """Every run and the sorted ``in_memory`` entries, merged in order; runs beyond the fan-in
        are first merged into bigger runs, ``max_fan`` at a time."""
        while len(self._runs) > self._max_fan:
            batch, self._runs = self._runs[:self._max_fan], self._runs[self._max_fan:]
            self.write(heapq.merge(*(self._read(p) for p in batch)))
            for path in batch:
                os.remove(path)
        return heapq.merge(*(self._read(p) for p in self._runs), iter(in_memory))

    def close(self) -> None:
        """Delete every run and the directory (idempotent)."""
        directory, self._directory, self._runs = self._directory, None, []
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


class ManagedSortBuffer:
    """One sorter's share of its slot's managed memory: reserved at once, the estimated bytes it
    holds now (reported to the slot), and its spilled runs."""

    def __init__(self, memory: SortMemory, spill_parent: str, memory_manager: Any = None) -> None:
        self.memory = memory
        self._memory_manager = memory_manager
        if memory_manager is not None:
            memory_manager.reserve_memory(self, memory.reserved_bytes)
        self.runs = SpillingRuns(spill_parent, memory.max_fan)
        #: the estimated bytes of the records held now
        self.held = 0

    def add(self, size: int) -> bool:
        """Count ``size`` more bytes held; True when the records held should now be spilled."""
        self.held += size
        if self._memory_manager is not None:
            self._memory_manager.report_usage(self, min(self.held, self.memory.reserved_bytes))
        return self.held >= self.memory.start_spilling_bytes

    def spilled(self) -> None:
        """The records held went to a run: nothing is held."""
        self.held = 0
        if self._memory_manager is not None:
            self._memory_manager.report_usage(self, 0, self.runs.spilled)

    def close(self) -> None:
        """Delete the runs and give the memory back (idempotent)."""
        self.runs.close()
        if self._memory_manager is not None:
            self._memory_manager.release_memory(self)


def open_sort_buffers(memory_manager: Any, fraction: float, sorted_inputs: int, configuration: Any,
                      spill_parent: str, operator: str) -> Optional[list[ManagedSortBuffer]]:
    """The sort buffers of an operator sorting ``sorted_inputs`` inputs with ``fraction`` of its
    slot's managed memory (split evenly among the inputs), or None without a memory manager (the
    sorter is then unbounded). Raises :class:`InsufficientSortMemoryError` naming ``operator``,
    its share and the keys that size it, or the slot's
    :class:`~streamkernel.runtime.memory.memory_manager.MemoryReservationError`."""
    if memory_manager is None or sorted_inputs < 1:
        return None
    from streamkernel.common.options import AlgorithmOptions, TaskManagerMemoryOptions

    page_size = TaskManagerMemoryOptions.MEMORY_SEGMENT_SIZE.get(configuration)
    pages = int((memory_manager.size // page_size) * (fraction / sorted_inputs))  # Flink's computeNumberOfPages
    where = (f"Operator {operator!r} sorts {sorted_inputs} input(s) with a fraction {fraction:.4f} of its "
             f"slot's {memory_manager.size} bytes of managed memory: {pages} pages each. "
             f"Raise '{TaskManagerMemoryOptions.MANAGED_MEMORY_SIZE.key()}' (or "
             f"'{TaskManagerMemoryOptions.MANAGED_MEMORY_FRACTION.key()}'), or give the OPERATOR consumer more of "
             f"the slot with '{TaskManagerMemoryOptions.MANAGED_MEMORY_CONSUMER_WEIGHTS.key()}'.")
    memory = sort_memory(pages, page_size, AlgorithmOptions.SPILLING_MAX_FAN.get(configuration) // sorted_inputs,
                         AlgorithmOptions.SORT_SPILLING_THRESHOLD.get(configuration), where)
    buffers: list[ManagedSortBuffer] = []
    try:
        for _ in range(sorted_inputs):
            buffers.append(ManagedSortBuffer(memory, spill_parent, memory_manager))
    except BaseException:
        for buffer in buffers:
            buffer.close()
        raise
    return buffers


def check_sort_memory(job_graph: Any, configuration: Any, slots_per_taskmanager: int) -> None:
    """Refuse, before the job starts, a sorting operator whose share of a slot of a cluster sized by
    ``configuration`` (``slots_per_taskmanager`` slots per TaskManager) is under 12 pages: the
    :class:`InsufficientSortMemoryError` every one of its subtasks would fail with."""
    from streamkernel.graph.managed_memory import sorted_inputs
    from streamkernel.runtime.memory.memory_manager import MemoryManager, managed_memory_per_slot

    sorting = [(vertex, node) for vertex in job_graph.vertices for node in job_graph.operators(vertex.id)
               if sorted_inputs(node, True) and any(n == node.id and u == "OPERATOR" for n, u, _ in vertex.managed_memory_fractions)]
    if not sorting:
        return
    manager = MemoryManager(managed_memory_per_slot(configuration, slots_per_taskmanager))
    for vertex, node in sorting:
        buffers = open_sort_buffers(manager, vertex.managed_memory_fraction(node.id, "OPERATOR"),
                                    sorted_inputs(node, True), configuration, "/nonexistent", vertex.name)
        for buffer in buffers or ():
            buffer.close()
