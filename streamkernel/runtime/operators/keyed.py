"""Keyed one-input operators: KeyedProcessOperator (with timers) and ReduceOperator (rolling reduce).

Both read a key_by stream: the task gives them a keyed state backend
(``context.keyed_backend``) and they set its current key per record from
``spec.key_selector`` before calling the user's function.

ReduceOperator also runs the ``aggregation`` kind (sum/min/max/min_by/max_by): the API
already made those a ReduceFunction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, cast

from streamkernel.common.options import ExecutionOptions
from streamkernel.common.watermark_strategy import MAX_WATERMARK
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.time_domain import TimeDomain
from streamkernel.graph.operator_specs import KeyedSpec
from streamkernel.runtime.operators.base import StreamOperator, key_function
from streamkernel.runtime.operators.contexts import (
    KeyedProcessContext,
    SideOutputCollector,
    collect_results,
    describe_record,
    wrap_user_error,
)
from streamkernel.runtime.operators.key_group_check import KeyGroupOwnershipError
from streamkernel.runtime.operators.simple import batch_keys, failed_index, run_process_function

if TYPE_CHECKING:
    from streamkernel.runtime.operators.timers import Triggerable

__all__ = [
    "KeyedProcessOperator",
    "ReduceOperator",
    "UserTimers",
    "USER_TIMERS",
    "REDUCE_STATE",
    "require_keyed_backend",
]

#: the name of the timer service of user functions (``ctx.timer_service()``)
USER_TIMERS = "user-timers"
#: the keyed ValueState holding ReduceOperator's running value per key
REDUCE_STATE = "_reduce_state"


def require_keyed_backend(operator: StreamOperator) -> Any:
    """The operator's keyed state backend; a clear error when the task gave it none."""
    backend = operator.context.keyed_backend
    if backend is None:
        raise RuntimeError(
            f"operator {operator.context.node.name!r} ({operator.spec.kind}) is keyed but the task gave it no "
            f"keyed state backend: its node must carry the key selector (state_key_selectors)")
    return backend


class UserTimers:
    """The user's timers of a keyed operator: Flink's ``InternalTimerService`` named "user-timers".

    The operator is the Triggerable; this helper calls the function's ``on_timer(timestamp,
    ctx)`` with an OnTimerContext, and buffers what it yields. Event-time timer results carry
    the timer's timestamp and are emitted when the watermark that fired them is processed
    (before it is forwarded); processing-time timer results carry no timestamp (Flink erases
    it) and are emitted at once.
    """

    def __init__(self, operator: StreamOperator, on_timer: Optional[Callable[[int, Any], Any]], ctx: Any,
                 side: SideOutputCollector) -> None:
        from streamkernel.runtime.operators.timers import KeyedTimerService

        self.operator = operator
        # the task lists it for watermarks; keyed operators implement Triggerable (on_event_time/on_processing_time)
        self.internal = operator.context.timer_service(USER_TIMERS, cast("Triggerable", operator))
        self.timer_service = KeyedTimerService(self.internal)
        self._on_timer = on_timer
        self._ctx = ctx
        self._side = side
        self._values: list = []
        self._timestamps: list = []

    def fire(self, timer: Any, domain: TimeDomain) -> None:
        """Run ``on_timer`` for ``timer`` (the timer service already set the current key)."""
        if self._on_timer is None:
            return
        ctx = self._ctx
        timestamp = timer.timestamp
        ctx.timestamp_ = timestamp
        ctx.time_domain_ = domain
        record_ts = timestamp if domain is TimeDomain.EVENT_TIME else None
        try:
            result = self._on_timer(timestamp, ctx)
            if domain is TimeDomain.EVENT_TIME:
                collect_results(result, record_ts, self._values, self._timestamps, self._side)
            else:
                out: list = []
                collect_results(result, None, out, None, self._side)
        except Exception as exc:
            raise wrap_user_error(
                self.operator, None, exc,
                where=f"on_timer({timestamp}) ({domain.name} timer of key {describe_record(timer.key)})") from exc
        if domain is TimeDomain.PROCESSING_TIME:
            self._emit(out, None)

    def flush(self) -> None:
        """Emit the results of the event-time timers fired so far (one batch)."""
        if self._values:
            values, timestamps = self._values, self._timestamps
            self._values, self._timestamps = [], []
            self._emit(values, timestamps)
        elif len(self._side):
            self._emit([], None)

    def _emit(self, values: list, timestamps: Optional[list]) -> None:
        operator = self.operator
        metrics = operator.context.metrics
        if values:
            metrics.records_out += len(values)
            operator.output.emit(values, timestamps)
        metrics.records_out += self._side.flush(operator.output)


