"""The one-input, record-at-a-time operators: map, flat_map, filter and (non-keyed) process.

Hot path (W1 runs through here): without keyed state an operator handles a batch with one
builtin call over the whole list (``list(map(f, it))``, ``list(filter(f, it))``), the user's
method bound once in ``open``; timestamps pass through untouched for map. No per-record
bookkeeping: when a user function raises, the failing record is found from the position
of the list iterator (``it.__length_hint__()``), never by re-running anything.

After ``key_by`` (``spec.key_selector``) the operator also sets the keyed backend's
current key per record, so RuntimeContext state works; that slower loop runs only then.
The batch's keys are computed first (:func:`batch_keys`, one key selector call per record)
and checked against the subtask's key groups in one go; the loop takes them in order.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.graph.operator_specs import OneInputSpec, OperatorSpec
from streamkernel.runtime.core.keys import key_function
from streamkernel.runtime.operators.base import StreamOperator
from streamkernel.runtime.operators.contexts import (
    NonKeyedTimerService,
    ProcessContext,
    SideOutputCollector,
    collect_results,
    wrap_user_error,
)

__all__ = [
    "MapOperator",
    "FlatMapOperator",
    "FilterOperator",
    "ProcessOperator",
    "batch_keys",
    "failed_index",
    "run_process_function",
]


def failed_index(values: list, iterator: Any) -> int:
    """The index in ``values`` of the record being processed when the loop over ``iterator`` raised.

    ``iterator`` is ``iter(values)``: after it handed out item ``i``, ``i + 1`` items are gone.
    """
    return len(values) - iterator.__length_hint__() - 1


def batch_keys(operator: StreamOperator, key_selector: Callable[[Any], Any], values: list) -> Callable[[], Any]:
    """The keys of a batch's records, handed out in order by the returned ``next``.

    ``key_selector`` is called once per record, before the batch is processed, and the keys
    are checked against the operator subtask's key groups (``operator.key_group_check``).
    """
    it = iter(values)
    try:
        keys = list(map(key_selector, it))
    except Exception as exc:
        raise wrap_user_error(operator, values[failed_index(values, it)], exc) from exc
    check = operator.key_group_check
    if check is not None:
        check.check(keys)
    return iter(keys).__next__


class _OneInputOperator(StreamOperator):
    """Common setup: the user method bound once, the optional key selector and backend."""

    method_name = ""

    def __init__(self, spec: OneInputSpec) -> None:
        super().__init__(spec)
        self._key_selector: Optional[Callable[[Any], Any]] = key_function(spec.key_selector)
        self._call: Callable[..., Any] = None  # type: ignore[assignment]  # bound in open
        self._backend: Any = None

    def open(self) -> None:
        """Bind the user's method; find the keyed backend when the operator follows key_by."""
        self._call = getattr(self.function, self.method_name)
        if self._key_selector is not None:
            self._backend = self.context.keyed_backend
            if self._backend is None:  # keyed by the API but run without a backend: state unavailable
                self._key_selector = None
        super().open()

    def _fail(self, values: list, iterator: Any, exc: Exception) -> Exception:
        return wrap_user_error(self, values[failed_index(values, iterator)], exc)


class MapOperator(_OneInputOperator):
    """Flink's StreamMap: one result per record (``MapFunction.map``); timestamps pass through."""

    method_name = "map"

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """``map`` over the batch, emitted as one batch."""
        next_key = None if self._key_selector is None else batch_keys(self, self._key_selector, values)
        it = iter(values)
        try:
            if next_key is None:
                out = list(map(self._call, it))  # fast path: one C-level loop over the batch
            else:
                out = []
                append, f, backend = out.append, self._call, self._backend
                for v in it:
                    backend.current_key = next_key()
                    append(f(v))
        except Exception as exc:
            raise self._fail(values, it, exc) from exc
        metrics = self.context.metrics
        metrics.records_in += len(values)
        if out:
            metrics.records_out += len(out)
            self.output.emit(out, timestamps)


