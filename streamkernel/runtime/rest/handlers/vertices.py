"""Vertex resources: ``/jobs/:jobid/vertices/:vertexid`` and its ``backpressure``,
``watermarks``, ``subtasktimes``, ``taskmanagers``, ``metrics``, ``subtasks/metrics``, ``accumulators``
and ``subtasks/accumulators``."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from streamkernel.runtime.jobmaster.job_status import JobDetails, SubtaskDetails, VertexDetails
from streamkernel.runtime.rest.context import now_ms, subtask_metrics
from streamkernel.runtime.rest.handlers.base import RestError, RestHandler
from streamkernel.runtime.rest.json_views.ids import vertex_id_of
from streamkernel.runtime.rest.json_views.vertices import (
    MetricsOf,
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

_AGGREGATIONS = ("min", "max", "sum", "avg", "skew")


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
        modes = [m.lower() for m in (self.query_list("agg") or ["min", "max", "sum", "avg"])]
        bad = [m for m in modes if m not in _AGGREGATIONS]
        if bad:
            raise RestError(400, f"Bad request, could not parse parameters: Cannot resolve query parameter (agg) "
                                 f"from value \"{','.join(bad)}\"; expected min, max, sum, avg or skew.")
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
]
