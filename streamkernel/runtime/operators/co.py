"""Two-input operators: connect(...).map/flat_map/process, keyed and broadcast variants.

Input 1 is the first stream of ``connect``; input 2 the second (for broadcast operators,
input 2 is the broadcast stream). Each input's batch is handled like a one-input
operator's: ``map1``/``map2`` in one builtin loop, process functions per record with a
reused context. Keyed variants set the backend's current key from ``key_selector1`` /
``key_selector2`` (``key_selector`` for the keyed side of a keyed broadcast).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.datastream.time_domain import TimeDomain
from streamkernel.graph.operator_specs import (
    BroadcastProcessSpec,
    KeyedBroadcastProcessSpec,
    OperatorSpec,
    TwoInputSpec,
)
from streamkernel.runtime.operators.base import TwoInputStreamOperator, key_function
from streamkernel.runtime.operators.contexts import (
    BroadcastContext,
    BroadcastStates,
    KeyedProcessContext,
    NonKeyedTimerService,
    ProcessContext,
    ReadOnlyBroadcastContext,
    SideOutputCollector,
    wrap_user_error,
)
from streamkernel.runtime.operators.keyed import UserTimers, require_keyed_backend
from streamkernel.runtime.operators.simple import batch_keys, failed_index, run_process_function

__all__ = [
    "CoMapOperator",
    "CoFlatMapOperator",
    "CoProcessOperator",
    "KeyedCoProcessOperator",
    "BroadcastProcessOperator",
    "KeyedBroadcastProcessOperator",
]


class _CoOperator(TwoInputStreamOperator):
    """Shared setup: the optional key selectors of both inputs and the keyed backend."""

    def __init__(self, spec: OperatorSpec) -> None:
        super().__init__(spec)
        self._key_selectors: tuple[Optional[Callable[[Any], Any]], Optional[Callable[[Any], Any]]] = (
            (key_function(spec.key_selector1), key_function(spec.key_selector2)) if isinstance(spec, TwoInputSpec)
            else (None, None))
        self._backend: Any = None

    def open(self) -> None:
        """Find the keyed backend when the inputs are keyed."""
        if any(k is not None for k in self._key_selectors):
            self._backend = self.context.keyed_backend
            if self._backend is None:
                self._key_selectors = (None, None)
        super().open()

    def _count_and_emit(self, n_in: int, out: list, timestamps: Optional[list]) -> None:
        metrics = self.context.metrics
        metrics.records_in += n_in
        if out:
            metrics.records_out += len(out)
            self.output.emit(out, timestamps)


class CoMapOperator(_CoOperator):
    """Flink's CoStreamMap: ``map1`` for input 1, ``map2`` for input 2; timestamps pass through."""

    def _map(self, f: Callable[[Any], Any], key_of: Any, values: list, timestamps: Optional[list]) -> None:
        next_key = None if key_of is None else batch_keys(self, key_of, values)
        it = iter(values)
        try:
            if next_key is None:
                out = list(map(f, it))
            else:
                out = []
                append, backend = out.append, self._backend
                for v in it:
                    backend.current_key = next_key()
                    append(f(v))
        except Exception as exc:
            raise wrap_user_error(self, values[failed_index(values, it)], exc) from exc
        self._count_and_emit(len(values), out, timestamps)

    def process_batch1(self, values: list, timestamps: Optional[list]) -> None:
        """``map1`` over a batch of input 1."""
        self._map(self.function.map1, self._key_selectors[0], values, timestamps)

    def process_batch2(self, values: list, timestamps: Optional[list]) -> None:
        """``map2`` over a batch of input 2."""
        self._map(self.function.map2, self._key_selectors[1], values, timestamps)