class FilterOperator(_OneInputOperator):
    """Flink's StreamFilter: keeps the records whose ``filter`` is truthy (timestamps alongside)."""

    method_name = "filter"

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Filter the batch; emit the kept records (if any) as one batch."""
        next_key = None if self._key_selector is None else batch_keys(self, self._key_selector, values)
        it = iter(values)
        try:
            if next_key is None and timestamps is None:
                out = list(filter(self._call, it))  # fast path: one C-level loop
                out_ts = None
            else:
                f, backend = self._call, self._backend
                if next_key is None:
                    keep = list(map(f, it))
                else:
                    keep = []
                    append = keep.append
                    for v in it:
                        backend.current_key = next_key()
                        append(f(v))
                out = [v for v, k in zip(values, keep) if k]
                out_ts = None if timestamps is None else [t for t, k in zip(timestamps, keep) if k]
        except Exception as exc:
            raise self._fail(values, it, exc) from exc
        metrics = self.context.metrics
        metrics.records_in += len(values)
        metrics.records_out += len(out)
        if out:
            self.output.emit(out, out_ts)


class FlatMapOperator(_OneInputOperator):
    """Flink's StreamFlatMap: zero or more results per record; each carries its record's timestamp.

    ``flat_map`` may return any iterable or be a generator.
    """

    method_name = "flat_map"

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Flat-map the batch; emit all results as one batch."""
        out: list = []
        out_ts: Optional[list] = None
        extend, f, backend = out.extend, self._call, self._backend
        next_key = None if self._key_selector is None else batch_keys(self, self._key_selector, values)
        it = iter(values)
        try:
            if timestamps is None:
                if next_key is None:
                    for v in it:
                        extend(f(v))
                else:
                    for v in it:
                        backend.current_key = next_key()
                        extend(f(v))
            else:
                out_ts = []
                extend_ts = out_ts.extend
                for v, t in zip(it, timestamps):
                    if next_key is not None:
                        backend.current_key = next_key()
                    before = len(out)
                    extend(f(v))
                    produced = len(out) - before
                    if produced == 1:
                        out_ts.append(t)
                    elif produced:
                        extend_ts([t] * produced)
        except Exception as exc:
            raise self._fail(values, it, exc) from exc
        metrics = self.context.metrics
        metrics.records_in += len(values)
        metrics.records_out += len(out)
        if out:
            self.output.emit(out, out_ts)


def run_process_function(operator: StreamOperator, method: Callable[[Any, Any], Any], values: list,
                         timestamps: Optional[list], ctx: Any, side: SideOutputCollector,
                         key_selector: Optional[Callable[[Any], Any]] = None, backend: Any = None) -> None:
    """Call a process-function ``method(value, ctx)`` per record and emit what it yields.

    Shared by the process, keyed-process, co-process and broadcast operators. ``ctx`` is the
    operator's reused context: its ``timestamp_`` is moved per record. With ``key_selector``
    the backend's current key is set first (the batch's keys are checked against the
    subtask's key groups: :func:`batch_keys`). Results keep the record's timestamp (Flink's
    TimestampedCollector); side outputs are emitted once, after the batch.
    """
    out: list = []
    out_ts: Optional[list] = None if timestamps is None else []
    next_key = None if key_selector is None else batch_keys(operator, key_selector, values)
    it = iter(values)
    try:
        if timestamps is None:
            ctx.timestamp_ = None
            for v in it:
                if next_key is not None:
                    backend.current_key = next_key()
                result = method(v, ctx)
                if result is not None:
                    collect_results(result, None, out, None, side)
        else:
            for v, t in zip(it, timestamps):
                if next_key is not None:
                    backend.current_key = next_key()
                ctx.timestamp_ = t
                result = method(v, ctx)
                if result is not None:
                    collect_results(result, t, out, out_ts, side)
    except Exception as exc:
        side.flush(_DROP)  # the batch failed: its side outputs must not leak into the next one
        raise wrap_user_error(operator, values[failed_index(values, it)], exc) from exc
    metrics = operator.context.metrics
    metrics.records_in += len(values)
    if out:
        metrics.records_out += len(out)
        operator.output.emit(out, out_ts)
    metrics.records_out += side.flush(operator.output)


class _DropOutput:
    """Swallows side outputs of a failed batch."""

    def emit_side(self, tag: Any, values: list, timestamps: Optional[list]) -> None:
        """Dropped."""


_DROP = _DropOutput()


class ProcessOperator(StreamOperator):
    """Flink's ProcessOperator: a ProcessFunction per record, with a Context (no keyed state, no timers).

    ``ctx.timer_service()`` answers time queries; registering a timer raises, as in Flink
    ("Setting timers is only supported on a keyed streams.").
    """

    def __init__(self, spec: OperatorSpec) -> None:
        super().__init__(spec)
        self._side = SideOutputCollector()
        self._ctx: ProcessContext = None  # type: ignore[assignment]
        self._process: Callable[[Any, Any], Any] = None  # type: ignore[assignment]

    def open(self) -> None:
        """Create the reused context and bind ``process_element``."""
        self._ctx = ProcessContext(NonKeyedTimerService(self), self._side)
        self._process = self.function.process_element
        super().open()

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """``process_element`` per record; results and side outputs emitted once per batch."""
        run_process_function(self, self._process, values, timestamps, self._ctx, self._side)
