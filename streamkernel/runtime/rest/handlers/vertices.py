"""Vertex resources: ``/jobs/:jobid/vertices/:vertexid`` and its ``backpressure``,
``watermarks``, ``subtasktimes``, ``taskmanagers``, ``metrics``, ``jm-operator-metrics``,
``subtasks/metrics``, ``accumulators``, ``subtasks/accumulators``, and one subtask's details,
metrics, attempts and their accumulators (``subtasks/:subtaskindex[/attempts/:attempt]``)."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from streamkernel.runtime.jobmaster.job_status import JobDetails, SubtaskDetails, VertexDetails
from streamkernel.runtime.rest.context import now_ms, subtask_metrics
from streamkernel.runtime.rest.handlers.base import RestError, RestHandler, bad_parameter
from streamkernel.runtime.rest.json_views.ids import vertex_id_of
from streamkernel.runtime.rest.json_views.io_metrics import task_metric_values
from streamkernel.runtime.rest.json_views.vertices import (
    MetricsOf,
    metric_list,
    subtask_attempt_accumulators,
    subtask_details,
    subtask_times,
    subtasks_accumulators,
    subtasks_metrics,
    vertex_accumulators,
    vertex_backpressure,
    vertex_details,
    vertex_metrics,
    vertex_taskmanagers,
    vertex_watermarks,
)

__all__ = ["ROUTES"]


class _VertexHandler(RestHandler):
    """A resource of one vertex: resolves the job and the vertex, and the subtasks' metrics."""

    def lookup(self, jobid: str, vertexid: str) -> tuple[JobDetails, VertexDetails, str, MetricsOf]:
        """The job, the vertex, its JobVertexID and its subtasks' metrics (live, else final)."""
        details = self.job(jobid)
        vertex = self.vertex(details, vertexid)
        live = self.context.live_metrics()

        def metrics_of(sub: SubtaskDetails) -> Optional[Mapping[str, Any]]:
            return subtask_metrics(details, sub, live)

        return details, vertex, vertex_id_of(details.job_graph, vertex.vertex_id), metrics_of

    def subtask(self, vertex: VertexDetails, subtaskindex: str, attempt: Optional[str] = None) -> SubtaskDetails:
        """Subtask ``subtaskindex`` of the vertex (its current attempt; ``attempt``: that one, which
        must be the current: earlier attempts are not kept); 400 when malformed, 404 when unknown."""
        if not subtaskindex.isdigit():
            raise bad_parameter("subtaskindex", subtaskindex)
        index = int(subtaskindex)
        if index >= len(vertex.subtasks):
            raise RestError(404, f"Invalid subtask index {index} for vertex {vertex.name!r} of parallelism "
                                 f"{vertex.parallelism}.")
        sub = vertex.subtasks[index]
        if attempt is not None:
            if not attempt.isdigit():
                raise bad_parameter("attempt", attempt)
            if int(attempt) != sub.attempt_number:
                raise RestError(404, f"Attempt {int(attempt)} of subtask {index} of vertex {vertex.name!r} not found: "
                                     f"the current attempt is {sub.attempt_number} (earlier attempts are not kept).")
        return sub


class VertexDetailsHandler(_VertexHandler):
    """``GET /jobs/:jobid/vertices/:vertexid``: the vertex's subtasks."""

    def get(self, jobid: str, vertexid: str) -> None:
        """Flink's JobVertexDetailsInfo."""
        details, vertex, hex_id, metrics_of = self.lookup(jobid, vertexid)
        max_parallelism = -1
        if details.job_graph is not None:
            max_parallelism = details.job_graph.vertex(vertex.vertex_id).max_parallelism
        self.write_json(vertex_details(vertex, hex_id, max_parallelism, metrics_of, now_ms()))


class BackPressureHandler(_VertexHandler):
    """``GET .../backpressure``: each subtask's backpressured / idle / busy ratio and level."""

    def get(self, jobid: str, vertexid: str) -> None:
        """Flink's JobVertexBackPressureInfo."""
        _, vertex, _, metrics_of = self.lookup(jobid, vertexid)
        self.write_json(vertex_backpressure(vertex, metrics_of, now_ms()))


