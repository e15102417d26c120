"""Windowing, as ``pyflink.datastream.window``: windows, window assigners and triggers.

This module gathers the public windowing names under PyFlink's module name; each concept
lives in its own module:

- :mod:`~streamkernel.datastream.windows`: :class:`Window`, :class:`TimeWindow`,
  :class:`CountWindow`, :class:`GlobalWindow` and their serializers;
- :mod:`~streamkernel.datastream.window_assigners`: :class:`WindowAssigner`,
  :class:`MergingWindowAssigner`, tumbling, sliding and global assigners;
- :mod:`~streamkernel.datastream.session_windows`: the session assigners;
- :mod:`~streamkernel.datastream.count_window_assigners`: the count assigners;
- :mod:`~streamkernel.datastream.window_triggers` and
  :mod:`~streamkernel.datastream.continuous_triggers`: :class:`Trigger`,
  :class:`TriggerResult` and the built-in triggers.

Example::

    from streamkernel.common import Time
    from streamkernel.datastream.window import TumblingEventTimeWindows

    keyed.window(TumblingEventTimeWindows.of(Time.seconds(5))).reduce(lambda a, b: a + b)
"""

from __future__ import annotations

# PyFlink's window module imports Time and Types (not in its __all__), and programs import
# them from it: ``from pyflink.datastream.window import TumblingEventTimeWindows, Time``.
from streamkernel.common import Time, Types  # noqa: F401
from streamkernel.datastream.continuous_triggers import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
)
from streamkernel.datastream.count_window_assigners import (
    CountSlidingWindowAssigner,
    CountTumblingWindowAssigner,
)
from streamkernel.datastream.session_windows import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    ProcessingTimeSessionWindows,
)
from streamkernel.datastream.window_assigners import (
    GlobalWindows,
    MergingWindowAssigner,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from streamkernel.datastream.window_triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from streamkernel.datastream.windows import (
    CountWindow,
    CountWindowSerializer,
    GlobalWindow,
    GlobalWindowSerializer,
    TimeWindow,
    TimeWindowSerializer,
    Window,
)

__all__ = [
    "Window",
    "TimeWindow",
    "CountWindow",
    "GlobalWindow",
    "WindowAssigner",
    "MergingWindowAssigner",
    "TumblingProcessingTimeWindows",
    "TumblingEventTimeWindows",
    "SlidingProcessingTimeWindows",
    "SlidingEventTimeWindows",
    "ProcessingTimeSessionWindows",
    "EventTimeSessionWindows",
    "DynamicProcessingTimeSessionWindows",
    "DynamicEventTimeSessionWindows",
    "GlobalWindows",
    "CountTumblingWindowAssigner",
    "CountSlidingWindowAssigner",
    "TriggerResult",
    "Trigger",
    "EventTimeTrigger",
    "ProcessingTimeTrigger",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "NeverTrigger",
    "PurgingTrigger",
    "CountTrigger",
    "TimeWindowSerializer",
    "CountWindowSerializer",
    "GlobalWindowSerializer",
    "SessionWindowTimeGapExtractor",
]
