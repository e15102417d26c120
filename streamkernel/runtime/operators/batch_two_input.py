"""BATCH execution of two-input operators (``connect``): the order Flink gives their inputs.

Chosen by :func:`batch_two_input` for the head of a task in ``execution.runtime-mode: BATCH``
(as measured with PyFlink 2.3):

* **keyed** (``connect(...).key_by(k1, k2)`` then ``process`` / ``map`` / ``flat_map``):
  Flink's ``MultiInputSortingDataInput``. Each input is gathered and sorted by key (the
  serialized key, :func:`~streamkernel.runtime.operators.batch_sorting.key_order`) then by
  timestamp (ties in arrival order); the two sorted inputs are merged through a
  ``java.util.PriorityQueue`` holding the head of each input: the smaller (key, timestamp)
  goes first and, on a tie, the head that was already waiting in the queue wins over the one
  just added. The first heads are added in the order the inputs end while Flink reads them one
  record from each in turn (both complete: blocking exchanges): the shorter input first, input 1
  when they are as long. The operator sees one
  key at a time: at the end of a key its timers fire and its state is dropped, as for a
  one-input keyed operator.
* **keyed broadcast** (``keyed.connect(broadcast).process(KeyedBroadcastProcessFunction)``):
  the broadcast input has priority (passed through as it comes, all of it first); then the
  keyed input, sorted and fed key by key as above.
* **broadcast** (non-keyed ``BroadcastProcessFunction``): the broadcast input first, then the
  other input in arrival order.
* **non-keyed connect** (``co_map`` / ``co_flat_map`` / ``CoProcessFunction``): Flink's
  two-input processor reads one record at a time from each input in turn, input 1 first,
  both inputs being complete (blocking exchanges): records alternate until one input runs out.

Watermarks are held back: the operator sees the final one after the last record.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from streamkernel.common.watermark_strategy import MAX_WATERMARK
from streamkernel.runtime.operators.external_sorter import estimate_batch_size
from streamkernel.runtime.operators.batch_sorting import (
    _FEED_CHUNK,
    _NoWatermarkOutput,
    end_key,
    sort_key_function,
    state_clearer,
)

__all__ = ["batch_two_input", "BatchTwoInput", "merge_sorted_inputs", "merge_sorted_streams"]

_NO_TIMESTAMP = -2**63  # StreamRecord#getTimestamp without a timestamp: Long.MIN_VALUE


def batch_two_input(head: Any, key_selectors: Sequence[Any], key_type: Any = None,
                    per_key_state: bool = True, sort_buffers: Optional[Sequence[Any]] = None) -> "BatchTwoInput":
    """The BATCH input of a two-input ``head`` (see the module doc), from its state key selectors;
    ``sort_buffers`` bound its sorted inputs' memory (:mod:`.external_sorter`), one per keyed input."""
    from streamkernel.runtime.operators.co import BroadcastProcessOperator

    selectors = tuple(key_selectors) + (None,) * (2 - len(key_selectors))
    broadcast = isinstance(head, BroadcastProcessOperator)  # keyed broadcast is a subclass
    return BatchTwoInput(head, selectors[0], selectors[1], key_type, broadcast, per_key_state, sort_buffers)


def merge_sorted_streams(first: Iterable[tuple], second: Iterable[tuple],
                         first_inserted: int) -> Iterator[tuple[int, tuple]]:
    """Merge two sorted streams of ``(sort key, ...)`` entries as Flink's queue of input heads does:
    ``(input, entry)`` pairs. ``first_inserted`` (0 or 1) is the input whose head entered the queue
    first; a head that ties with the one waiting in the queue goes after it."""
    streams = (iter(first), iter(second))
    heads: list[Optional[tuple]] = [None, None]
    queue: list[int] = []  # input indices, queue[0] the root

    def add(i: int) -> None:
        head = heads[i] = next(streams[i], None)
        if head is None:
            return
        queue.append(i)
        if len(queue) == 2 and head[0] < heads[queue[0]][0]:  # type: ignore[index]
            queue.reverse()

    add(first_inserted)
    add(1 - first_inserted)
    while queue:
        i = queue.pop(0)
        yield i, heads[i]  # type: ignore[misc]
        add(i)


def merge_sorted_inputs(first: list, second: list, first_inserted: int) -> list[tuple[int, int]]:
    """:func:`merge_sorted_streams` of two lists, as ``(input, position)`` pairs."""
    positions = [0, 0]
    order = []
    for i, _ in merge_sorted_streams(first, second, first_inserted):
        order.append((i, positions[i]))
        positions[i] += 1
    return order


