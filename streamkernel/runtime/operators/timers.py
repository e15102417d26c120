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
  every event-time timer <= ts in rounds, as PyFlink does (see "Firing rounds" below).
  ``snapshot()`` /
  ``restore(snapshots, key_group_range, max_parallelism)`` work by key group like keyed state.
* :class:`KeyedTimerService` ``(internal)``: PyFlink's ``TimerService`` for user functions
  (the VOID namespace).

Firing rounds (PyFlink's rule). In PyFlink the Java operator keeps a Python function's timers
and fires them; what the function registers or deletes reaches Java asynchronously and is
applied only between firing rounds (AbstractPythonFunctionOperator.advanceWatermark: drain the
registrations, fire every due timer, finish the bundle, drain, fire again ... until a round
fires nothing). So a round fires the timers that were registered when it began, in timestamp
order, and the registrations and deletions the callbacks make during a round take effect when
it ends, in the order made: a timer registered at or below the watermark fires in a later round
of the same advance; a timer deleted during the round while it is still due in that round
fires anyway; re-registering a timer that fires in this round fires it again in the next one.
Processing-time timers work the same way: one round per callback of the ProcessingTimeService.
During a round the four register/delete methods are replaced by instance attributes that
record the operation (:meth:`InternalTimerService._fire_round`), so registering outside a
round costs nothing extra.
The timers of one time domain live in a :class:`~.timer_queue.TimerQueue`.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Protocol, Tuple

from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK
from streamkernel.datastream.timerservice import TimerService
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.keygroups import DEFAULT_LOWER_BOUND_MAX_PARALLELISM, assign_to_key_group
from streamkernel.runtime.operators.processing_time import ProcessingTimeService, ScheduledTimer
from streamkernel.runtime.operators.timer_queue import TimerQueue, timestamp_of
from streamkernel.runtime.state.key_groups_snapshot import TIMER_DOMAINS, select_key_groups

__all__ = [
    "Triggerable",
    "InternalTimer",
    "ScheduledTimer",
    "ProcessingTimeService",
    "InternalTimerService",
    "KeyedTimerService",
]


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
        self._event = TimerQueue()
        self._processing = TimerQueue()
        self._scheduled: Optional[ScheduledTimer] = None  # the earliest processing timer's callback
        self.fired = 0  # timers fired so far, both domains (Flink's numFiredTimers; counted per round)
        self._deferred_ops: List[Tuple[Callable[[Tuple[int, Any, Any]], Any], Tuple[int, Any, Any]]] = []
        # During a firing round these shadow the register/delete methods (see _fire_round).
        self._deferring = {
            "register_event_time_timer": self._defer(self._event.add),
            "delete_event_time_timer": self._defer(self._event.remove),
            "register_processing_time_timer": self._defer(self._add_processing_timer),
            "delete_processing_time_timer": self._defer(self._processing.remove),
        }

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
        """Set the watermark and fire every event-time timer <= ``timestamp``, in rounds.

        Each round fires the due timers registered before it began, in timestamp order; what
        the callbacks register or delete meanwhile applies when the round ends, so timers
        they register <= ``timestamp`` fire in a later round of this call (PyFlink's rule).
        """
        self._watermark = timestamp
        queue = self._event
        on_event_time = self.triggerable.on_event_time
        while queue.heap and queue.heap[0] <= timestamp:
            self._fire_round(queue.pop_due(timestamp), on_event_time)

    # ------------------------------------------------------------------ firing rounds
    def _defer(self, operation: Callable[[Tuple[int, Any, Any]], Any]) -> Callable[[Any, int], None]:
        """A stand-in for a register/delete method during a round: records ``operation`` on
        the timer of the current key, to apply when the round ends."""
        ops, context = self._deferred_ops, self.key_context

        def record(namespace: Any, timestamp: int) -> None:
            ops.append((operation, (timestamp, None if context is None else context.current_key, namespace)))

        return record

    def _fire_round(self, due: List[Tuple[int, Any, Any]], fire: Callable[[InternalTimer], Any]) -> None:
        """Fire ``due`` in order with each timer's key and namespace current, deferring the
        registrations and deletions made meanwhile; apply them, in order, at the end."""
        if not due:
            return
        context, make_timer = self.key_context, tuple.__new__
        attributes = vars(self)
        attributes.update(self._deferring)  # instance attributes shadow the four methods
        self.fired += len(due)
        try:
            for timer in due:
                if context is not None:
                    context.current_key = timer[1]
                    context.current_namespace = timer[2]
                fire(make_timer(InternalTimer, timer))
        finally:
            for name in self._deferring:
                del attributes[name]
            ops = self._deferred_ops[:]
            self._deferred_ops.clear()
        for operation, timer in ops:
            operation(timer)

    # ------------------------------------------------------------------ processing time
    def register_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        """Fire ``on_processing_time`` for the current key and ``namespace`` when the clock reaches ``timestamp``.

        Fires once the clock reads >= ``timestamp``. Flink fires one millisecond later
        (``timestamp + 1``), so that records of millisecond ``timestamp`` precede the timer.
        """
        self._add_processing_timer((timestamp, self._current_key(), namespace))

    def _add_processing_timer(self, timer: Tuple[int, Any, Any]) -> None:
        if self._processing.add(timer):
            scheduled = self._scheduled
            if scheduled is None or scheduled.cancelled or timer[0] < scheduled.timestamp:
                self._schedule(timer[0])

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
        self._fire_round(queue.pop_due(now), self.triggerable.on_processing_time)
        earliest = queue.earliest()
        scheduled = self._scheduled  # a callback may have scheduled meanwhile
        if earliest is not None and (scheduled is None or scheduled.cancelled or earliest < scheduled.timestamp):
            self._schedule(earliest)

    # ------------------------------------------------------------------ BATCH execution
    def fire_all_processing_time_timers(self) -> None:
        """Fire every processing-time timer now, in timestamp order and in rounds (BATCH: at the end of a key)."""
        queue = self._processing
        on_processing_time = self.triggerable.on_processing_time
        while queue.heap:
            self._fire_round(queue.pop_due(MAX_WATERMARK), on_processing_time)

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
        key_type = getattr(self.key_context, "key_type", None)
        groups_of: Dict[Any, int] = {}
        result: Dict[str, Any] = {"kind": "timers", "name": self.name, "max_parallelism": max_parallelism}
        for domain, queue in zip(TIMER_DOMAINS, (self._event, self._processing)):
            groups: Dict[int, list] = {}
            for timestamp, key, namespace in queue.ordered():
                group = groups_of.get(key)
                if group is None:
                    group = groups_of[key] = assign_to_key_group(key, max_parallelism, key_type)
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
            timers.sort(key=timestamp_of)
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
