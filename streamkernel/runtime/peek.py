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
import time
from typing import Any, Optional

__all__ = ["TapOutput", "tap_operator", "operator_node_ids"]


class TapOutput:
    """An operator output that remembers the last ``limit`` records it forwards."""

    def __init__(self, inner: Any, limit: int) -> None:
        self.inner = inner
        self.records: collections.deque = collections.deque(maxlen=limit)
        self.seen = 0
        self.filled = threading.Event()
        self._limit = limit

    def emit(self, values: list, timestamps: Optional[list]) -> None:
        """Remember the batch's last records, then forward the batch."""
        if timestamps is None:
            self.records.extend((value, None) for value in values[-self._limit:])
        else:
            self.records.extend(zip(values[-self._limit:], timestamps[-self._limit:]))
        self.seen += len(values)
        if self.seen >= self._limit:
            self.filled.set()
        self.inner.emit(values, timestamps)

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
    time.sleep(0)  # let a batch being forwarded through the tap finish its append
    return list(tap.records)


def operator_node_ids(job_graph: Any, operator: str) -> list[tuple[int, int]]:
    """(job vertex id, stream node id) of the operator named ``operator`` (uid first, then name;
    a chain's name means its last operator). Empty when none matches."""
    wanted = operator.strip()
    nodes = [(v.id, n) for v in job_graph.vertices for n in job_graph.operators(v.id)]
    for match in ([(vid, n.id) for vid, n in nodes if n.uid == wanted],
                  [(vid, n.id) for vid, n in nodes if n.name == wanted]):
        if match:
            return match
    return [(v.id, job_graph.operators(v.id)[-1].id) for v in job_graph.vertices if v.name == wanted]
