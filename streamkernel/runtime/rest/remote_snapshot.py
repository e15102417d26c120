"""A remote cluster's jobs, checkpoints and TaskManagers, read from Flink's REST JSON into the
plain data a MiniCluster's inspection gives (what the notebook's tables and cockpit read).

* :func:`cluster_snapshot`: ``MiniCluster.inspection.snapshot()``'s shape from ``/jobs/overview``,
  ``/jobs/:id``, ``/jobs/:id/vertices/:vid`` (subtasks with their metrics), ``/jobs/:id/checkpoints``
  and ``/taskmanagers``;
* :func:`job_details`: a job's JobDetails (vertices and subtasks);
* :func:`checkpoint_history`: ``checkpoint_history`` rows, the newest completed one with its
  per-subtask acknowledgements (``/jobs/:id/checkpoints/details/:cid/subtasks/:vid``);
* :func:`taskmanager_infos`: ``inspection.taskmanagers`` from a snapshot.

Vertices are numbered by their position in the job (the REST API names them by a hex id);
subtask metrics come from the subtask's ``metrics`` (Flink's IOMetricsInfo: records, bytes,
accumulated busy/idle/backpressured ms). REST does not say which slot a subtask occupies: a
TaskManager's subtasks are shown in slot ``subtask index modulo slots`` (slot sharing puts
the subtasks of one index together), an approximation of the real placement.
"""

from __future__ import annotations

import time
from typing import Any, Optional

from streamkernel.runtime.rest.client import RestClusterClient

__all__ = ["cluster_snapshot", "job_snapshot", "job_details", "checkpoint_history", "taskmanager_infos"]

_NS_PER_MS = 1_000_000


def _subtask(vertex_index: int, name: str, parallelism: int, sub: dict) -> dict:
    io = sub.get("metrics") or {}
    uptime_ms = int((sub.get("status-duration") or {}).get("RUNNING", 0) or 0)
    metrics = {"records_in": int(io.get("read-records", 0)), "records_out": int(io.get("write-records", 0)),
               "bytes_out": int(io.get("write-bytes", 0)), "uptime_ns": uptime_ms * _NS_PER_MS,
               "busy_ns": int(float(io.get("accumulated-busy-time", 0) or 0) * _NS_PER_MS),
               "idle_ns": int(float(io.get("accumulated-idle-time", 0) or 0) * _NS_PER_MS),
               "backpressured_ns": int(float(io.get("accumulated-backpressured-time", 0) or 0) * _NS_PER_MS),
               "input_watermark": None, "output_watermark": None}
    index = int(sub.get("subtask", 0))
    return {"vertex_id": vertex_index, "subtask": index, "name": f"{name} ({index + 1}/{parallelism})",
            "state": str(sub.get("status", "")), "attempt": int(sub.get("attempt", 0)), "slot": None,
            "taskmanager": sub.get("taskmanager-id"), "failure": None, "timestamps": {}, "metrics": metrics}


def job_snapshot(client: RestClusterClient, job_id: str, with_checkpoints: bool = True) -> dict:
    """One job in ``JobDetails.to_dict()``'s shape."""
    details = client.get(f"/jobs/{job_id}")
    vertices = []
    for position, vertex in enumerate(details.get("vertices", [])):
        name, parallelism = str(vertex.get("name", "")), int(vertex.get("parallelism", 1))
        subtasks = [_subtask(position, name, parallelism, sub)
                    for sub in client.get(f"/jobs/{job_id}/vertices/{vertex['id']}").get("subtasks", [])]
        states: dict[str, int] = {}
        for sub in subtasks:
            states[sub["state"]] = states.get(sub["state"], 0) + 1
        vertices.append({"id": position, "rest_id": str(vertex["id"]), "name": name, "parallelism": parallelism,
                         "states": states, "subtasks": subtasks})
    end = int(details.get("end-time", -1))
    job = {"job_id": str(details["jid"]), "name": str(details.get("name", "")), "status": str(details["state"]),
           "start_time": int(details.get("start-time", 0)), "end_time": end if end >= 0 else None,
           "duration_ms": int(details.get("duration", 0)),
           "timestamps": {k: v for k, v in (details.get("timestamps") or {}).items() if v},
           "attempt": 0, "slots_needed": 0, "failure": None, "failing_task": None, "num_restarts": 0,
           "restart_strategy": "", "exception_history": [], "vertices": vertices, "checkpoints": None}
    if with_checkpoints:
        job["checkpoints"] = _checkpoints(client, job_id, vertices)
    return job


def _checkpoints(client: RestClusterClient, job_id: str, vertices: list[dict]) -> Optional[dict]:
    from streamkernel.runtime.rest.client import RestClientError

    try:
        stats = client.get(f"/jobs/{job_id}/checkpoints")
    except RestClientError:  # a job without checkpointing configured
        return None
    restored = (stats.get("latest") or {}).get("restored")
    return {"counts": {k: int(v) for k, v in (stats.get("counts") or {}).items() if k != "total"},
            "history": [_history_row(c) for c in stats.get("history", [])],
            "latest_restored": None if not restored else {
                "id": restored.get("id"), "timestamp": restored.get("restore_timestamp"),
                "type": "savepoint" if restored.get("is_savepoint") else "checkpoint",
                "path": restored.get("external_path")}}


