"""The processing-time service of a Task: its clock, and callbacks scheduled on it.

Flink's ``ProcessingTimeService``. Everything runs in the task thread (the mailbox model):
the task loop asks :meth:`ProcessingTimeService.next_deadline` how long it may block on its
input, and calls :meth:`ProcessingTimeService.fire_due` to run what is due. Re-exported by
:mod:`streamkernel.runtime.operators.timers`, where the operator timer services built on it live.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any, Callable, List, Optional, Tuple

from streamkernel.runtime.core.clock import Clock

__all__ = ["ScheduledTimer", "ProcessingTimeService"]


class ScheduledTimer:
    """The handle of a callback scheduled with :meth:`ProcessingTimeService.register_timer`."""

    __slots__ = ("timestamp", "callback", "cancelled")

    def __init__(self, timestamp: int, callback: Callable[[int], Any]) -> None:
        self.timestamp = timestamp
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        """Do not run the callback (no effect once it ran)."""
        self.cancelled = True

    def __repr__(self) -> str:
        return f"ScheduledTimer({self.timestamp}{', cancelled' if self.cancelled else ''})"


class ProcessingTimeService:
    """The processing-time clock and scheduler of one Task (Flink's ``ProcessingTimeService``).

    Not thread-safe by design: registration and :meth:`fire_due` happen in the task thread
    (the mailbox model), so no lock is taken. A callback may register new timers; one that
    is already due runs in the next :meth:`fire_due` call, so input is never starved.

    >>> from streamkernel.runtime.core.clock import ManualClock
    >>> clock = ManualClock(0); service = ProcessingTimeService(clock); fired = []
    >>> _ = service.register_timer(10, fired.append); clock.advance(10); service.fire_due()
    1
    >>> fired
    [10]
    """

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: List[Tuple[int, int, ScheduledTimer]] = []
        self._sequence = itertools.count()
        self._quiesced = False

    def current_processing_time(self) -> int:
        """The clock's time in epoch milliseconds."""
        return self.clock.now_ms()

    def register_timer(self, timestamp: int, callback: Callable[[int], Any]) -> ScheduledTimer:
        """Run ``callback(timestamp)`` in the task thread once the clock reaches ``timestamp``."""
        handle = ScheduledTimer(timestamp, callback)
        if self._quiesced:
            handle.cancelled = True
        else:
            heapq.heappush(self._heap, (timestamp, next(self._sequence), handle))
        return handle

    def fire_due(self) -> int:
        """Run the callbacks whose time has come, in timestamp order; returns how many ran.

        Timers registered by these callbacks wait for the next call, even if already due.
        """
        heap = self._heap
        if not heap:  # called between every two batches: nothing pending costs nothing
            return 0
        now = self.clock.now_ms()
        if heap[0][0] > now:
            return 0
        limit = next(self._sequence)  # timers registered from here on wait for the next call
        deferred = []
        fired = 0
        while heap and heap[0][0] <= now and not self._quiesced:
            entry = heapq.heappop(heap)
            if entry[1] > limit:
                deferred.append(entry)
                continue
            handle = entry[2]
            if handle.cancelled:
                continue
            handle.cancelled = True  # ran: a later cancel() is a no-op
            handle.callback(handle.timestamp)
            fired += 1
        if not self._quiesced:
            for entry in deferred:
                heapq.heappush(heap, entry)
        return fired

    def next_deadline(self) -> Optional[int]:
        """The timestamp of the earliest pending callback, or None (the loop may block that long)."""
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def quiesce(self) -> None:
        """Stop: drop pending timers and ignore new ones (the task is shutting down)."""
        self._quiesced = True
        self._heap.clear()

    def __len__(self) -> int:
        return sum(1 for _, _, handle in self._heap if not handle.cancelled)
