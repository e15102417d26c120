"""The window operator's fast path: tumbling/sliding event-time windows with their default trigger.

Used when the assigner is ``TumblingEventTimeWindows`` or ``SlidingEventTimeWindows``, the
trigger is their default ``EventTimeTrigger`` (any window state: ``reducing``,
``aggregating`` or ``list``), and the keyed backend exposes its raw namespaced dict
(``HeapKeyedStateBackend.namespaced_dict``). It implements exactly the general path's
semantics (firing at ``max_timestamp``, allowed lateness with re-firing, late data) with
far less work per record.

Hot path (W3): per record one key-selector call, one window-start computation, one
comparison (is the window already due?), one dict get, one reduce/add call, one dict set.
The panes of a batch are accumulated in a small dict per window keyed by the key alone
(no ``(key, start)`` tuple per record), seeded from the state on a key's first record in
the batch and written back into the backend's own ``(key, window_start) -> value`` dict of
the ``"window-contents"`` state at the end of the batch (a few C-level ``dict.update``).
No TimeWindow object, no State method call, no per-record timer.

Where the timers went, and why it is still checkpointed: the general path registers a
timer per pane; here the pending firings are *derived from the window state*:

* ``window-contents`` holds ``(key, start) -> value``; its namespace is the window start
  (an int) instead of a TimeWindow, so the entries stay in the backend and are snapshot
  and rescaled by key group like any keyed state;
* every start present in ``window-contents`` is an open window (cleaned up when the
  watermark passes ``start + size - 1 + allowed_lateness``); an index ``start -> keys``
  (rebuilt from the state) lets a firing touch only the panes of the windows that end;
* with allowed lateness, a pane that already fired is marked in the keyed state
  ``"window-fired"`` (same dict layout), so a restored job fires exactly the panes Flink's
  restored timers would fire: open panes without the mark, when the watermark passes
  ``max_timestamp``. A record for a marked pane whose window is not due (after a restore,
  before the watermark caught up) unmarks it, as Flink registers a new timer then.

On open the sets of pending windows are rebuilt from these two states; the
``"window-timers"`` timer service stays empty. A snapshot taken by the general path
(TimeWindow namespaces) is converted on open, and the other way round (see
:func:`adopt_fast_snapshot`), so a savepoint survives a change of trigger.
"""

from __future__ import annotations

from itertools import repeat
from typing import TYPE_CHECKING, Any, Optional

from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window_assigners import SlidingEventTimeWindows, TumblingEventTimeWindows
from streamkernel.datastream.window_triggers import EventTimeTrigger
from streamkernel.datastream.windows import TimeWindow
from streamkernel.errors import UserFunctionError
from streamkernel.runtime.operators.contexts import collect_results, describe_record, wrap_user_error
from streamkernel.runtime.operators.key_group_check import KeyGroupOwnershipError
from streamkernel.runtime.state.api import VOID_NAMESPACE

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.operators.window import WindowOperator

__all__ = ["EventTimeWindowFastPath", "WINDOW_FIRED", "adopt_fast_snapshot"]

#: keyed state marking panes ``(key, start)`` that fired and wait for cleanup (allowed lateness only)
WINDOW_FIRED = "window-fired"

_MISSING = object()


