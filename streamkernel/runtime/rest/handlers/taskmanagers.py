"""TaskManager resources: ``/taskmanagers``, ``/taskmanagers/metrics``, ``/taskmanagers/:taskmanagerid``
and its ``metrics``, from the ResourceManager's snapshot of the registered TaskManagers."""

from __future__ import annotations

from streamkernel.runtime.resourcemanager.gateway import TaskManagerSnapshot
from streamkernel.runtime.rest.context import now_ms
from streamkernel.runtime.rest.handlers.base import RestError, RestHandler
from streamkernel.runtime.rest.json_views.cluster import taskmanager_details, taskmanager_info, taskmanager_metric_values
from streamkernel.runtime.rest.json_views.metrics import aggregated_metrics
from streamkernel.runtime.rest.json_views.vertices import metric_list

__all__ = ["ROUTES"]


class TaskManagersHandler(RestHandler):
    """``GET /taskmanagers``: every registered TaskManager with its slots."""

    def get(self) -> None:
        """Flink's TaskManagersInfo."""
        now = now_ms()
        self.write_json({"taskmanagers": [taskmanager_info(tm, now) for tm in self.context.taskmanagers()]})


def _taskmanager(handler: RestHandler, taskmanagerid: str) -> TaskManagerSnapshot:
    for tm in handler.context.taskmanagers():
        if tm.taskmanager_id == taskmanagerid:
            return tm
    raise RestError(404, f"Could not find TaskExecutor {taskmanagerid}.")


class TaskManagerDetailsHandler(RestHandler):
    """``GET /taskmanagers/:taskmanagerid``: one TaskManager, its allocated slots and metrics."""

    def get(self, taskmanagerid: str) -> None:
        """Flink's TaskManagerDetailsInfo."""
        self.write_json(taskmanager_details(_taskmanager(self, taskmanagerid), now_ms()))


class TaskManagerMetricsHandler(RestHandler):
    """``GET /taskmanagers/:taskmanagerid/metrics[?get=a,b]``: its slots, memory and network buffers
    by Flink's metric names (:func:`~..json_views.cluster.taskmanager_metric_values`)."""

    def get(self, taskmanagerid: str) -> None:
        """Flink's metric collection."""
        self.write_json(metric_list(taskmanager_metric_values(_taskmanager(self, taskmanagerid)), self.query_list("get")))


class AggregatedTaskManagerMetricsHandler(RestHandler):
    """``GET /taskmanagers/metrics[?get=a,b&agg=min,max&taskmanagers=id,id]``: TaskManager metrics
    aggregated over the TaskManagers."""

    def get(self) -> None:
        """Flink's AggregatedMetricsResponseBody."""
        tms = list(self.context.taskmanagers())
        wanted = self.query_list("taskmanagers")
        if wanted is not None:
            tms = [tm for tm in tms if tm.taskmanager_id in set(wanted)]
        per_tm = [taskmanager_metric_values(tm) for tm in tms]
        self.write_json(aggregated_metrics(per_tm, self.query_list("get"), self.aggregation_modes()))


ROUTES = [
    ("/taskmanagers", TaskManagersHandler),
    ("/taskmanagers/metrics", AggregatedTaskManagerMetricsHandler),
    ("/taskmanagers/:taskmanagerid", TaskManagerDetailsHandler),
    ("/taskmanagers/:taskmanagerid/metrics", TaskManagerMetricsHandler),
]
