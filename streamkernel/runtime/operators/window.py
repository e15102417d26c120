"""The window operator: Flink's ``WindowOperator`` for the ``window`` and ``count_window`` kinds.

Per record (Flink's ``processElement``): the assigner gives the record's windows; for a
merging assigner (sessions) each window is first added to the key's
:class:`~streamkernel.runtime.operators.merging_window_set.MergingWindowSet`, which may
merge it with windows in flight (their contents are merged with ``merge_namespaces``, the
trigger is told with ``on_merge``). A window is **late** when it is an event-time window
whose cleanup time (``max_timestamp + allowed_lateness``) is <= the current watermark; the
record skips late windows. Otherwise it is added to the window's state (``reducing``,
``aggregating`` or ``list``, ``spec.window_state``), the trigger's ``on_element`` is
asked, and FIRE emits the internal window function's results for the window contents
(stamped with ``window.max_timestamp()``, Flink's TimestampedCollector), PURGE clears the
contents. A cleanup timer at the cleanup time (event time) or at ``max_timestamp``
(processing time) clears the window's contents, trigger state and merging-set entry. A
record that skipped all its windows and is itself late (``timestamp + allowed_lateness <=
watermark``) goes to the late-data side output when one is set, else it is counted in the
``numLateRecordsDropped`` metric.

**End of input.** A bounded source ends with ``MAX_WATERMARK``, which fires every
event-time window (and its cleanup). Processing-time windows still open when the input
ends are *not* fired, as in Flink 2.x streaming mode (a processing-time timer only fires
when the clock reaches it while the task runs); count windows that are not full are not
fired either.

**Fast path.** Tumbling and sliding event-time windows with their default EventTimeTrigger
(the W3 benchmark's shape; any window function) run in
:mod:`~streamkernel.runtime.operators.window_fast_path`, which implements the same
semantics batched, without per-record timers or State calls (see there). Everything
else (sessions, count and processing-time windows, other triggers) takes the general,
per-record path below.

**Count windows** (PyFlink's count assigners with a CountTrigger): once a window has
received all its elements no element can ever join it again, so with a count trigger its
contents and trigger state are cleared right then. PyFlink keeps them forever; the results
are the same, the memory is not. The window function's ``clear`` is never called for a
count window (its cleanup time is Long.MAX_VALUE), as in PyFlink.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Optional

from streamkernel.datastream.count_window_assigners import CountSlidingWindowAssigner, CountTumblingWindowAssigner
from streamkernel.datastream.function_window import (
    InternalSingleValueAllWindowFunction,
    InternalSingleValueWindowFunction,
    InternalWindowFunction,
    PassThroughAllWindowFunction,
    PassThroughWindowFunction,
)
from streamkernel.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    ReducingStateDescriptor,
    ValueStateDescriptor,
)
from streamkernel.datastream.window_assigners import MergingWindowAssigner
from streamkernel.datastream.window_triggers import CountTrigger, PurgingTrigger, TriggerResult
from streamkernel.datastream.windows import MAX_LONG_VALUE, CountWindow
from streamkernel.errors import InvalidProgramError, UserFunctionError
from streamkernel.graph.operator_specs import WindowSpec
from streamkernel.runtime.operators.base import StreamOperator, key_function
from streamkernel.runtime.operators.contexts import SideOutputCollector, collect_results, describe_record, wrap_user_error
from streamkernel.runtime.operators.key_group_check import KeyGroupOwnershipError
from streamkernel.runtime.operators.merging_window_set import (
    MERGING_WINDOW_SET_DESCRIPTOR,
    MergingWindowSet,
    add_to_merging_windows,
)
from streamkernel.runtime.operators.runtime_context import StreamingRuntimeContext
from streamkernel.runtime.operators.window_fast_path import EventTimeWindowFastPath, adopt_fast_snapshot
from streamkernel.runtime.operators.window_contexts import (
    WindowAssignerContextImpl,
    WindowProcessContext,
    WindowTriggerContext,
)
from streamkernel.runtime.state.api import VOID_NAMESPACE

__all__ = ["WindowOperator", "WINDOW_CONTENTS", "WINDOW_TIMERS", "window_contents_descriptor"]

#: the keyed state (namespace: the window) holding each window's contents (Flink's name)
WINDOW_CONTENTS = "window-contents"
#: the name of the window operator's timer service (Flink's name)
WINDOW_TIMERS = "window-timers"

_CONTINUE = TriggerResult.CONTINUE


def window_contents_descriptor(window_state: str, function: Any) -> Any:
    """The descriptor of the ``"window-contents"`` state for ``WindowSpec.window_state``."""
    if window_state == "reducing":
        return ReducingStateDescriptor(WINDOW_CONTENTS, function)
    if window_state == "aggregating":
        return AggregatingStateDescriptor(WINDOW_CONTENTS, function)
    if window_state == "list":
        return ListStateDescriptor(WINDOW_CONTENTS)
    raise InvalidProgramError(
        f"window operator: window_state must be 'reducing', 'aggregating' or 'list', got {window_state!r}")


def _is_pass_through(function: Any) -> bool:
    """True for the default after reduce/aggregate: emit the single value as it is."""
    return (type(function) in (InternalSingleValueWindowFunction, InternalSingleValueAllWindowFunction)
            and type(function.wrapped_function) in (PassThroughWindowFunction, PassThroughAllWindowFunction))


class WindowOperator(StreamOperator):
    """Flink's ``WindowOperator``: windows per key, triggers, allowed lateness, late data.

    Keyed by ``spec.key_selector`` (``window_all``: ``spec.non_keyed``, every
    record has key 0). Its contents, trigger state, merging window sets and count-assigner
    counters are keyed state; its timers live in the ``"window-timers"`` timer service; so
    all of it is checkpointed with the keyed state and timers of the task.
    """

    def __init__(self, spec: WindowSpec) -> None:
        super().__init__(spec)
        self.assigner = spec.window_assigner
        self.trigger = spec.trigger
        self.allowed_lateness = int(spec.allowed_lateness or 0)
        self.late_data_output_tag = spec.late_data_output_tag
        self.window_state_kind: str = spec.window_state
        self.internal_function: InternalWindowFunction = spec.internal_window_function
        selector = spec.key_selector
        self.non_keyed = bool(spec.non_keyed)
        self.key_of = None if self.non_keyed or selector is None else key_function(selector)
        self.is_event_time: bool = self.assigner.is_event_time()
        self._merging = isinstance(self.assigner, MergingWindowAssigner)
        self.pass_through = _is_pass_through(self.internal_function)
        self.clears_function = type(self.internal_function).clear is not InternalWindowFunction.clear
        self.side_outputs = SideOutputCollector()
        self.out_values: list = []
        self.out_timestamps: list = []
        # bound in open()
        self.backend: Any = None
        self.window_descriptor: Any = None
        self.window_state: Any = None
        self.merging_sets: Any = None
        self.timers: Any = None
        self.trigger_context: WindowTriggerContext = None  # type: ignore[assignment]
        self.process_context: WindowProcessContext = None  # type: ignore[assignment]
        self.late_records_dropped: Any = None
        self._assigner_context: Any = None
        self._fast: Optional[EventTimeWindowFastPath] = None
        self._count_state: Any = None

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        """Bind state, the timer service and the reused contexts; open the functions."""
        context = self.context
        backend = context.keyed_backend
        if backend is None:
            raise InvalidProgramError(
                f"window operator {context.node.name!r} needs a keyed state backend: a window follows key_by() "
                f"(window_all keys every record by 0)")
        self.backend = backend
        runtime_context = StreamingRuntimeContext(context)
        self.window_descriptor = window_contents_descriptor(self.window_state_kind, self.function)
        self.window_state = backend.get_state(self.window_descriptor)
        self.timers = context.timer_service(WINDOW_TIMERS, self)  # the task advances it on watermarks
        self._assigner_context = WindowAssignerContextImpl(context.processing_time, runtime_context)
        self.trigger_context = WindowTriggerContext(self.trigger, self, backend, self.timers)
        self.process_context = WindowProcessContext(self, backend, merging=self._merging)
        self.late_records_dropped = context.metrics.user.counter("numLateRecordsDropped")
        if self._merging:
            self.merging_sets = backend.get_partitioned_state(MERGING_WINDOW_SET_DESCRIPTOR, VOID_NAMESPACE)
        self._count_state = self._count_completion_state()
        super().open()
        self.internal_function.open(runtime_context)
        self._fast = EventTimeWindowFastPath.create(self)
        if self._fast is None:
            adopt_fast_snapshot(self)

    def finish(self) -> None:
        """Emit what is buffered (open processing-time and count windows are not fired: see module doc)."""
        self.flush()

    def close(self) -> None:
        """Close the reduce/aggregate function and the window function."""
        try:
            super().close()
        finally:
            self.internal_function.close()

    # ------------------------------------------------------------------ input
    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Assign each record to its windows, update them and act on the trigger's answers."""
        self.context.metrics.records_in += len(values)
        if self._fast is not None:
            self._fast.process_batch(values, timestamps)
        else:
            self._process_records(values, timestamps)
        self.flush()

    def _process_records(self, values: list, timestamps: Optional[list]) -> None:
        backend, key_of = self.backend, self.key_of
        assign, assigner_context = self.assigner.assign_windows, self._assigner_context
        add_to_windows = self._add_to_merging_windows if self._merging else self._add_to_windows
        lateness, event_time, count_state = self.allowed_lateness, self.is_event_time, self._count_state
        check_key = self.key_group_check.check_key if self.key_group_check is not None else None
        value = None
        try:
            for value, timestamp in zip(values, timestamps if timestamps is not None else repeat(None)):
                key = 0 if key_of is None else key_of(value)
                if check_key is not None:
                    check_key(key)
                backend.current_key = key
                backend.current_namespace = VOID_NAMESPACE
                windows = assign(value, timestamp, assigner_context)
                skipped = add_to_windows(key, value, timestamp, windows)
                if skipped and event_time and timestamp + lateness <= self.current_watermark:
                    self.late_element(value, timestamp)
                if count_state is not None:
                    self._clear_completed_count_window()
        except (UserFunctionError, KeyGroupOwnershipError):
            raise
        except Exception as exc:
            raise wrap_user_error(self, value, exc) from exc

    def late_element(self, value: Any, timestamp: Any) -> None:
        """A record too late for all its windows: to the late-data side output, or counted as dropped."""
        if self.late_data_output_tag is not None:
            self.side_outputs.add(self.late_data_output_tag, value, timestamp)
        else:
            self.late_records_dropped.inc()

    def _add_to_merging_windows(self, key: Any, value: Any, timestamp: Any, windows: Any) -> bool:
        """Session windows: see :func:`~streamkernel.runtime.operators.merging_window_set.add_to_merging_windows`."""
        return add_to_merging_windows(self, key, value, timestamp, windows)

    def _add_to_windows(self, key: Any, value: Any, timestamp: Any, windows: Any) -> bool:
        """Flink's non-merging branch of processElement; True if every window was late."""
        backend, state, trigger_context = self.backend, self.window_state, self.trigger_context
        skipped = True
        for window in windows:
            if self.is_event_time and self.cleanup_time(window) <= self.current_watermark:
                continue  # the window is late: the record skips it
            skipped = False
            backend.current_namespace = window
            state.add(value)
            trigger_context.key = key
            trigger_context.window = window
            result = trigger_context.on_element(value, timestamp)
            if result is not _CONTINUE:
                if result.is_fire():
                    backend.current_namespace = window
                    contents = state.get()
                    if contents is None or (not contents and self.window_state_kind == "list"):
                        continue
                    self.emit_window_contents(key, window, contents)
                if result.is_purge():
                    backend.current_namespace = window
                    state.clear()
            self.register_cleanup_timer(window)
        return skipped

    # ------------------------------------------------------------------ time
    def process_watermark(self, timestamp: int) -> None:
        """Fire the event-time timers (windows) due at ``timestamp``, emit, then forward the watermark."""
        self.current_watermark = timestamp
        if self._fast is not None:
            self._fast.advance_watermark(timestamp)
        for timers in self._timer_services:
            timers.advance_watermark(timestamp)
        self.flush()
        self.output.emit_watermark(timestamp)

    def on_event_time(self, timer: Any) -> None:
        """Triggerable: an event-time timer of pane ``(timer.key, timer.namespace)`` fired."""
        if self._fast is None:  # the fast path keeps no timers (restored ones from another plan are void)
            self._on_timer(timer, True)

    def on_processing_time(self, timer: Any) -> None:
        """Triggerable: a processing-time timer fired; its results are emitted at once."""
        self._on_timer(timer, False)
        self.flush()

    def _on_timer(self, timer: Any, event_time: bool) -> None:
        """Flink's onEventTime / onProcessingTime."""
        key, window, time = timer.key, timer.namespace, timer.timestamp
        backend, state, trigger_context = self.backend, self.window_state, self.trigger_context
        try:
            backend.current_key = key
            trigger_context.key = key
            trigger_context.window = window
            merging_set = None
            state_window = window
            if self._merging:
                backend.current_namespace = VOID_NAMESPACE
                merging_set = MergingWindowSet(self.assigner, self.merging_sets)
                state_window = merging_set.get_state_window(window)
                if state_window is None:  # a timer of a window already merged away or purged
                    return
            if event_time:
                result = trigger_context.on_event_time(time)
            else:
                result = trigger_context.on_processing_time(time)
            if result is not _CONTINUE:
                if result.is_fire():
                    backend.current_namespace = state_window
                    contents = state.get()
                    if contents is not None and (contents or self.window_state_kind != "list"):
                        self.emit_window_contents(key, window, contents)
                if result.is_purge():
                    backend.current_namespace = state_window
                    state.clear()
            if event_time == self.is_event_time and time == self.cleanup_time(window):
                self._clear_all_state(window, state_window, merging_set)
            if merging_set is not None:
                merging_set.persist()
        except UserFunctionError:
            raise
        except Exception as exc:
            kind = "event-time" if event_time else "processing-time"
            raise wrap_user_error(self, None, exc, where=(
                f"the {kind} timer at {time} of window {window!r} of key {describe_record(key)}")) from exc

    def _clear_all_state(self, window: Any, state_window: Any, merging_set: Optional[MergingWindowSet]) -> None:
        """Cleanup time: the window's contents, trigger state and merging-set entry go; ``clear`` is called."""
        backend = self.backend
        backend.current_namespace = state_window
        self.window_state.clear()
        self.trigger_context.window = window
        self.trigger_context.clear()
        if self.clears_function:
            backend.current_namespace = VOID_NAMESPACE
            self.process_context.window = window
            self.internal_function.clear(window, self.process_context)
        if merging_set is not None:
            merging_set.retire_window(window)
            merging_set.persist()

    def cleanup_time(self, window: Any) -> int:
        """When the window's state is dropped: ``max_timestamp + allowed_lateness`` (event time,
        capped at Long.MAX_VALUE) or ``max_timestamp`` (processing time)."""
        if self.is_event_time:
            return min(window.max_timestamp() + self.allowed_lateness, MAX_LONG_VALUE)
        return window.max_timestamp()

    def register_cleanup_timer(self, window: Any) -> None:
        """Register the timer that clears ``window`` at its cleanup time (none for Long.MAX_VALUE)."""
        cleanup = self.cleanup_time(window)
        if cleanup == MAX_LONG_VALUE:  # no cleanup timer for "end of time" (count and global windows)
            return
        if self.is_event_time:
            self.timers.register_event_time_timer(window, cleanup)
        else:
            self.timers.register_processing_time_timer(window, cleanup)

    def delete_cleanup_timer(self, window: Any) -> None:
        """Delete ``window``'s cleanup timer (it was merged into another window)."""
        cleanup = self.cleanup_time(window)
        if cleanup == MAX_LONG_VALUE:
            return
        if self.is_event_time:
            self.timers.delete_event_time_timer(window, cleanup)
        else:
            self.timers.delete_processing_time_timer(window, cleanup)

    # ------------------------------------------------------------------ output
    def emit_window_contents(self, key: Any, window: Any, contents: Any) -> None:
        """Evaluate the window function for a fired pane; results carry ``window.max_timestamp()``."""
        timestamp = window.max_timestamp()
        if self.pass_through:
            self.out_values.append(contents)
            self.out_timestamps.append(timestamp)
            return
        self.backend.current_namespace = VOID_NAMESPACE  # the function's runtime-context state is per key
        context = self.process_context
        context.window = window
        results = self.internal_function.process(key, window, context, contents)
        collect_results(results, timestamp, self.out_values, self.out_timestamps, self.side_outputs)

    def flush(self) -> None:
        """Emit the buffered results (one batch) and side outputs."""
        metrics = self.context.metrics
        if self.out_values:
            values, timestamps = self.out_values, self.out_timestamps
            self.out_values, self.out_timestamps = [], []
            metrics.records_out += len(values)
            self.output.emit(values, timestamps)
        if len(self.side_outputs):
            metrics.records_out += self.side_outputs.flush(self.output)

    # ------------------------------------------------------------------ count windows
    def _count_completion_state(self) -> Any:
        """The count assigner's per-key position counter, when completed count windows may be cleared."""
        trigger = self.trigger.nested_trigger if isinstance(self.trigger, PurgingTrigger) else self.trigger
        names: dict[type, str] = {CountTumblingWindowAssigner: "tumble-count-assigner", CountSlidingWindowAssigner: "slide-count-assigner"}
        name = names.get(type(self.assigner))
        if name is None or type(trigger) is not CountTrigger:
            return None
        return self.backend.get_partitioned_state(ValueStateDescriptor(name), VOID_NAMESPACE)

    def _clear_completed_count_window(self) -> None:
        """After a record of a count window: clear the window it completed, if any (see module doc).

        Only what no user code can see again goes: the contents and the CountTrigger's count.
        The window function's ``clear`` is not called (nor its per-window state dropped): a
        count window's cleanup time is Long.MAX_VALUE, so PyFlink never calls it, and a
        ``clear`` that touches ``global_state()`` would show the difference.
        """
        position = (self._count_state.value() or 0) - 1  # the record's position within its key
        assigner = self.assigner
        size = assigner.get_window_size()
        first = position - size + 1  # the first position of the window ending at this record
        slide = assigner.get_window_slide() if isinstance(assigner, CountSlidingWindowAssigner) else size
        if first < 0 or first % slide:
            return
        window = CountWindow(first // slide)
        self.backend.current_namespace = window
        self.window_state.clear()
        self.trigger_context.window = window
        self.trigger_context.clear()
