"""One job vertex as Flink's REST API shows it: ``/jobs/:jobid/vertices/:vertexid`` and its
``backpressure``, ``watermarks``, ``subtasktimes``, ``taskmanagers``, ``metrics`` and
``subtasks/metrics``."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional

from streamkernel.runtime.jobmaster.job_status import SubtaskDetails, VertexDetails
from streamkernel.runtime.rest.json_views.io_metrics import (
    aggregate,
    backpressure_level,
    io_metrics,
    ratios,
    sum_io,
    task_metric_values,
)

__all__ = ["vertex_details", "vertex_backpressure", "vertex_watermarks", "subtask_times", "vertex_taskmanagers",
           "vertex_metrics", "subtasks_metrics", "metric_list", "vertex_accumulators", "subtasks_accumulators"]

#: A subtask's metrics snapshot (live or final), by subtask.
MetricsOf = Callable[[SubtaskDetails], Optional[Mapping[str, Any]]]


def _times(sub: SubtaskDetails, now: int) -> tuple[int, int, int]:
    start = sub.state_timestamps.get("DEPLOYING", sub.state_timestamps.get("CREATED", -1))
    end = sub.state_timestamps.get(sub.state.value, -1) if sub.state.is_terminal else -1
    duration = -1 if start < 0 else (end if end >= 0 else now) - start
    return start, end, duration


def _endpoint(sub: SubtaskDetails) -> str:
    return sub.taskmanager_id or "(unassigned)"


def _subtask(sub: SubtaskDetails, metrics: Optional[Mapping[str, Any]], now: int) -> dict:
    start, end, duration = _times(sub, now)
    status_duration = {state: 0 for state in ("CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING")}
    ordered = sorted(sub.state_timestamps.items(), key=lambda item: item[1])
    for (state, at), (_, until) in zip(ordered, ordered[1:] + [("", now)]):
        if state in status_duration:
            status_duration[state] = max(until - at, 0)
    return {"subtask": sub.subtask_index, "status": sub.state.value, "attempt": sub.attempt_number,
            "endpoint": _endpoint(sub), "start-time": start, "end-time": end, "duration": duration,
            "metrics": io_metrics(metrics), "taskmanager-id": sub.taskmanager_id or "(unassigned)",
            "status-duration": status_duration, "start_time": start}


def vertex_details(vertex: VertexDetails, hex_id: str, max_parallelism: int, metrics_of: MetricsOf,
                   now: int) -> dict:
    """Flink's JobVertexDetailsInfo: the vertex and one entry per subtask (current attempt)."""
    return {"id": hex_id, "name": vertex.name, "parallelism": vertex.parallelism, "maxParallelism": max_parallelism,
            "now": now, "subtasks": [_subtask(s, metrics_of(s), now) for s in vertex.subtasks]}


def vertex_backpressure(vertex: VertexDetails, metrics_of: MetricsOf, now: int) -> dict:
    """Flink's JobVertexBackPressureInfo from the subtasks' backpressured / idle / busy time.

    The level is under both names the dashboard reads (``backpressureLevel`` and
    ``backpressure-level``)."""
    subtasks: list[dict[str, Any]] = []
    worst_ratio = 0.0
    for sub in vertex.subtasks:
        back, idle, busy = ratios(metrics_of(sub))
        worst_ratio = max(worst_ratio, back)
        level = backpressure_level(back)
        subtasks.append({"subtask": sub.subtask_index, "attempt-number": sub.attempt_number,
                         "backpressureLevel": level, "backpressure-level": level, "ratio": back,
                         "idleRatio": idle, "busyRatio": busy})
    worst = backpressure_level(worst_ratio)
    return {"status": "ok", "backpressureLevel": worst, "backpressure-level": worst, "end-timestamp": now,
            "subtasks": subtasks}


def vertex_watermarks(vertex: VertexDetails, metrics_of: MetricsOf) -> list[dict]:
    """``[{"id": "0.currentInputWatermark", "value": "123"}]``: each subtask's input watermark
    (Flink's Long.MIN_VALUE while none arrived), values as strings as Flink sends them."""
    rows = []
    for sub in vertex.subtasks:
        values = task_metric_values(metrics_of(sub))
        if "currentInputWatermark" in values:
            rows.append({"id": f"{sub.subtask_index}.currentInputWatermark",
                         "value": str(values["currentInputWatermark"])})
    return rows


