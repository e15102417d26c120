"""Recent figures of a subtask: the difference between its newest snapshot and one about a second old.

Flink's per-second metrics (``numRecordsInPerSecond``, ``busyTimeMsPerSecond``,
``mailboxMailsPerSecond`` ...) are over the recent past, not the whole run. A task keeps only
counters (:class:`~.metrics.TaskMetrics`); whoever shows rates keeps a few of its snapshots
(the REST endpoint's context, a metric reporter) in a :class:`MetricSampler` and asks
:meth:`MetricSampler.with_recent` for a snapshot carrying, under ``"recent"``, each counter's
growth since the oldest kept sample that is at least :data:`RECENT_WINDOW_NS` old (or since the
first sample, once that is a fifth of the window old). :mod:`.task_metric_values` turns it into
Flink's metrics. Samples are taken when asked (a request, a report), never by the task.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Hashable, Iterable, Mapping

__all__ = ["MetricSampler", "RECENT_WINDOW_NS", "COUNTERS"]

#: How far back the recent figures look at least (Flink's time ratios are per second).
RECENT_WINDOW_NS = 1_000_000_000

#: The snapshot's counters whose growth is recent (``uptime_ns`` first: the window's length).
COUNTERS = ("uptime_ns", "backpressured_ns", "idle_ns", "busy_ns", "records_in", "records_out", "bytes_in",
            "bytes_out", "buffers_out", "buffers_in_local", "buffers_in_remote", "bytes_in_local", "bytes_in_remote",
            "fired_timers", "mails")
_OPERATOR_COUNTERS = ("records_in", "records_out")
_SAMPLES = 64


class MetricSampler:
    """A few samples per key (a subtask attempt) of its snapshots' counters; thread-safe.

    >>> sampler = MetricSampler()
    >>> _ = sampler.with_recent("a", {"uptime_ns": 0, "records_in": 0})
    >>> sampler.with_recent("a", {"uptime_ns": 1_000_000_000, "records_in": 50})["recent"]["records_in"]
    50
    """

    def __init__(self) -> None:
        self._samples: dict[Hashable, deque[tuple[dict[str, int], dict[str, dict[str, int]]]]] = {}
        self._lock = threading.Lock()  # the endpoint answers from several threads (and a reporter may ask)

    def forget_all_but(self, keys: Iterable[Hashable]) -> None:
        """Drop the samples of every key not in ``keys`` (attempts that ended)."""
        alive = set(keys)
        with self._lock:
            for key in [k for k in self._samples if k not in alive]:
                del self._samples[key]

    def with_recent(self, key: Hashable, metrics: Mapping[str, Any]) -> Mapping[str, Any]:
        """``metrics`` plus ``"recent"`` (the counters' growth over about a second, and the
        ``"operators"``' records), once an earlier sample of ``key`` is old enough; else as is."""
        if not isinstance(metrics.get("uptime_ns"), int):
            return metrics
        counters = {k: int(metrics[k]) for k in COUNTERS if isinstance(metrics.get(k), (int, bool))}
        operators = {name: {k: int(op.get(k, 0)) for k in _OPERATOR_COUNTERS}
                     for name, op in (metrics.get("operators") or {}).items()}
        now = counters["uptime_ns"]
        with self._lock:
            samples = self._samples.setdefault(key, deque(maxlen=_SAMPLES))
            if not samples or samples[-1][0]["uptime_ns"] != now:
                samples.append((counters, operators))
            while len(samples) > 2 and now - samples[1][0]["uptime_ns"] >= RECENT_WINDOW_NS:
                samples.popleft()  # the oldest kept is the newest one at least a window old
            base, base_operators = samples[0]
        if now - base["uptime_ns"] < RECENT_WINDOW_NS // 5:
            return metrics
        recent: dict[str, Any] = {k: v - base[k] for k, v in counters.items() if k in base}
        recent["operators"] = {name: {k: v - base_operators[name][k] for k, v in op.items()}
                               for name, op in operators.items() if name in base_operators}
        return {**metrics, "recent": recent}