class EventTimeWindowFastPath:
    """Tumbling/sliding event-time windows with EventTimeTrigger (reduce, aggregate or all elements), batched.

    ``create(operator)`` returns None when the operator's configuration is not eligible.
    """

    @staticmethod
    def create(operator: "WindowOperator") -> Optional["EventTimeWindowFastPath"]:
        """The fast path for ``operator``, or None if its windows need the general path."""
        assigner = operator.assigner
        if type(assigner) not in (TumblingEventTimeWindows, SlidingEventTimeWindows):
            return None
        if type(operator.trigger) is not EventTimeTrigger:
            return None
        if operator.window_state_kind not in ("reducing", "aggregating", "list"):
            return None
        raw = getattr(operator.backend, "namespaced_dict", None)
        if raw is None:
            return None
        contents = raw(operator.window_descriptor)
        fired = raw(ValueStateDescriptor(WINDOW_FIRED)) if operator.allowed_lateness > 0 else {}
        if contents is None or fired is None:  # TTL'd state: values are wrapped, use the general path
            return None
        return EventTimeWindowFastPath(operator, contents, fired)

    def __init__(self, operator: "WindowOperator", contents: dict, fired: dict) -> None:
        assigner = operator.assigner
        self.operator = operator
        self.size: int = assigner.get_size()
        self.slide: int = assigner.get_slide() if isinstance(assigner, SlidingEventTimeWindows) else self.size
        self.offset: int = assigner.get_offset()
        self.lateness: int = operator.allowed_lateness
        self.contents = contents
        self.fired = fired
        self._reduce, self._fold, self._result = _pane_functions(operator.window_state_kind, operator.function)
        self._windows: dict[int, TimeWindow] = {}  # start -> TimeWindow, for window functions
        self._batch: dict = {}  # the current batch's panes (see process_batch)
        self._slow_bound = 0
        _adopt_general_snapshot(contents)
        # derived from the state: start -> {key: None} (ordered), unfired windows, highest fired start
        self.panes: dict[int, dict] = {}
        for key, start in contents:
            self.panes.setdefault(start, {})[key] = None
        self.pending: set[int] = {start for key, start in contents if (key, start) not in fired}
        self.fired_high: Optional[int] = max((start for _, start in fired), default=None)

    # ------------------------------------------------------------------ records
    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Accumulate a batch into its windows (late and re-firing records take :meth:`_slow_record`)."""
        operator = self.operator
        if not values:
            return
        if timestamps is None:  # the assigner explains: event-time windows need timestamps
            operator.assigner.assign_windows(values[0], None, None)
        assert timestamps is not None  # (assign_windows raised)
        size, slide, offset = self.size, self.slide, self.offset
        # a window starting below slow_bound is due already (max_timestamp <= watermark), or
        # may hold a fired pane (after a restore): those records take the careful way
        slow_bound = operator.current_watermark - size + 2
        if self.fired_high is not None and self.fired_high >= slow_bound:
            slow_bound = self.fired_high + 1
        get = self.contents.get
        key_of = operator.key_of or _zero_key
        reduce, fold = self._reduce, self._fold
        missing = _MISSING  # locals only in the loops below: no global lookup per record
        batch: dict = {}  # start -> {key: value} of this batch's panes of windows starting >= slow_bound
        self._slow_bound = slow_bound
        self._batch = batch
        slow = self._slow_record
        local: Any = {}  # {key: value}: the pane of one window start (None between batch.get and the insert)
        local_get = local.get
        last = None
        value = timestamp = None
        try:
            if slide == size and reduce is not None:
                for value, timestamp in zip(values, timestamps):  # the W3 loop
                    key = key_of(value)
                    start = timestamp - (timestamp - offset) % size
                    if start != last:
                        if start < slow_bound:
                            slow(key, value, timestamp)
                            continue
                        local = batch.get(start)
                        if local is None:
                            local = batch[start] = {}
                        local_get = local.get
                        last = start
                    acc = local_get(key, missing)
                    if acc is missing:
                        acc = get((key, start), missing)
                    local[key] = value if acc is missing else reduce(acc, value)
            elif slide == size:  # the same with an AggregateFunction or a list of elements
                for value, timestamp in zip(values, timestamps):
                    key = key_of(value)
                    start = timestamp - (timestamp - offset) % size
                    if start != last:
                        if start < slow_bound:
                            slow(key, value, timestamp)
                            continue
                        local = batch.get(start)
                        if local is None:
                            local = batch[start] = {}
                        local_get = local.get
                        last = start
                    acc = local_get(key, missing)
                    if acc is missing:
                        acc = get((key, start), missing)
                    local[key] = fold(value, acc)
            else:  # sliding: every window of the record, latest first
                for value, timestamp in zip(values, timestamps):
                    key = key_of(value)
                    if timestamp - size + 1 < slow_bound:  # its earliest window may be due
                        slow(key, value, timestamp)
                        continue
                    for start in range(timestamp - (timestamp - offset) % slide, timestamp - size, -slide):
                        local = batch.get(start)
                        if local is None:
                            local = batch[start] = {}
                        acc = local.get(key, missing)
                        if acc is missing:
                            acc = get((key, start), missing)
                        local[key] = fold(value, acc)
        except (UserFunctionError, KeyGroupOwnershipError):
            raise
        except Exception as exc:
            if timestamp is None:
                operator.assigner.assign_windows(value, None, None)  # raises the explanatory error
            raise wrap_user_error(operator, value, exc) from exc
        check = operator.key_group_check
        if check is not None:  # the batch's keys, once per window: before any reaches the state
            for local in batch.values():
                check.check(local)
        self._write_back(batch)

    def _write_back(self, batch: dict) -> None:
        """Store the batch's panes in the state and index them (C-level updates, per window)."""
        contents, panes = self.contents, self.panes
        for start, local in batch.items():
            contents.update(zip(zip(local, repeat(start)), local.values()))
            keys = panes.get(start)
            if keys is None:
                panes[start] = dict.fromkeys(local)
            else:
                keys.update(zip(local, repeat(None)))
        self.pending.update(batch)

    def _slow_record(self, key: Any, value: Any, timestamp: int) -> None:
        """A record with a window that is due or may hold a fired pane: Flink's per-window logic.

        Its windows starting at or above the batch's ``slow_bound`` (sliding windows only)
        are the batch's: they are accumulated there, never in the state directly.
        """
        operator = self.operator
        if operator.key_group_check is not None:
            operator.key_group_check.check_key(key)
        watermark, size, lateness = operator.current_watermark, self.size, self.lateness
        contents, batch, slow_bound = self.contents, self._batch, self._slow_bound
        skipped = True
        for start in range(timestamp - (timestamp - self.offset) % self.slide, timestamp - size, -self.slide):
            max_timestamp = start + size - 1
            if max_timestamp + lateness <= watermark:
                continue  # the window is late
            skipped = False
            pane = (key, start)
            local = None
            if start >= slow_bound:  # an on-time window of this batch (sliding windows only)
                local = batch.get(start)
                if local is None:
                    local = batch[start] = {}
            acc = _MISSING if local is None else local.get(key, _MISSING)
            if acc is _MISSING:
                acc = contents.get(pane, _MISSING)
            acc = self._fold(value, acc)
            if local is not None:
                local[key] = acc
                continue
            contents[pane] = acc
            self.panes.setdefault(start, {})[key] = None
            if max_timestamp <= watermark:  # EventTimeTrigger: a late record fires its window at once
                self._emit(start, [(key, acc)])
                self.fired[pane] = True
                if self.fired_high is None or start > self.fired_high:
                    self.fired_high = start
            else:  # not due: the pane fires when the watermark passes its end (again, if it fired)
                self.fired.pop(pane, None)
                self.pending.add(start)
        if skipped and timestamp + lateness <= watermark:
            operator.late_element(value, timestamp)

    # ------------------------------------------------------------------ time
    def advance_watermark(self, watermark: int) -> None:
        """Fire the panes whose window ended (max_timestamp <= watermark); drop those past cleanup."""
        fire_bound = watermark - self.size + 1  # start <= fire_bound: the window is due
        clean_bound = fire_bound - self.lateness  # start <= clean_bound: past its cleanup time
        due = sorted(start for start in self.pending if start <= fire_bound)
        done = sorted(start for start in self.panes if start <= clean_bound)
        if not due and not done:
            return
        self.pending.difference_update(due)
        contents, fired, panes = self.contents, self.fired, self.panes
        for start in due:  # in window order, as Flink's timers fire in timestamp order
            keys = panes.get(start, ())
            if fired:
                ready = [(key, contents[(key, start)]) for key in keys if (key, start) not in fired]
            else:
                ready = [(key, contents[(key, start)]) for key in keys]
            self._emit(start, ready)
            if start > clean_bound:  # fired; it waits for late records until its cleanup time
                for key, _ in ready:
                    fired[(key, start)] = True
                if self.fired_high is None or start > self.fired_high:
                    self.fired_high = start
        for start in done:
            keys = panes.pop(start)
            for key in keys:
                del contents[(key, start)]
            if fired:
                for key in keys:
                    fired.pop((key, start), None)
            if self.operator.clears_function:
                self._clear_window(start, keys)
            self._windows.pop(start, None)
        if self.fired_high is not None and not fired:
            self.fired_high = None

    # ------------------------------------------------------------------ output
    def _window(self, start: int) -> TimeWindow:
        window = self._windows.get(start)
        if window is None:
            window = self._windows[start] = TimeWindow(start, start + self.size)
        return window

    def _emit(self, start: int, ready: list) -> None:
        """Emit the results of the panes ``ready`` [(key, value)] of the window starting at ``start``."""
        operator = self.operator
        if not ready:
            return
        max_timestamp = start + self.size - 1
        if self._result is not None:
            result = self._result
            ready = [(key, result(acc)) for key, acc in ready]
        if operator.pass_through:
            operator.out_values.extend([value for _, value in ready])
            operator.out_timestamps.extend([max_timestamp] * len(ready))
            return
        backend, context, function = operator.backend, operator.process_context, operator.internal_function
        window = self._window(start)
        context.window = window
        backend.current_namespace = VOID_NAMESPACE
        key = None
        try:
            for key, value in ready:
                backend.current_key = key
                collect_results(function.process(key, window, context, value), max_timestamp,
                                operator.out_values, operator.out_timestamps, operator.side_outputs)
        except UserFunctionError:
            raise
        except Exception as exc:
            raise wrap_user_error(operator, None, exc, where=(
                f"firing window {window!r} of key {describe_record(key)}")) from exc

    def _clear_window(self, start: int, keys: Any) -> None:
        """ProcessWindowFunction.clear for every pane of a window past its cleanup time."""
        operator = self.operator
        backend, context, function = operator.backend, operator.process_context, operator.internal_function
        backend.current_namespace = VOID_NAMESPACE
        context.window = window = self._window(start)
        for key in keys:
            backend.current_key = key
            function.clear(window, context)