class CoFlatMapOperator(_CoOperator):
    """Flink's CoStreamFlatMap: ``flat_map1`` / ``flat_map2``; results keep their record's timestamp."""

    def _flat_map(self, f: Callable[[Any], Any], key_of: Any, values: list, timestamps: Optional[list]) -> None:
        out: list = []
        out_ts: Optional[list] = None if timestamps is None else []
        extend, backend = out.extend, self._backend
        next_key = None if key_of is None else batch_keys(self, key_of, values)
        it = iter(values)
        try:
            for i, v in enumerate(it):
                if next_key is not None:
                    backend.current_key = next_key()
                before = len(out)
                extend(f(v))
                if out_ts is not None:
                    out_ts.extend([timestamps[i]] * (len(out) - before))  # type: ignore[index]
        except Exception as exc:
            raise wrap_user_error(self, values[failed_index(values, it)], exc) from exc
        self._count_and_emit(len(values), out, out_ts)

    def process_batch1(self, values: list, timestamps: Optional[list]) -> None:
        """``flat_map1`` over a batch of input 1."""
        self._flat_map(self.function.flat_map1, self._key_selectors[0], values, timestamps)

    def process_batch2(self, values: list, timestamps: Optional[list]) -> None:
        """``flat_map2`` over a batch of input 2."""
        self._flat_map(self.function.flat_map2, self._key_selectors[1], values, timestamps)


class CoProcessOperator(_CoOperator):
    """Flink's CoProcessOperator: a CoProcessFunction on two non-keyed inputs (no timers)."""

    def __init__(self, spec: OperatorSpec) -> None:
        super().__init__(spec)
        self._side = SideOutputCollector()
        self._ctx: Any = None

    def open(self) -> None:
        """Create the reused context."""
        self._ctx = ProcessContext(NonKeyedTimerService(self), self._side)
        super().open()

    def process_batch1(self, values: list, timestamps: Optional[list]) -> None:
        """``process_element1`` per record of input 1."""
        run_process_function(self, self.function.process_element1, values, timestamps, self._ctx, self._side)

    def process_batch2(self, values: list, timestamps: Optional[list]) -> None:
        """``process_element2`` per record of input 2."""
        run_process_function(self, self.function.process_element2, values, timestamps, self._ctx, self._side)


class _KeyedTimersMixin:
    """Triggerable for the user's timers; results of event-time timers flushed before the watermark."""

    _timers: UserTimers

    def process_watermark(self, timestamp: int) -> None:
        """Fire due event-time timers, emit their results, then forward the watermark."""
        self.current_watermark = timestamp
        for timers in self._timer_services:  # type: ignore[attr-defined]
            timers.advance_watermark(timestamp)
        self._timers.flush()
        self.output.emit_watermark(timestamp)  # type: ignore[attr-defined]

    def on_event_time(self, timer: Any) -> None:
        """Triggerable: an event-time timer fired."""
        self._timers.fire(timer, TimeDomain.EVENT_TIME)

    def on_processing_time(self, timer: Any) -> None:
        """Triggerable: a processing-time timer fired."""
        self._timers.fire(timer, TimeDomain.PROCESSING_TIME)


class KeyedCoProcessOperator(_KeyedTimersMixin, _CoOperator):
    """Flink's KeyedCoProcessOperator: a KeyedCoProcessFunction (or CoProcessFunction) on two keyed inputs.

    Keyed state is shared by both inputs for the same key; timers call ``on_timer``.
    """

    def __init__(self, spec: OperatorSpec) -> None:
        super().__init__(spec)
        self._side = SideOutputCollector()
        self._ctx: Any = None

    def open(self) -> None:
        """Create the "user-timers" timer service and the reused contexts."""
        backend = require_keyed_backend(self)
        timer_ctx = KeyedProcessContext(None, self._side, backend)  # type: ignore[arg-type]
        self._timers = UserTimers(self, getattr(self.function, "on_timer", None), timer_ctx, self._side)
        timer_ctx._timer_service = self._timers.timer_service
        self._ctx = KeyedProcessContext(self._timers.timer_service, self._side, backend)
        super().open()

    def process_batch1(self, values: list, timestamps: Optional[list]) -> None:
        """``process_element1`` per record of input 1, its key current."""
        run_process_function(self, self.function.process_element1, values, timestamps, self._ctx, self._side,
                             self._key_selectors[0], self._backend)

    def process_batch2(self, values: list, timestamps: Optional[list]) -> None:
        """``process_element2`` per record of input 2, its key current."""
        run_process_function(self, self.function.process_element2, values, timestamps, self._ctx, self._side,
                             self._key_selectors[1], self._backend)


