"""Triggers: when a window pane is evaluated (fired) and when it is purged.

A :class:`Trigger` is consulted for every element added to a pane (key + window) and for
every timer it registered; it answers with a :class:`TriggerResult`. Triggers keep no state
of their own: they register timers and read/write state through the
:class:`Trigger.TriggerContext` the window operator hands them, so one trigger instance
serves every key and window.

Flink's built-in triggers live here with Flink's exact semantics: :class:`EventTimeTrigger`,
:class:`ProcessingTimeTrigger`, :class:`CountTrigger`, :class:`PurgingTrigger`,
:class:`NeverTrigger`; the continuous ones are in
:mod:`streamkernel.datastream.continuous_triggers`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Generic, TypeVar

from streamkernel.datastream.state import ReducingState, ReducingStateDescriptor, State, StateDescriptor
from streamkernel.datastream.windows import GlobalWindow, TimeWindow, Window
from streamkernel.errors import InvalidArgumentTypeError, InvalidProgramError

__all__ = [
    "TriggerResult",
    "Trigger",
    "EventTimeTrigger",
    "ProcessingTimeTrigger",
    "CountTrigger",
    "PurgingTrigger",
    "NeverTrigger",
]

T = TypeVar("T")
W = TypeVar("W", bound=Window, contravariant=True)  # a trigger reads windows only: a Trigger[Any, Window] serves CountWindows


class TriggerResult(Enum):
    """What a trigger decides for a window pane.

    - ``CONTINUE``: do nothing.
    - ``FIRE_AND_PURGE``: evaluate the window function, emit the result, then clear the pane.
    - ``FIRE``: evaluate and emit, keeping the elements.
    - ``PURGE``: clear the pane without evaluating it.

    A FIRE on a pane without elements does not call the window function.
    """

    CONTINUE = (False, False)
    FIRE_AND_PURGE = (True, True)
    FIRE = (True, False)
    PURGE = (False, True)

    def is_fire(self) -> bool:
        """True for FIRE and FIRE_AND_PURGE."""
        return self.value[0]

    def is_purge(self) -> bool:
        """True for PURGE and FIRE_AND_PURGE."""
        return self.value[1]


class Trigger(ABC, Generic[T, W]):
    """Decides when a pane (the elements of one key in one window) is evaluated.

    Triggers must not keep state in attributes: they can be reused for all keys and windows.
    Keep state through :meth:`TriggerContext.get_partitioned_state`. A trigger used with a
    merging (session) window assigner must return True from :meth:`can_merge` and implement
    :meth:`on_merge`.
    """

    class TriggerContext(ABC):
        """What the window operator offers a trigger: clocks, timers and pane-scoped state."""

        @abstractmethod
        def get_current_processing_time(self) -> int:
            """The current processing time, in epoch milliseconds."""

        @abstractmethod
        def get_metric_group(self) -> Any:
            """The metric group of the window operator."""

        @abstractmethod
        def get_current_watermark(self) -> int:
            """The current event-time watermark."""

        @abstractmethod
        def register_processing_time_timer(self, time: int) -> None:
            """Call ``on_processing_time(time, ...)`` when the processing time passes ``time``."""

        @abstractmethod
        def register_event_time_timer(self, time: int) -> None:
            """Call ``on_event_time(time, ...)`` when the watermark passes ``time``."""

        @abstractmethod
        def delete_processing_time_timer(self, time: int) -> None:
            """Delete the processing-time timer for ``time`` of the current pane."""

        @abstractmethod
        def delete_event_time_timer(self, time: int) -> None:
            """Delete the event-time timer for ``time`` of the current pane."""

        @abstractmethod
        def get_partitioned_state(self, state_descriptor: StateDescriptor) -> State:
            """Return the state for ``state_descriptor`` scoped to the current key and window."""

    class OnMergeContext(TriggerContext):
        """The :class:`TriggerContext` given to :meth:`Trigger.on_merge`."""

        @abstractmethod
        def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
            """Merge the state of the merged windows into the state of the new window."""

    @abstractmethod
    def on_element(
        self, element: T, timestamp: int, window: W, ctx: "Trigger.TriggerContext"
    ) -> TriggerResult:
        """Called for every element added to a pane."""

    @abstractmethod
    def on_processing_time(
        self, time: int, window: W, ctx: "Trigger.TriggerContext"
    ) -> TriggerResult:
        """Called when a processing-time timer registered through ``ctx`` fires."""

    @abstractmethod
    def on_event_time(self, time: int, window: W, ctx: "Trigger.TriggerContext") -> TriggerResult:
        """Called when an event-time timer registered through ``ctx`` fires."""

    def can_merge(self) -> bool:
        """True if this trigger supports merging windows (then :meth:`on_merge` must work)."""
        return False

    @abstractmethod
    def on_merge(self, window: W, ctx: "Trigger.OnMergeContext") -> None:
        """Called when windows were merged into ``window`` by a merging assigner."""

    @abstractmethod
    def clear(self, window: W, ctx: "Trigger.TriggerContext") -> None:
        """Delete the timers and state this trigger holds for ``window`` (called on purge)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class EventTimeTrigger(Trigger[Any, TimeWindow]):
    """Fires once the watermark passes the end of the window (the default of event-time windows).

    An element arriving when the watermark is already past the window fires at once (a late
    element within the allowed lateness).
    """

    @staticmethod
    def create() -> "EventTimeTrigger":
        """Return an event-time trigger."""
        return EventTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: TimeWindow,
                   ctx: Trigger.TriggerContext) -> TriggerResult:
        """FIRE if the watermark passed the window, else register a timer at its end."""
        if window.max_timestamp() <= ctx.get_current_watermark():
            return TriggerResult.FIRE
        ctx.register_event_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: TimeWindow,
                           ctx: Trigger.TriggerContext) -> TriggerResult:
        """Processing time is ignored: CONTINUE."""
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: TimeWindow,
                      ctx: Trigger.TriggerContext) -> TriggerResult:
        """FIRE when the timer at the window's max timestamp fires."""
        return TriggerResult.FIRE if time == window.max_timestamp() else TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Event-time triggers work with session windows."""
        return True

    def on_merge(self, window: TimeWindow, ctx: Trigger.OnMergeContext) -> None:
        """Register a timer at the end of the merged window unless the watermark passed it."""
        if window.max_timestamp() > ctx.get_current_watermark():
            ctx.register_event_time_timer(window.max_timestamp())

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        """Delete the end-of-window timer."""
        ctx.delete_event_time_timer(window.max_timestamp())


class ProcessingTimeTrigger(Trigger[Any, TimeWindow]):
    """Fires once the processing time passes the end of the window."""

    @staticmethod
    def create() -> "ProcessingTimeTrigger":
        """Return a processing-time trigger."""
        return ProcessingTimeTrigger()

    def on_element(self, element: Any, timestamp: int, window: TimeWindow,
                   ctx: Trigger.TriggerContext) -> TriggerResult:
        """Register a processing-time timer at the window's max timestamp."""
        ctx.register_processing_time_timer(window.max_timestamp())
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: TimeWindow,
                           ctx: Trigger.TriggerContext) -> TriggerResult:
        """FIRE: the window is over."""
        return TriggerResult.FIRE

    def on_event_time(self, time: int, window: TimeWindow,
                      ctx: Trigger.TriggerContext) -> TriggerResult:
        """Event time is ignored: CONTINUE."""
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Processing-time triggers work with session windows."""
        return True

    def on_merge(self, window: TimeWindow, ctx: Trigger.OnMergeContext) -> None:
        """Register a timer at the end of the merged window unless that time has passed."""
        if window.max_timestamp() > ctx.get_current_processing_time():
            ctx.register_processing_time_timer(window.max_timestamp())

    def clear(self, window: TimeWindow, ctx: Trigger.TriggerContext) -> None:
        """Delete the end-of-window timer."""
        ctx.delete_processing_time_timer(window.max_timestamp())


def _sum_counts(a: int, b: int) -> int:
    return a + b


class CountTrigger(Trigger[Any, Window]):
    """Fires every time the pane has received ``window_size`` more elements.

    The count is kept in ReducingState ``"count"``; it is reset when the trigger fires.
    """

    def __init__(self, window_size: int) -> None:
        # PyFlink checks nothing (a count of 0 fires on every element): the mistake is named here instead
        if isinstance(window_size, bool) or not isinstance(window_size, int):
            raise InvalidArgumentTypeError(f"CountTrigger: window_size (elements per firing) must be an int, got "
                                           f"{type(window_size).__name__} {window_size!r}")
        if window_size <= 0:
            raise InvalidProgramError(
                f"CountTrigger: window_size (elements per firing) must be positive, got {window_size}")
        self._window_size = window_size
        self._count_state_descriptor = ReducingStateDescriptor("count", _sum_counts)

    @staticmethod
    def of(window_size: int) -> "CountTrigger":
        """Return a trigger that fires every ``window_size`` elements."""
        return CountTrigger(window_size)

    def get_window_size(self) -> int:
        """The number of elements per firing."""
        return self._window_size

    def on_element(self, element: Any, timestamp: int, window: Window,
                   ctx: Trigger.TriggerContext) -> TriggerResult:
        """Count the element; FIRE and reset the count when it reaches the window size."""
        count: ReducingState = ctx.get_partitioned_state(self._count_state_descriptor)  # type: ignore[assignment]
        count.add(1)
        if count.get() >= self._window_size:
            count.clear()
            return TriggerResult.FIRE
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: Window,
                           ctx: Trigger.TriggerContext) -> TriggerResult:
        """Time is ignored: CONTINUE."""
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: Window,
                      ctx: Trigger.TriggerContext) -> TriggerResult:
        """Time is ignored: CONTINUE."""
        return TriggerResult.CONTINUE

    def can_merge(self) -> bool:
        """Counts of merged windows add up."""
        return True

    def on_merge(self, window: Window, ctx: Trigger.OnMergeContext) -> None:
        """Merge the counts of the merged windows."""
        ctx.merge_partitioned_state(self._count_state_descriptor)

    def clear(self, window: Window, ctx: Trigger.TriggerContext) -> None:
        """Drop the count."""
        ctx.get_partitioned_state(self._count_state_descriptor).clear()

    def __repr__(self) -> str:
        return f"CountTrigger({self._window_size})"


class PurgingTrigger(Trigger[Any, Window]):
    """Turns any trigger into a purging one: each FIRE of the nested trigger becomes FIRE_AND_PURGE."""

    def __init__(self, nested_trigger: Trigger) -> None:
        if not isinstance(nested_trigger, Trigger):
            raise InvalidArgumentTypeError(
                f"PurgingTrigger.of: nested_trigger must be a Trigger, "
                f"got {type(nested_trigger).__name__}"
            )
        self.nested_trigger = nested_trigger

    @staticmethod
    def of(nested_trigger: Trigger) -> "PurgingTrigger":
        """Wrap ``nested_trigger`` so that it purges the pane whenever it fires."""
        return PurgingTrigger(nested_trigger)

    @staticmethod
    def _purging(result: TriggerResult) -> TriggerResult:
        return TriggerResult.FIRE_AND_PURGE if result.is_fire() else result

    def on_element(self, element: Any, timestamp: int, window: Window,
                   ctx: Trigger.TriggerContext) -> TriggerResult:
        """The nested result, with FIRE turned into FIRE_AND_PURGE."""
        return self._purging(self.nested_trigger.on_element(element, timestamp, window, ctx))

    def on_event_time(self, time: int, window: Window,
                      ctx: Trigger.TriggerContext) -> TriggerResult:
        """The nested result, with FIRE turned into FIRE_AND_PURGE."""
        return self._purging(self.nested_trigger.on_event_time(time, window, ctx))

    def on_processing_time(self, time: int, window: Window,
                           ctx: Trigger.TriggerContext) -> TriggerResult:
        """The nested result, with FIRE turned into FIRE_AND_PURGE."""
        return self._purging(self.nested_trigger.on_processing_time(time, window, ctx))

    def clear(self, window: Window, ctx: Trigger.TriggerContext) -> None:
        """Clear the nested trigger."""
        self.nested_trigger.clear(window, ctx)

    def can_merge(self) -> bool:
        """As the nested trigger."""
        return self.nested_trigger.can_merge()

    def on_merge(self, window: Window, ctx: Trigger.OnMergeContext) -> None:
        """Delegate to the nested trigger."""
        self.nested_trigger.on_merge(window, ctx)

    def __repr__(self) -> str:
        return f"PurgingTrigger({self.nested_trigger!r})"


class NeverTrigger(Trigger[Any, GlobalWindow]):
    """A trigger that never fires: the default trigger of :class:`GlobalWindows`."""

    def on_element(self, element: Any, timestamp: int, window: GlobalWindow,
                   ctx: Trigger.TriggerContext) -> TriggerResult:
        """CONTINUE."""
        return TriggerResult.CONTINUE

    def on_processing_time(self, time: int, window: GlobalWindow,
                           ctx: Trigger.TriggerContext) -> TriggerResult:
        """CONTINUE."""
        return TriggerResult.CONTINUE

    def on_event_time(self, time: int, window: GlobalWindow,
                      ctx: Trigger.TriggerContext) -> TriggerResult:
        """CONTINUE."""
        return TriggerResult.CONTINUE

    def on_merge(self, window: GlobalWindow, ctx: Trigger.OnMergeContext) -> None:
        """Nothing to merge."""

    def clear(self, window: GlobalWindow, ctx: Trigger.TriggerContext) -> None:
        """Nothing to clear."""
