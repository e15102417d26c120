"""Continuous triggers: fire a window repeatedly, every ``interval``, before it ends.

Both keep the next firing time in ReducingState ``"fire-time"`` (reduced with ``min``), so
merged session windows keep the earliest pending firing. The first firing is aligned to
the interval: an element at time ``t`` schedules ``t - t % interval + interval`` (capped at
the window's max timestamp), and each firing schedules the next one. (Python's ``%`` is
floored, so for negative timestamps this is the next boundary after ``t``; Java's
truncating ``%`` would skip one boundary there.)
"""

from __future__ import annotations

from typing import Any

from streamkernel.common.time import to_millis
from streamkernel.datastream.state import ReducingState, ReducingStateDescriptor
from streamkernel.datastream.window_triggers import Trigger, TriggerResult
from streamkernel.datastream.windows import TimeWindow
from streamkernel.errors import InvalidProgramError

__all__ = ["ContinuousEventTimeTrigger", "ContinuousProcessingTimeTrigger"]


def _min_timestamp(a: int, b: int) -> int:
    return a if a <= b else b


def _interval_millis(interval: Any, trigger_name: str) -> int:
    millis = to_millis(interval, f"{trigger_name}.of: interval")
    if millis <= 0:
        raise InvalidProgramError(
            f"{trigger_name}.of: interval must be positive, got {millis} ms"
        )
    return millis