def _pane_functions(window_state: str, function: Any) -> tuple:
    """(reduce or None, fold(value, acc_or_MISSING) -> acc, result(acc) or None) for a window state kind.

    The pane values are what the heap State objects store: the reduced value, the
    accumulator, or the list of elements.
    """
    missing = _MISSING
    if window_state == "reducing":
        reduce = getattr(function, "reduce", None)
        reduce = reduce if callable(reduce) else function

        def fold_reduce(value: Any, acc: Any) -> Any:
            return value if acc is missing else reduce(acc, value)
        return reduce, fold_reduce, None
    if window_state == "aggregating":
        add, create = function.add, function.create_accumulator

        def fold_aggregate(value: Any, acc: Any) -> Any:
            return add(value, create() if acc is missing else acc)
        return None, fold_aggregate, function.get_result

    def fold_list(value: Any, acc: Any) -> list:
        if acc is missing:
            return [value]
        acc.append(value)
        return acc
    return None, fold_list, None


def _zero_key(value: Any) -> int:
    """The key of every record of a non-keyed window (``window_all``)."""
    return 0


def _adopt_general_snapshot(contents: dict) -> None:
    """Panes restored from the general path (TimeWindow namespaces) become ``(key, start)`` panes.

    Their restored timers stay in the (unused) timer service and are ignored when they fire.
    Which of them already fired is not known here (the general path keeps that in its
    timers): with allowed lateness, such a pane fires once more when the watermark passes.
    """
    for pane in [pane for pane in contents if isinstance(pane[1], TimeWindow)]:
        contents[(pane[0], pane[1].start)] = contents.pop(pane)


