"""Job resources: ``/jobs``, ``/jobs/overview``, ``/jobs/:jobid`` and its ``plan``, ``config``,
``exceptions``, ``accumulators`` and ``metrics``."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from streamkernel.runtime.jobmaster.job_status import JobDetails
from streamkernel.runtime.rest.context import now_ms, subtask_metrics
from streamkernel.runtime.rest.handlers.base import RestHandler, bad_parameter
from streamkernel.runtime.rest.json_views.jobs import (
    job_accumulators,
    job_config,
    job_details,
    job_exceptions,
    job_ids_with_status,
    job_metric_values,
    job_overview,
    job_plan,
)
from streamkernel.runtime.rest.json_views.vertices import metric_list

__all__ = ["ROUTES", "subtask_metrics_by_key"]


def subtask_metrics_by_key(handler: RestHandler, details: JobDetails) -> dict[tuple[int, int], Optional[Mapping[str, Any]]]:
    """(vertex, subtask) -> the subtask's metrics: live from the last heartbeats, else final."""
    live = handler.context.live_metrics()
    return {(s.vertex_id, s.subtask_index): subtask_metrics(details, s, live) for s in details.subtasks}


class JobsHandler(RestHandler):
    """``GET /jobs``: every job's id and status."""

    def get(self) -> None:
        """Flink's JobIdsWithStatusOverview."""
        self.write_json(job_ids_with_status(self.context.dispatcher.list_jobs()))


class JobsOverviewHandler(RestHandler):
    """``GET /jobs/overview``: every job's details (name, state, times, tasks per state)."""

    def get(self) -> None:
        """Flink's MultipleJobsDetails."""
        self.write_json({"jobs": [job_overview(d, self.context.job_configuration(d))
                                  for d in self.context.dispatcher.list_jobs()]})


class JobDetailsHandler(RestHandler):
    """``GET /jobs/:jobid``: the job, its vertices with status, tasks and IO metrics, its plan."""

    def get(self, jobid: str) -> None:
        """Flink's JobDetailsInfo."""
        details = self.job(jobid)
        self.write_json(job_details(details, subtask_metrics_by_key(self, details),
                                    self.context.job_configuration(details), now_ms()))


class JobPlanHandler(RestHandler):
    """``GET /jobs/:jobid/plan``: the job's dataflow plan."""

    def get(self, jobid: str) -> None:
        """Flink's JobPlanInfo."""
        details = self.job(jobid)
        self.write_json(job_plan(details, self.context.job_configuration(details)))


class JobConfigHandler(RestHandler):
    """``GET /jobs/:jobid/config``: the job's execution configuration."""

    def get(self, jobid: str) -> None:
        """Flink's JobConfigInfo."""
        details = self.job(jobid)
        self.write_json(job_config(details, self.context.job_configuration(details)))


class JobExceptionsHandler(RestHandler):
    """``GET /jobs/:jobid/exceptions[?maxExceptions=N]``: the failures that started failovers."""

    def get(self, jobid: str) -> None:
        """Flink's JobExceptionsInfoWithHistory."""
        details = self.job(jobid)
        text = self.get_query_argument("maxExceptions", "20")
        if not text.isdigit():
            raise bad_parameter("maxExceptions", text)
        self.write_json(job_exceptions(details, int(text)))


class JobAccumulatorsHandler(RestHandler):
    """``GET /jobs/:jobid/accumulators``: the job's accumulators (once it ended; none before)."""

    def get(self, jobid: str) -> None:
        """Flink's JobAccumulatorsInfo."""
        details = self.job(jobid)
        future = self.context.dispatcher.job_result_future(details.job_id)
        accumulators = future.result().accumulators if future.done() and future.exception() is None else {}
        self.write_json(job_accumulators(accumulators))


class JobMetricsHandler(RestHandler):
    """``GET /jobs/:jobid/metrics[?get=a,b]``: the job's metrics (restarts, uptime, checkpoints)."""

    def get(self, jobid: str) -> None:
        """Flink's metric collection."""
        self.write_json(metric_list(job_metric_values(self.job(jobid)), self.query_list("get")))


ROUTES = [
    ("/jobs", JobsHandler),
    ("/jobs/overview", JobsOverviewHandler),
    ("/jobs/:jobid", JobDetailsHandler),
    ("/jobs/:jobid/plan", JobPlanHandler),
    ("/jobs/:jobid/config", JobConfigHandler),
    ("/jobs/:jobid/exceptions", JobExceptionsHandler),
    ("/jobs/:jobid/accumulators", JobAccumulatorsHandler),
    ("/jobs/:jobid/metrics", JobMetricsHandler),
]
