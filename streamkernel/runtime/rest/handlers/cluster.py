"""Cluster resources: ``/config``, ``/overview``, ``/jobmanager/config``, ``/jobmanager/metrics``,
``/jobmanager/environment``, ``/jobmanager/thread-dump``, ``/datasets``, and ``/jars`` (which the Flink 2.3
dashboard asks for)."""

from __future__ import annotations

from streamkernel.runtime.rest.handlers.base import RestHandler
from streamkernel.runtime.rest.json_views.cluster import (
    cluster_overview,
    dashboard_config,
    jobmanager_config,
    jobmanager_environment,
    jobmanager_metric_values,
    thread_dump,
)
from streamkernel.runtime.rest.json_views.vertices import metric_list

__all__ = ["ROUTES"]


class DashboardConfigHandler(RestHandler):
    """``GET /config``: the dashboard's configuration (refresh interval, version, features)."""

    def get(self) -> None:
        """Flink's DashboardConfiguration."""
        self.write_json(dashboard_config(self.context.configuration))


class ClusterOverviewHandler(RestHandler):
    """``GET /overview``: TaskManagers, slots and jobs by status."""

    def get(self) -> None:
        """Flink's ClusterOverviewWithVersion."""
        self.write_json(cluster_overview(self.context.taskmanagers(), self.context.dispatcher.list_jobs()))


class JobManagerConfigHandler(RestHandler):
    """``GET /jobmanager/config``: the cluster's configuration as ``[{key, value}]``."""

    def get(self) -> None:
        """Flink's ClusterConfigurationInfo (with the endpoint's effective address)."""
        host, _, port = self.context.rest_address.rpartition(":")
        self.write_json(jobmanager_config(self.context.configuration, {"rest.address": host, "rest.port": port}))


class JobManagerMetricsHandler(RestHandler):
    """``GET /jobmanager/metrics[?get=a,b]``: the JobManager's metrics (ids, or values as strings)."""

    def get(self) -> None:
        """Flink's metric collection."""
        values = jobmanager_metric_values(self.context.taskmanagers(), self.context.dispatcher.list_jobs())
        self.write_json(metric_list(values, self.query_list("get")))


class JobManagerEnvironmentHandler(RestHandler):
    """``GET /jobmanager/environment``: the JobManager's runtime and where it loads code from."""

    def get(self) -> None:
        """Flink's EnvironmentInfo (``jvm``, ``classpath``)."""
        self.write_json(jobmanager_environment())


class JobManagerThreadDumpHandler(RestHandler):
    """``GET /jobmanager/thread-dump``: every thread of the JobManager's process with its stack."""

    CACHEABLE = False  # polled until it changes, or taken to see the moment

    def get(self) -> None:
        """Flink's ThreadDumpInfo."""
        self.write_json(thread_dump())


class JarsHandler(RestHandler):
    """``GET /jars``: uploaded jars; streamkernel runs Python programs, so none."""

    def get(self) -> None:
        """Flink's JarListInfo, empty."""
        self.write_json({"address": f"http://{self.context.rest_address}", "files": []})


class ClusterDataSetsHandler(RestHandler):
    """``GET /datasets``: the cluster's data sets (intermediate results a batch job kept for later
    jobs); streamkernel keeps none."""

    def get(self) -> None:
        """Flink's ClusterDataSetListResponseBody, empty."""
        self.write_json({"dataSets": []})


ROUTES = [
    ("/config", DashboardConfigHandler),
    ("/overview", ClusterOverviewHandler),
    ("/jobmanager/config", JobManagerConfigHandler),
    ("/jobmanager/metrics", JobManagerMetricsHandler),
    ("/jobmanager/environment", JobManagerEnvironmentHandler),
    ("/jobmanager/thread-dump", JobManagerThreadDumpHandler),
    ("/jars", JarsHandler),
    ("/datasets", ClusterDataSetsHandler),
]