class BroadcastProcessOperator(_CoOperator):
    """Flink's CoBroadcastWithNonKeyedOperator: input 1 reads the broadcast state, input 2 writes it.

    Broadcast states (``spec.broadcast_state_descriptors``) live in the operator state
    backend (``context.operator_state``, which the task snapshots and restores);
    ``process_element`` gets a ReadOnlyContext whose broadcast state raises on writes.
    """

    def __init__(self, spec: BroadcastProcessSpec) -> None:
        super().__init__(spec)
        self._descriptors = spec.broadcast_state_descriptors
        self._side = SideOutputCollector()
        self._states: Optional[BroadcastStates] = None
        self._element_ctx: Any = None
        self._broadcast_ctx: Any = None

    def _make_contexts(self, timer_service: Any = None, backend: Any = None) -> ReadOnlyBroadcastContext:
        # the task restored the operator state backend before open: take the states now
        self._states = BroadcastStates(self.context.operator_state, self._descriptors)
        self._broadcast_ctx = BroadcastContext(self, self._side, self._states)
        self._element_ctx = ReadOnlyBroadcastContext(self, self._side, self._states,
                                                     timer_service, backend)
        return self._element_ctx

    def open(self) -> None:
        """Create the reused contexts."""
        self._make_contexts()
        super().open()

    def process_batch1(self, values: list, timestamps: Optional[list]) -> None:
        """``process_element`` per record of the non-broadcast input (read-only broadcast state)."""
        run_process_function(self, self.function.process_element, values, timestamps, self._element_ctx,
                             self._side)

    def process_batch2(self, values: list, timestamps: Optional[list]) -> None:
        """``process_broadcast_element`` per record of the broadcast input (writable broadcast state)."""
        run_process_function(self, self.function.process_broadcast_element, values, timestamps,
                             self._broadcast_ctx, self._side)


class KeyedBroadcastProcessOperator(_KeyedTimersMixin, BroadcastProcessOperator):
    """Flink's CoBroadcastWithKeyedOperator: a KeyedBroadcastProcessFunction.

    Input 1 is keyed (``spec.key_selector``): ``process_element`` runs with its key
    current, may use keyed state and timers (``on_timer`` with an OnTimerContext). Input 2
    is the broadcast side, with no current key.
    """

    def __init__(self, spec: KeyedBroadcastProcessSpec) -> None:
        super().__init__(spec)
        self._key_selectors = (key_function(spec.key_selector), None)

    def open(self) -> None:
        """Create the "user-timers" timer service and the reused contexts."""
        backend = require_keyed_backend(self)
        self._backend = backend
        element_ctx = self._make_contexts(None, backend)
        timer_ctx = ReadOnlyBroadcastContext(self, self._side, self._states, None, backend)  # type: ignore[arg-type]
        self._timers = UserTimers(self, getattr(self.function, "on_timer", None), timer_ctx, self._side)
        timer_ctx._timer_service = self._timers.timer_service
        element_ctx._timer_service = self._timers.timer_service
        TwoInputStreamOperator.open(self)

    def process_batch1(self, values: list, timestamps: Optional[list]) -> None:
        """``process_element`` per record of the keyed input, its key current."""
        run_process_function(self, self.function.process_element, values, timestamps, self._element_ctx,
                             self._side, self._key_selectors[0], self._backend)