def adopt_fast_snapshot(operator: "WindowOperator") -> None:
    """For the general path: panes restored from a fast-path snapshot get TimeWindow namespaces
    and the timers the general path would hold (end of window unless fired, cleanup)."""
    assigner = operator.assigner
    if type(assigner) not in (TumblingEventTimeWindows, SlidingEventTimeWindows):
        return
    raw = getattr(operator.backend, "namespaced_dict", None)
    contents = raw(operator.window_descriptor) if raw is not None else None
    if raw is None or contents is None:  # no raw dicts (RocksDB): the same through the State API
        _adopt_fast_snapshot_through_state(operator)
        return
    panes = [pane for pane in contents if type(pane[1]) is int]
    if not panes:
        return
    fired = raw(ValueStateDescriptor(WINDOW_FIRED)) or {}
    size, backend, timers = assigner.get_size(), operator.backend, operator.timers
    for key, start in panes:
        window = TimeWindow(start, start + size)
        contents[(key, window)] = contents.pop((key, start))
        backend.current_key = key
        if fired.pop((key, start), None) is None:
            timers.register_event_time_timer(window, window.max_timestamp())
        cleanup = operator.cleanup_time(window)
        if cleanup != window.max_timestamp():
            timers.register_event_time_timer(window, cleanup)


def _adopt_fast_snapshot_through_state(operator: "WindowOperator") -> None:
    """:func:`adopt_fast_snapshot` for a backend without raw dicts that lists its entries
    (``keys_and_namespaces``, Flink's ``getKeysAndNamespaces``): each pane moves to its
    TimeWindow namespace with ``merge_namespaces`` (a move, the target being empty)."""
    backend = operator.backend
    listing = getattr(backend, "keys_and_namespaces", None)
    if listing is None:
        return
    panes = [pane for pane in listing(operator.window_descriptor.name) if type(pane[1]) is int]
    fired = {pane for pane in listing(WINDOW_FIRED) if type(pane[1]) is int} if panes else set()
    size, timers = operator.assigner.get_size(), operator.timers
    for key, start in panes:
        window = TimeWindow(start, start + size)
        backend.current_key = key
        backend.merge_namespaces(operator.window_descriptor, window, [start])
        if (key, start) in fired:
            backend.get_partitioned_state(ValueStateDescriptor(WINDOW_FIRED), start).clear()
        else:
            timers.register_event_time_timer(window, window.max_timestamp())
        cleanup = operator.cleanup_time(window)
        if cleanup != window.max_timestamp():
            timers.register_event_time_timer(window, cleanup)
