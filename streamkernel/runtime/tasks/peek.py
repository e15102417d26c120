"""Peeking at the records an operator emits, while its job runs (``%flink peek OPERATOR``).

A debugging aid for notebooks, not a Flink feature: for a moment, the operator's output is
wrapped in a :class:`TapOutput` that keeps the last records it passes on (records and
timestamps, in a bounded deque) and forwards everything unchanged. The tap is put in place
from the caller's thread (an attribute swap the task thread sees at its next batch) and
removed afterwards, so a job that nobody peeks at pays nothing. Works the same in every
backend: a TaskManager in another process answers over its RPC connection.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Optional

__all__ = ["TapOutput", "tap_operator"]


class TapOutput:
    """An operator output that remembers the last ``limit`` records it forwards (until closed)."""

    def __init__(self, inner: Any, limit: int) -> None:
        self.inner = inner
        self.filled = threading.Event()
        self._records: collections.deque = collections.deque(maxlen=limit)
        self._seen = 0
        self._limit = limit
        self._lock = threading.Lock()  # the task thread appends, the peeking thread takes
        self._closed = False

    def emit(self, values: list, timestamps: Optional[list]) -> None:
        """Remember the batch's last records, then forward the batch."""
        with self._lock:
            if not self._closed:
                tail = values[-self._limit:]
                self._records.extend(zip(tail, timestamps[-self._limit:]) if timestamps is not None
                                     else ((value, None) for value in tail))
                self._seen += len(values)
                if self._seen >= self._limit:
                    self.filled.set()
        self.inner.emit(values, timestamps)

    def take(self) -> list[tuple[Any, Optional[int]]]:
        """Stop remembering; the (record, timestamp) pairs remembered, oldest first."""
        with self._lock:
            self._closed = True
            return list(self._records)

    def emit_watermark(self, timestamp: int) -> None:
        """Forward."""
        self.inner.emit_watermark(timestamp)

    def emit_watermark_status(self, idle: bool) -> None:
        """Forward."""
        self.inner.emit_watermark_status(idle)

    def emit_side(self, tag: Any, values: list, timestamps: Optional[list]) -> None:
        """Forward (side outputs are not peeked)."""
        self.inner.emit_side(tag, values, timestamps)


def tap_operator(operator: Any, limit: int, seconds: float) -> list[tuple[Any, Optional[int]]]:
    """(record, timestamp) pairs ``operator`` emits: the last ``limit`` of those emitted
    within ``seconds`` (returns early once ``limit`` arrived)."""
    original = operator.output
    tap = TapOutput(original, limit)
    operator.output = tap
    try:
        tap.filled.wait(seconds)
    finally:
        operator.output = original
    return tap.take()