class FlameGraphHandler(_VertexHandler):
    """``GET .../flamegraph``: Flink's answer with ``rest.flamegraph.enabled`` false (its default):
    the feature is off (``endTimestamp`` -2, Flink's ``VertexFlameGraph.disabled()``); the Web UI's
    Flame Graph tab then says how Flink would enable it. Sampling Python stacks is not built."""

    def get(self, jobid: str, vertexid: str) -> None:
        """``{"endTimestamp": -2}`` for a known job and vertex (400/404 otherwise)."""
        self.vertex(self.job(jobid), vertexid)
        self.write_json({"endTimestamp": -2})


class WatermarksHandler(_VertexHandler):
    """``GET .../watermarks``: each subtask's current input watermark."""

    def get(self, jobid: str, vertexid: str) -> None:
        """``[{"id": "0.currentInputWatermark", "value": "..."}]``."""
        _, vertex, _, metrics_of = self.lookup(jobid, vertexid)
        self.write_json(vertex_watermarks(vertex, metrics_of))


class SubtaskTimesHandler(_VertexHandler):
    """``GET .../subtasktimes``: when each subtask entered each state."""

    def get(self, jobid: str, vertexid: str) -> None:
        """Flink's SubtasksTimesInfo."""
        _, vertex, hex_id, _ = self.lookup(jobid, vertexid)
        self.write_json(subtask_times(vertex, hex_id, now_ms()))


class VertexTaskManagersHandler(_VertexHandler):
    """``GET .../taskmanagers``: the vertex's subtasks by TaskManager."""

    def get(self, jobid: str, vertexid: str) -> None:
        """Flink's JobVertexTaskManagersInfo."""
        _, vertex, hex_id, metrics_of = self.lookup(jobid, vertexid)
        self.write_json(vertex_taskmanagers(vertex, hex_id, metrics_of, now_ms()))


class VertexMetricsHandler(_VertexHandler):
    """``GET .../metrics[?get=0.numRecordsIn,...]``: the subtasks' metrics (``<subtask>.<name>``)."""

    def get(self, jobid: str, vertexid: str) -> None:
        """Flink's metric collection (values as strings)."""
        _, vertex, _, metrics_of = self.lookup(jobid, vertexid)
        self.write_json(vertex_metrics(vertex, metrics_of, self.query_list("get")))


class SubtasksMetricsHandler(_VertexHandler):
    """``GET .../subtasks/metrics[?get=a,b&agg=min,max,sum,avg&subtasks=0,1]``: aggregated over subtasks."""

    def get(self, jobid: str, vertexid: str) -> None:
        """Flink's AggregatedMetricsResponseBody."""
        _, vertex, _, metrics_of = self.lookup(jobid, vertexid)
        modes = self.aggregation_modes()
        subtasks = self.query_list("subtasks")
        if subtasks is not None and not all(s.isdigit() for s in subtasks):
            raise RestError(400, f"Bad request, could not parse parameters: Cannot resolve query parameter "
                                 f"(subtasks) from value \"{','.join(subtasks)}\".")
        wanted = {int(s) for s in subtasks} if subtasks is not None else None
        self.write_json(subtasks_metrics(vertex, metrics_of, self.query_list("get"), modes, wanted))


class VertexAccumulatorsHandler(_VertexHandler):
    """``GET .../accumulators``: the vertex's user accumulators."""

    def get(self, jobid: str, vertexid: str) -> None:
        """Flink's JobVertexAccumulatorsInfo."""
        _, _, hex_id, _ = self.lookup(jobid, vertexid)
        self.write_json(vertex_accumulators(hex_id))


class SubtasksAccumulatorsHandler(_VertexHandler):
    """``GET .../subtasks/accumulators``: each subtask's user accumulators."""

    def get(self, jobid: str, vertexid: str) -> None:
        """Flink's SubtasksAllAccumulatorsInfo."""
        _, vertex, hex_id, _ = self.lookup(jobid, vertexid)
        self.write_json(subtasks_accumulators(vertex, hex_id))


