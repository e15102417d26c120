"""Job resources: ``/jobs``, ``/jobs/overview``, ``/jobs/metrics``, ``/jobs/:jobid`` and its
``status``, ``plan``, ``config``, ``exceptions``, ``accumulators``, ``metrics``,
``jobmanager/config``, ``jobmanager/environment``, ``jobmanager/log-url`` and
``taskmanagers/:taskmanagerid/log-url``."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from streamkernel.runtime.jobmaster.job_metrics import job_metric_values
from streamkernel.runtime.jobmaster.job_status import JobDetails
from streamkernel.runtime.rest.context import now_ms, subtask_metrics
from streamkernel.runtime.rest.handlers.base import RestError, RestHandler, bad_parameter
from streamkernel.runtime.rest.json_views.cluster import jobmanager_config, jobmanager_environment
from streamkernel.runtime.rest.json_views.ids import HEX32
from streamkernel.runtime.rest.json_views.jobs import (
    job_accumulators,
    job_config,
    job_details,
    job_exceptions,
    job_ids_with_status,
    job_overview,
    job_plan,
)
from streamkernel.runtime.rest.json_views.metrics import aggregated_metrics
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
        now = now_ms()
        self.write_json({"jobs": [job_overview(d, self.context.job_configuration(d), now)
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
    """``GET /jobs/:jobid/metrics[?get=a,b]``: the job's metrics (state times, restarts, checkpoints:
    :func:`~streamkernel.runtime.jobmaster.job_metrics.job_metric_values`)."""

    def get(self, jobid: str) -> None:
        """Flink's metric collection."""
        self.write_json(metric_list(job_metric_values(self.job(jobid), now_ms()), self.query_list("get")))


class AggregatedJobMetricsHandler(RestHandler):
    """``GET /jobs/metrics[?get=a,b&agg=min,max&jobs=id,id]``: job metrics aggregated over jobs."""

    def get(self) -> None:
        """Flink's AggregatedMetricsResponseBody."""
        jobs = list(self.context.dispatcher.list_jobs())
        wanted_jobs = self.query_list("jobs")
        if wanted_jobs is not None:
            bad = [j for j in wanted_jobs if not HEX32.match(j)]
            if bad:
                raise bad_parameter("jobs", ",".join(bad))
            jobs = [d for d in jobs if d.job_id in {j.lower() for j in wanted_jobs}]
        now = now_ms()
        per_job = [job_metric_values(d, now) for d in jobs]
        self.write_json(aggregated_metrics(per_job, self.query_list("get"), self.aggregation_modes()))


class JobStatusHandler(RestHandler):
    """``GET /jobs/:jobid/status``: the job's status alone (what a client polls)."""

    CACHEABLE = False  # polled until it changes

    def get(self, jobid: str) -> None:
        """Flink's JobStatusInfo: ``{"status": "RUNNING"}``."""
        self.write_json({"status": self.job(jobid).status.name})


class JobJobManagerConfigHandler(RestHandler):
    """``GET /jobs/:jobid/jobmanager/config``: the configuration the job runs with (the
    cluster's keys overridden by the job's own)."""

    def get(self, jobid: str) -> None:
        """Flink's ConfigurationInfo: ``[{"key", "value"}]``, secrets hidden."""
        self.write_json(jobmanager_config(self.context.job_configuration(self.job(jobid))))


class JobJobManagerEnvironmentHandler(RestHandler):
    """``GET /jobs/:jobid/jobmanager/environment``: the environment of the JobManager running the
    job (streamkernel's JobMasters run in the cluster's JobManager process)."""

    def get(self, jobid: str) -> None:
        """Flink's EnvironmentInfo."""
        self.job(jobid)
        self.write_json(jobmanager_environment())


class JobManagerLogUrlHandler(RestHandler):
    """``GET /jobs/:jobid/jobmanager/log-url``: where the Web UI shows the JobManager's logs."""

    def get(self, jobid: str) -> None:
        """Flink's LogUrlResponse."""
        self.job(jobid)
        self.write_json({"url": f"http://{self.context.rest_address}/#/job-manager/logs"})


class TaskManagerLogUrlHandler(RestHandler):
    """``GET /jobs/:jobid/taskmanagers/:taskmanagerid/log-url``: where the Web UI shows a TaskManager's logs."""

    def get(self, jobid: str, taskmanagerid: str) -> None:
        """Flink's LogUrlResponse (404 for a TaskManager that is not registered)."""
        self.job(jobid)
        if not any(tm.taskmanager_id == taskmanagerid for tm in self.context.taskmanagers()):
            raise RestError(404, f"Could not find TaskExecutor {taskmanagerid}.")
        self.write_json({"url": f"http://{self.context.rest_address}/#/task-manager/{taskmanagerid}/logs"})


ROUTES = [
    ("/jobs", JobsHandler),
    ("/jobs/overview", JobsOverviewHandler),
    ("/jobs/:jobid", JobDetailsHandler),
    ("/jobs/:jobid/plan", JobPlanHandler),
    ("/jobs/:jobid/config", JobConfigHandler),
    ("/jobs/:jobid/exceptions", JobExceptionsHandler),
    ("/jobs/:jobid/accumulators", JobAccumulatorsHandler),
    ("/jobs/:jobid/metrics", JobMetricsHandler),
    ("/jobs/metrics", AggregatedJobMetricsHandler),
    ("/jobs/:jobid/status", JobStatusHandler),
    ("/jobs/:jobid/jobmanager/config", JobJobManagerConfigHandler),
    ("/jobs/:jobid/jobmanager/environment", JobJobManagerEnvironmentHandler),
    ("/jobs/:jobid/jobmanager/log-url", JobManagerLogUrlHandler),
    ("/jobs/:jobid/taskmanagers/:taskmanagerid/log-url", TaskManagerLogUrlHandler),
]