def subtask_times(vertex: VertexDetails, hex_id: str, now: int) -> dict:
    """Flink's SubtasksTimesInfo: when each subtask entered each state."""
    return {"id": hex_id, "name": vertex.name, "now": now, "subtasks": [
        {"subtask": s.subtask_index, "host": _endpoint(s), "endpoint": _endpoint(s), "duration": _times(s, now)[2],
         "timestamps": dict(s.state_timestamps)} for s in vertex.subtasks]}


def vertex_taskmanagers(vertex: VertexDetails, hex_id: str, metrics_of: MetricsOf, now: int) -> dict:
    """Flink's JobVertexTaskManagersInfo: the vertex's subtasks grouped by TaskManager."""
    by_tm: dict[str, list[SubtaskDetails]] = {}
    for sub in vertex.subtasks:
        by_tm.setdefault(_endpoint(sub), []).append(sub)
    rows = []
    for tm, subs in by_tm.items():
        times = [_times(s, now) for s in subs]
        starts = [t[0] for t in times if t[0] >= 0]
        start = min(starts, default=-1)
        ended = all(s.state.is_terminal for s in subs)
        end = max((t[1] for t in times), default=-1) if ended else -1
        counts: dict[str, int] = {}
        for s in subs:
            counts[s.state.value] = counts.get(s.state.value, 0) + 1
        status = next((st for st in ("FAILED", "CANCELING", "CANCELED", "RUNNING") if counts.get(st)),
                      subs[0].state.value)
        rows.append({"endpoint": tm, "taskmanager-id": tm, "status": status, "start-time": start, "end-time": end,
                     "duration": -1 if start < 0 else (end if end >= 0 else now) - start,
                     "metrics": sum_io(io_metrics(metrics_of(s)) for s in subs), "status-counts": counts})
    return {"id": hex_id, "name": vertex.name, "now": now, "taskmanagers": rows}


def vertex_accumulators(hex_id: str) -> dict:
    """Flink's JobVertexAccumulatorsInfo. streamkernel's accumulators are the job's, known once
    it ended (``/jobs/:jobid/accumulators``); a vertex has none of its own."""
    return {"id": hex_id, "user-accumulators": []}


def subtasks_accumulators(vertex: VertexDetails, hex_id: str) -> dict:
    """Flink's SubtasksAllAccumulatorsInfo: each subtask (current attempt, where it runs), none
    with accumulators of its own (see :func:`vertex_accumulators`)."""
    return {"id": hex_id, "parallelism": vertex.parallelism, "subtasks": [
        {"subtask": s.subtask_index, "attempt": s.attempt_number, "endpoint": _endpoint(s),
         "user-accumulators": []} for s in vertex.subtasks]}


def _per_subtask(vertex: VertexDetails, metrics_of: MetricsOf) -> dict[int, dict[str, Any]]:
    return {s.subtask_index: task_metric_values(metrics_of(s)) for s in vertex.subtasks}


def metric_list(values: Mapping[str, Any], wanted: Optional[Iterable[str]]) -> list[dict]:
    """Flink's metric collection: without ``wanted`` the ids, else ``{"id", "value"}`` of each
    wanted id that exists, the value as a string."""
    if wanted is None:
        return [{"id": name} for name in sorted(values)]
    return [{"id": name, "value": str(values[name])} for name in wanted if name in values]


def vertex_metrics(vertex: VertexDetails, metrics_of: MetricsOf, wanted: Optional[list[str]]) -> list[dict]:
    """``/vertices/:vertexid/metrics``: ids ``<subtask>.<metric>`` (``0.numRecordsIn``)."""
    values = {f"{index}.{name}": value for index, named in _per_subtask(vertex, metrics_of).items()
              for name, value in named.items()}
    return metric_list(values, wanted)


def subtasks_metrics(vertex: VertexDetails, metrics_of: MetricsOf, wanted: Optional[list[str]],
                     modes: list[str], subtasks: Optional[set[int]] = None) -> list[dict]:
    """``/vertices/:vertexid/subtasks/metrics``: each metric aggregated over the subtasks
    (``min``, ``max``, ``sum``, ``avg``, ``skew``; all but skew without ``agg``)."""
    per = {i: v for i, v in _per_subtask(vertex, metrics_of).items() if subtasks is None or i in subtasks}
    names = sorted({name for named in per.values() for name in named})
    if wanted is None:
        return [{"id": name} for name in names]
    rows = []
    for name in wanted:
        numbers = [float(named[name]) for named in per.values() if isinstance(named.get(name), (int, float))]
        if numbers:
            rows.append({"id": name, **aggregate(numbers, modes)})
    return rows
