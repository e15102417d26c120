"""One job vertex as Flink's REST API shows it: ``/jobs/:jobid/vertices/:vertexid`` and its
``backpressure``, ``watermarks``, ``subtasktimes``, ``taskmanagers``, ``metrics``,
``subtasks/metrics`` and one subtask (``subtasks/:subtaskindex``, its attempts and their
accumulators).

``aggregated`` (Flink 1.17+) sums up the subtasks of a vertex, or of a vertex on one
TaskManager: each IO metric and each state's duration as ``min``, ``max``, ``avg``, ``sum``,
``median``, ``p25``, ``p75`` and ``p95`` (whole numbers, quantiles as Flink's
:func:`~streamkernel.runtime.core.statistics.percentile`)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from streamkernel.runtime.core.deployment import ExecutionState
from streamkernel.runtime.core.statistics import percentile
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
           "vertex_metrics", "subtasks_metrics", "metric_list", "vertex_accumulators", "subtasks_accumulators",
           "subtask_details", "subtask_attempt_accumulators", "aggregated", "EXECUTION_STATES", "attempt_id"]

#: Flink's ExecutionState values (RECONCILING too: Flink lists it, streamkernel never enters it).
EXECUTION_STATES = tuple(s.value for s in ExecutionState) + ("RECONCILING",)
#: The states whose time Flink's ``status-duration`` shows.
_TIMED_STATES = ("CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING")
#: The IO metrics Flink's ``aggregated.metrics`` shows, by their IOMetricsInfo names.
_AGGREGATED_IO = ("read-bytes", "write-bytes", "read-records", "write-records", "accumulated-backpressured-time",
                  "accumulated-idle-time", "accumulated-busy-time")

#: A subtask's metrics snapshot (live or final), by subtask.
MetricsOf = Callable[[SubtaskDetails], Optional[Mapping[str, Any]]]


def _times(sub: SubtaskDetails, now: int) -> tuple[int, int, int]:
    start = sub.state_timestamps.get("DEPLOYING", sub.state_timestamps.get("CREATED", -1))
    end = sub.state_timestamps.get(sub.state.value, -1) if sub.state.is_terminal else -1
    duration = -1 if start < 0 else (end if end >= 0 else now) - start
    return start, end, duration


def _endpoint(sub: SubtaskDetails) -> str:
    return sub.taskmanager_id or "(unassigned)"


def _status_duration(sub: SubtaskDetails, now: int) -> dict[str, int]:
    """How long the subtask's current attempt was in each of :data:`_TIMED_STATES` (0: never;
    the state it is in: until now)."""
    status_duration = {state: 0 for state in _TIMED_STATES}
    ordered = sorted(sub.state_timestamps.items(), key=lambda item: item[1])
    for (state, at), (_, until) in zip(ordered, ordered[1:] + [("", now)]):
        if state in status_duration:
            status_duration[state] = max(until - at, 0)
    return status_duration


def subtask_details(sub: SubtaskDetails, metrics: Optional[Mapping[str, Any]], now: int) -> dict:
    """Flink's SubtaskExecutionAttemptDetailsInfo of the subtask's current attempt (an entry of
    the vertex's ``subtasks``, and ``.../subtasks/:subtaskindex[/attempts/:attempt]``)."""
    start, end, duration = _times(sub, now)
    return {"subtask": sub.subtask_index, "status": sub.state.value, "attempt": sub.attempt_number,
            "endpoint": _endpoint(sub), "start-time": start, "end-time": end, "duration": duration,
            "metrics": io_metrics(metrics), "taskmanager-id": sub.taskmanager_id or "(unassigned)",
            "status-duration": _status_duration(sub, now), "start_time": start}


def aggregated(entries: Sequence[Mapping[str, Any]]) -> dict:
    """Flink's AggregatedTaskDetailsInfo over subtask entries (each with ``metrics``, its
    IOMetricsInfo, and ``status-duration``)."""
    def stats(values: list[float]) -> dict[str, int]:
        ordered = sorted(values)
        if not ordered:
            return {k: 0 for k in ("min", "max", "avg", "sum", "median", "p25", "p75", "p95")}
        return {"min": int(ordered[0]), "max": int(ordered[-1]), "avg": int(sum(ordered) / len(ordered)),
                "sum": int(sum(ordered)), "median": int(percentile(ordered, 0.5)),
                "p25": int(percentile(ordered, 0.25)), "p75": int(percentile(ordered, 0.75)),
                "p95": int(percentile(ordered, 0.95))}

    return {"metrics": {name: stats([float(e["metrics"][name]) for e in entries]) for name in _AGGREGATED_IO},
            "status-duration": {state: stats([float(e["status-duration"][state]) for e in entries])
                                for state in _TIMED_STATES}}


def vertex_details(vertex: VertexDetails, hex_id: str, max_parallelism: int, metrics_of: MetricsOf,
                   now: int) -> dict:
    """Flink's JobVertexDetailsInfo: the vertex, one entry per subtask (current attempt) and
    their ``aggregated`` figures."""
    subtasks = [subtask_details(s, metrics_of(s), now) for s in vertex.subtasks]
    return {"id": hex_id, "name": vertex.name, "parallelism": vertex.parallelism, "maxParallelism": max_parallelism,
            "now": now, "subtasks": subtasks, "aggregated": aggregated(subtasks)}


def attempt_id(job_id: str, hex_id: str, sub: SubtaskDetails) -> str:
    """Flink's ExecutionAttemptID text of the subtask's current attempt:
    ``<execution graph id>_<vertex id>_<subtask>_<attempt>`` (the job's id stands for the
    execution graph's: streamkernel builds one per job)."""
    return f"{job_id}_{hex_id}_{sub.subtask_index}_{sub.attempt_number}"


def subtask_attempt_accumulators(job_id: str, hex_id: str, sub: SubtaskDetails) -> dict:
    """Flink's SubtaskExecutionAttemptAccumulatorsInfo: none of a subtask's own (see
    :func:`vertex_accumulators`)."""
    return {"subtask": sub.subtask_index, "attempt": sub.attempt_number, "id": attempt_id(job_id, hex_id, sub),
            "user-accumulators": []}


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
         "timestamps": {state: int(s.state_timestamps.get(state, 0)) for state in EXECUTION_STATES}}
        for s in vertex.subtasks]}


def vertex_taskmanagers(vertex: VertexDetails, hex_id: str, metrics_of: MetricsOf, now: int) -> dict:
    """Flink's JobVertexTaskManagersInfo: the vertex's subtasks grouped by TaskManager, with how
    many are in each ExecutionState and their ``aggregated`` figures."""
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
        counts = {state: 0 for state in EXECUTION_STATES}
        for s in subs:
            counts[s.state.value] += 1
        status = next((st for st in ("FAILED", "CANCELING", "CANCELED", "RUNNING") if counts.get(st)),
                      subs[0].state.value)
        entries = [subtask_details(s, metrics_of(s), now) for s in subs]
        rows.append({"endpoint": tm, "taskmanager-id": tm, "status": status, "start-time": start, "end-time": end,
                     "duration": -1 if start < 0 else (end if end >= 0 else now) - start,
                     "metrics": sum_io(e["metrics"] for e in entries), "status-counts": counts,
                     "aggregated": aggregated(entries)})
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
    wanted id that exists, the value as a string as Java writes it (``true``, ``NaN``)."""
    if wanted is None:
        return [{"id": name} for name in sorted(values)]
    return [{"id": name, "value": _metric_text(values[name])} for name in wanted if name in values]


def _metric_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value != value:
        return "NaN"
    return str(value)


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
