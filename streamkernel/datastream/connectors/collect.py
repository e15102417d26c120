"""The collect sink: records flow back from a running job to the program that started it.

``execute_and_collect()`` puts a :class:`CollectSink` on the stream; its sink subtasks
put their batches into a :class:`CollectBuffer` and the caller iterates over the buffer
while the job runs. The buffer is **bounded**: when the reader falls behind, the sink
subtasks block in :meth:`CollectBuffer.put_batch`, which backpressures the whole job
instead of filling memory (Flink's collect sink does the same through its fetch protocol).

Delivery: without checkpointing, a batch is visible to the reader as soon as the sink
writes it; a job restarted after a failure replays its sources, so the reader may see
records twice (at-least-once). With checkpointing the sink subtasks deliver whole
*transactions* (:meth:`CollectBuffer.put_transaction`): the records written before a
checkpoint, handed over when that checkpoint completes, each transaction at most once, so
the reader sees every record exactly once whatever fails (two-phase commit).

Buffers live in a process-wide registry: the sink (plan data, possibly copied) carries
only the buffer's id and finds the live buffer in the process it runs in. A TaskManager
in another process registers a forwarding buffer under the same id
(:func:`register_collect_buffer`, with the writer methods ``expect_writers``,
``put_batch``, ``put_transaction`` and ``writer_finished``) to ship batches back.
"""

from __future__ import annotations

import collections
import itertools
import threading
from typing import Any, Iterator, Optional

from streamkernel.datastream.connectors.base import Sink
from streamkernel.datastream.connectors.shared_objects import SharedObjectRegistry
from streamkernel.errors import InvalidProgramError

__all__ = ["CollectBuffer", "CollectSink", "register_collect_buffer", "get_collect_buffer",
           "DEFAULT_COLLECT_CAPACITY"]

#: records a collect buffer holds before its writers block
DEFAULT_COLLECT_CAPACITY = 100_000

_BUFFERS = SharedObjectRegistry()

#: How many of the latest records a CollectBuffer keeps for live views (:meth:`CollectBuffer.recent`).
RECENT_RECORDS = 100


