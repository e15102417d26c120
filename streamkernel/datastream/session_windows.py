"""Session window assigners: windows that close after a gap of inactivity.

Each element first gets its own window ``[t, t + gap)``; the window operator then asks the
(merging) assigner to merge windows that overlap, so a session grows while elements keep
arriving less than ``gap`` apart. The gap is fixed (``with_gap``) or computed per element
by a :class:`SessionWindowTimeGapExtractor` (``with_dynamic_gap``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, List

from streamkernel.common.time import to_millis
from streamkernel.datastream.window_assigners import (
    MergingWindowAssigner,
    WindowAssigner,
    _require_timestamp,
)
from streamkernel.datastream.window_triggers import EventTimeTrigger, ProcessingTimeTrigger
from streamkernel.datastream.windows import TimeWindow, TimeWindowSerializer
from streamkernel.errors import InvalidFunctionError, InvalidProgramError

__all__ = [
    "EventTimeSessionWindows",
    "ProcessingTimeSessionWindows",
    "DynamicEventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
]


def _gap_millis(gap: Any, assigner: str) -> int:
    millis = to_millis(gap, f"{assigner}.with_gap: size")
    if millis <= 0:
        raise InvalidProgramError(
            f"{assigner} parameters must satisfy 0 < size: {assigner}.with_gap: the session gap (size) "
            f"must be positive, got {millis} ms"
        )
    return millis


def _gap_function(extractor: Any, assigner: str) -> Callable[[Any], Any]:
    extract = getattr(extractor, "extract", None)
    if callable(extract):
        return extract
    if callable(extractor):
        return extractor
    raise InvalidFunctionError(
        f"{assigner}.with_dynamic_gap: extractor must be a SessionWindowTimeGapExtractor "
        f"(with extract(element)) or a callable element -> gap, got {type(extractor).__name__}"
    )


class _SessionWindows(MergingWindowAssigner[Any, TimeWindow]):
    """Shared parts of the four session assigners (merging, serializer)."""

    def merge_windows(self, windows: Iterable[TimeWindow],
                      callback: MergingWindowAssigner.MergeCallback) -> None:
        """Merge overlapping sessions (:meth:`TimeWindow.merge_windows`)."""
        TimeWindow.merge_windows(windows, callback)

    def get_window_serializer(self) -> TimeWindowSerializer:
        """Serializer of :class:`TimeWindow`."""
        return TimeWindowSerializer()


class _FixedGapSessions(_SessionWindows):
    def __init__(self, session_gap: Any) -> None:
        self._session_gap = _gap_millis(session_gap, type(self).__name__)

    def get_gap(self) -> int:
        """The session gap in milliseconds."""
        return self._session_gap

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._session_gap})"


class _DynamicGapSessions(_SessionWindows):
    def __init__(self, session_window_time_gap_extractor: Any) -> None:
        self._session_window_time_gap_extractor = session_window_time_gap_extractor
        self._extract = _gap_function(session_window_time_gap_extractor, type(self).__name__)

    def _window_for(self, element: Any, start: int) -> List[TimeWindow]:
        gap = to_millis(self._extract(element), f"{type(self).__name__}: extracted session gap")
        if gap <= 0:
            raise InvalidProgramError(
                f"Dynamic session time gap must satisfy 0 < gap: the extractor of {type(self).__name__} "
                f"returned {gap} ms for element {element!r}; return a positive gap for every element"
            )
        return [TimeWindow(start, start + gap)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class EventTimeSessionWindows(_FixedGapSessions):
    """Sessions by event timestamp that close after ``gap`` without elements.

    Example::

        >>> keyed.window(EventTimeSessionWindows.with_gap(Time.minutes(10)))
    """

    @staticmethod
    def with_gap(size: Any) -> "EventTimeSessionWindows":
        """Sessions separated by at least ``size`` (Time, Duration or ms) of event time."""
        return EventTimeSessionWindows(size)

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> "DynamicEventTimeSessionWindows":
        """Sessions whose gap ``extractor`` computes per element."""
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[TimeWindow]:
        """``[TimeWindow(timestamp, timestamp + gap)]``."""
        start = _require_timestamp(timestamp, self)
        return [TimeWindow(start, start + self._session_gap)]

    def get_default_trigger(self, env: Any = None) -> EventTimeTrigger:
        """:class:`EventTimeTrigger`."""
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        """True."""
        return True


class ProcessingTimeSessionWindows(_FixedGapSessions):
    """Sessions by processing time that close after ``gap`` without elements."""

    @staticmethod
    def with_gap(size: Any) -> "ProcessingTimeSessionWindows":
        """Sessions separated by at least ``size`` (Time, Duration or ms) of processing time."""
        return ProcessingTimeSessionWindows(size)

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> "DynamicProcessingTimeSessionWindows":
        """Sessions whose gap ``extractor`` computes per element."""
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[TimeWindow]:
        """``[TimeWindow(now, now + gap)]`` for the current processing time ``now``."""
        now = context.get_current_processing_time()
        return [TimeWindow(now, now + self._session_gap)]

    def get_default_trigger(self, env: Any = None) -> ProcessingTimeTrigger:
        """:class:`ProcessingTimeTrigger`."""
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        """False."""
        return False


class DynamicEventTimeSessionWindows(_DynamicGapSessions):
    """Event-time sessions whose gap a :class:`SessionWindowTimeGapExtractor` computes per element.

    The extractor may also be a plain callable ``element -> gap`` (ms, Time or Duration).
    """

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> "DynamicEventTimeSessionWindows":
        """Sessions whose gap ``extractor`` computes per element."""
        return DynamicEventTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[TimeWindow]:
        """``[TimeWindow(timestamp, timestamp + extract(element))]``."""
        return self._window_for(element, _require_timestamp(timestamp, self))

    def get_default_trigger(self, env: Any = None) -> EventTimeTrigger:
        """:class:`EventTimeTrigger`."""
        return EventTimeTrigger()

    def is_event_time(self) -> bool:
        """True."""
        return True


class DynamicProcessingTimeSessionWindows(_DynamicGapSessions):
    """Processing-time sessions whose gap a :class:`SessionWindowTimeGapExtractor` computes per element."""

    @staticmethod
    def with_dynamic_gap(extractor: Any) -> "DynamicProcessingTimeSessionWindows":
        """Sessions whose gap ``extractor`` computes per element."""
        return DynamicProcessingTimeSessionWindows(extractor)

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[TimeWindow]:
        """``[TimeWindow(now, now + extract(element))]`` for the current processing time."""
        return self._window_for(element, context.get_current_processing_time())

    def get_default_trigger(self, env: Any = None) -> ProcessingTimeTrigger:
        """:class:`ProcessingTimeTrigger`."""
        return ProcessingTimeTrigger()

    def is_event_time(self) -> bool:
        """False."""
        return False
