"""Jobs as Flink's REST API shows them: ``/jobs``, ``/jobs/overview``, ``/jobs/:jobid`` and its
``plan``, ``config``, ``exceptions`` and ``accumulators``, built from a job's published
:class:`~streamkernel.runtime.jobmaster.job_status.JobDetails` and the reader's ``now`` (a
running job's duration runs to it). The job's metrics are the JobMaster's
(:mod:`~streamkernel.runtime.jobmaster.job_metrics`)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

from streamkernel.common.job_status import JobStatus
from streamkernel.common.options import ExecutionOptions, PipelineOptions
from streamkernel.runtime.core.deployment import ExecutionState
from streamkernel.runtime.jobmaster.job_status import JobDetails, VertexDetails
from streamkernel.runtime.rest.json_views.ids import vertex_hex_ids
from streamkernel.runtime.rest.json_views.io_metrics import io_metrics, sum_io

__all__ = ["job_ids_with_status", "job_overview", "job_details", "job_plan", "job_config", "job_exceptions",
           "job_accumulators", "vertex_state", "job_type"]

_STATES = [s.value for s in ExecutionState] + ["RECONCILING"]  # Flink's ExecutionState (RECONCILING: never here)


def job_ids_with_status(jobs: Iterable[JobDetails]) -> dict:
    """``/jobs``: Flink's JobIdsWithStatusOverview."""
    return {"jobs": [{"id": d.job_id, "status": d.status.name} for d in jobs]}


def _end_time(details: JobDetails) -> int:
    return details.end_time if details.end_time is not None else -1  # Flink: -1 while not ended


def _last_modification(details: JobDetails) -> int:
    return max([details.start_time, *details.status_timestamps.values()])


def job_overview(details: JobDetails, configuration: Mapping[str, str], now: int) -> dict:
    """One entry of ``/jobs/overview`` (Flink 2.3's JobDetails JSON, what ``flink list`` reads)."""
    counts = {state.lower(): 0 for state in _STATES}
    for sub in details.subtasks:
        counts[sub.state.value.lower()] += 1
    total = len(details.subtasks)
    counts["pending"] = counts["created"] + counts["scheduled"] + counts["deploying"] + counts["initializing"]
    return {"jid": details.job_id, "name": details.job_name, "jobType": job_type(configuration),
            "schedulerType": "Default", "start-time": details.start_time,
            "end-time": _end_time(details), "duration": details.duration_at(now),
            "last-modification": _last_modification(details), "state": details.status.name,
            "tasks": {"total": total, **counts}, "pending-operators": 0}


def vertex_state(vertex: VertexDetails) -> str:
    """The aggregate ExecutionState of a vertex's subtasks (Flink's ``getAggregateJobVertexState``)."""
    counts = vertex.state_counts
    for state in ("FAILED", "CANCELING", "CANCELED", "RUNNING", "INITIALIZING", "DEPLOYING", "SCHEDULED"):
        if counts.get(state):
            return state
    finished = counts.get("FINISHED", 0)
    if finished:
        return "FINISHED" if finished == len(vertex.subtasks) else "RUNNING"
    return "CREATED"


def _vertex_times(vertex: VertexDetails, now: int) -> tuple[int, int, int]:
    starts = [s.state_timestamps.get("DEPLOYING", s.state_timestamps.get("CREATED", -1)) for s in vertex.subtasks]
    start = min((t for t in starts if t >= 0), default=-1)
    ended = [s for s in vertex.subtasks if s.state.is_terminal]
    end = -1
    if vertex.subtasks and len(ended) == len(vertex.subtasks):
        end = max((s.state_timestamps.get(s.state.value, -1) for s in ended), default=-1)
    duration = -1 if start < 0 else (end if end >= 0 else now) - start
    return start, end, duration


def job_type(configuration: Mapping[str, str]) -> str:
    """``BATCH`` when the job runs in BATCH mode, else ``STREAMING``."""
    return "BATCH" if ExecutionOptions.RUNTIME_MODE.get(configuration) == "BATCH" else "STREAMING"


