"""Walk a Flink REST API's GET resources for one running job and record each answer's shape.

One walk for both sides of the REST fidelity test: ``scripts/record_flink_rest_answers.py``
walks a real Flink 2.3 session cluster (the templates its ``*Headers`` classes declare), and
``rest/test_flink_rest_fidelity.py`` walks streamkernel's endpoint (the templates the recording
holds), each with its own job of the same shape. Path parameters are filled from the job:
``:vertexid`` with each vertex, by role (``source``, ``map``, ``keyed``: the plan's vertices in
topological order), ``:subtaskindex`` and ``:attempt`` 0, ``:checkpointid`` the latest completed
checkpoint, ``:taskmanagerid`` the first TaskManager, ``:applicationid`` the job's application.
Standard library only (the recording script runs it too).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Mapping, Optional

from rest_shapes import metric_id_pattern, shape

__all__ = ["VERTEX_ROLES", "UNWALKED", "SKIPPED_TEMPLATES", "get", "topological", "walk", "walkable"]

#: The job's vertices in topological order, by role (both jobs have these three).
VERTEX_ROLES = ("source", "map", "keyed")

#: Path parameters one running job cannot fill (an operation's trigger id, a log or profile
#: file, a cluster data set, a rescale's uuid): their resources are not walked.
UNWALKED = {"triggerid": "an asynchronous operation's id (tests/runtime/rest/test_job_actions.py covers them)",
            "filename": "a log or profiler file's name",
            "datasetid": "a cluster data set (batch jobs' cached results)",
            "rescaleuuid": "a rescale of the adaptive scheduler (none happens in this job)"}

#: Templates not walked: YARN's GET aliases of the cancel and stop actions.
SKIPPED_TEMPLATES = ("/jobs/:jobid/yarn-cancel", "/jobs/:jobid/yarn-stop")


def get(base: str, path: str) -> tuple[int, Any]:
    """``GET base+path``: (status, parsed JSON body, or the text when it is no JSON)."""
    try:
        with urllib.request.urlopen(base + path, timeout=30) as answer:
            return answer.status, json.loads(answer.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        text = error.read().decode("utf-8", "replace")
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, text


def topological(nodes: list[dict]) -> list[str]:
    """A plan's vertex ids, each after its inputs (Flink lists the sink's vertex first)."""
    inputs = {node["id"]: [i["id"] for i in node.get("inputs", [])] for node in nodes}
    order: list[str] = []
    while len(order) < len(inputs):
        ready = [v for v, ins in inputs.items() if v not in order and all(i in order for i in ins)]
        if not ready:
            raise RuntimeError(f"the plan's nodes form no DAG: {inputs}")
        order.extend(ready)
    return order


def walkable(template: str) -> bool:
    """Whether one running job fills every path parameter of ``template``."""
    return template not in SKIPPED_TEMPLATES and not any(p in UNWALKED for p in re.findall(r":([a-z]+)", template))


def _expand(template: str, values: Mapping[str, list[tuple[str, str]]]) -> list[tuple[str, str]]:
    expanded = [("", template)]
    for name in re.findall(r":([a-z]+)", template):
        expanded = [((role or choice_role), path.replace(f":{name}", value, 1))
                    for role, path in expanded for choice_role, value in values.get(name, [])]
    return expanded


def _metric_resource(template: str) -> bool:
    return template.endswith("metrics") or template.endswith("/watermarks")


def _aggregated(template: str) -> bool:
    return template.endswith("/subtasks/metrics") or template in ("/jobs/metrics", "/taskmanagers/metrics")


def _metrics(base: str, path: str, listing: Any, operators: Mapping[str, str], template: str) -> dict[str, Any]:
    """The metric ids (as :func:`metric_id_pattern` writes them) and the shape of an answer with values."""
    ids = sorted(item["id"] for item in listing) if isinstance(listing, list) else []
    per_subtask = "/vertices/:vertexid/metrics" in template or template.endswith("/watermarks")
    entry: dict[str, Any] = {"metric_ids": sorted({metric_id_pattern(i, operators, per_subtask) for i in ids})}
    if ids and not template.endswith("/watermarks"):
        query = urllib.parse.urlencode({"get": ",".join(ids[:20])})
        extra = "&agg=min,max,sum,avg,skew" if _aggregated(template) else ""
        status, body = get(base, f"{path}?{query}{extra}")
        if status == 200:
            entry["values_shape"] = shape(body)
    return entry


def walk(base: str, job_id: str, templates: list[str], operators: Mapping[str, str],
         raw: Optional[Path] = None) -> dict[str, dict]:
    """Ask every walkable template of ``templates`` for job ``job_id`` at ``base`` (``http://host:port``).

    ``operators``: the metric-group names of the job's operators -> their role (``source``,
    ``map``, ``process``, ``sink``). Returns, by resource (the template, with ``[role]`` for a
    vertex's), ``{"status", "shape"}`` plus ``metric_ids`` and ``values_shape`` for metric
    resources. ``raw``: a directory to write each answer into as received.
    """
    details = get(base, f"/jobs/{job_id}")[1]
    vertices = dict(zip(VERTEX_ROLES, topological(details["plan"]["nodes"])))
    taskmanagers = sorted(tm["id"] for tm in get(base, "/taskmanagers")[1]["taskmanagers"])
    latest = get(base, f"/jobs/{job_id}/checkpoints")[1]["latest"]["completed"]
    applications = get(base, "/applications/overview")[1].get("applications", [])
    values = {"jobid": [("", job_id)], "vertexid": list(vertices.items()),
              "taskmanagerid": [("", taskmanagers[0])], "checkpointid": [("", str(latest["id"]))],
              "subtaskindex": [("", "0")], "attempt": [("", "0")],
              "applicationid": [("", applications[0]["id"])] if applications else []}
    recorded: dict[str, dict] = {}
    for template in templates:
        if not walkable(template):
            continue
        for role, path in _expand(template, values):
            key = f"{template} [{role}]" if role else template
            status, body = get(base, path)
            entry: dict[str, Any] = {"status": status}
            if raw is not None:
                target = raw / (re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_") + ".json")
                target.write_text(json.dumps(body, indent=1, sort_keys=True), encoding="utf-8")
            if status == 200:
                entry["shape"] = shape(body)
                if _metric_resource(template):
                    entry.update(_metrics(base, path, body, operators, template))
            recorded[key] = entry
    return recorded
