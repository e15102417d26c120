"""Flink's Prometheus reporter, scraped by a real Prometheus server (Debian's package) and queried
through Prometheus' HTTP API: a local cluster's one endpoint (JobManager, task, operator and user
metrics by Flink's names and labels), and a process-backend cluster whose JobManager and each
TaskManager process serve their own."""

from __future__ import annotations

import socket
import threading
import urllib.request
from typing import Any, Iterator, Optional

import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import DataGeneratorSource
from streamkernel.datastream.functions import MapFunction, RuntimeContext
from streamkernel.runtime.metrics.reporter_setup import PROMETHEUS_REPORTER_FACTORY
from streamkernel.runtime.minicluster.minicluster import MiniCluster, set_current_cluster
from streamkernel.testing.prometheus import PrometheusServer, nothing_listens_on, require_prometheus
from streamkernel.testing.waiting import wait_until


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    require_prometheus()
    with PrometheusServer(tmp_path_factory.mktemp("prometheus")) as server:
        yield server


def _free_range(width: int = 12) -> str:
    """A port range whose first port is free now (the reporters take the first free ones of it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        first = int(sock.getsockname()[1])
    first = min(first, 65535 - width)
    return f"{first}-{first + width}"


def _reporter(port: str) -> dict[str, str]:
    return {"metrics.reporter.prom.factory.class": PROMETHEUS_REPORTER_FACTORY, "metrics.reporter.prom.port": port}


class Counted(MapFunction):
    """Counts what it sees in a user metric: ``app`` (a key/value group, ``app=demo``) ``seen``."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = runtime_context.get_metrics_group().add_group("app", "demo").counter("seen")

    def map(self, value: Any) -> Any:
        self.seen.inc()
        return value


def _submit(cluster: MiniCluster, name: str, user_metric: bool) -> str:
    set_current_cluster(cluster)
    try:
        env = StreamExecutionEnvironment.get_execution_environment(Configuration())
        env.set_parallelism(2)
        stream = env.from_source(DataGeneratorSource(lambda i: i, None, 400.0), WatermarkStrategy.no_watermarks(),
                                 "numbers")
        stream = stream.map(Counted()).name("counted") if user_metric else stream.map(lambda i: i).name("counted")
        stream.key_by(lambda i: i % 5).map(lambda i: i).name("keyed").add_sink(lambda v: None)
        job_id = str(env.execute_async(name).get_job_id())
    finally:
        set_current_cluster(None)
    wait_until(lambda: cluster.dispatcher.request_job_status(job_id) is JobStatus.RUNNING, message=f"{name} to run")
    return job_id


def _series(prometheus: PrometheusServer, promql: str, count: int, positive: bool = True) -> list:
    def found() -> Optional[list]:
        series = [s for s in prometheus.query(promql) if not positive or s[1] > 0]
        return series if len(series) >= count else None

    return wait_until(found, message=f"{count} series of {promql} in Prometheus")


def test_a_local_cluster_serves_its_jobmanager_task_operator_and_user_metrics_to_prometheus(
        prometheus: PrometheusServer) -> None:
    with MiniCluster(2, 1, backend="local", configuration=_reporter(_free_range())) as cluster:
        reporter = cluster.metric_registry.reporter("prom")
        port = reporter.port
        prometheus.scrape([f"127.0.0.1:{port}"])
        job_id = _submit(cluster, "metrics job", user_metric=True)
        prometheus.wait_for_targets_up(1)

        # the JobManager's metrics and the job's, with its labels (Flink replaces ' ' in values by '_')
        [(labels, value)] = _series(prometheus, "flink_jobmanager_numRegisteredTaskManagers", 1)
        assert value == 2 and labels["host"] == socket.gethostname()
        [(job, uptime)] = _series(prometheus, 'flink_jobmanager_job_uptime{job_name="metrics_job"}', 1)
        assert job["job_id"] == job_id and uptime > 0

        # one series per subtask of the operator, every scope variable of Flink's as a label
        operators = _series(prometheus, 'flink_taskmanager_job_task_operator_numRecordsIn'
                                        '{job_name="metrics_job",operator_name="counted"}', 2)
        assert {labels["subtask_index"] for labels, _ in operators} == {"0", "1"}
        assert {labels["tm_id"] for labels, _ in operators} == {"taskmanager_1", "taskmanager_2"}
        for labels, _ in operators:
            assert set(labels) >= {"job_id", "job_name", "task_id", "task_name", "task_attempt_id", "task_attempt_num",
                                   "subtask_index", "operator_id", "operator_name", "tm_id", "host"}
            assert labels["task_name"] == "Source:_numbers____counted"  # "Source: numbers -> counted"
        tasks = _series(prometheus, 'flink_taskmanager_job_task_numRecordsOut{task_name="Source:_numbers____counted"}', 2)
        assert {labels["task_id"] for labels, _ in tasks} == {operators[0][0]["task_id"]}

        # a user metric of a key/value group: the key in the name, the value as a label; it counts on
        seen = _series(prometheus, 'flink_taskmanager_job_task_operator_app_seen{app="demo"}', 2)
        before = sum(value for _, value in seen)
        wait_until(lambda: sum(v for _, v in prometheus.query('flink_taskmanager_job_task_operator_app_seen')) > before,
                   message="the user counter to grow between scrapes")
        cluster.dispatcher.cancel_job(job_id).result(60)
    assert nothing_listens_on(port), "the reporter's port is still taken after the cluster stopped"
    assert not [t.name for t in threading.enumerate() if t.name.startswith("streamkernel-metrics-")]


def _serving(ports: range) -> list[int]:
    """The ports of ``ports`` where a reporter answers ``/metrics``."""
    found = []
    for port in ports:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
                if b"flink_" in answer.read():
                    found.append(port)
        except OSError:
            continue
    return found


def test_each_taskmanager_process_serves_its_own_metrics_on_the_next_free_port(prometheus: PrometheusServer) -> None:
    ports = _free_range()
    first, last = (int(p) for p in ports.split("-"))
    with MiniCluster(2, 1, backend="process", configuration=_reporter(ports)) as cluster:
        jobmanager = cluster.metric_registry.reporter("prom").port
        assert jobmanager == first  # the JobManager's reporter starts before the TaskManagers do
        serving = wait_until(lambda: (lambda found: found if len(found) == 3 else None)(_serving(range(first, last + 1))),
                             message=f"the JobManager and two TaskManager processes to serve in {ports}")
        prometheus.scrape([f"127.0.0.1:{port}" for port in serving])
        _submit(cluster, "process job", user_metric=False)
        prometheus.wait_for_targets_up(3)
        slots = _series(prometheus, "flink_taskmanager_Status_TaskSlots_Total", 2)
        assert {labels["tm_id"] for labels, _ in slots} == {"taskmanager_1", "taskmanager_2"}
        per_tm = _series(prometheus, 'sum by (tm_id, instance) '
                                     '(flink_taskmanager_job_task_numRecordsOut{job_name="process_job"})', 2)
        instances = {labels["instance"] for labels, _ in per_tm}
        assert len(instances) == 2 and f"127.0.0.1:{jobmanager}" not in instances  # each TaskManager, its own port
        [(_, running)] = _series(prometheus, "flink_jobmanager_numRunningJobs", 1)
        assert running == 1
    wait_until(lambda: not _serving(range(first, last + 1)), message=f"every reporter in {ports} to stop")
