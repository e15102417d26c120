"""AsyncWaitOperator: ``AsyncDataStream.ordered_wait`` / ``unordered_wait`` (Flink's async I/O).

Each operator subtask runs an asyncio event loop in a helper thread (started in ``open``,
stopped in ``close``). Records are handed to the loop in chunks (one thread hand-over per
chunk, not per record), where ``async_invoke(value)`` runs as a task, under the operator's
timeout and retry strategy; at most ``capacity`` records are in flight (or completed but
not yet emitted) — when full, the task thread blocks until one completes (backpressure).

Results never leave from the loop thread: completed calls go into a thread-safe queue that
the task thread drains in ``process_batch``, in a processing-time callback registered every
few ms while calls are in flight, and in ``finish`` (which waits for all of them). ORDERED
emits in input order; UNORDERED as calls complete, but never across a watermark: a
watermark is emitted after every record that arrived before it (Flink's queues).

Results carry their input record's timestamp. In-flight inputs are part of the checkpoint
(``snapshot_state``) and are invoked again after a restore, as in Flink.
"""

from __future__ import annotations

import asyncio
import inspect
import queue
import threading
from collections import deque
from typing import Any, Optional

from streamkernel.datastream.function_async import AsyncFunction
from streamkernel.graph.operator_specs import AsyncWaitSpec
from streamkernel.runtime.operators.base import StreamOperator
from streamkernel.runtime.operators.contexts import wrap_user_error

__all__ = ["AsyncWaitOperator", "POLL_INTERVAL_MS"]

#: how often (processing time) the task drains completed calls while some are in flight
POLL_INTERVAL_MS = 5
_WAIT_SLICE_S = 0.05  # one blocking wait for a completion; loops until something completes
_LOOP_JOIN_TIMEOUT_S = 5.0


class _Entry:
    """One input record in the operator's queue: its results once its call completed."""

    __slots__ = ("value", "timestamp", "results", "done")

    def __init__(self, value: Any, timestamp: Optional[int]) -> None:
        self.value = value
        self.timestamp = timestamp
        self.results: Optional[list] = None
        self.done = False


