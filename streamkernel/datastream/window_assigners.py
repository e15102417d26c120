"""Window assigners: which windows an element belongs to.

A :class:`WindowAssigner` puts each element into zero or more windows; the elements of one
key in one window form a pane, evaluated when the assigner's (or a custom) trigger fires.
This module holds the base classes and the tumbling, sliding and global assigners; session
assigners are in :mod:`streamkernel.datastream.session_windows`, count assigners in
:mod:`streamkernel.datastream.count_window_assigners`.

Sizes, slides and offsets are a ``Time``, a ``Duration``, a ``datetime.timedelta`` or an
int number of milliseconds, validated as Flink validates them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Collection, Generic, Iterable, List, Optional, TypeVar

from streamkernel.common.time import to_millis
from streamkernel.datastream.window_triggers import (
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    Trigger,
)
from streamkernel.datastream.windows import (
    MIN_LONG_VALUE,
    GlobalWindow,
    GlobalWindowSerializer,
    TimeWindow,
    TimeWindowSerializer,
    Window,
)
from streamkernel.errors import InvalidProgramError

__all__ = [
    "WindowAssigner",
    "MergingWindowAssigner",
    "SessionWindowTimeGapExtractor",
    "TumblingEventTimeWindows",
    "TumblingProcessingTimeWindows",
    "SlidingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "GlobalWindows",
]

T = TypeVar("T")
W = TypeVar("W", bound=Window)
W2 = TypeVar("W2")


class WindowAssigner(ABC, Generic[T, W]):
    """Assigns zero or more windows to each element.

    Elements are grouped by key and window; the set of elements with the same key and window
    is a pane, evaluated when its :class:`Trigger` fires.
    """

    class WindowAssignerContext(ABC):
        """What the window operator offers an assigner: the clock and the runtime context."""

        @abstractmethod
        def get_current_processing_time(self) -> int:
            """The current processing time, in epoch milliseconds."""

        @abstractmethod
        def get_runtime_context(self) -> Any:
            """The RuntimeContext of the window operator (for keyed state)."""

    @abstractmethod
    def assign_windows(self, element: T, timestamp: int,
                       context: "WindowAssigner.WindowAssignerContext") -> Collection[W]:
        """Return the windows ``element`` (with event ``timestamp``) belongs to."""

    @abstractmethod
    def get_default_trigger(self, env: Any = None) -> Trigger[T, W]:
        """The trigger used when the program sets none (``env`` is accepted as in PyFlink)."""

    @abstractmethod
    def get_window_serializer(self) -> Any:
        """A serializer for the windows this assigner creates."""

    @abstractmethod
    def is_event_time(self) -> bool:
        """True if elements are assigned by their event timestamp, False for processing time."""

    def __str__(self) -> str:
        return repr(self)


class MergingWindowAssigner(WindowAssigner[T, W]):
    """A :class:`WindowAssigner` whose windows can merge (session windows)."""

    class MergeCallback(ABC, Generic[W2]):
        """Told by :meth:`MergingWindowAssigner.merge_windows` which windows merge into which."""

        @abstractmethod
        def merge(self, to_be_merged: Iterable[W2], merge_result: W2) -> None:
            """The windows ``to_be_merged`` become the single window ``merge_result``."""

    @abstractmethod
    def merge_windows(self, windows: Iterable[W],
                      callback: "MergingWindowAssigner.MergeCallback[W]") -> None:
        """Decide which of ``windows`` merge, reporting each merge to ``callback``."""


class SessionWindowTimeGapExtractor(ABC):
    """Extracts the session gap of an element, for dynamic session windows."""

    @abstractmethod
    def extract(self, element: Any) -> int:
        """Return the session gap for ``element``, in milliseconds (or a Time/Duration)."""


def _require_timestamp(timestamp: Optional[int], assigner: WindowAssigner) -> int:
    """Event-time assigners need a record timestamp: raise PyFlink's error when there is none."""
    if timestamp is None or timestamp <= MIN_LONG_VALUE:
        raise InvalidProgramError(
            "Record has Java Long.MIN_VALUE timestamp (= no timestamp marker). Is the time characteristic set to "
            "'ProcessingTime', or did you forget to call 'data_stream.assign_timestamps_and_watermarks(...)'? "
            f"{assigner!r} got a record without a timestamp (timestamp={timestamp!r}): event-time windows need "
            "event timestamps (a WatermarkStrategy with a timestamp assigner, or a source that sets them); or use "
            "a processing-time assigner such as TumblingProcessingTimeWindows."
        )
    return timestamp


def _checked(condition: bool, assigner: str, rule: str, values: str, fix: str) -> None:
    """Flink's check of an assigner's parameters: ``X parameters must satisfy RULE``, then the values and the fix."""
    if not condition:
        raise InvalidProgramError(f"{assigner} parameters must satisfy {rule}: got {values}; {fix}")


class _TumblingWindows(WindowAssigner[Any, TimeWindow]):
    def __init__(self, size: Any, offset: Any = 0) -> None:
        name = type(self).__name__
        self._size = to_millis(size, f"{name}: size")
        self._offset = 0 if offset is None else to_millis(offset, f"{name}: offset")
        _checked(abs(self._offset) < self._size, name, "abs(offset) < size",
                 f"size={self._size} ms, offset={self._offset} ms",
                 "the size must be positive and the offset shorter than it")

    def get_size(self) -> int:
        """The window size in milliseconds."""
        return self._size

    def get_offset(self) -> int:
        """The offset of the window starts in milliseconds."""
        return self._offset

    def _windows_at(self, time: int) -> List[TimeWindow]:
        start = TimeWindow.get_window_start_with_offset(time, self._offset, self._size)
        return [TimeWindow(start, start + self._size)]

    def get_window_serializer(self) -> TimeWindowSerializer:
        """Serializer of :class:`TimeWindow`."""
        return TimeWindowSerializer()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._size})"


