"""Recent time figures of running subtasks: what Flink's ``busyTimeMsPerSecond`` and its kin are over.

A subtask's metrics snapshot counts its busy, idle and backpressured time since it started. Flink's
``*TimeMsPerSecond`` gauges are about the last second, so a reader that wants them (the REST API,
a metric reporter) keeps a few earlier samples of each subtask and adds the difference to the
newest one under ``"recent"``: :class:`RecentTimes`. Each reader keeps its own (two readers asking
at different rates would otherwise shorten each other's window).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Hashable, Iterable, Mapping

__all__ = ["RecentTimes", "RECENT_WINDOW_NS", "TIME_FIGURES"]

#: How far back the "recent" busy / idle / backpressured figures look at least (Flink's are per second).
RECENT_WINDOW_NS = 1_000_000_000
#: The figures of a snapshot the window applies to (uptime first: the window's length).
TIME_FIGURES = ("uptime_ns", "backpressured_ns", "idle_ns", "busy_ns")


class RecentTimes:
    """Earlier samples of each subtask's time figures, and its metrics with the recent part added.

    ``with_recent(key, metrics)`` returns ``metrics`` with ``"recent"``: each time figure since
    about a second ago (or since the previous call for ``key``, when that is longer ago), once an
    earlier call saw ``key`` at least a fifth of the window before; before that, ``metrics`` as
    they are (readers then average over the whole run). ``retain(keys)`` forgets the others.

    >>> recent = RecentTimes()
    >>> first = {"uptime_ns": 1_000_000_000, "backpressured_ns": 0, "idle_ns": 900_000_000, "busy_ns": 100_000_000}
    >>> recent.with_recent("a", first) is first
    True
    >>> later = {"uptime_ns": 2_000_000_000, "backpressured_ns": 0, "idle_ns": 900_000_000, "busy_ns": 1_100_000_000}
    >>> recent.with_recent("a", later)["recent"]["busy_ns"]
    1000000000
    """

    def __init__(self) -> None:
        # The lock guards _samples: readers call from any thread (REST handlers, scrapes).
        self._lock = threading.Lock()
        self._samples: dict[Hashable, deque[tuple[int, ...]]] = {}

    def retain(self, keys: Iterable[Hashable]) -> None:
        """Forget every subtask but ``keys`` (those no longer running)."""
        keep = set(keys)
        with self._lock:
            for key in [k for k in self._samples if k not in keep]:
                del self._samples[key]

    def with_recent(self, key: Hashable, metrics: Mapping[str, Any]) -> Mapping[str, Any]:
        """``metrics`` with their recent time figures under ``"recent"`` (see the class)."""
        if not all(isinstance(metrics.get(k), int) for k in TIME_FIGURES):
            return metrics
        sample = tuple(int(metrics[k]) for k in TIME_FIGURES)
        with self._lock:
            samples = self._samples.setdefault(key, deque(maxlen=64))
            if not samples or samples[-1][0] != sample[0]:
                samples.append(sample)
            while len(samples) > 2 and sample[0] - samples[1][0] >= RECENT_WINDOW_NS:
                samples.popleft()  # the oldest kept is the newest one at least a window old
            base = samples[0]
        if sample[0] - base[0] < RECENT_WINDOW_NS // 5:
            return metrics
        return {**metrics, "recent": {k: now - then for k, now, then in zip(TIME_FIGURES, sample, base)}}
