"""Process functions: the general operators with access to time, timers, state and side outputs.

Part of ``streamkernel.datastream.functions``. ``process_element`` (and ``on_timer``)
emit results with ``yield``; any number of them, including none.

Side outputs are emitted either PyFlink's way, ``yield output_tag, value`` (a 2-tuple
whose first item is an :class:`~streamkernel.datastream.output_tag.OutputTag`), or Flink's
Java way, ``ctx.output(output_tag, value)``. Both reach
``result.get_side_output(output_tag)``.

Each function declares its Context classes as PyFlink does; the runtime implements them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from streamkernel.datastream.function_base import Function

if TYPE_CHECKING:  # pragma: no cover - typing only
    from streamkernel.datastream.output_tag import OutputTag
    from streamkernel.datastream.state import BroadcastState, MapStateDescriptor, ReadOnlyBroadcastState
    from streamkernel.datastream.time_domain import TimeDomain
    from streamkernel.datastream.timerservice import TimerService

__all__ = [
    "ProcessFunction",
    "KeyedProcessFunction",
    "CoProcessFunction",
    "KeyedCoProcessFunction",
    "BaseBroadcastProcessFunction",
    "BroadcastProcessFunction",
    "KeyedBroadcastProcessFunction",
]


class _ElementContext(ABC):
    """What every per-element context offers: the element's timestamp, timers, side outputs."""

    @abstractmethod
    def timer_service(self) -> "TimerService":
        """The TimerService: current processing time / watermark, and (keyed only) timers."""

    @abstractmethod
    def timestamp(self) -> Any:
        """The timestamp (ms) of the current element or firing timer; None if it has none."""

    @abstractmethod
    def output(self, output_tag: "OutputTag", value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag`` (same as ``yield output_tag, value``)."""


class _KeyedElementContext(_ElementContext):
    """A per-element context on a keyed stream: also knows the current key."""

    @abstractmethod
    def get_current_key(self) -> Any:
        """The key of the element being processed (or of the firing timer)."""


class ProcessFunction(Function):
    """Processes each element of a (non-keyed) stream, emitting zero or more results.

    Example::

        class Split(ProcessFunction):
            def process_element(self, value, ctx):
                if value < 0:
                    yield negatives, value      # side output (negatives is an OutputTag)
                else:
                    yield value

    Keyed state and timers need a KeyedStream and a :class:`KeyedProcessFunction`.
    """

    class Context(_ElementContext):
        """Information available while processing one element."""

    @abstractmethod
    def process_element(self, value: Any, ctx: "ProcessFunction.Context") -> Any:
        """Process one element; ``yield`` the results. ``ctx`` is valid only during the call."""


class KeyedProcessFunction(Function):
    """Processes each element of a KeyedStream, with keyed state and timers.

    ``on_timer`` is called when a timer registered through ``ctx.timer_service()`` fires,
    with the key of the timer as current key.
    """

    class Context(_KeyedElementContext):
        """Information available while processing one element: also the current key."""

    class OnTimerContext(Context):
        """Information available in ``on_timer``: also the time domain of the timer."""

        @abstractmethod
        def time_domain(self) -> "TimeDomain":
            """EVENT_TIME or PROCESSING_TIME: the domain of the firing timer."""

    @abstractmethod
    def process_element(self, value: Any, ctx: "KeyedProcessFunction.Context") -> Any:
        """Process one element; ``yield`` the results. ``ctx`` is valid only during the call."""

    def on_timer(self, timestamp: int, ctx: "KeyedProcessFunction.OnTimerContext") -> Any:
        """Called when a timer fires at ``timestamp``; ``yield`` any results."""


class CoProcessFunction(Function):
    """Processes the elements of two connected (non-keyed) streams, one method per input."""

    class Context(_ElementContext):
        """Information available while processing one element of either input."""

    @abstractmethod
    def process_element1(self, value: Any, ctx: "CoProcessFunction.Context") -> Any:
        """Process one element of the first input; ``yield`` the results."""

    @abstractmethod
    def process_element2(self, value: Any, ctx: "CoProcessFunction.Context") -> Any:
        """Process one element of the second input; ``yield`` the results."""


class KeyedCoProcessFunction(Function):
    """Processes the elements of two connected keyed streams, with keyed state and timers."""

    class Context(_KeyedElementContext):
        """Information available while processing one element: also the current key."""

    class OnTimerContext(Context):
        """Information available in ``on_timer``: also the time domain of the timer."""

        @abstractmethod
        def time_domain(self) -> "TimeDomain":
            """EVENT_TIME or PROCESSING_TIME: the domain of the firing timer."""

    @abstractmethod
    def process_element1(self, value: Any, ctx: "KeyedCoProcessFunction.Context") -> Any:
        """Process one element of the first input; ``yield`` the results."""

    @abstractmethod
    def process_element2(self, value: Any, ctx: "KeyedCoProcessFunction.Context") -> Any:
        """Process one element of the second input; ``yield`` the results."""

    def on_timer(self, timestamp: int, ctx: "KeyedCoProcessFunction.OnTimerContext") -> Any:
        """Called when a timer fires at ``timestamp``; ``yield`` any results."""


# PyFlink's type parameters of the broadcast process functions (they are Generic there).
KEY = TypeVar("KEY")
IN1 = TypeVar("IN1")
IN2 = TypeVar("IN2")
OUT = TypeVar("OUT")


class BaseBroadcastProcessFunction(Function):
    """The base of the functions applied to a BroadcastConnectedStream (stream + broadcast state)."""

    class BaseContext(ABC):
        """The context every method of a broadcast process function receives."""

        @abstractmethod
        def timestamp(self) -> Any:
            """The timestamp (ms) of the current element; None if it has none."""

        @abstractmethod
        def current_processing_time(self) -> int:
            """The current processing time (ms)."""

        @abstractmethod
        def current_watermark(self) -> int:
            """The current event-time watermark (ms)."""

        @abstractmethod
        def output(self, output_tag: "OutputTag", value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag``."""

    class Context(BaseContext):
        """The context of the broadcast side: read/write access to the broadcast state."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: "MapStateDescriptor") -> "BroadcastState":
            """The broadcast state described by ``state_descriptor``, writable."""

    class ReadOnlyContext(BaseContext):
        """The context of the non-broadcast side: read-only access to the broadcast state."""

        @abstractmethod
        def get_broadcast_state(self, state_descriptor: "MapStateDescriptor") -> "ReadOnlyBroadcastState":
            """The broadcast state described by ``state_descriptor``, read-only."""


class BroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[IN1, IN2, OUT]):
    """Applied to a non-keyed stream connected with a BroadcastStream.

    ``process_broadcast_element`` sees each broadcast element (and may update the broadcast
    state); ``process_element`` sees the other stream's elements (and may read it).
    """

    class Context(BaseBroadcastProcessFunction.Context, ABC):
        """The context of the broadcast side."""

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, ABC):
        """The context of the non-broadcast side."""

    @abstractmethod
    def process_element(self, value: Any, ctx: "BroadcastProcessFunction.ReadOnlyContext") -> Any:
        """Process one element of the non-broadcast stream; ``yield`` the results."""

    @abstractmethod
    def process_broadcast_element(self, value: Any, ctx: "BroadcastProcessFunction.Context") -> Any:
        """Process one element of the broadcast stream; ``yield`` the results."""


class KeyedBroadcastProcessFunction(BaseBroadcastProcessFunction, Generic[KEY, IN1, IN2, OUT]):
    """Applied to a KeyedStream connected with a BroadcastStream: keyed state and timers too."""

    class Context(BaseBroadcastProcessFunction.Context, ABC):
        """The context of the broadcast side."""

    class ReadOnlyContext(BaseBroadcastProcessFunction.ReadOnlyContext, ABC):
        """The context of the keyed side: also timers and the current key."""

        @abstractmethod
        def timer_service(self) -> "TimerService":
            """The TimerService for querying time and registering timers."""

        @abstractmethod
        def get_current_key(self) -> Any:
            """The key of the element being processed."""

    class OnTimerContext(ReadOnlyContext, ABC):
        """The context of ``on_timer``."""

        @abstractmethod
        def time_domain(self) -> "TimeDomain":
            """EVENT_TIME or PROCESSING_TIME: the domain of the firing timer."""

    @abstractmethod
    def process_element(self, value: Any, ctx: "KeyedBroadcastProcessFunction.ReadOnlyContext") -> Any:
        """Process one element of the keyed stream; ``yield`` the results."""

    @abstractmethod
    def process_broadcast_element(self, value: Any, ctx: "KeyedBroadcastProcessFunction.Context") -> Any:
        """Process one element of the broadcast stream; ``yield`` the results."""

    def on_timer(self, timestamp: int, ctx: "KeyedBroadcastProcessFunction.OnTimerContext") -> Any:
        """Called when a timer fires at ``timestamp``; ``yield`` any results."""
