"""A cluster's metric reporters: the JobManager's metrics, and on the ``local`` backend its TaskManagers' too.

:func:`start_cluster_metrics` starts the reporters the cluster's configuration names
(``metrics.reporter.<name>.*``: :mod:`streamkernel.runtime.metrics.reporter_setup`) in the
JobManager's process, bound to ``jobmanager.bind-host`` (default loopback). They report

* the JobManager (:class:`JobManagerMetricGroups`): ``jobmanager`` (``<host>``) and, for every job not
  ended yet, ``jobmanager.job`` (``<host>``, ``<job_id>``, ``<job_name>``), from the Dispatcher's
  published job details and the ResourceManager's TaskManager snapshots, by the names the REST API
  gives them (:mod:`streamkernel.runtime.metrics.flink_metrics`, :mod:`streamkernel.runtime.jobmaster.job_metrics`);
* on the ``local`` backend, every TaskManager of the cluster as well (their tasks are threads of this
  process: one endpoint serves the whole cluster), read from the TaskExecutors themselves
  (:class:`~streamkernel.runtime.taskmanager.metric_groups.TaskManagerMetricGroups`), TaskManagers
  added later included. TaskManagers in other processes (``process``, ``spark``, a standalone
  cluster's) serve their own (:func:`streamkernel.runtime.taskmanager.worker.run_taskmanager`).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Mapping, Optional

from streamkernel.common.options import JobManagerOptions
from streamkernel.runtime.jobmaster.job_metrics import job_metric_values
from streamkernel.runtime.metrics.flink_metrics import jobmanager_metric_values
from streamkernel.runtime.metrics.groups import JOB, JOBMANAGER, MetricGroupSnapshot, MetricType, groups_of, host_name
from streamkernel.runtime.metrics.registry import MetricRegistry
from streamkernel.runtime.minicluster.taskmanagers import LocalTaskManagers
from streamkernel.runtime.rpc.transport import bind_host
from streamkernel.runtime.taskmanager.metric_groups import TaskManagerMetricGroups

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.dispatcher.gateway import DispatcherGateway
    from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway

__all__ = ["JobManagerMetricGroups", "LocalTaskManagersMetricGroups", "start_cluster_metrics"]


def _gauge(name: str) -> MetricType:
    return MetricType.GAUGE  # every JobManager metric is a gauge in Flink


class JobManagerMetricGroups:
    """The JobManager's metric groups now (a :data:`~streamkernel.runtime.metrics.groups.MetricSource`)."""

    def __init__(self, dispatcher: "DispatcherGateway", resource_manager: "ResourceManagerGateway",
                 host: Optional[str] = None) -> None:
        self._dispatcher = dispatcher
        self._resource_manager = resource_manager
        self._host = host or host_name()

    def __call__(self) -> list[MetricGroupSnapshot]:
        """``jobmanager`` and a ``jobmanager.job`` group per job that has not ended."""
        jobs = self._dispatcher.list_jobs()
        now = time.time_ns() // 1_000_000
        variables = {"host": self._host}
        groups = groups_of(JOBMANAGER, variables,
                           jobmanager_metric_values(self._resource_manager.taskmanager_snapshots(), jobs), _gauge)
        for details in jobs:
            if not details.status.is_globally_terminal_state():  # Flink closes a job's group when it ends
                job = {**variables, "job_id": details.job_id, "job_name": details.job_name}
                groups.extend(groups_of(JOB, job, job_metric_values(details, now), _gauge))
        return groups


class LocalTaskManagersMetricGroups:
    """The groups of every live TaskExecutor of a ``local`` backend (``taskmanagers``: its list, read
    at each report, so TaskManagers added later are reported too and killed ones no more)."""

    def __init__(self, backend: LocalTaskManagers, host: Optional[str] = None) -> None:
        self._backend = backend
        self._host = host
        # The lock guards _sources (two reporters may ask at once).
        self._lock = threading.Lock()
        self._sources: dict[str, TaskManagerMetricGroups] = {}

    def __call__(self) -> list[MetricGroupSnapshot]:
        """Every running local TaskManager's groups."""
        groups: list[MetricGroupSnapshot] = []
        for tm in list(self._backend.taskmanagers):
            with self._lock:
                source = self._sources.get(tm.taskmanager_id)
                if source is None:
                    source = self._sources[tm.taskmanager_id] = TaskManagerMetricGroups(tm, self._host)
            groups.extend(source())
        return groups


def start_cluster_metrics(configuration: Mapping[str, Any], dispatcher: "DispatcherGateway",
                          resource_manager: "ResourceManagerGateway", taskmanagers: Any) -> MetricRegistry:
    """Start the configured reporters of a cluster's JobManager (``taskmanagers``: the cluster's backend;
    a ``local`` one's TaskManagers are reported too); nothing runs when none is configured. Raises
    IllegalConfigurationError or ReporterStartError naming the key when a reporter cannot start."""
    registry = MetricRegistry.from_configuration(configuration, bind_host(configuration, JobManagerOptions.BIND_HOST))
    if not registry.setups:
        return registry
    registry.add_source(JobManagerMetricGroups(dispatcher, resource_manager))
    if isinstance(taskmanagers, LocalTaskManagers):
        registry.add_source(LocalTaskManagersMetricGroups(taskmanagers))
    return registry.start()