def job_details(details: JobDetails, live_metrics: Mapping[tuple[int, int], Optional[Mapping[str, Any]]],
                configuration: Mapping[str, str], now: int) -> dict:
    """``/jobs/:jobid``: Flink's JobDetailsInfo. ``live_metrics``: (vertex, subtask) -> that
    subtask's metrics snapshot (live or final)."""
    ids = vertex_hex_ids(details)
    vertices: list[dict[str, Any]] = []
    status_counts = {state: 0 for state in _STATES}
    for vertex in details.vertices:
        state = vertex_state(vertex)
        status_counts[state] += 1
        start, end, duration = _vertex_times(vertex, now)
        tasks = {s: 0 for s in _STATES}
        tasks.update(vertex.state_counts)
        metrics = sum_io(io_metrics(live_metrics.get((vertex.vertex_id, s.subtask_index))) for s in vertex.subtasks)
        vertices.append({
            "id": ids[vertex.vertex_id], "slotSharingGroupId": _slot_sharing_group(details, vertex.vertex_id),
            "name": vertex.name, "maxParallelism": _max_parallelism(details, vertex.vertex_id),
            "parallelism": vertex.parallelism, "status": state, "start-time": start, "end-time": end,
            "duration": duration, "tasks": tasks, "metrics": metrics})
    timestamps = {status.name: 0 for status in JobStatus}
    timestamps.update(details.status_timestamps)
    return {
        "jid": details.job_id, "application-id": details.job_id,  # Flink 2.3: its SingleJobApplication's id
        "name": details.job_name, "isStoppable": False, "state": details.status.name,
        "job-type": job_type(configuration), "schedulerType": "Default", "start-time": details.start_time, "end-time": _end_time(details),
        "duration": details.duration_at(now),
        "maxParallelism": max((int(v["maxParallelism"]) for v in vertices), default=-1),
        "now": now, "timestamps": timestamps, "vertices": vertices, "status-counts": status_counts,
        "plan": job_plan(details, configuration)["plan"],
        "stream-graph": None,  # Flink 2.x's adaptive-graph view: streamkernel's graph is fixed at submission
        "pending-operators": 0,
    }


def _max_parallelism(details: JobDetails, vertex_id: int) -> int:
    if details.job_graph is None:
        return -1
    try:
        return details.job_graph.vertex(vertex_id).max_parallelism
    except KeyError:
        return -1


def _slot_sharing_group(details: JobDetails, vertex_id: int) -> str:
    if details.job_graph is None:
        return ""
    try:
        return details.job_graph.vertex(vertex_id).slot_sharing_group
    except KeyError:
        return ""


def job_plan(details: JobDetails, configuration: Mapping[str, str]) -> dict:
    """``/jobs/:jobid/plan``: ``{"plan": {jid, name, type, nodes}}``, the JobGraph's vertices and
    their inputs with Flink's ship strategies (FORWARD, HASH, REBALANCE ...)."""
    ids = vertex_hex_ids(details)
    nodes = []
    graph = details.job_graph
    for vertex in details.vertices:
        inputs = []
        if graph is not None:
            for num, edge in enumerate(e for e in graph.edges if e.target_vertex_id == vertex.vertex_id):
                inputs.append({"num": num, "id": ids.get(edge.source_vertex_id, ""),
                               "ship_strategy": str(edge.partitioner).upper(), "exchange": "pipelined_bounded"})
        node = {"id": ids[vertex.vertex_id], "parallelism": vertex.parallelism, "operator": "",
                "operator_strategy": "", "description": vertex.name, "optimizer_properties": {}}
        if inputs:
            node["inputs"] = inputs
        nodes.append(node)
    return {"plan": {"jid": details.job_id, "name": details.job_name, "type": job_type(configuration),
                     "nodes": nodes}}


def job_config(details: JobDetails, configuration: Mapping[str, str]) -> dict:
    """``/jobs/:jobid/config``: Flink's JobConfigInfo."""
    parallelism = max((v.parallelism for v in details.vertices), default=1)
    return {"jid": details.job_id, "name": details.job_name, "execution-config": {
        "execution-mode": "PIPELINED", "restart-strategy": details.restart_strategy or "Restart deactivated.",
        "job-parallelism": parallelism, "object-reuse-mode": bool(PipelineOptions.OBJECT_REUSE.get(configuration)),
        "user-config": {}}}  # streamkernel jobs carry no ExecutionConfig global job parameters


def job_exceptions(details: JobDetails, max_exceptions: int = 20) -> dict:
    """``/jobs/:jobid/exceptions``: Flink 2.x's exceptionHistory (newest first) and the older
    root-exception fields the spec still lists."""
    history = list(reversed(details.exception_history))
    shown = history[:max_exceptions]
    entries: list[dict[str, Any]] = [{"exceptionName": e.exception_name, "stacktrace": e.stacktrace, "timestamp": e.timestamp,
                "taskName": e.task_name, "endpoint": None, "taskManagerId": e.taskmanager_id,
                "failureLabels": {}, "concurrentExceptions": []} for e in shown]
    root = history[0] if history else None
    body: dict[str, Any] = {"exceptionHistory": {"entries": entries, "truncated": len(history) > len(shown)}}
    if root is not None:
        body.update({"root-exception": root.stacktrace, "timestamp": root.timestamp})
    else:
        body.update({"root-exception": None, "timestamp": None})
    body.update({"all-exceptions": [], "truncated": False})
    return body


def job_accumulators(accumulators: Mapping[str, Any]) -> dict:
    """``/jobs/:jobid/accumulators``: the job's accumulators (known once it ended)."""
    return {"job-accumulators": [],
            "user-task-accumulators": [{"name": k, "type": type(v).__name__, "value": str(v)}
                                       for k, v in sorted(accumulators.items())],
            "serialized-user-task-accumulators": {}}
