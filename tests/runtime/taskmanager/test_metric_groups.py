"""What a TaskManager and a JobManager report to metric reporters: every metric the REST API names, in
Flink's scopes with Flink's scope variables, a user function's groups, and nothing of what has ended."""

from __future__ import annotations

from typing import Any

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import DataGeneratorSource
from streamkernel.datastream.functions import MapFunction, RuntimeContext
from streamkernel.runtime.core.task_metric_values import metric_group_name, task_metric_values
from streamkernel.runtime.jobmaster.job_metrics import job_metric_values
from streamkernel.runtime.metrics.flink_metrics import jobmanager_metric_values
from streamkernel.runtime.metrics.groups import MetricType
from streamkernel.runtime.minicluster.metric_reporting import JobManagerMetricGroups
from streamkernel.runtime.minicluster.minicluster import MiniCluster, set_current_cluster
from streamkernel.runtime.taskmanager.metric_groups import TaskManagerMetricGroups
from streamkernel.testing.waiting import wait_until


class Tagged(MapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        group = runtime_context.get_metrics_group()
        self.seen = group.add_group("shop", "berlin").add_group("orders").counter("seen")
        group.gauge("broken", lambda: 1 / 0)  # a gauge that raises is left out, the rest reported

    def map(self, value: Any) -> Any:
        self.seen.inc()
        return value


def task_metrics_snapshot(tm: Any) -> dict:
    """The one running task's metrics snapshot of ``tm`` (its heartbeat's)."""
    [status] = [t for t in tm.heartbeat().tasks if not t.state.is_terminal]
    return dict(status.metrics)


def _by_scope(groups: list) -> dict[str, list]:
    found: dict[str, list] = {}
    for group in groups:
        found.setdefault(group.logical_scope(), []).append(group)
    return found


def test_a_taskmanager_reports_what_the_rest_api_names_in_flinks_scopes() -> None:
    with MiniCluster(1, 1, backend="local") as cluster:
        set_current_cluster(cluster)
        try:
            env = StreamExecutionEnvironment.get_execution_environment(Configuration())
            env.set_parallelism(1)
            env.from_source(DataGeneratorSource(lambda i: i, None, 200.0), WatermarkStrategy.no_watermarks(), "n") \
                .map(Tagged()).name("tagged").add_sink(lambda v: None)
            job_id = str(env.execute_async("groups job").get_job_id())
        finally:
            set_current_cluster(None)
        [tm] = cluster.taskmanager_backend.taskmanagers
        source = TaskManagerMetricGroups(tm, host="h")
        scopes = wait_until(lambda: (lambda s: s if s.get("taskmanager.job.task.operator.shop.orders") else None)(
            _by_scope(source())), message="the user group to be reported")

        [slots] = scopes["taskmanager.Status.TaskSlots"]  # Status.TaskSlots.Total: "Total" in a sub-group
        assert slots.variables == {"host": "h", "tm_id": tm.taskmanager_id} and slots.metrics["Total"] == 1
        [task] = scopes["taskmanager.job.task"]
        snapshot = task_metrics_snapshot(tm)
        rest_ids = set(task_metric_values(snapshot))  # every id the REST API lists for the subtask ...
        reported = {".".join(g.scope[3:] + (name,)) for scope, found in scopes.items()
                    if scope.startswith("taskmanager.job.task") and not scope.startswith("taskmanager.job.task.operator")
                    for g in found for name in g.metrics}
        reported |= {f"{metric_group_name(g.variables['operator_name'])}.{name}"
                     for g in scopes["taskmanager.job.task.operator"] for name in g.metrics}
        histogram = {i for i in rest_ids if i.startswith("mailboxLatencyMs_")}
        assert reported == (rest_ids - histogram) | ({"mailboxLatencyMs"} if histogram else set())  # ... is reported
        assert task.type_of("numRecordsOut") is MetricType.COUNTER
        assert task.type_of("numRecordsOutPerSecond") is MetricType.METER
        assert task.type_of("busyTimeMsPerSecond") is MetricType.GAUGE
        assert task.variables["job_id"] == job_id and task.variables["task_name"] == "Source: n -> tagged -> Sink: Unnamed"
        operators = {g.variables["operator_name"]: g for g in scopes["taskmanager.job.task.operator"]}
        assert set(operators) == {"Source: n", "tagged", "Sink: Unnamed"}
        assert {"numRecordsIn", "numRecordsOut", "numRecordsInPerSecond"} <= set(operators["tagged"].metrics)
        assert len({g.variables["operator_id"] for g in operators.values()}) == 3
        [user] = scopes["taskmanager.job.task.operator.shop.orders"]
        assert user.variables["shop"] == "berlin" and user.variables["operator_name"] == "tagged"
        assert user.types == {"seen": MetricType.COUNTER} and user.metrics["seen"] > 0

        jobmanager = _by_scope(JobManagerMetricGroups(cluster.dispatcher, cluster.resource_manager, host="h")())
        assert set(jobmanager["jobmanager"][0].metrics) == set(jobmanager_metric_values([], []))
        [job] = jobmanager["jobmanager.job"]
        assert job.variables == {"host": "h", "job_id": job_id, "job_name": "groups job"}
        assert set(job.metrics) == set(job_metric_values(cluster.dispatcher.request_job_details(job_id), 0))

        cluster.dispatcher.cancel_job(job_id).result(60)
        wait_until(lambda: cluster.dispatcher.request_job_status(job_id) is JobStatus.CANCELED)
        ended = _by_scope(source())
        assert "taskmanager.job.task" not in ended and "taskmanager.Status.TaskSlots" in ended  # an ended task's go
        assert "jobmanager.job" not in _by_scope(JobManagerMetricGroups(cluster.dispatcher, cluster.resource_manager)())
        tm.kill()
        assert source() == []  # a TaskManager that plays dead reports nothing
