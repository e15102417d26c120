"""The timers of one time domain: a dedup set, buckets per timestamp, a heap of timestamps.

Why buckets, a heap of timestamps and lazy deletion: registration is the frequent operation
(window operators register a timer per record), so a known timer costs one dict operation
and a new one a list append (plus one ``heappush`` for a new timestamp). Many timers share
a timestamp (one per key and window), so they fire from one bucket after one heap pop. A
deleted timer stays in its bucket and is skipped when its time comes (the ``live`` set
decides); the buckets are rebuilt when deleted entries outnumber live ones.
"""

from __future__ import annotations

import heapq
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["TimerQueue", "timestamp_of"]

_COMPACT_MIN_STALE = 1024  # rebuild a timer queue only when it holds this many deleted entries
_ABSENT = object()


class TimerQueue:
    """The timers of one time domain: dedup set, buckets per timestamp, heap of timestamps.

    * ``live``: every registered timer ``(ts, key, ns)`` (a dict used as an ordered set);
    * ``buckets``: timestamp -> the timers registered for it, in registration order
      (deleted ones stay until their time: lazy deletion, checked against ``live``);
    * ``heap``: the distinct timestamps that have a bucket.

    The heap holds timestamps, not timers: window operators register many timers for the
    same time (one per key and window), which fire from one bucket with one heap pop.
    A timer tuple is also the fired :class:`InternalTimer`'s content (no re-packing).
    """

    __slots__ = ("heap", "buckets", "live", "stale")

    def __init__(self) -> None:
        self.heap: List[int] = []
        self.buckets: Dict[int, list] = {}
        self.live: Dict[Tuple[int, Any, Any], None] = {}
        self.stale = 0  # deleted timers still sitting in buckets

    def add(self, timer: Tuple[int, Any, Any]) -> bool:
        """Register ``timer``; False if it already exists."""
        live = self.live
        size = len(live)
        live[timer] = None  # one hash: the size tells whether it was new
        if len(live) == size:
            return False
        bucket = self.buckets.get(timer[0])
        if bucket is None:
            self.buckets[timer[0]] = [timer]
            heapq.heappush(self.heap, timer[0])
        else:
            bucket.append(timer)
        return True

    def remove(self, timer: Tuple[int, Any, Any]) -> None:
        """Delete ``timer`` (lazily: its bucket entry is skipped when its time comes)."""
        if self.live.pop(timer, _ABSENT) is _ABSENT:
            return
        self.stale += 1
        if self.stale > _COMPACT_MIN_STALE and self.stale > len(self.live):
            buckets: Dict[int, list] = {}
            for live_timer in self.live:
                buckets.setdefault(live_timer[0], []).append(live_timer)
            self.buckets, self.heap, self.stale = buckets, list(buckets), 0
            heapq.heapify(self.heap)

    def pop_due(self, limit: int) -> List[Tuple[int, Any, Any]]:
        """Remove and return the live timers with timestamp <= ``limit``, in firing order
        (timestamp, then registration order): the timers of one firing round."""
        heap, buckets, live = self.heap, self.buckets, self.live
        heappop, pop = heapq.heappop, live.pop
        due: List[Tuple[int, Any, Any]] = []
        # Heap work is per distinct timestamp; per timer one dict pop (dedup/deletion check).
        while heap and heap[0] <= limit:
            for timer in buckets.pop(heappop(heap)):
                if pop(timer, _ABSENT) is _ABSENT:  # deleted (or a duplicate entry)
                    self.stale -= 1
                else:
                    due.append(timer)
        return due

    def earliest(self) -> Optional[int]:
        """The timestamp of the earliest live timer, or None (drops buckets of deleted timers)."""
        heap, buckets, live = self.heap, self.buckets, self.live
        while heap:
            bucket = buckets[heap[0]]
            if any(timer in live for timer in bucket):
                return heap[0]
            self.stale -= len(bucket)
            del buckets[heapq.heappop(heap)]
        return None

    def ordered(self) -> List[Tuple[int, Any, Any]]:
        """The live timers in firing order."""
        return sorted(self.live, key=timestamp_of)  # stable: registration order per time


def timestamp_of(timer: Tuple[int, Any, Any]) -> int:
    """A timer tuple's timestamp (the sort key of firing order)."""
    return timer[0]