class CollectBuffer:
    """A bounded, thread-safe queue of record batches between sink subtasks and one reader.

    Writers call :meth:`put_batch` (blocks while the buffer holds ``capacity`` records or
    more; a batch larger than the capacity is accepted into an empty buffer) and
    :meth:`writer_finished`; the buffer closes itself once every writer of the sink
    (``expect_writers``) finished. The job's driver calls :meth:`fail` when the job fails;
    iterating then raises that error after the records received before it.

        >>> buffer = CollectBuffer(capacity=10)
        >>> buffer.put_batch([1, 2]); buffer.close()
        >>> list(buffer)
        [1, 2]
    """

    def __init__(self, capacity: int = DEFAULT_COLLECT_CAPACITY, buffer_id: Optional[str] = None) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise InvalidProgramError(f"CollectBuffer: capacity must be an int >= 1, got {capacity!r}")
        self.capacity = capacity
        # Invariant guarded by _cond: _size == sum(len(b) for b in _batches); once _closed or
        # _error is set it stays set; writers wait on _cond for space, the reader for data.
        self._cond = threading.Condition()
        self._batches: collections.deque[list] = collections.deque()
        self._size = 0
        self._closed = False
        self._error: Optional[BaseException] = None
        self._consumer_gone = False
        self._reader_waiting = False  # the reader waits for a batch: writers wake it
        self._writers_waiting = 0  # writers waiting for room: the reader wakes them
        self._expected_writers: Optional[int] = None
        self._finished_writers: set[int] = set()
        self._transactions: set[str] = set()  # ids of the transactions delivered
        self._recent: collections.deque = collections.deque(maxlen=RECENT_RECORDS)  # for live views
        self.total_received = 0
        self.buffer_id = register_collect_buffer(self, buffer_id)

    # ------------------------------------------------------------------ writers
    def expect_writers(self, parallelism: int) -> None:
        """Tell the buffer how many sink subtasks write to it (first call wins)."""
        with self._cond:
            if self._expected_writers is None:
                self._expected_writers = parallelism

    def put_batch(self, values: list, timeout: Optional[float] = None) -> bool:
        """Append a batch, blocking while the buffer is full (backpressure).

        Returns False if ``timeout`` (seconds) passed while full; True when the batch was
        taken, or dropped because the buffer was closed or its reader went away.
        """
        return self._put(values, timeout, None)

    def put_transaction(self, transaction_id: str, values: list, timeout: Optional[float] = None) -> bool:
        """Deliver the records of a committed transaction, unless ``transaction_id`` was delivered
        already (a restarted job commits its restored transactions again); blocks like put_batch."""
        return self._put(values, timeout, transaction_id)

    def _put(self, values: list, timeout: Optional[float], transaction_id: Optional[str]) -> bool:
        n = len(values)
        with self._cond:
            if transaction_id is not None and transaction_id in self._transactions:
                return True
            if not values:
                return True
            while (self._size and self._size + n > self.capacity and not self._closed
                   and self._error is None and not self._consumer_gone):
                self._writers_waiting += 1
                try:
                    if not self._cond.wait(timeout):
                        return False
                finally:
                    self._writers_waiting -= 1
            if self._closed or self._error is not None or self._consumer_gone:
                return True
            self._batches.append(values)
            self._size += n
            self._recent.extend(values[-RECENT_RECORDS:])
            self.total_received += n
            if transaction_id is not None:
                self._transactions.add(transaction_id)
            if self._reader_waiting:
                self._cond.notify_all()
        return True

    def recent(self, n: int = 20) -> list:
        """The last ``n`` records received (at most RECENT_RECORDS), whether the reader took them or not:
        what a live results view shows without taking records from the reader."""
        return self.recent_and_total(n)[0]

    def recent_and_total(self, n: int = 20) -> tuple[list, int]:
        """:meth:`recent` and ``total_received`` read together (a view showing both never shows a
        total whose records it does not show)."""
        with self._cond:
            return (list(self._recent)[-n:] if n > 0 else []), self.total_received

    def writer_finished(self, subtask_index: int) -> None:
        """Sink subtask ``subtask_index`` wrote everything; closes the buffer after the last one."""
        with self._cond:
            self._finished_writers.add(subtask_index)
            expected = self._expected_writers if self._expected_writers is not None else 1
            if len(self._finished_writers) >= expected:
                self._closed = True
                self._cond.notify_all()

    # -------------------------------------------------------------- the driver
    def close(self) -> None:
        """No more records will come: iteration ends after the buffered ones."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def fail(self, exc: BaseException) -> None:
        """The job failed: iteration raises ``exc`` after the buffered records; writers stop blocking."""
        with self._cond:
            if self._error is None:
                self._error = exc
            self._cond.notify_all()

    def discard(self) -> None:
        """The reader stopped reading: drop what is buffered and let writers drop what comes."""
        with self._cond:
            self._consumer_gone = True
            self._batches.clear()
            self._size = 0
            self._cond.notify_all()
        _BUFFERS.unregister(self.buffer_id)

    # ------------------------------------------------------------------ reader
    @property
    def closed(self) -> bool:
        """True once no more records will be added."""
        return self._closed

    def __len__(self) -> int:
        return self._size

    def poll_batch(self, timeout: Optional[float] = None) -> Optional[list]:
        """The next batch (blocking up to ``timeout`` s; None on timeout or at the end).

        Raises the job's error once the records received before it are consumed.
        """
        with self._cond:
            while not self._batches:
                if self._error is not None:
                    raise self._error
                if self._closed:
                    return None
                self._reader_waiting = True
                woken = self._cond.wait(timeout)
                self._reader_waiting = False
                if not woken:
                    return None
            batch = self._batches.popleft()
            self._size -= len(batch)
            self._cond.notify_all()
            return batch

    def batches(self) -> Iterator[list]:
        """Yields the batches as they arrive until the job ends; raises the job's error.

        Each wake-up takes every batch buffered by then at once (one lock round and one
        thread switch for all of them, not one per batch), which frees their room for the
        writers: the buffer and the batches being handed out hold at most twice the capacity.
        """
        cond = self._cond
        while True:
            with cond:
                while not self._batches:
                    if self._error is not None:
                        raise self._error
                    if self._closed:
                        return
                    self._reader_waiting = True
                    cond.wait(0.1)
                    self._reader_waiting = False
                ready = list(self._batches)
                self._batches.clear()
                self._size = 0
                if self._writers_waiting:
                    cond.notify_all()  # room for them now
            yield from ready

    def __iter__(self) -> Iterator[Any]:
        """The records as they arrive until the job ends (raises the job's error): a C-level
        iterator over :meth:`batches`, no Python call per record."""
        return itertools.chain.from_iterable(self.batches())

    def __repr__(self) -> str:
        state = "failed" if self._error else "closed" if self._closed else "open"
        return f"CollectBuffer({self._size}/{self.capacity} records, {state})"


def register_collect_buffer(buffer: Any, buffer_id: Optional[str] = None) -> str:
    """Register ``buffer`` (anything with CollectBuffer's writer methods) under ``buffer_id``."""
    return _BUFFERS.register(buffer, buffer_id)


def get_collect_buffer(buffer_id: str) -> Any:
    """The live buffer registered under ``buffer_id`` in this process, or None."""
    return _BUFFERS.get(buffer_id)


def _collect_sink(buffer_id: str, capacity: int) -> "CollectSink":
    sink = CollectSink.__new__(CollectSink)
    sink.buffer_id = buffer_id
    sink.capacity = capacity
    sink._buffer = get_collect_buffer(buffer_id)
    return sink


class CollectSink(Sink):
    """A sink whose records the program reads back by iterating over :attr:`buffer`.

    ::

        sink = CollectSink(capacity=1000)
        ds.sink_to(sink)
        client = env.execute_async()
        for record in sink.buffer:   # ends when the job finishes; raises if it failed
            ...
    """

    default_name = "Collect Sink"

    def __init__(self, capacity: int = DEFAULT_COLLECT_CAPACITY, buffer: Optional[CollectBuffer] = None) -> None:
        self._buffer = buffer if buffer is not None else CollectBuffer(capacity)
        self.buffer_id = self._buffer.buffer_id
        self.capacity = self._buffer.capacity

    @property
    def buffer(self) -> CollectBuffer:
        """The live buffer the sink subtasks of this process write to."""
        if self._buffer is None:
            self._buffer = get_collect_buffer(self.buffer_id)
        if self._buffer is None:
            raise InvalidProgramError(
                f"CollectSink: no collect buffer {self.buffer_id!r} in this process; the program "
                f"that created the sink must keep it (or a forwarding buffer must be registered)")
        return self._buffer

    def __reduce__(self) -> tuple:
        # the buffer (locks, records) never travels: a copy finds the live one by id
        return _collect_sink, (self.buffer_id, self.capacity)

    def __repr__(self) -> str:
        return f"CollectSink({self.buffer_id[:8]}, capacity={self.capacity})"
