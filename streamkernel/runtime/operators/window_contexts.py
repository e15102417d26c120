"""The contexts the window operator hands to assigners, triggers and window functions.

Flink's ``WindowOperator`` inner classes, one object per role, created once in ``open`` and
moved to the current key and window before each call (no per-record allocation):

* :class:`WindowAssignerContextImpl`: the clock and the runtime context an assigner reads
  (count assigners keep their element counter in keyed ValueState through it);
* :class:`WindowTriggerContext`: Flink's ``Context`` implementing ``Trigger.OnMergeContext``:
  timers and partitioned state of the current ``(key, window)``;
* :class:`WindowProcessContext`: Flink's ``WindowContext`` implementing
  ``InternalWindowFunction.InternalWindowContext``: time, per-window and global state,
  side outputs (stamped with the window's max timestamp);
* :class:`PerWindowStateStore` and :class:`GlobalStateStore`: the KeyedStateStores behind
  ``window_state()`` and ``global_state()``; :class:`MergingWindowStateStore` refuses
  per-window state under a merging (session) assigner, as Flink does.

A window operator's state lives under namespaces: the window for window-scoped state,
``VOID_NAMESPACE`` (None) for per-key state. Every store here binds its namespace
explicitly (``backend.get_partitioned_state``), so it never depends on the backend's
``current_namespace``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamkernel.datastream.function_base import KeyedStateStore
from streamkernel.datastream.function_window import InternalWindowFunction
from streamkernel.datastream.window_assigners import WindowAssigner
from streamkernel.datastream.window_triggers import Trigger, TriggerResult
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.state.api import VOID_NAMESPACE

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.operators.window import WindowOperator

__all__ = [
    "WindowAssignerContextImpl",
    "WindowTriggerContext",
    "WindowProcessContext",
    "PerWindowStateStore",
    "MergingWindowStateStore",
    "GlobalStateStore",
]


class WindowAssignerContextImpl(WindowAssigner.WindowAssignerContext):
    """What a WindowAssigner sees: the processing-time clock and the operator's RuntimeContext."""

    __slots__ = ("_processing_time", "_runtime_context")

    def __init__(self, processing_time: Any, runtime_context: Any) -> None:
        self._processing_time = processing_time
        self._runtime_context = runtime_context

    def get_current_processing_time(self) -> int:
        """The task's current processing time (ms; a ManualClock's time in tests)."""
        return self._processing_time.current_processing_time()

    def get_runtime_context(self) -> Any:
        """The window operator's RuntimeContext (keyed state of the current key)."""
        return self._runtime_context


class _NamespacedStateStore(KeyedStateStore):
    """A KeyedStateStore whose states are bound to one namespace (of the current key)."""

    __slots__ = ("_backend", "namespace")

    def __init__(self, backend: Any, namespace: Any) -> None:
        self._backend = backend
        self.namespace = namespace

    def _state(self, state_descriptor: Any) -> Any:
        return self._backend.get_partitioned_state(state_descriptor, self.namespace)

    def get_state(self, state_descriptor: Any) -> Any:
        """The ValueState of the current key in this store's namespace."""
        return self._state(state_descriptor)

    def get_list_state(self, state_descriptor: Any) -> Any:
        """The ListState of the current key in this store's namespace."""
        return self._state(state_descriptor)

    def get_map_state(self, state_descriptor: Any) -> Any:
        """The MapState of the current key in this store's namespace."""
        return self._state(state_descriptor)

    def get_reducing_state(self, state_descriptor: Any) -> Any:
        """The ReducingState of the current key in this store's namespace."""
        return self._state(state_descriptor)

    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        """The AggregatingState of the current key in this store's namespace."""
        return self._state(state_descriptor)


class PerWindowStateStore(_NamespacedStateStore):
    """Flink's ``PerWindowStateStore``: keyed state scoped to the current key *and* window.

    What ``ProcessWindowFunction.Context.window_state()`` returns; the user must clean it
    up in ``ProcessWindowFunction.clear``.
    """

    __slots__ = ()


class MergingWindowStateStore(PerWindowStateStore):
    """Flink's ``MergingWindowStateStore``: ``window_state()`` of merging (session) windows.

    Per-window state cannot follow windows that merge, so every access raises, with
    Flink's message; ``global_state()`` works as usual.
    """

    __slots__ = ()

    def _state(self, state_descriptor: Any) -> Any:
        raise InvalidProgramError(
            f"Per-window state is not allowed when using merging windows (requested {state_descriptor!r} "
            f"from context.window_state() of a session window); use context.global_state() instead")


class GlobalStateStore(_NamespacedStateStore):
    """Keyed state of the current key across all its windows (``Context.global_state()``)."""

    __slots__ = ()

    def __init__(self, backend: Any) -> None:
        super().__init__(backend, VOID_NAMESPACE)


