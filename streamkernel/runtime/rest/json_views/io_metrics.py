"""A subtask's metrics as Flink's REST API shows them: IO metrics, metric ids and values
(:func:`~streamkernel.runtime.core.task_metric_values.task_metric_values`, shared with metric
reporters, is re-exported here).

The figures come from a :meth:`~streamkernel.runtime.core.metrics.TaskMetrics.snapshot`:
the live one of the TaskManager's last heartbeat (the ResourceManager's snapshot) while the
subtask runs, the final one of its last state update once it ended.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from streamkernel.runtime.core.metrics import backpressure_level as core_backpressure_level
from streamkernel.runtime.core.task_metric_values import task_metric_values, time_ratios

__all__ = ["io_metrics", "task_metric_values", "aggregate", "backpressure_level", "ratios", "EMPTY_IO"]

#: Flink's IOMetricsInfo of a subtask that never reported.
EMPTY_IO: dict[str, Any] = {
    "read-bytes": 0, "read-bytes-complete": False, "write-bytes": 0, "write-bytes-complete": False,
    "read-records": 0, "read-records-complete": False, "write-records": 0, "write-records-complete": False,
    "accumulated-backpressured-time": 0, "accumulated-idle-time": 0, "accumulated-busy-time": 0.0,
}


def io_metrics(metrics: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """Flink's IOMetricsInfo of one subtask (``metrics``: its snapshot, None when unknown).

    Bytes are those of the frames that crossed a process boundary (a TaskManager's network
    channels, as Flink's ``numBytesIn``/``numBytesOut`` count its buffers); an exchange between
    two tasks of one process hands objects over and counts none.
    """
    if not metrics:
        return dict(EMPTY_IO)
    return {
        "read-bytes": int(metrics.get("bytes_in", 0)), "read-bytes-complete": True,
        "write-bytes": int(metrics.get("bytes_out", 0)), "write-bytes-complete": True,
        "read-records": int(metrics.get("records_in", 0)), "read-records-complete": True,
        "write-records": int(metrics.get("records_out", 0)), "write-records-complete": True,
        "accumulated-backpressured-time": int(metrics.get("backpressured_ns", 0)) // 1_000_000,
        "accumulated-idle-time": int(metrics.get("idle_ns", 0)) // 1_000_000,
        "accumulated-busy-time": float(int(metrics.get("busy_ns", 0)) // 1_000_000),
    }


def sum_io(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The IO metrics of a vertex: its subtasks' summed (complete when every part is)."""
    total = dict(EMPTY_IO)
    parts = list(parts)
    for key in total:
        if key.endswith("-complete"):
            total[key] = bool(parts) and all(p[key] for p in parts)
        else:
            total[key] = sum(p[key] for p in parts)
    return total


def ratios(metrics: Optional[Mapping[str, Any]]) -> tuple[float, float, float]:
    """(backpressured, idle, busy) shares of the subtask's recent time (0 when unknown): over the
    ``"recent"`` figures the REST context adds (about a second, as Flink's are), else, on a first
    look, averaged over the subtask's whole run (:func:`~streamkernel.runtime.core.task_metric_values.time_ratios`)."""
    return time_ratios(metrics)


def backpressure_level(ratio: float) -> str:
    """Flink's level of a backpressure ratio as the REST API writes it: ``ok``, ``low`` or ``high``."""
    return core_backpressure_level(ratio).lower()


def aggregate(values: list[float], modes: Iterable[str]) -> dict[str, float]:
    """Flink's AggregatedMetric fields (``min``, ``max``, ``sum``, ``avg``, ``skew``) asked for in ``modes``."""
    result: dict[str, float] = {}
    if not values:
        return result
    avg = sum(values) / len(values)
    figures = {"min": min(values), "max": max(values), "sum": sum(values), "avg": avg,
               "skew": round((max(values) - avg) / avg * 100) if avg else 0}
    for mode in modes:
        result[mode] = figures[mode]
    return result