def _history_row(c: dict) -> dict:
    return {"id": int(c["id"]), "status": str(c.get("status", "")),
            "type": "savepoint" if c.get("is_savepoint") else "checkpoint",
            "trigger_timestamp": int(c.get("trigger_timestamp", 0)),
            "duration_ms": c.get("end_to_end_duration"), "state_size": int(c.get("state_size", 0) or 0),
            "unaligned": bool(c.get("unaligned", False)), "persisted_data": int(c.get("persisted_data", 0) or 0),
            "acknowledged": f"{c.get('num_acknowledged_subtasks', 0)}/{c.get('num_subtasks', 0)}",
            "path": c.get("external_path"), "failure": c.get("failure_message"), "subtasks": []}


def checkpoint_history(client: RestClusterClient, job_id: str) -> list[dict]:
    """The job's checkpoints, newest first; the newest completed one with its subtasks' acknowledgements."""
    job = job_snapshot(client, job_id)
    rows = list((job["checkpoints"] or {}).get("history") or [])
    latest = next((row for row in rows if row["status"] == "COMPLETED"), None)
    if latest is not None:
        for vertex in job["vertices"]:
            answer = client.get(f"/jobs/{job_id}/checkpoints/details/{latest['id']}/subtasks/{vertex['rest_id']}")
            for sub in answer.get("subtasks", []):
                if sub.get("status") != "completed":
                    continue
                latest["subtasks"].append({
                    "vertex_id": vertex["id"], "subtask": int(sub["index"]), "ack_timestamp": sub.get("ack_timestamp"),
                    "duration_ms": sub.get("end_to_end_duration"), "state_size": int(sub.get("state_size", 0) or 0),
                    "unaligned": bool(sub.get("unaligned_checkpoint", False)),
                    "persisted_data": int(sub.get("persisted_data", 0) or 0)})
    return rows


def job_details(client: RestClusterClient, job_id: str) -> Any:
    """The job's JobDetails (status, times, vertices with their subtasks; no JobGraph: it stays on the cluster)."""
    from streamkernel.common.job_status import JobStatus
    from streamkernel.runtime.core.deployment import ExecutionState
    from streamkernel.runtime.jobmaster.job_status import JobDetails, SubtaskDetails, VertexDetails

    job = job_snapshot(client, job_id, with_checkpoints=False)
    vertices = tuple(VertexDetails(v["id"], v["name"], v["parallelism"], tuple(
        SubtaskDetails(v["id"], s["subtask"], s["name"], ExecutionState(s["state"]), s["attempt"],
                       taskmanager_id=s["taskmanager"], metrics=s["metrics"]) for s in v["subtasks"]))
        for v in job["vertices"])
    return JobDetails(job["job_id"], job["name"], JobStatus[job["status"]], job["start_time"], job["end_time"],
                      job["duration_ms"], vertices, status_timestamps=job["timestamps"])


def cluster_snapshot(client: RestClusterClient) -> dict:
    """The remote cluster in ``MiniCluster.inspection.snapshot()``'s shape."""
    now = time.time_ns() // _NS_PER_MS
    jobs = [job_snapshot(client, str(j["jid"])) for j in client.get("/jobs/overview").get("jobs", [])]
    running = [j for j in jobs if j["status"] not in ("FINISHED", "CANCELED", "FAILED")]
    taskmanagers: list[dict[str, Any]] = []
    for index, tm in enumerate(sorted(client.get("/taskmanagers").get("taskmanagers", []), key=lambda t: t["id"])):
        count = int(tm.get("slotsNumber", 0))
        slots: list[dict] = [{"slot": f"TM{index + 1}/slot{i + 1}", "index": i, "job_id": None, "job_name": None, "tasks": []}
                             for i in range(count)]
        for job in running:
            for vertex in job["vertices"]:
                for sub in vertex["subtasks"]:
                    if sub["taskmanager"] == tm["id"] and sub["state"] in ("DEPLOYING", "INITIALIZING", "RUNNING") \
                            and count:
                        slot = slots[sub["subtask"] % count]
                        slot.update(job_id=job["job_id"], job_name=job["name"])
                        slot["tasks"].append(sub["name"])
        taskmanagers.append({"id": str(tm["id"]), "index": index, "heartbeat_age_ms": None,
                             "placement": {"backend": "remote", "host": str(tm.get("path", ""))}, "slots": slots})
    all_slots = [s for tm in taskmanagers for s in tm["slots"]]
    return {"running": True, "backend": "remote", "time": now, "taskmanagers": taskmanagers,
            "slots": {"total": len(all_slots), "free": sum(1 for s in all_slots if s["job_id"] is None)},
            "pending_slot_requests": {}, "jobs": jobs}


def taskmanager_infos(snapshot: dict) -> tuple[Any, ...]:
    """``inspection.taskmanagers`` (TaskManagerInfo with SlotOccupancy rows) from a snapshot."""
    from streamkernel.graph.execution_graph import SlotId
    from streamkernel.runtime.minicluster.inspection import SlotOccupancy, TaskManagerInfo

    return tuple(TaskManagerInfo(tm["id"], tm["index"], tuple(
        SlotOccupancy(SlotId(tm["index"], s["index"]), s["job_id"], s["job_name"], tuple(s["tasks"]))
        for s in tm["slots"])) for tm in snapshot["taskmanagers"])
