"""Timers: processing-time scheduling for a Task, and the timer service of an operator.

* :class:`Triggerable`: what an operator implements to be called back:
  ``on_event_time(timer)`` and ``on_processing_time(timer)``.
* :class:`InternalTimer` ``(timestamp, key, namespace)``.
* :class:`ProcessingTimeService` ``(clock)``: one per Task. ``register_timer(timestamp,
  callback)`` returns a handle with ``cancel()``; the task loop calls :meth:`fire_due`, which
  runs due callbacks (``callback(timestamp)``) in timestamp order in the caller's (task)
  thread; :meth:`~ProcessingTimeService.next_deadline` tells the loop how long it may block.
* :class:`InternalTimerService` ``(name, key_context, triggerable, processing_time_service)``:
  one per operator and name. ``key_context`` is the operator's KeyedStateBackend (or None for
  a non-keyed operator): a timer remembers ``key_context.current_key`` when registered, and
  before it fires the service sets ``current_key`` and ``current_namespace`` back. Timers
  are unique per (key, namespace, timestamp), as in Flink. ``advance_watermark(ts)`` fires
  every event-time timer <= ts in timestamp order — including timers that callbacks register
  at or below ``ts`` while it runs, as Flink does. ``snapshot()`` /
  ``restore(snapshots, key_group_range, max_parallelism)`` work by key group like keyed state.
* :class:`KeyedTimerService` ``(internal)``: PyFlink's ``TimerService`` for user functions
  (the VOID namespace).

Why buckets, a heap of timestamps and lazy deletion: registration is the frequent operation
(window operators register a timer per record), so a known timer costs one dict operation
and a new one a list append (plus one ``heappush`` for a new timestamp). Many timers share
a timestamp (one per key and window), so they fire from one bucket after one heap pop. A
deleted timer stays in its bucket and is skipped when its time comes (the ``live`` set
decides); the buckets are rebuilt when deleted entries outnumber live ones.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Protocol, Tuple

from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK
from streamkernel.datastream.timerservice import TimerService
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.keygroups import DEFAULT_LOWER_BOUND_MAX_PARALLELISM, assign_to_key_group
from streamkernel.runtime.processing_time import ProcessingTimeService, ScheduledTimer
from streamkernel.runtime.state.key_groups_snapshot import TIMER_DOMAINS, select_key_groups

__all__ = [
    "Triggerable",
    "InternalTimer",
    "ScheduledTimer",
    "ProcessingTimeService",
    "InternalTimerService",
    "KeyedTimerService",
]

_COMPACT_MIN_STALE = 1024  # rebuild a timer queue only when it holds this many deleted entries
_ABSENT = object()


class Triggerable(Protocol):
    """An operator that timers call back (Flink's ``Triggerable``)."""

    def on_event_time(self, timer: "InternalTimer") -> None:
        """An event-time timer fired (the watermark passed its timestamp)."""

    def on_processing_time(self, timer: "InternalTimer") -> None:
        """A processing-time timer fired (the clock passed its timestamp)."""


class InternalTimer(NamedTuple):
    """A timer as the operator sees it when it fires: timestamp, key and namespace (Flink's name)."""

    timestamp: int
    key: Any
    namespace: Any

    def get_timestamp(self) -> int:
        """When the timer fires (ms)."""
        return self.timestamp

    def get_key(self) -> Any:
        """The key that was current when the timer was registered."""
        return self.key

    def get_namespace(self) -> Any:
        """The namespace (a window, or None) the timer was registered for."""
        return self.namespace


class _TimerQueue:
    """The timers of one time domain: dedup set, buckets per timestamp, heap of timestamps.

    * ``live``: every registered timer ``(ts, key, ns)`` (a dict used as an ordered set);
    * ``buckets``: timestamp -> the timers registered for it, in registration order
      (deleted ones stay until their time: lazy deletion, checked against ``live``);
    * ``heap``: the distinct timestamps that have a bucket.

    The heap holds timestamps, not timers: window operators register many timers for the
    same time (one per key and window), which fire from one bucket with one heap pop.
    A timer tuple is also the fired :class:`InternalTimer`'s content (no re-packing).
    """

    __slots__ = ("heap", "buckets", "live", "stale", "firing")

    def __init__(self) -> None:
        self.heap: List[int] = []
        self.buckets: Dict[int, list] = {}
        self.live: Dict[Tuple[int, Any, Any], None] = {}
        self.stale = 0  # deleted timers still sitting in buckets
        self.firing = False

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
        if self.stale > _COMPACT_MIN_STALE and self.stale > len(self.live) and not self.firing:
            buckets: Dict[int, list] = {}
            for live_timer in self.live:
                buckets.setdefault(live_timer[0], []).append(live_timer)
            self.buckets, self.heap, self.stale = buckets, list(buckets), 0
            heapq.heapify(self.heap)

    def fire_due(self, limit: int, context: Any, fire: Callable[[InternalTimer], Any]) -> None:
        """Fire every live timer with timestamp <= ``limit``, in timestamp order, including
        timers registered meanwhile by ``fire`` at or below ``limit``."""
        heap, buckets, live = self.heap, self.buckets, self.live
        heappop, make_timer = heapq.heappop, tuple.__new__
        self.firing = True  # no heap rebuild while we hold references into it
        try:
            # Per fired timer: one dict pop (dedup/deletion check), a C-level InternalTimer,
            # the callback; heap work is per distinct timestamp only.
            while heap and heap[0] <= limit:
                timestamp = heappop(heap)
                bucket = buckets[timestamp]  # stays findable: same-time registrations append
                index = 0
                while index < len(bucket):
                    timer = bucket[index]
                    index += 1
                    if live.pop(timer, _ABSENT) is _ABSENT:  # deleted (or a duplicate entry)
                        self.stale -= 1
                        continue
                    if context is not None:
                        context.current_key = timer[1]
                        context.current_namespace = timer[2]
                    fire(make_timer(InternalTimer, timer))
                del buckets[timestamp]
        finally:
            self.firing = False

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
        return sorted(self.live, key=_timestamp_of)  # stable: registration order per time


def _timestamp_of(timer: Tuple[int, Any, Any]) -> int:
    return timer[0]


class InternalTimerService:
    """The event- and processing-time timers of one operator (Flink's ``InternalTimerServiceImpl``).

    Runs in the task thread, like the operator: no locks.
    """

    def __init__(
        self,
        name: str,
        key_context: Any,
        triggerable: Triggerable,
        processing_time_service: ProcessingTimeService,
    ) -> None:
        self.name = name
        self.key_context = key_context
        self.triggerable = triggerable
        self.processing_time_service = processing_time_service
        self._watermark = MIN_WATERMARK
        self._event = _TimerQueue()
        self._processing = _TimerQueue()
        self._scheduled: Optional[ScheduledTimer] = None  # the earliest processing timer's callback

    # ------------------------------------------------------------------ time
    def current_processing_time(self) -> int:
        """The task's processing time (ms)."""
        return self.processing_time_service.current_processing_time()

    def current_watermark(self) -> int:
        """The last watermark passed to :meth:`advance_watermark` (MIN_WATERMARK before any)."""
        return self._watermark

    def _current_key(self) -> Any:
        context = self.key_context
        return None if context is None else context.current_key

    # ------------------------------------------------------------------ event time
    def register_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        """Fire ``on_event_time`` for the current key and ``namespace`` when the watermark reaches ``timestamp``."""
        # Hot (window operators register per record): one dict operation for a known timer.
        context = self.key_context
        timer = (timestamp, None if context is None else context.current_key, namespace)
        queue = self._event
        live = queue.live
        size = len(live)
        live[timer] = None
        if len(live) != size:
            bucket = queue.buckets.get(timestamp)
            if bucket is None:
                queue.buckets[timestamp] = [timer]
                heapq.heappush(queue.heap, timestamp)
            else:
                bucket.append(timer)

    def delete_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        """Delete the current key's event-time timer (no error if there is none)."""
        self._event.remove((timestamp, self._current_key(), namespace))

    def advance_watermark(self, timestamp: int) -> None:
        """Set the watermark and fire every event-time timer <= ``timestamp``, in timestamp order.

        Timers registered by the callbacks that are also <= ``timestamp`` fire in this call.
        """
        self._watermark = timestamp
        queue = self._event
        if queue.heap and queue.heap[0] <= timestamp:
            queue.fire_due(timestamp, self.key_context, self.triggerable.on_event_time)

    # ------------------------------------------------------------------ processing time
    def register_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        """Fire ``on_processing_time`` for the current key and ``namespace`` when the clock reaches ``timestamp``.

        Fires once the clock reads >= ``timestamp``. Flink fires one millisecond later
        (``timestamp + 1``), so that records of millisecond ``timestamp`` precede the timer.
        """
        if self._processing.add((timestamp, self._current_key(), namespace)):
            scheduled = self._scheduled
            if scheduled is None or scheduled.cancelled or timestamp < scheduled.timestamp:
                self._schedule(timestamp)

    def delete_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        """Delete the current key's processing-time timer (no error if there is none).

        The scheduled callback stays; when it runs it finds nothing due and reschedules.
        """
        self._processing.remove((timestamp, self._current_key(), namespace))

    def _schedule(self, timestamp: int) -> None:
        if self._scheduled is not None:
            self._scheduled.cancel()
        self._scheduled = self.processing_time_service.register_timer(timestamp, self._on_processing_time)

    def _on_processing_time(self, _scheduled_for: int) -> None:
        self._scheduled = None
        now = self.processing_time_service.current_processing_time()
        queue = self._processing
        queue.fire_due(now, self.key_context, self.triggerable.on_processing_time)
        earliest = queue.earliest()
        scheduled = self._scheduled  # a callback may have scheduled meanwhile
        if earliest is not None and (scheduled is None or scheduled.cancelled or earliest < scheduled.timestamp):
            self._schedule(earliest)

    # ------------------------------------------------------------------ BATCH execution
    def fire_all_processing_time_timers(self) -> None:
        """Fire every processing-time timer now, in timestamp order (BATCH: at the end of a key)."""
        queue = self._processing
        if queue.heap:
            queue.fire_due(MAX_WATERMARK, self.key_context, self.triggerable.on_processing_time)

    def reset_watermark(self, timestamp: int) -> None:
        """Set the watermark without firing anything (BATCH: back to the minimum after a key)."""
        self._watermark = timestamp

    # ------------------------------------------------------------------ inspection
    def num_event_time_timers(self) -> int:
        """How many event-time timers are registered."""
        return len(self._event.live)

    def num_processing_time_timers(self) -> int:
        """How many processing-time timers are registered."""
        return len(self._processing.live)

    def event_time_timers(self) -> List[InternalTimer]:
        """The registered event-time timers, in firing order (for inspection and tests)."""
        return [InternalTimer(*timer) for timer in self._event.ordered()]

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> dict:
        """The timers grouped by key group: ``{"kind": "timers", "name", "max_parallelism",
        "event_time": {key_group: [(key, namespace, timestamp), ...]}, "processing_time": {...}}``."""
        max_parallelism = getattr(self.key_context, "max_parallelism", None) or DEFAULT_LOWER_BOUND_MAX_PARALLELISM
        groups_of: Dict[Any, int] = {}
        result: Dict[str, Any] = {"kind": "timers", "name": self.name, "max_parallelism": max_parallelism}
        for domain, queue in zip(TIMER_DOMAINS, (self._event, self._processing)):
            groups: Dict[int, list] = {}
            for timestamp, key, namespace in queue.ordered():
                group = groups_of.get(key)
                if group is None:
                    group = groups_of[key] = assign_to_key_group(key, max_parallelism)
                groups.setdefault(group, []).append((key, namespace, timestamp))
            result[domain] = groups
        return result

    def restore(self, snapshots: Iterable[Optional[dict]], key_group_range: range, max_parallelism: int) -> None:
        """Add the timers of ``key_group_range`` from timer snapshots of this service (others skipped)."""
        mine = [s for s in snapshots if s and s.get("kind") == "timers" and s.get("name") == self.name]
        selected = select_key_groups(mine, key_group_range, max_parallelism)
        if selected.get("kind") != "timers":
            return
        for domain, queue in zip(TIMER_DOMAINS, (self._event, self._processing)):
            timers = [
                (timestamp, key, namespace)
                for entries in selected[domain].values()
                for key, namespace, timestamp in entries
            ]
            timers.sort(key=_timestamp_of)
            for timer in timers:
                queue.add(timer)
        earliest = self._processing.earliest()
        if earliest is not None:
            self._schedule(earliest)

    def __repr__(self) -> str:
        return (
            f"InternalTimerService('{self.name}', watermark={self._watermark}, "
            f"event_timers={len(self._event.live)}, processing_timers={len(self._processing.live)})"
        )


class KeyedTimerService(TimerService):
    """PyFlink's ``TimerService`` (``ctx.timer_service()``): timers of the current key, VOID namespace."""

    __slots__ = ("_internal",)

    def __init__(self, internal: InternalTimerService) -> None:
        self._internal = internal

    def current_processing_time(self) -> int:
        """The current processing time (epoch ms)."""
        return self._internal.current_processing_time()

    def current_watermark(self) -> int:
        """The current event-time watermark."""
        return self._internal.current_watermark()

    def register_processing_time_timer(self, timestamp: int) -> None:
        """Call ``on_timer`` when processing time reaches ``timestamp`` (once per key and time)."""
        self._internal.register_processing_time_timer(None, _check_timestamp(timestamp))

    def register_event_time_timer(self, timestamp: int) -> None:
        """Call ``on_timer`` when the watermark reaches ``timestamp`` (once per key and time)."""
        self._internal.register_event_time_timer(None, _check_timestamp(timestamp))

    def delete_processing_time_timer(self, timestamp: int) -> None:
        """Delete the current key's processing-time timer for ``timestamp``."""
        self._internal.delete_processing_time_timer(None, timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        """Delete the current key's event-time timer for ``timestamp``."""
        self._internal.delete_event_time_timer(None, timestamp)


def _check_timestamp(timestamp: Any) -> int:
    """``timestamp`` as an int (ms); integral floats and numpy ints are accepted."""
    if type(timestamp) is int:
        return timestamp
    if not isinstance(timestamp, bool):
        if isinstance(timestamp, float) and timestamp.is_integer():
            return int(timestamp)
        index = getattr(type(timestamp), "__index__", None)
        if index is not None:
            return index(timestamp)
    raise InvalidProgramError(
        f"TimerService: a timer timestamp must be an int number of milliseconds, got {timestamp!r}"
    )
