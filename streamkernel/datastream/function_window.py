"""Window functions: what is computed when a window fires.

Part of ``streamkernel.datastream.functions``. Four user interfaces, as in PyFlink:
:class:`WindowFunction` / :class:`ProcessWindowFunction` for keyed windows
(``key_by(...).window(...)``), :class:`AllWindowFunction` / :class:`ProcessAllWindowFunction`
for non-keyed ones (``window_all(...)``). Each returns (or yields) the results.

The runtime does not call them directly: every window operator carries an
:class:`InternalWindowFunction` in ``WindowSpec.internal_window_function`` that adapts the
user's function to one call shape, ``process(key, window, context, input)``, where
``input`` is the window's single pre-aggregated value (after ``reduce``/``aggregate``) or
the iterable of its elements (``apply``/``process``). ``context`` is the runtime's
:class:`InternalWindowFunction.InternalWindowContext`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic, Iterable, TypeVar

from streamkernel.datastream.function_base import Function, KeyedStateStore, RuntimeContext

if TYPE_CHECKING:  # pragma: no cover - typing only
    from streamkernel.datastream.output_tag import OutputTag

__all__ = [
    "WindowFunction",
    "AllWindowFunction",
    "ProcessWindowFunction",
    "ProcessAllWindowFunction",
    "PassThroughWindowFunction",
    "PassThroughAllWindowFunction",
    "InternalWindowFunction",
    "InternalSingleValueWindowFunction",
    "InternalSingleValueAllWindowFunction",
    "InternalIterableWindowFunction",
    "InternalIterableAllWindowFunction",
    "InternalSingleValueProcessWindowFunction",
    "InternalSingleValueProcessAllWindowFunction",
    "InternalIterableProcessWindowFunction",
    "InternalIterableProcessAllWindowFunction",
]

# PyFlink's type parameters: the user classes are Generic, so that
# ``class F(ProcessWindowFunction[tuple, tuple, str, TimeWindow])`` and annotations such as
# ``ProcessWindowFunction.Context[TimeWindow]`` work as in PyFlink.
IN = TypeVar("IN")
OUT = TypeVar("OUT")
KEY = TypeVar("KEY")
W = TypeVar("W")
W2 = TypeVar("W2")


class WindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Evaluated per key and window with all of the window's elements (or its pre-aggregate)."""

    @abstractmethod
    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        """The results for the window ``window`` of ``key`` holding ``inputs``."""


class AllWindowFunction(Function, Generic[IN, OUT, W]):
    """Evaluated per window of a non-keyed stream (``window_all``)."""

    @abstractmethod
    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        """The results for the window ``window`` holding ``inputs``."""