class WindowTriggerContext(Trigger.OnMergeContext):
    """Flink's ``WindowOperator.Context``: what a Trigger sees for the pane ``(key, window)``.

    The operator sets ``key`` and ``window`` (and ``merged_windows`` before ``on_merge``),
    then calls the ``on_*`` helpers, which call the trigger with this context. Timers are
    registered in the operator's timer service under the window as namespace; partitioned
    state is keyed state of the current key bound to the window.
    """

    __slots__ = ("key", "window", "merged_windows", "_trigger", "_operator", "_backend", "_timers")

    def __init__(self, trigger: Trigger, operator: "WindowOperator", backend: Any, timers: Any) -> None:
        self.key: Any = None
        self.window: Any = None
        self.merged_windows: list = []
        self._trigger = trigger
        self._operator = operator
        self._backend = backend
        self._timers = timers

    # -------------------------------------------------------------- Trigger.TriggerContext
    def get_current_processing_time(self) -> int:
        """The task's current processing time (ms)."""
        return self._timers.current_processing_time()

    def get_metric_group(self) -> Any:
        """The window operator's metric group."""
        return self._operator.context.metrics.user

    def get_current_watermark(self) -> int:
        """The window operator's current watermark."""
        return self._operator.current_watermark

    def register_processing_time_timer(self, time: int) -> None:
        """``on_processing_time(time, window)`` when the processing time reaches ``time``."""
        self._timers.register_processing_time_timer(self.window, time)

    def register_event_time_timer(self, time: int) -> None:
        """``on_event_time(time, window)`` when the watermark reaches ``time``."""
        self._timers.register_event_time_timer(self.window, time)

    def delete_processing_time_timer(self, time: int) -> None:
        """Delete the processing-time timer at ``time`` of the current pane."""
        self._timers.delete_processing_time_timer(self.window, time)

    def delete_event_time_timer(self, time: int) -> None:
        """Delete the event-time timer at ``time`` of the current pane."""
        self._timers.delete_event_time_timer(self.window, time)

    def get_partitioned_state(self, state_descriptor: Any) -> Any:
        """Keyed state of the current key in the current window's namespace."""
        return self._backend.get_partitioned_state(state_descriptor, self.window)

    # ------------------------------------------------------------------ OnMergeContext
    def merge_partitioned_state(self, state_descriptor: Any) -> None:
        """Merge the state of the merged windows into the current (merge result) window."""
        if self.merged_windows:
            self._backend.merge_namespaces(state_descriptor, self.window, self.merged_windows)

    # ------------------------------------------------------------------ operator helpers
    def on_element(self, value: Any, timestamp: Any) -> TriggerResult:
        """``trigger.on_element`` for the current pane."""
        return self._trigger.on_element(value, timestamp, self.window, self)

    def on_event_time(self, time: int) -> TriggerResult:
        """``trigger.on_event_time`` for the current pane."""
        return self._trigger.on_event_time(time, self.window, self)

    def on_processing_time(self, time: int) -> TriggerResult:
        """``trigger.on_processing_time`` for the current pane."""
        return self._trigger.on_processing_time(time, self.window, self)

    def on_merge(self, merged_windows: list) -> None:
        """``trigger.on_merge`` for the current (merge result) window."""
        self.merged_windows = merged_windows
        try:
            self._trigger.on_merge(self.window, self)
        finally:
            self.merged_windows = []

    def clear(self) -> None:
        """``trigger.clear`` for the current pane (its timers and state go)."""
        self._trigger.clear(self.window, self)

    def __repr__(self) -> str:
        return f"WindowTriggerContext(key={self.key!r}, window={self.window!r})"


class WindowProcessContext(InternalWindowFunction.InternalWindowContext):
    """Flink's ``WindowContext``: what an internal window function sees while evaluating ``window``.

    ``window`` is set by the operator before each call. Side outputs are stamped with the
    window's max timestamp, as Flink's ``WindowContext.output`` does.
    """

    __slots__ = ("window", "_operator", "_backend", "_window_store", "_global_store")

    def __init__(self, operator: "WindowOperator", backend: Any, merging: bool = False) -> None:
        self.window: Any = None
        self._operator = operator
        self._backend = backend
        self._window_store = (MergingWindowStateStore if merging else PerWindowStateStore)(backend, None)
        self._global_store = GlobalStateStore(backend)

    def current_processing_time(self) -> int:
        """The task's current processing time (ms)."""
        return self._operator.context.processing_time.current_processing_time()

    def current_watermark(self) -> int:
        """The window operator's current watermark."""
        return self._operator.current_watermark

    def window_state(self) -> KeyedStateStore:
        """State of the current key in the current window (clean it up in ``clear``)."""
        self._window_store.namespace = self.window
        return self._window_store

    def global_state(self) -> KeyedStateStore:
        """State of the current key, shared by all its windows."""
        return self._global_store

    def output(self, output_tag: Any, value: Any) -> None:
        """Emit ``value`` to the side output ``output_tag`` (timestamp: the window's max timestamp)."""
        self._operator.side_outputs.add(output_tag, value, self.window.max_timestamp())

    def __repr__(self) -> str:
        return f"WindowProcessContext(window={self.window!r})"
