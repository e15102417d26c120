"""A subtask's metrics as Flink's REST API shows them: IO metrics, metric ids and values.

The figures come from a :meth:`~streamkernel.runtime.core.metrics.TaskMetrics.snapshot`:
the live one of the TaskManager's last heartbeat (the ResourceManager's snapshot) while the
subtask runs, the final one of its last state update once it ended.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from streamkernel.common.watermark_strategy import MIN_WATERMARK
from streamkernel.runtime.core.metrics import backpressure_level as core_backpressure_level

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
    """(backpressured, idle, busy) shares of the subtask's recent time (0 when unknown).

    Flink's ratios are over the last second: these are over the ``"recent"`` figures the REST
    context adds (about a second, or since the previous request), else, on a first look,
    averages over the subtask's whole run.
    """
    if not metrics:
        return 0.0, 0.0, 0.0
    metrics = metrics.get("recent") or metrics
    if not metrics.get("uptime_ns"):
        return 0.0, 0.0, 0.0
    uptime = float(metrics["uptime_ns"])
    return tuple(round(min(max(float(metrics.get(k, 0)) / uptime, 0.0), 1.0), 3)  # type: ignore[return-value]
                 for k in ("backpressured_ns", "idle_ns", "busy_ns"))


def backpressure_level(ratio: float) -> str:
    """Flink's level of a backpressure ratio as the REST API writes it: ``ok``, ``low`` or ``high``."""
    return core_backpressure_level(ratio).lower()


def task_metric_values(metrics: Optional[Mapping[str, Any]]) -> dict[str, float]:
    """A subtask's metrics by Flink's names (``numRecordsIn``, ``busyTimeMsPerSecond`` ...;
    a chained operator's as ``<operator>.numRecordsIn``). Per-second figures average over
    the subtask's run so far."""
    if not metrics:
        return {}
    seconds = float(metrics.get("uptime_ns", 0)) / 1e9
    back, idle, busy = ratios(metrics)
    values: dict[str, float] = {
        "numRecordsIn": metrics.get("records_in", 0), "numRecordsOut": metrics.get("records_out", 0),
        "numBytesIn": metrics.get("bytes_in", 0), "numBytesOut": metrics.get("bytes_out", 0),
        "numRecordsInPerSecond": round(metrics.get("records_in", 0) / seconds, 3) if seconds else 0.0,
        "numRecordsOutPerSecond": round(metrics.get("records_out", 0) / seconds, 3) if seconds else 0.0,
        "numBytesInPerSecond": round(metrics.get("bytes_in", 0) / seconds, 3) if seconds else 0.0,
        "numBytesOutPerSecond": round(metrics.get("bytes_out", 0) / seconds, 3) if seconds else 0.0,
        "busyTimeMsPerSecond": round(busy * 1000, 1), "idleTimeMsPerSecond": round(idle * 1000, 1),
        "backPressuredTimeMsPerSecond": round(back * 1000, 1),
        "accumulatedBusyTime": int(metrics.get("busy_ns", 0)) // 1_000_000,
        "accumulatedIdleTime": int(metrics.get("idle_ns", 0)) // 1_000_000,
        "accumulatedBackpressuredTime": int(metrics.get("backpressured_ns", 0)) // 1_000_000,
        "currentInputWatermark": metrics.get("input_watermark", MIN_WATERMARK),
        "currentOutputWatermark": metrics.get("output_watermark", MIN_WATERMARK),
    }
    for name, op in (metrics.get("operators") or {}).items():
        values[f"{name}.numRecordsIn"] = op.get("records_in", 0)
        values[f"{name}.numRecordsOut"] = op.get("records_out", 0)
    return values


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