class SubtaskDetailsHandler(_VertexHandler):
    """``GET .../subtasks/:subtaskindex``: the subtask's current attempt."""

    def get(self, jobid: str, vertexid: str, subtaskindex: str) -> None:
        """Flink's SubtaskExecutionAttemptDetailsInfo."""
        _, vertex, _, metrics_of = self.lookup(jobid, vertexid)
        sub = self.subtask(vertex, subtaskindex)
        self.write_json(subtask_details(sub, metrics_of(sub), now_ms()))


class SubtaskAttemptDetailsHandler(_VertexHandler):
    """``GET .../subtasks/:subtaskindex/attempts/:attempt``: one attempt of the subtask (the current one)."""

    def get(self, jobid: str, vertexid: str, subtaskindex: str, attempt: str) -> None:
        """Flink's SubtaskExecutionAttemptDetailsInfo."""
        _, vertex, _, metrics_of = self.lookup(jobid, vertexid)
        sub = self.subtask(vertex, subtaskindex, attempt)
        self.write_json(subtask_details(sub, metrics_of(sub), now_ms()))


class SubtaskAttemptAccumulatorsHandler(_VertexHandler):
    """``GET .../subtasks/:subtaskindex/attempts/:attempt/accumulators``: the attempt's accumulators."""

    def get(self, jobid: str, vertexid: str, subtaskindex: str, attempt: str) -> None:
        """Flink's SubtaskExecutionAttemptAccumulatorsInfo."""
        details, vertex, hex_id, _ = self.lookup(jobid, vertexid)
        self.write_json(subtask_attempt_accumulators(details.job_id, hex_id, self.subtask(vertex, subtaskindex, attempt)))


class SubtaskMetricsHandler(_VertexHandler):
    """``GET .../subtasks/:subtaskindex/metrics[?get=a,b]``: one subtask's metrics (ids without
    the subtask index: ``numRecordsIn``, ``count_per_key.numRecordsOut``)."""

    def get(self, jobid: str, vertexid: str, subtaskindex: str) -> None:
        """Flink's metric collection."""
        _, vertex, _, metrics_of = self.lookup(jobid, vertexid)
        sub = self.subtask(vertex, subtaskindex)
        self.write_json(metric_list(task_metric_values(metrics_of(sub)), self.query_list("get")))


class JobManagerOperatorMetricsHandler(_VertexHandler):
    """``GET .../jm-operator-metrics``: the metrics the JobManager keeps of the vertex's operators
    (Flink's operator coordinators'). streamkernel runs no operator coordinator for a vertex (a
    source's subtasks split their input themselves): none."""

    def get(self, jobid: str, vertexid: str) -> None:
        """Flink's metric collection, empty."""
        self.lookup(jobid, vertexid)
        self.write_json([])


_V = "/jobs/:jobid/vertices/:vertexid"
ROUTES = [
    (_V, VertexDetailsHandler),
    (_V + "/backpressure", BackPressureHandler),
    (_V + "/watermarks", WatermarksHandler),
    (_V + "/flamegraph", FlameGraphHandler),
    (_V + "/subtasktimes", SubtaskTimesHandler),
    (_V + "/taskmanagers", VertexTaskManagersHandler),
    (_V + "/metrics", VertexMetricsHandler),
    (_V + "/subtasks/metrics", SubtasksMetricsHandler),
    (_V + "/accumulators", VertexAccumulatorsHandler),
    (_V + "/subtasks/accumulators", SubtasksAccumulatorsHandler),
    (_V + "/subtasks/:subtaskindex", SubtaskDetailsHandler),
    (_V + "/subtasks/:subtaskindex/metrics", SubtaskMetricsHandler),
    (_V + "/subtasks/:subtaskindex/attempts/:attempt", SubtaskAttemptDetailsHandler),
    (_V + "/subtasks/:subtaskindex/attempts/:attempt/accumulators", SubtaskAttemptAccumulatorsHandler),
    (_V + "/jm-operator-metrics", JobManagerOperatorMetricsHandler),
]