class KeyedProcessOperator(StreamOperator):
    """Flink's KeyedProcessOperator: a KeyedProcessFunction with keyed state and timers.

    ``ctx.get_current_key()`` is the record's key; timers registered through
    ``ctx.timer_service()`` call ``on_timer(timestamp, ctx)`` with that key current.
    """

    def __init__(self, spec: KeyedSpec) -> None:
        super().__init__(spec)
        self._key_selector: Callable[[Any], Any] = key_function(spec.key_selector)  # required
        self._side = SideOutputCollector()
        self._backend: Any = None
        self._ctx: KeyedProcessContext = None  # type: ignore[assignment]
        self._timers: UserTimers = None  # type: ignore[assignment]
        self._process: Callable[[Any, Any], Any] = None  # type: ignore[assignment]

    def open(self) -> None:
        """Create the timer service ("user-timers") and the reused contexts, then open the function."""
        self._backend = require_keyed_backend(self)
        timer_ctx = KeyedProcessContext(None, self._side, self._backend)  # type: ignore[arg-type]
        self._timers = UserTimers(self, getattr(self.function, "on_timer", None), timer_ctx, self._side)
        timer_ctx._timer_service = self._timers.timer_service
        self._ctx = KeyedProcessContext(self._timers.timer_service, self._side, self._backend)
        self._process = self.function.process_element
        super().open()

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """``process_element`` per record with its key current."""
        run_process_function(self, self._process, values, timestamps, self._ctx, self._side,
                             self._key_selector, self._backend)

    def process_watermark(self, timestamp: int) -> None:
        """Fire due event-time timers, emit their results, then forward the watermark."""
        self.current_watermark = timestamp
        for timers in self._timer_services:
            timers.advance_watermark(timestamp)
        self._timers.flush()
        self.output.emit_watermark(timestamp)

    def on_event_time(self, timer: Any) -> None:
        """Triggerable: an event-time timer fired."""
        self._timers.fire(timer, TimeDomain.EVENT_TIME)

    def on_processing_time(self, timer: Any) -> None:
        """Triggerable: a processing-time timer fired."""
        self._timers.fire(timer, TimeDomain.PROCESSING_TIME)


def _owned(key: Any) -> None:
    """No key group check: the subtask owns every key group."""


class ReduceOperator(StreamOperator):
    """Flink's StreamGroupedReduceOperator: a rolling reduce per key (also sum/min/max/min_by/max_by).

    Per record it emits the key's new running value; a key's first record is emitted as is.
    The running value lives in the keyed ValueState ``"_reduce_state"``, so it is
    checkpointed and redistributed by key group like any state.

    Hot path (W2): when the backend exposes the raw ``key -> value`` dict of a state
    (``HeapKeyedStateBackend.value_dict(descriptor)``), the loop reads and writes that dict directly — the
    same work as a hand-written ``dict.get`` / assignment loop, no State method calls. The
    key group check costs nothing there for known keys: the dict holds only checked keys,
    so a key is checked when it has no running value yet (the branch that exists anyway).
    """

    def __init__(self, spec: KeyedSpec) -> None:
        super().__init__(spec)
        self._key_selector: Callable[[Any], Any] = key_function(spec.key_selector)  # required
        self._reduce: Callable[[Any, Any], Any] = None  # type: ignore[assignment]
        self._table: Optional[dict] = None
        self._state: Any = None
        self._backend: Any = None

    def open(self) -> None:
        """Bind ``reduce`` and the state (its raw dict when the backend offers it)."""
        self._backend = require_keyed_backend(self)
        self._reduce = self.function.reduce
        descriptor = ValueStateDescriptor(REDUCE_STATE)
        self._state = self._backend.get_state(descriptor)
        value_dict = getattr(self._backend, "value_dict", None)  # HeapKeyedStateBackend's fast path
        self._table = value_dict(descriptor) if value_dict is not None else None
        # BATCH execution (RuntimeExecutionMode.BATCH): one final value per key at the end of input.
        self._batch_mode = ExecutionOptions.RUNTIME_MODE.get(self.context.configuration) == "BATCH"
        super().open()

    def process_watermark(self, timestamp: int) -> None:
        """BATCH: the end of event time (reached at the end of each sorted key) emits the finals."""
        if self._batch_mode and timestamp == MAX_WATERMARK:
            self.end_input()
        super().process_watermark(timestamp)

    def end_input(self) -> None:
        """In BATCH mode, emit each key's final value now and forget it (Flink's BatchGroupedReduceOperator)."""
        if not self._batch_mode:
            return
        if self._table is not None:
            out = list(self._table.values())
            self._table.clear()
        else:
            out = []
            for key in list(self._backend.keys(REDUCE_STATE)):
                self._backend.current_key = key
                out.append(self._state.value())
                self._state.clear()
        if out:
            self.context.metrics.records_out += len(out)
            self.output.emit(out, None)

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Reduce each record into its key's running value; emit the running values (one batch).

        In BATCH mode the running values are kept, not emitted: ``end_input`` emits the finals.
        """
        out: list = []
        append, reduce, key_of = out.append, self._reduce, self._key_selector
        table = self._table
        next_key = None if table is not None else batch_keys(self, key_of, values)
        it = iter(values)
        try:
            if table is not None:
                get = table.get
                check = self.key_group_check
                check_new_key = check.check_new_key if check is not None else _owned
                for v in it:  # the W2 loop: one key call, one dict get, one reduce, one dict set
                    k = key_of(v)
                    acc = get(k)
                    if acc is None:  # the key's first record here (or its value was None)
                        check_new_key(k)
                        acc = v
                    else:
                        acc = reduce(acc, v)
                    if acc is None:  # None means "no value" in a ValueState: never store it
                        table.pop(k, None)
                    else:
                        table[k] = acc
                    append(acc)
            else:
                backend, state = self._backend, self._state
                value, update = state.value, state.update
                for v in it:
                    backend.current_key = next_key()  # type: ignore[misc]
                    acc = value()
                    acc = v if acc is None else reduce(acc, v)
                    update(acc)
                    append(acc)
        except KeyGroupOwnershipError:
            raise
        except Exception as exc:
            raise wrap_user_error(self, values[failed_index(values, it)], exc) from exc
        metrics = self.context.metrics
        metrics.records_in += len(values)
        if out and not self._batch_mode:
            metrics.records_out += len(out)
            self.output.emit(out, timestamps)
