"""What a TaskManager reports to metric reporters: its own metrics, its subtasks' and their operators'.

:class:`TaskManagerMetricGroups` is the TaskManager's source for a
:class:`~streamkernel.runtime.metrics.registry.MetricRegistry`: on each report (a Prometheus scrape)
it reads what the TaskExecutor publishes anyway (its heartbeat answer: slots, memory, network
buffers, each task's metrics snapshot) and each running task's deployment descriptor and user
metric groups, and names them as the REST API does (the task's and operators' metrics:
:func:`~streamkernel.runtime.core.task_metric_values.task_metric_values`, the TaskManager's:
:func:`~streamkernel.runtime.metrics.flink_metrics.taskmanager_metric_values`), in Flink's groups:

* ``taskmanager`` (and ``taskmanager.Status...``): ``<host>``, ``<tm_id>``;
* ``taskmanager.job.task``, one group per running subtask: also ``<job_id>``, ``<job_name>``,
  ``<task_id>`` (the JobVertexID), ``<task_name>``, ``<task_attempt_id>``, ``<task_attempt_num>``,
  ``<subtask_index>``;
* ``taskmanager.job.task.operator``, one per chained operator: also ``<operator_id>``,
  ``<operator_name>``; a user function's metrics (``get_metric_group().counter(...)``, ``add_group``)
  are below its operator's group, a key/value group adding its key to the scope and its value as a variable.

The mailbox's latencies, which the REST API flattens into ``mailboxLatencyMs_p99`` and the like, are
one histogram here (``mailboxLatencyMs``: a summary in Prometheus, as Flink's reporter exports it; its
count is the samples kept, the last 60).

Nothing runs between reports; a task's counters are read as the REST API reads them.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Protocol, runtime_checkable

from streamkernel.runtime.core.deployment import ExecutionAttemptId, TaskDeploymentDescriptor, hex_id
from streamkernel.runtime.core.metric_sampler import MetricSampler
from streamkernel.runtime.core.metrics import MetricGroup, TaskMetrics
from streamkernel.runtime.core.task_metric_values import metric_group_name, task_metric_values
from streamkernel.runtime.metrics.flink_metrics import metric_type, taskmanager_metric_values
from streamkernel.runtime.metrics.groups import (
    OPERATOR,
    TASK,
    TASKMANAGER,
    HistogramStatistics,
    MetricGroupSnapshot,
    MetricType,
    groups_of,
    host_name,
)
from streamkernel.runtime.taskmanager.gateway import TaskExecutorHeartbeat

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.taskmanager.task_executor import TaskExecutor

__all__ = ["TaskManagerMetricGroups", "ReportingTask"]

_LOG = logging.getLogger(__name__)


@runtime_checkable
class ReportingTask(Protocol):
    """A running task as the reporters read it (the runtime's Task)."""

    tdd: TaskDeploymentDescriptor
    metrics: TaskMetrics


@dataclass(frozen=True)
class _OwnFigures:
    """The TaskManager's view of itself, in the shape the ResourceManager's snapshot has."""

    number_of_slots: int
    free_slots: int
    last_heartbeat: Optional[TaskExecutorHeartbeat]


class TaskManagerMetricGroups:
    """The metric groups of ``task_executor`` now (a :data:`~streamkernel.runtime.metrics.groups.MetricSource`);
    ``host`` is Flink's ``<host>`` (default: this machine's name)."""

    def __init__(self, task_executor: "TaskExecutor", host: Optional[str] = None) -> None:
        self._task_executor = task_executor
        self._host = host or host_name()
        self._sampler = MetricSampler()
        # Reports take turns (two reporters may ask at once); the lock guards _variables.
        self._lock = threading.Lock()
        # each running attempt's variables, and its operators' by name: worked out once per attempt
        self._variables: dict[ExecutionAttemptId, tuple[dict[str, str], dict[str, dict[str, str]]]] = {}

    def __call__(self) -> list[MetricGroupSnapshot]:
        """Its groups now: none once the TaskManager stopped (or plays dead)."""
        with self._lock:
            return self._groups()

    def _groups(self) -> list[MetricGroupSnapshot]:
        tm = self._task_executor
        if not tm.is_running:
            return []
        try:
            heartbeat = tm.heartbeat()
        except Exception:  # noqa: BLE001 - stopped meanwhile: nothing to report
            return []
        variables = {"host": self._host, "tm_id": tm.taskmanager_id}
        free = sum(1 for slot in heartbeat.slot_report.slots if slot.job_id is None)
        groups = groups_of(TASKMANAGER, variables, taskmanager_metric_values(
            _OwnFigures(tm.number_of_slots, free, heartbeat)), lambda name: MetricType.GAUGE)
        snapshots = {status.attempt_id: status.metrics for status in heartbeat.tasks}
        running = [t for t in tm.running_tasks() if isinstance(t, ReportingTask)]
        attempts = [t.tdd.attempt_id for t in running]
        self._sampler.forget_all_but(attempts)
        for attempt in [a for a in self._variables if a not in set(attempts)]:
            del self._variables[attempt]
        for task in running:
            snapshot = snapshots.get(task.tdd.attempt_id)
            if snapshot is not None:
                groups.extend(self._task_groups(task, self._sampler.with_recent(task.tdd.attempt_id, snapshot),
                                                variables))
        return groups

    def _task_groups(self, task: ReportingTask, snapshot: Any, tm_variables: dict[str, str]) -> list[MetricGroupSnapshot]:
        known = self._variables.get(task.tdd.attempt_id)
        if known is None:
            known = self._variables[task.tdd.attempt_id] = _task_variables(task.tdd, tm_variables)
        variables, operators = known
        names = {metric_group_name(name): name for name in (snapshot.get("operators") or {})}
        own: dict[str, Any] = {}
        per_operator: dict[str, dict[str, Any]] = {name: {} for name in names.values()}
        for key, value in task_metric_values(snapshot).items():
            group, dot, metric = key.partition(".")
            if dot and group in names:  # an operator's metric: "<its metric group name>.<metric>"
                per_operator[names[group]][metric] = value
            elif key.startswith("mailboxLatencyMs_"):  # the histogram's statistics: the histogram itself, once
                if "mailboxLatencyMs" in own:
                    continue
                latencies = tuple(float(v) for v in snapshot.get("mailbox_latency_ms") or ())
                own["mailboxLatencyMs"] = HistogramStatistics(len(latencies), latencies)
            else:
                own[key] = value
        groups = groups_of(TASK, variables, own, _task_metric_type)
        live = task.metrics.operators
        for name, values in per_operator.items():
            operator = operators.get(name) or {**variables, "operator_name": name, "operator_id": hex_id(name)}
            groups.extend(groups_of(OPERATOR, operator, values, metric_type))
            if name in live:
                groups.extend(_user_groups(live[name].user, operator))
        return groups


def _task_metric_type(name: str) -> MetricType:
    return MetricType.HISTOGRAM if name == "mailboxLatencyMs" else metric_type(name)


def _task_variables(tdd: TaskDeploymentDescriptor,
                    tm_variables: dict[str, str]) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """A subtask attempt's scope variables, and each of its operators' (by name)."""
    head = next((node for node in tdd.nodes if node.id == tdd.job_vertex.head_id), None)
    task_id = hex_id(head.operator_id if head is not None else str(tdd.job_vertex.id))
    variables = {**tm_variables, "job_id": tdd.job_id, "job_name": tdd.job_name, "task_id": task_id,
                 "task_name": tdd.job_vertex.name, "subtask_index": str(tdd.subtask_index),
                 "task_attempt_num": str(tdd.attempt_number),
                 "task_attempt_id": f"{tdd.job_id}_{task_id}_{tdd.subtask_index}_{tdd.attempt_number}"}
    operators = {node.name: {**variables, "operator_name": node.name, "operator_id": hex_id(node.operator_id)}
                 for node in tdd.nodes}
    return variables, operators


def _user_groups(group: MetricGroup, operator_variables: dict[str, str]) -> list[MetricGroupSnapshot]:
    """A user function's metric group and its sub-groups, below its operator's group."""
    found: list[MetricGroupSnapshot] = []
    values: dict[str, Any] = {}
    types: dict[str, MetricType] = {}
    for name, counter in list(group.counters.items()):
        values[name], types[name] = counter.get_count(), MetricType.COUNTER
    for name, gauge in list(group.gauges.items()):
        try:
            values[name], types[name] = gauge(), MetricType.GAUGE
        except Exception:  # noqa: BLE001 - a user's gauge that raises is left out of this report
            _LOG.debug("gauge %s of %s raised; not reported", name, group.scope, exc_info=True)
    if values:
        found.append(MetricGroupSnapshot(OPERATOR + group.logical_scope, {**operator_variables, **group.variables},
                                         values, types))
    for child in list(group.children.values()):
        found.extend(_user_groups(child, operator_variables))
    return found