class TumblingEventTimeWindows(_TumblingWindows):
    """Windows of a fixed ``size`` by event timestamp, not overlapping.

    Example (one-minute windows)::

        >>> keyed.window(TumblingEventTimeWindows.of(Time.minutes(1)))
    """

    @staticmethod
    def of(size: Any, offset: Any = None) -> "TumblingEventTimeWindows":
        """Windows of ``size``, starts shifted by ``offset`` (e.g. ``Time.hours(-8)`` for UTC+8 days)."""
        return TumblingEventTimeWindows(size, offset)

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[TimeWindow]:
        """The one window holding ``timestamp``."""
        return self._windows_at(_require_timestamp(timestamp, self))

    def get_default_trigger(self, env: Any = None) -> EventTimeTrigger:
        """:class:`EventTimeTrigger`."""
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        """True."""
        return True


class TumblingProcessingTimeWindows(_TumblingWindows):
    """Windows of a fixed ``size`` by the processing time of the element's arrival."""

    @staticmethod
    def of(size: Any, offset: Any = None) -> "TumblingProcessingTimeWindows":
        """Windows of ``size``, starts shifted by ``offset``."""
        return TumblingProcessingTimeWindows(size, offset)

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[TimeWindow]:
        """The one window holding the current processing time."""
        return self._windows_at(context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> ProcessingTimeTrigger:
        """:class:`ProcessingTimeTrigger`."""
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        """False."""
        return False


class _SlidingWindows(WindowAssigner[Any, TimeWindow]):
    def __init__(self, size: Any, slide: Any, offset: Any = 0) -> None:
        name = type(self).__name__
        self._size = to_millis(size, f"{name}: size")
        self._slide = to_millis(slide, f"{name}: slide")
        self._offset = 0 if offset is None else to_millis(offset, f"{name}: offset")
        _checked(abs(self._offset) < self._slide and self._size > 0, name, "abs(offset) < slide and size > 0",
                 f"size={self._size} ms, slide={self._slide} ms, offset={self._offset} ms",
                 "the size and the slide must be positive and the offset shorter than the slide")

    def get_size(self) -> int:
        """The window size in milliseconds."""
        return self._size

    def get_slide(self) -> int:
        """The distance between window starts in milliseconds."""
        return self._slide

    def get_offset(self) -> int:
        """The offset of the window starts in milliseconds."""
        return self._offset

    def _windows_at(self, time: int) -> List[TimeWindow]:
        last_start = TimeWindow.get_window_start_with_offset(time, self._offset, self._slide)
        return [
            TimeWindow(start, start + self._size)
            for start in range(last_start, time - self._size, -self._slide)
        ]

    def get_window_serializer(self) -> TimeWindowSerializer:
        """Serializer of :class:`TimeWindow`."""
        return TimeWindowSerializer()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._size}, {self._slide})"


class SlidingEventTimeWindows(_SlidingWindows):
    """Windows of ``size`` starting every ``slide`` by event timestamp; they may overlap.

    Example (one-minute windows every ten seconds)::

        >>> keyed.window(SlidingEventTimeWindows.of(Time.minutes(1), Time.seconds(10)))
    """

    @staticmethod
    def of(size: Any, slide: Any, offset: Any = None) -> "SlidingEventTimeWindows":
        """Windows of ``size`` every ``slide``, starts shifted by ``offset`` (abs(offset) < slide)."""
        return SlidingEventTimeWindows(size, slide, offset)

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[TimeWindow]:
        """Every window holding ``timestamp``, latest start first."""
        return self._windows_at(_require_timestamp(timestamp, self))

    def get_default_trigger(self, env: Any = None) -> EventTimeTrigger:
        """:class:`EventTimeTrigger`."""
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        """True."""
        return True


class SlidingProcessingTimeWindows(_SlidingWindows):
    """Windows of ``size`` starting every ``slide`` by processing time; they may overlap."""

    @staticmethod
    def of(size: Any, slide: Any, offset: Any = None) -> "SlidingProcessingTimeWindows":
        """Windows of ``size`` every ``slide``, starts shifted by ``offset`` (abs(offset) < slide)."""
        return SlidingProcessingTimeWindows(size, slide, offset)

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[TimeWindow]:
        """Every window holding the current processing time, latest start first."""
        return self._windows_at(context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> ProcessingTimeTrigger:
        """:class:`ProcessingTimeTrigger`."""
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        """False."""
        return False


class GlobalWindows(WindowAssigner[Any, GlobalWindow]):
    """Puts all elements of a key into the single :class:`GlobalWindow`.

    Its default trigger never fires: use it with a custom trigger (``.trigger(...)``).
    """

    @staticmethod
    def create() -> "GlobalWindows":
        """Return the global window assigner."""
        return GlobalWindows()

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[GlobalWindow]:
        """``[GlobalWindow.get()]``."""
        return [GlobalWindow.get()]

    def get_default_trigger(self, env: Any = None) -> NeverTrigger:
        """:class:`NeverTrigger`."""
        return NeverTrigger()

    def get_window_serializer(self) -> GlobalWindowSerializer:
        """Serializer of :class:`GlobalWindow`."""
        return GlobalWindowSerializer()

    def is_event_time(self) -> bool:
        """False."""
        return False

    def __repr__(self) -> str:
        return "GlobalWindows()"