class _WindowContext(ABC):
    """The context of a window evaluation: the window, time, per-window and global state."""

    @abstractmethod
    def window(self) -> Any:
        """The window being evaluated (TimeWindow, CountWindow, GlobalWindow ...)."""

    @abstractmethod
    def window_state(self) -> KeyedStateStore:
        """State scoped to the current key *and* window (clean it up in ``clear``)."""

    @abstractmethod
    def global_state(self) -> KeyedStateStore:
        """State scoped to the current key, across windows."""

    @abstractmethod
    def output(self, output_tag: "OutputTag", value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag``."""


class ProcessWindowFunction(Function, Generic[IN, OUT, KEY, W]):
    """Evaluated per key and window, with a Context (window, time, state, side outputs)."""

    class Context(_WindowContext, Generic[W2]):
        """The context of one window evaluation."""

        @abstractmethod
        def current_processing_time(self) -> int:
            """The current processing time (ms)."""

        @abstractmethod
        def current_watermark(self) -> int:
            """The current event-time watermark (ms)."""

    @abstractmethod
    def process(self, key: Any, context: "ProcessWindowFunction.Context",
                elements: Iterable[Any]) -> Iterable[Any]:
        """The results for the window of ``key`` (``context.window()``) holding ``elements``."""

    def clear(self, context: "ProcessWindowFunction.Context") -> None:
        """Called when the window is purged (watermark past its end + allowed lateness)."""


class ProcessAllWindowFunction(Function, Generic[IN, OUT, W]):
    """Evaluated per window of a non-keyed stream, with a Context."""

    class Context(_WindowContext, Generic[W2]):
        """The context of one window evaluation."""

    @abstractmethod
    def process(self, context: "ProcessAllWindowFunction.Context", elements: Iterable[Any]) -> Iterable[Any]:
        """The results for the window ``context.window()`` holding ``elements``."""

    def clear(self, context: "ProcessAllWindowFunction.Context") -> None:
        """Called when the window is purged (watermark past its end + allowed lateness)."""


class PassThroughWindowFunction(WindowFunction):
    """Emits the window's contents unchanged: the default after ``reduce``/``aggregate``."""

    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        """``inputs`` as they are."""
        yield from inputs


class PassThroughAllWindowFunction(AllWindowFunction):
    """Emits the window's contents unchanged: the non-keyed default after ``reduce``/``aggregate``."""

    def apply(self, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        """``inputs`` as they are."""
        yield from inputs


class InternalWindowFunction(Function):
    """The one call shape the window operator uses, whatever the user's window function is."""

    class InternalWindowContext(ABC):
        """What the window operator offers a window function (implemented by the runtime)."""

        @abstractmethod
        def current_processing_time(self) -> int:
            """The current processing time (ms)."""

        @abstractmethod
        def current_watermark(self) -> int:
            """The current event-time watermark (ms)."""

        @abstractmethod
        def window_state(self) -> KeyedStateStore:
            """State scoped to the current key and window."""

        @abstractmethod
        def global_state(self) -> KeyedStateStore:
            """State scoped to the current key."""

        @abstractmethod
        def output(self, output_tag: "OutputTag", value: Any) -> None:
            """Emit ``value`` to the side output ``output_tag``."""

    def __init__(self, wrapped_function: Function) -> None:
        self._wrapped_function = wrapped_function

    @property
    def wrapped_function(self) -> Function:
        """The user's window function (or the pass-through default)."""
        return self._wrapped_function

    def open(self, runtime_context: RuntimeContext) -> None:
        """Opens the wrapped function."""
        self._wrapped_function.open(runtime_context)

    def close(self) -> None:
        """Closes the wrapped function."""
        self._wrapped_function.close()

    @abstractmethod
    def process(self, key: Any, window: Any, context: "InternalWindowFunction.InternalWindowContext",
                input_data: Any) -> Iterable[Any]:
        """The results of the fired window ``window`` of ``key``."""

    def clear(self, window: Any, context: "InternalWindowFunction.InternalWindowContext") -> None:
        """Called when ``window`` is purged."""


class InternalSingleValueWindowFunction(InternalWindowFunction):
    """A WindowFunction over a pre-aggregated window (one value)."""

    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        """``apply(key, window, [input_data])``."""
        return self._wrapped_function.apply(key, window, [input_data])  # type: ignore[attr-defined]


class InternalSingleValueAllWindowFunction(InternalWindowFunction):
    """An AllWindowFunction over a pre-aggregated window (one value)."""

    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        """``apply(window, [input_data])``."""
        return self._wrapped_function.apply(window, [input_data])  # type: ignore[attr-defined]


class InternalIterableWindowFunction(InternalWindowFunction):
    """A WindowFunction over a window that buffers all its elements."""

    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        """``apply(key, window, input_data)``."""
        return self._wrapped_function.apply(key, window, input_data)  # type: ignore[attr-defined]


class InternalIterableAllWindowFunction(InternalWindowFunction):
    """An AllWindowFunction over a window that buffers all its elements."""

    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        """``apply(window, input_data)``."""
        return self._wrapped_function.apply(window, input_data)  # type: ignore[attr-defined]


class _ProcessWindowContextView(ProcessWindowFunction.Context, ProcessAllWindowFunction.Context):
    """The user-facing Context: the runtime's context plus the window being evaluated."""

    def __init__(self) -> None:
        self._underlying: Any = None
        self._window: Any = None

    def window(self) -> Any:
        return self._window

    def current_processing_time(self) -> int:
        return self._underlying.current_processing_time()

    def current_watermark(self) -> int:
        return self._underlying.current_watermark()

    def window_state(self) -> KeyedStateStore:
        return self._underlying.window_state()

    def global_state(self) -> KeyedStateStore:
        return self._underlying.global_state()

    def output(self, output_tag: "OutputTag", value: Any) -> None:
        self._underlying.output(output_tag, value)


class _InternalProcessWindowFunctionBase(InternalWindowFunction):
    """Shared by the adapters of ProcessWindowFunction / ProcessAllWindowFunction."""

    def __init__(self, wrapped_function: Function) -> None:
        super().__init__(wrapped_function)
        self._context = _ProcessWindowContextView()

    def _bind(self, window: Any, context: Any) -> _ProcessWindowContextView:
        self._context._window = window
        self._context._underlying = context
        return self._context

    def clear(self, window: Any, context: Any) -> None:
        """Calls the user's ``clear(context)``."""
        self._wrapped_function.clear(self._bind(window, context))  # type: ignore[attr-defined]


class InternalSingleValueProcessWindowFunction(_InternalProcessWindowFunctionBase):
    """A ProcessWindowFunction over a pre-aggregated window (one value)."""

    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        """``process(key, ctx, [input_data])``."""
        return self._wrapped_function.process(key, self._bind(window, context), [input_data])  # type: ignore


class InternalSingleValueProcessAllWindowFunction(_InternalProcessWindowFunctionBase):
    """A ProcessAllWindowFunction over a pre-aggregated window (one value)."""

    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        """``process(ctx, [input_data])``."""
        return self._wrapped_function.process(self._bind(window, context), [input_data])  # type: ignore


class InternalIterableProcessWindowFunction(_InternalProcessWindowFunctionBase):
    """A ProcessWindowFunction over a window that buffers all its elements."""

    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        """``process(key, ctx, input_data)``."""
        return self._wrapped_function.process(key, self._bind(window, context), input_data)  # type: ignore


class InternalIterableProcessAllWindowFunction(_InternalProcessWindowFunctionBase):
    """A ProcessAllWindowFunction over a window that buffers all its elements."""

    def process(self, key: Any, window: Any, context: Any, input_data: Any) -> Iterable[Any]:
        """``process(ctx, input_data)``."""
        return self._wrapped_function.process(self._bind(window, context), input_data)  # type: ignore