class ContinuousEventTimeTrigger(Trigger[Any, TimeWindow]):
    """Fires every ``interval`` of event time (as the watermark advances) and at the window's end.

    Example::

        >>> keyed.window(TumblingEventTimeWindows.of(Time.hours(1))) \\
        ...      .trigger(ContinuousEventTimeTrigger.of(Time.minutes(5)))
    """

    def __init__(self, interval: int) -> None:
        self.interval = _interval_millis(interval, "ContinuousEventTimeTrigger")
        self.state_desc = ReducingStateDescriptor("fire-time", _min_timestamp)

    @staticmethod
    def of(interval: Any) -> "ContinuousEventTimeTrigger":
        """Return a trigger firing every ``interval`` (Time, Duration or ms) of event time."""
        return ContinuousEventTimeTrigger(_interval_millis(interval, "ContinuousEventTimeTrigger"))

    def on_element(self, element: Any, timestamp: int, window: TimeWindow,
                   ctx: Trigger.TriggerContext) -> TriggerResult:
        """FIRE if the watermark passed the window; else schedule the end and the next firing."""
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        fire_timestamp: ReducingState = ctx.get_partitioned_state(self.state_desc)  # type: ignore[assignment]
        if fire_timestamp.get() is None:
            self.register_next_fire_timestamp(
                timestamp - (timestamp % self.interval), window, ctx, fire_timestamp
            )
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: TimeWindow,
                           ctx: Trigger.TriggerContext) -> TriggerResult:
        """Processing time is ignored: CONTINUE."""
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: TimeWindow,
                      ctx: Trigger.TriggerContext) -> TriggerResult:
        """FIRE at the window's end, and at each scheduled firing (scheduling the next)."""
        if time == window.max_timestamp():
            return TriggerResult.FIRE
        fire_timestamp: ReducingState = ctx.get_partitioned_state(self.state_desc)  # type: ignore[assignment]
        if fire_timestamp.get() == time:
            fire_timestamp.clear()
            self.register_next_fire_timestamp(time, window, ctx, fire_timestamp)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Works with session windows."""
        return True

    def on_merge(self, window: TimeWindow, ctx: Trigger.OnMergeContext) -> None:
        """Keep the earliest pending firing of the merged windows and re-register it."""
        ctx.merge_partitioned_state(self.state_desc)
        next_fire = ctx.get_partitioned_state(self.state_desc).get()  # type: ignore[attr-defined]
        if next_fire is not None:
            ctx.register_event_time_timer(next_fire)

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        """Delete the pending firing timer and its state."""
        fire_timestamp: ReducingState = ctx.get_partitioned_state(self.state_desc)  # type: ignore[assignment]
        timestamp = fire_timestamp.get()
        if timestamp is not None:
            ctx.delete_event_time_timer(timestamp)
            fire_timestamp.clear()

    def register_next_fire_timestamp(self, time: int, window: TimeWindow,
                                     ctx: Trigger.TriggerContext,
                                     fire_timestamp_state: ReducingState) -> None:
        """Schedule the firing after ``time`` (at most the window's max timestamp)."""
        next_fire = min(time + self.interval, window.max_timestamp())
        fire_timestamp_state.add(next_fire)
        ctx.register_event_time_timer(next_fire)

    def __repr__(self) -> str:
        return f"ContinuousEventTimeTrigger({self.interval})"


class ContinuousProcessingTimeTrigger(Trigger[Any, TimeWindow]):
    """Fires every ``interval`` of processing time (the machine clock) while the window is open."""

    def __init__(self, interval: int) -> None:
        self.interval = _interval_millis(interval, "ContinuousProcessingTimeTrigger")
        self.state_desc = ReducingStateDescriptor("fire-time", _min_timestamp)

    @staticmethod
    def of(interval: Any) -> "ContinuousProcessingTimeTrigger":
        """Return a trigger firing every ``interval`` (Time, Duration or ms) of processing time."""
        return ContinuousProcessingTimeTrigger(
            _interval_millis(interval, "ContinuousProcessingTimeTrigger")
        )

    def on_element(self, element: Any, timestamp: int, window: TimeWindow,
                   ctx: Trigger.TriggerContext) -> TriggerResult:
        """Schedule the first firing, aligned to the interval, if none is pending."""
        fire_timestamp: ReducingState = ctx.get_partitioned_state(self.state_desc)  # type: ignore[assignment]
        now = ctx.get_current_processing_time()
        if fire_timestamp.get() is None:
            self.register_next_fire_timestamp(
                now - (now % self.interval), window, ctx, fire_timestamp
            )
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: TimeWindow,
                           ctx: Trigger.TriggerContext) -> TriggerResult:
        """FIRE at the scheduled firing and schedule the next."""
        fire_timestamp: ReducingState = ctx.get_partitioned_state(self.state_desc)  # type: ignore[assignment]
        if fire_timestamp.get() == time:
            fire_timestamp.clear()
            self.register_next_fire_timestamp(time, window, ctx, fire_timestamp)
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: TimeWindow,
                      ctx: Trigger.TriggerContext) -> TriggerResult:
        """Event time is ignored: CONTINUE."""
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Works with session windows."""
        return True

    def on_merge(self, window: TimeWindow, ctx: Trigger.OnMergeContext) -> None:
        """Keep the earliest pending firing of the merged windows and re-register it."""
        ctx.merge_partitioned_state(self.state_desc)
        next_fire = ctx.get_partitioned_state(self.state_desc).get()  # type: ignore[attr-defined]
        if next_fire is not None:
            ctx.register_processing_time_timer(next_fire)

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        """Delete the pending firing timer and its state."""
        fire_timestamp: ReducingState = ctx.get_partitioned_state(self.state_desc)  # type: ignore[assignment]
        timestamp = fire_timestamp.get()
        if timestamp is not None:
            ctx.delete_processing_time_timer(timestamp)
            fire_timestamp.clear()

    def register_next_fire_timestamp(self, time: int, window: TimeWindow,
                                     ctx: Trigger.TriggerContext,
                                     fire_timestamp_state: ReducingState) -> None:
        """Schedule the firing after ``time`` (at most the window's max timestamp)."""
        next_fire = min(time + self.interval, window.max_timestamp())
        fire_timestamp_state.add(next_fire)
        ctx.register_processing_time_timer(next_fire)

    def __repr__(self) -> str:
        return f"ContinuousProcessingTimeTrigger({self.interval})"
