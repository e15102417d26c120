"""The last minute of every subtask's counters, from successive cluster snapshots.

A snapshot holds counters since a subtask started (records in/out, busy, idle and
backpressured nanoseconds, uptime). Rates and time ratios are differences between two
snapshots, as Flink's web UI shows them (``numRecordsInPerSecond``,
``busyTimeMsPerSecond``, ``backPressuredTimeMsPerSecond``): :class:`MetricsHistory` keeps
one sample per subtask per snapshot for ``window_s`` seconds and answers with the rate
over the newest interval and a series for sparklines. A restarted subtask (a new attempt)
starts a new series: its counters start from zero again.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any, Deque, Mapping

__all__ = ["Sample", "Rates", "MetricsHistory", "SubtaskKey", "sample_of"]

#: (job id, job vertex id, subtask index)
SubtaskKey = tuple[str, int, int]


@dataclass(frozen=True)
class Sample:
    """One subtask's counters at one snapshot (``time_ms``: the snapshot's wall-clock time)."""

    time_ms: int
    attempt: int
    records_in: int
    records_out: int
    busy_ns: int
    idle_ns: int
    backpressured_ns: int
    uptime_ns: int


@dataclass(frozen=True)
class Rates:
    """A subtask's rates over the newest interval: records per second and time shares (0..1)."""

    records_in_per_s: float = 0.0
    records_out_per_s: float = 0.0
    busy: float = 0.0
    idle: float = 0.0
    backpressured: float = 0.0


def sample_of(metrics: Mapping[str, Any], time_ms: int, attempt: int) -> Sample:
    """A :class:`Sample` from a subtask's ``metrics`` entry of a snapshot."""
    return Sample(time_ms, attempt, int(metrics.get("records_in", 0)), int(metrics.get("records_out", 0)),
                  int(metrics.get("busy_ns", 0)), int(metrics.get("idle_ns", 0)),
                  int(metrics.get("backpressured_ns", 0)), int(metrics.get("uptime_ns", 0)))


class MetricsHistory:
    """Samples of every subtask for the last ``window_s`` seconds (not thread-safe: its refresher
    feeds it one snapshot at a time)."""

    def __init__(self, window_s: float = 60.0) -> None:
        self.window_ms = int(window_s * 1000)
        self._samples: dict[SubtaskKey, Deque[Sample]] = {}

    def add_snapshot(self, snapshot: Mapping[str, Any]) -> None:
        """Record the counters of every subtask in ``snapshot`` that carries metrics."""
        now = int(snapshot.get("time", 0))
        for job in snapshot.get("jobs", ()):
            for vertex in job.get("vertices", ()):
                for sub in vertex.get("subtasks", ()):
                    metrics = sub.get("metrics")
                    if metrics:
                        self.add((job["job_id"], vertex["id"], sub["subtask"]),
                                 sample_of(metrics, now, int(sub.get("attempt", 0))))

    def add(self, key: SubtaskKey, sample: Sample) -> None:
        """Append one sample; an older attempt's samples are dropped; samples beyond the window too."""
        series = self._samples.setdefault(key, collections.deque())
        if series and (series[-1].attempt != sample.attempt or sample.uptime_ns < series[-1].uptime_ns):
            series.clear()
        if series and series[-1].time_ms >= sample.time_ms:
            return  # the same snapshot twice
        series.append(sample)
        while len(series) > 2 and sample.time_ms - series[0].time_ms > self.window_ms:
            series.popleft()

    def rates(self, key: SubtaskKey) -> Rates:
        """Rates over the newest interval (zeros before two samples exist)."""
        series = self._samples.get(key)
        if not series or len(series) < 2:
            return Rates()
        return _rates(series[-2], series[-1])

    def series(self, key: SubtaskKey, what: str = "records_out_per_s") -> list[float]:
        """One value of ``what`` (a :class:`Rates` field) per interval of the window, oldest first."""
        samples = list(self._samples.get(key, ()))
        return [getattr(_rates(a, b), what) for a, b in zip(samples, samples[1:])]

    def forget_job(self, job_id: str) -> None:
        """Drop every sample of a job."""
        for key in [k for k in self._samples if k[0] == job_id]:
            del self._samples[key]


def _rates(a: Sample, b: Sample) -> Rates:
    seconds = max((b.time_ms - a.time_ms) / 1000.0, 1e-3)
    elapsed_ns = max(b.uptime_ns - a.uptime_ns, 1)

    def share(delta: int) -> float:
        return min(max(delta / elapsed_ns, 0.0), 1.0)

    return Rates(records_in_per_s=max(b.records_in - a.records_in, 0) / seconds,
                 records_out_per_s=max(b.records_out - a.records_out, 0) / seconds,
                 busy=share(b.busy_ns - a.busy_ns), idle=share(b.idle_ns - a.idle_ns),
                 backpressured=share(b.backpressured_ns - a.backpressured_ns))