class BatchTwoInput:
    """Sits between the task's input and a two-input head in BATCH mode (see the module doc)."""

    def __init__(self, head: Any, key_selector1: Any, key_selector2: Any, key_type: Any = None,
                 broadcast: bool = False, per_key_state: bool = True,
                 sort_buffers: Optional[Sequence[Any]] = None) -> None:
        self.head = head
        self._key_of: tuple[Optional[Callable[[Any], Any]], ...] = tuple(
            None if k is None else getattr(k, "get_key", k) for k in (key_selector1, key_selector2))
        self._key_type = key_type
        self._broadcast = broadcast
        self._keyed = self._key_of[0] is not None
        self._values: tuple[list, list] = ([], [])
        self._timestamps: tuple[list, list] = ([], [])
        self._ended: list[int] = []
        self._clear_state = state_clearer(head) if self._keyed and per_key_state else None
        # a keyed input's managed memory (keyed broadcast: the keyed input only); None: unbounded
        buffers = list(sort_buffers or ())
        self._sort_buffers: list[Any] = [buffers.pop(0) if buffers and self._key_of[i] is not None else None
                                         for i in (0, 1)]
        self._sequence = [0, 0]  # arrival index of the first record held, per input
        self._counts = [0, 0]  # records gathered per input, spilled ones included

    # ------------------------------------------------------------------ what the InputProcessor calls
    def process_batch1(self, values: list, timestamps: Optional[list]) -> None:
        """Gathered until the inputs end (a non-keyed input after the broadcast one ended goes on)."""
        if self._broadcast and not self._keyed and 1 in self._ended:
            self.head.process_batch1(values, timestamps)
            return
        self._gather(0, values, timestamps)

    def process_batch2(self, values: list, timestamps: Optional[list]) -> None:
        """The broadcast input passes at once; otherwise gathered."""
        if self._broadcast:
            self.head.process_batch2(values, timestamps)
            return
        self._gather(1, values, timestamps)

    def process_watermark1(self, timestamp: int) -> None:
        """Held back: the operator sees the final watermark after the last record."""

    def process_watermark2(self, timestamp: int) -> None:
        """Held back: the operator sees the final watermark after the last record."""

    def end_input(self, index: int) -> None:
        """Input ``index`` ended; when both have, the gathered records go to the operator in Flink's order."""
        self._ended.append(index)
        if self._broadcast and not self._keyed and index == 1:
            self._replay(0, range(len(self._values[0])))
            self._values[0].clear()
            self._timestamps[0].clear()
        if len(self._ended) < 2:
            return
        if self._keyed:
            self._run_keyed()
        elif not self._broadcast:
            self._run_alternating()
        head = self.head
        head.process_watermark1(MAX_WATERMARK)
        head.process_watermark2(MAX_WATERMARK)
        for i in self._ended:
            head.end_input(i)

    # ------------------------------------------------------------------ helpers
    def _gather(self, i: int, values: list, timestamps: Optional[list]) -> None:
        self._values[i].extend(values)
        self._timestamps[i].extend(timestamps if timestamps is not None else [None] * len(values))
        self._counts[i] += len(values)
        buffer = self._sort_buffers[i]
        if buffer is not None and buffer.add(estimate_batch_size(values)):
            buffer.runs.write(self._sorted(i))
            self._sequence[i] += len(self._values[i])
            self._values[i].clear()
            self._timestamps[i].clear()
            buffer.spilled()

    def close(self) -> None:
        """Drop what is held and the spilled runs, give the managed memory back (idempotent)."""
        for i in (0, 1):
            self._values[i].clear()
            self._timestamps[i].clear()
            if self._sort_buffers[i] is not None:
                self._sort_buffers[i].close()

    def _replay(self, i: int, positions: Any) -> None:
        """Give the operator the gathered records of input ``i`` at ``positions`` as one batch."""
        values, timestamps = self._values[i], self._timestamps[i]
        chunk = [values[p] for p in positions]
        if not chunk:
            return
        stamps = [timestamps[p] for p in positions]
        batch = (self.head.process_batch1, self.head.process_batch2)[i]
        batch(chunk, None if all(t is None for t in stamps) else stamps)

    def _sorted(self, i: int) -> list:
        """What input ``i`` holds as sorted ``((key bytes, timestamp), sequence, timestamp, value)``
        entries (ties keep arrival order)."""
        key_of, order_of = self._key_of[i], sort_key_function(self._key_type)
        base = self._sequence[i]
        entries = [((order_of(key_of(v)), _NO_TIMESTAMP if t is None else t), base + p, t, v)  # type: ignore[misc]
                   for p, (v, t) in enumerate(zip(self._values[i], self._timestamps[i]))]
        entries.sort(key=lambda e: e[:2])
        return entries

    def _sorted_stream(self, i: int) -> Iterator[tuple]:
        """Input ``i`` sorted: its spilled runs merged with what it holds."""
        entries = self._sorted(i)
        self._values[i].clear()
        self._timestamps[i].clear()
        buffer = self._sort_buffers[i]
        return buffer.runs.merged(entries) if buffer is not None and len(buffer.runs) else iter(entries)

    def _run_keyed(self) -> None:
        """Merge the sorted inputs (the broadcast input, if any, went by already); one key at a time."""
        # both inputs complete, read one record from each in turn while sorting: the shorter ends first
        first = 1 if self._counts[1] < self._counts[0] and not self._broadcast else 0
        streams = [self._sorted_stream(0), iter(()) if self._broadcast else self._sorted_stream(1)]
        head = self.head
        batches = (head.process_batch1, head.process_batch2)
        real_output = head.output
        head.output = _NoWatermarkOutput(real_output)
        run_input, run_key = -1, None
        values: list = []
        stamps: list = []

        def flush() -> None:
            if values:
                batches[run_input](list(values), None if all(t is None for t in stamps) else list(stamps))
                values.clear()
                stamps.clear()

        try:
            # a run: consecutive records of one input and one key, given as one batch
            for i, entry in merge_sorted_streams(streams[0], streams[1], first):
                key = entry[0][0]
                if i != run_input or key != run_key or len(values) >= _FEED_CHUNK:
                    flush()
                    if run_key is not None and key != run_key:
                        end_key(head, self._clear_state)
                    run_input, run_key = i, key
                values.append(entry[3])
                stamps.append(entry[2])
            flush()
            if run_key is not None:
                end_key(head, self._clear_state)
        finally:
            head.output = real_output
            self.close()

    def _run_alternating(self) -> None:
        """Non-keyed inputs: one record of input 1, one of input 2, ... until one runs out."""
        lengths = [len(self._values[0]), len(self._values[1])]
        both = min(lengths)
        for p in range(both):
            self._replay(0, (p,))
            self._replay(1, (p,))
        longer = 0 if lengths[0] > both else 1
        self._replay(longer, range(both, lengths[longer]))
        for i in (0, 1):
            self._values[i].clear()
            self._timestamps[i].clear()
