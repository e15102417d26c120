"""Count window assigners: windows of a number of consecutive elements per key.

``keyed.count_window(size)`` uses :class:`CountTumblingWindowAssigner`,
``keyed.count_window(size, slide)`` :class:`CountSlidingWindowAssigner`. Each keeps the
position of the next element of the key in keyed ValueState (through the assigner
context's runtime context) and fires a window with ``CountTrigger(size)`` once it is full.
"""

from __future__ import annotations

from typing import Any, List

from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window_assigners import WindowAssigner
from streamkernel.datastream.window_triggers import CountTrigger
from streamkernel.datastream.windows import CountWindow, CountWindowSerializer
from streamkernel.errors import InvalidArgumentTypeError, InvalidProgramError

__all__ = ["CountTumblingWindowAssigner", "CountSlidingWindowAssigner"]


def _positive_count(value: Any, argument: str, assigner: str) -> int:
    """``value`` when it is an int >= 1. PyFlink checks nothing here (a window of 0 elements fails in the
    job with a ZeroDivisionError): the mistake is named at the call instead."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentTypeError(
            f"{assigner}: {argument} must be an int (a number of elements), got {type(value).__name__} {value!r}")
    if value <= 0:
        raise InvalidProgramError(f"{assigner}: {argument} must be a positive number of elements, got {value}")
    return value


def _next_count(context: WindowAssigner.WindowAssignerContext, descriptor: ValueStateDescriptor) -> int:
    """Read and advance the per-key element counter kept in keyed ValueState."""
    count_state = context.get_runtime_context().get_state(descriptor)
    current = count_state.value() or 0
    count_state.update(current + 1)
    return current


class CountTumblingWindowAssigner(WindowAssigner[Any, CountWindow]):
    """Windows of ``window_size`` consecutive elements per key, not overlapping.

    The element count is kept in keyed ValueState ``"tumble-count-assigner"``.
    """

    def __init__(self, window_size: int) -> None:
        self._window_size = _positive_count(window_size, "window_size", "CountTumblingWindowAssigner")
        self._count_descriptor = ValueStateDescriptor("tumble-count-assigner")

    @staticmethod
    def of(window_size: int) -> "CountTumblingWindowAssigner":
        """Windows of ``window_size`` elements."""
        return CountTumblingWindowAssigner(window_size)

    def get_window_size(self) -> int:
        """The number of elements per window."""
        return self._window_size

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[CountWindow]:
        """The window numbered ``count // window_size`` for the element's position ``count``."""
        return [CountWindow(_next_count(context, self._count_descriptor) // self._window_size)]

    def get_default_trigger(self, env: Any = None) -> CountTrigger:
        """``CountTrigger(window_size)``."""
        return CountTrigger(self._window_size)

    def get_window_serializer(self) -> CountWindowSerializer:
        """Serializer of :class:`CountWindow`."""
        return CountWindowSerializer()

    def is_event_time(self) -> bool:
        """False."""
        return False

    def __repr__(self) -> str:
        return f"CountTumblingWindowAssigner({self._window_size})"


class CountSlidingWindowAssigner(WindowAssigner[Any, CountWindow]):
    """Windows of ``window_size`` elements starting every ``window_slide`` elements; they overlap.

    Window ``i`` holds the elements at positions ``[i * slide, i * slide + size)`` of the key.
    """

    def __init__(self, window_size: int, window_slide: int) -> None:
        name = "CountSlidingWindowAssigner"
        self._window_size = _positive_count(window_size, "window_size", name)
        self._window_slide = _positive_count(window_slide, "window_slide", name)
        self._count_descriptor = ValueStateDescriptor("slide-count-assigner")

    @staticmethod
    def of(window_size: int, window_slide: int) -> "CountSlidingWindowAssigner":
        """Windows of ``window_size`` elements every ``window_slide`` elements."""
        return CountSlidingWindowAssigner(window_size, window_slide)

    def get_window_size(self) -> int:
        """The number of elements per window."""
        return self._window_size

    def get_window_slide(self) -> int:
        """The number of elements between window starts."""
        return self._window_slide

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssigner.WindowAssignerContext) -> List[CountWindow]:
        """Every window whose range of positions holds the element's position, latest first."""
        position = _next_count(context, self._count_descriptor)
        windows = []
        window_id = position // self._window_slide
        while window_id >= 0 and position < window_id * self._window_slide + self._window_size:
            windows.append(CountWindow(window_id))
            window_id -= 1
        return windows

    def get_default_trigger(self, env: Any = None) -> CountTrigger:
        """``CountTrigger(window_size)``: each window fires once it holds its ``window_size`` elements."""
        return CountTrigger(self._window_size)

    def get_window_serializer(self) -> CountWindowSerializer:
        """Serializer of :class:`CountWindow`."""
        return CountWindowSerializer()

    def is_event_time(self) -> bool:
        """False."""
        return False

    def __repr__(self) -> str:
        return f"CountSlidingWindowAssigner({self._window_size}, {self._window_slide})"