class AsyncWaitOperator(StreamOperator):
    """Calls ``AsyncFunction.async_invoke`` per record with up to ``capacity`` calls in flight.

    Spec fields: ``timeout`` (ms, for all attempts of a record together; 0: none), ``capacity``,
    ``output_mode`` ("ORDERED" | "UNORDERED"), ``retry_strategy`` (AsyncRetryStrategy or None).
    On timeout, ``async_function.timeout(value)`` gives the results if the user overrode it;
    otherwise the job fails with an error naming the record.
    """

    def __init__(self, spec: AsyncWaitSpec) -> None:
        super().__init__(spec)
        # PyFlink: a timeout <= 0 means none (only allowed without a retry strategy)
        self._timeout_s: Optional[float] = spec.timeout / 1000 if spec.timeout > 0 else None
        self._timeout_ms = spec.timeout
        self._capacity = int(spec.capacity)
        self._ordered = spec.output_mode == "ORDERED"
        self._retry = spec.retry_strategy
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._completed: "queue.SimpleQueue[tuple[int, Optional[list], Optional[BaseException]]]" = queue.SimpleQueue()
        # Unemitted records by sequence number, in arrival order (dicts keep insertion order).
        self._pending: dict[int, _Entry] = {}
        self._done_unordered: list[int] = []
        self._barriers: deque[tuple[int, int]] = deque()  # (first seq after the watermark, watermark)
        self._next_seq = 0
        self._chunk: list[tuple[int, Any]] = []
        self._poll_timer: Any = None
        self._restored: list[tuple[Any, Optional[int]]] = []
        self._timeout_overridden = False

    # ------------------------------------------------------------------ lifecycle
    def initialize_state(self) -> None:
        """Remember the in-flight records of the restored checkpoint; they are invoked again in open."""
        restored = self.context.restored_state
        if restored:
            self._restored = list(restored.get("in_flight", ()))

    def open(self) -> None:
        """Open the function, start the event loop thread, re-submit restored in-flight records."""
        function = self.function
        timeout = getattr(type(function), "timeout", None)
        self._timeout_overridden = timeout is not None and timeout is not AsyncFunction.timeout
        super().open()
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=_run_loop, args=(loop,), daemon=True,
                                        name=f"async-wait {self.context.task_info.task_name_with_subtasks}")
        self._thread.start()
        if self._restored:
            restored, self._restored = self._restored, []
            for value, timestamp in restored:
                self._add(value, timestamp)
            self._hand_over()

    def process_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Start one call per record (blocking while ``capacity`` are in flight); emit completed ones."""
        self.context.metrics.records_in += len(values)
        if timestamps is None:
            for value in values:
                self._add(value, None)
        else:
            for value, timestamp in zip(values, timestamps):
                self._add(value, timestamp)
        self._hand_over()
        self._drain()

    def process_watermark(self, timestamp: int) -> None:
        """A watermark leaves after every record that arrived before it."""
        self.current_watermark = timestamp
        if not self._pending and not self._barriers:
            self.output.emit_watermark(timestamp)
        else:
            self._barriers.append((self._next_seq, timestamp))
            self._drain()

    def end_input(self) -> None:
        """Wait for every call in flight (Flink's endInput)."""
        self._wait_all()

    def finish(self) -> None:
        """Wait for every call in flight and emit the last results."""
        self._wait_all()

    def close(self) -> None:
        """Stop the event loop thread (cancelling calls still running), then close the function."""
        if self._poll_timer is not None and hasattr(self._poll_timer, "cancel"):
            self._poll_timer.cancel()
        self._poll_timer = None
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is not None and thread is not None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(loop.stop)
            thread.join(_LOOP_JOIN_TIMEOUT_S)
        super().close()

    def snapshot_state(self, checkpoint_id: int) -> Optional[dict]:
        """The records whose results were not emitted yet, in arrival order."""
        return {"in_flight": [(e.value, e.timestamp) for e in self._pending.values()]}

    # ------------------------------------------------------------------ submitting
    def _add(self, value: Any, timestamp: Optional[int]) -> None:
        while len(self._pending) >= self._capacity:  # full: hand over what waits, block for a completion
            self._hand_over()
            self._drain(_WAIT_SLICE_S)
        seq = self._next_seq
        self._next_seq = seq + 1
        self._pending[seq] = _Entry(value, timestamp)
        self._chunk.append((seq, value))

    def _hand_over(self) -> None:
        """Start the calls of the records added since the last hand-over (one loop wake-up)."""
        if not self._chunk:
            return
        chunk, self._chunk = self._chunk, []
        loop = self._loop
        if loop is None:
            raise RuntimeError(f"operator {self.context.node.name!r}: the async operator is not open")
        loop.call_soon_threadsafe(self._start_calls, chunk)
        self._ensure_poll()

    def _start_calls(self, chunk: list[tuple[int, Any]]) -> None:  # runs on the loop thread
        loop = self._loop
        if loop is None:
            return
        for seq, value in chunk:
            loop.create_task(self._call(seq, value))

    async def _call(self, seq: int, value: Any) -> None:  # runs on the loop thread
        attempts = asyncio.ensure_future(self._attempts(value))
        outcome: tuple[int, Optional[list], Optional[BaseException]]
        try:
            done, _ = await asyncio.wait((attempts,), timeout=self._timeout_s)
            if done:
                exc = attempts.exception()
                outcome = (seq, None, exc) if exc is not None else (seq, attempts.result(), None)
            else:
                attempts.cancel()
                outcome = self._on_timeout(seq, value)
        except asyncio.CancelledError:
            attempts.cancel()
            raise
        self._completed.put(outcome)

    def _on_timeout(self, seq: int, value: Any) -> tuple[int, Optional[list], Optional[BaseException]]:
        if not self._timeout_overridden:
            return seq, None, TimeoutError(
                f"async_invoke did not complete within the timeout of {self._timeout_ms} ms; override "
                f"AsyncFunction.timeout(value) to return fallback results instead of failing the job")
        try:
            return seq, _as_results(self.function.timeout(value), "timeout"), None
        except Exception as exc:  # noqa: BLE001 - reported on the task thread
            return seq, None, exc

    async def _attempts(self, value: Any) -> list:
        """``async_invoke`` with the retry strategy: retry while a predicate asks and attempts remain."""
        strategy = self._retry
        attempt = 0
        while True:
            attempt += 1
            error: Optional[Exception] = None
            results: Optional[list] = None
            try:
                result = self.function.async_invoke(value)
                if inspect.isawaitable(result):
                    result = await result
                results = _as_results(result, "async_invoke")
            except Exception as exc:  # noqa: BLE001 - retried or reported
                error = exc
            if strategy is not None and strategy.can_retry(attempt):
                predicate = strategy.get_retry_predicate()
                if error is None:
                    test = predicate.result_predicate()
                    retry = test is not None and bool(test(results))
                else:
                    test = predicate.exception_predicate()
                    retry = test is not None and bool(test(error))
                if retry:
                    await asyncio.sleep(max(0, strategy.get_backoff_time_millis(attempt)) / 1000)
                    continue
            if error is not None:
                raise error
            return results  # type: ignore[return-value]

    # ------------------------------------------------------------------ emitting (task thread)
    def _ensure_poll(self) -> None:
        if self._poll_timer is None and self._pending:
            service = self.context.processing_time
            self._poll_timer = service.register_timer(service.current_processing_time() + POLL_INTERVAL_MS,
                                                      self._on_poll)

    def _on_poll(self, *_: Any) -> None:
        self._poll_timer = None
        if self._loop is None:
            return
        self._drain()
        self._ensure_poll()

    def _wait_all(self) -> None:
        self._hand_over()
        while self._pending:
            self._drain(_WAIT_SLICE_S)
        self._drain()

    def _drain(self, block_s: Optional[float] = None) -> None:
        """Take completed calls from the queue (waiting up to ``block_s`` for one) and emit what may go."""
        completed = self._completed
        if block_s is not None:
            try:
                self._complete(completed.get(timeout=block_s))
            except queue.Empty:
                pass
        while True:
            try:
                item = completed.get_nowait()
            except queue.Empty:
                break
            self._complete(item)
        self._emit_ready()

    def _complete(self, item: tuple[int, Optional[list], Optional[BaseException]]) -> None:
        seq, results, error = item
        entry = self._pending.get(seq)
        if entry is None:
            return
        if error is not None:
            raise wrap_user_error(self, entry.value, error) from error
        entry.results = results
        entry.done = True
        if not self._ordered:
            self._done_unordered.append(seq)

    def _emit_ready(self) -> None:
        out: list = []
        out_ts: list = []
        pending, barriers = self._pending, self._barriers
        while True:
            bound = barriers[0][0] if barriers else None
            if self._ordered:
                ready = []
                for seq, entry in pending.items():
                    if not entry.done or (bound is not None and seq >= bound):
                        break
                    ready.append(seq)
            else:
                ready = [s for s in self._done_unordered if bound is None or s < bound]
                if ready:
                    self._done_unordered = [s for s in self._done_unordered if not (bound is None or s < bound)]
            for seq in ready:
                entry = pending.pop(seq)
                results = entry.results or ()
                out.extend(results)
                out_ts.extend([entry.timestamp] * len(results))
            if barriers:
                first = next(iter(pending), None)
                if first is None or first >= barriers[0][0]:
                    self._emit(out, out_ts)
                    out, out_ts = [], []
                    self.output.emit_watermark(barriers.popleft()[1])
                    continue
            break
        self._emit(out, out_ts)

    def _emit(self, out: list, out_ts: list) -> None:
        if out:
            self.context.metrics.records_out += len(out)
            has_time = any(t is not None for t in out_ts)
            self.output.emit(out, out_ts if has_time else None)


def _as_results(result: Any, method: str) -> list:
    """The results of ``async_invoke`` / ``timeout`` as a list (PyFlink: a list; any iterable is accepted)."""
    if result is None:
        raise TypeError(f"{method} must return a list of results (an empty list for none), got None")
    if isinstance(result, list):
        return result
    if isinstance(result, (str, bytes)):
        raise TypeError(f"{method} must return a list of results, got a {type(result).__name__}: {result!r}")
    return list(result)


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The helper thread: run the loop until stopped, then cancel what is left and close it."""
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
