"""Metric groups as reporters see them: a logical scope, scope variables and the metrics' values now.

Flink files every metric in a *metric group* of a component: the JobManager (logical scope
``jobmanager``), a job on it (``jobmanager.job``), a TaskManager (``taskmanager``), a subtask
(``taskmanager.job.task``), an operator of its chain (``taskmanager.job.task.operator``), and groups
below those (``taskmanager.Status.JVM.Memory``, a user function's ``add_group``). Each group carries
*scope variables* naming what it belongs to (``<host>``, ``<tm_id>``, ``<job_id>``, ``<job_name>``,
``<task_id>``, ``<task_name>``, ``<task_attempt_id>``, ``<task_attempt_num>``, ``<subtask_index>``,
``<operator_id>``, ``<operator_name>``), which tag-based reporters turn into labels.

Here the metrics are not objects registered with a registry: the components publish snapshots, and
a *source* turns them into :class:`MetricGroupSnapshot` objects when a reporter asks (a Prometheus
scrape), never on the path of a record. The variables are kept without Flink's angle brackets.
"""

from __future__ import annotations

import enum
import math
import socket
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

__all__ = ["MetricType", "MetricGroupSnapshot", "HistogramStatistics", "MetricSource", "groups_of",
           "host_name", "JOBMANAGER", "JOB", "TASKMANAGER", "TASK", "OPERATOR"]

#: Flink's logical scopes of the component groups.
JOBMANAGER = ("jobmanager",)
JOB = ("jobmanager", "job")
TASKMANAGER = ("taskmanager",)
TASK = ("taskmanager", "job", "task")
OPERATOR = ("taskmanager", "job", "task", "operator")


class MetricType(enum.Enum):
    """Flink's ``MetricType``: what a metric is (a reporter's filter may select by it)."""

    COUNTER = "counter"
    METER = "meter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


@dataclass(frozen=True)
class HistogramStatistics:
    """A histogram's value: how many values it saw, and a sample of recent ones (Flink's
    ``HistogramStatistics`` of a ``DescriptiveStatisticsHistogram``).

        >>> HistogramStatistics(5, (1.0, 2.0, 3.0, 4.0, 5.0)).quantile(0.5)
        3.0
    """

    count: int
    values: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(sorted(self.values)))  # sorted once, for every quantile

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of the sample (linear between ranks; NaN when it is empty)."""
        ordered = self.values
        if not ordered:
            return math.nan
        rank = q * (len(ordered) - 1)
        low = int(math.floor(rank))
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)

    @property
    def min(self) -> float:
        """The smallest value of the sample (NaN when empty)."""
        return self.values[0] if self.values else math.nan

    @property
    def max(self) -> float:
        """The largest value of the sample (NaN when empty)."""
        return self.values[-1] if self.values else math.nan


@dataclass(frozen=True)
class MetricGroupSnapshot:
    """One metric group now: its logical ``scope`` (``("taskmanager", "job", "task")``), its scope
    ``variables`` (``{"host": ..., "tm_id": ...}``) and ``metrics`` (name -> value: a number, a bool,
    a string for a gauge that is one, or :class:`HistogramStatistics`); ``types`` names the type of
    each metric (one left out is a gauge).

        >>> group = MetricGroupSnapshot(("taskmanager", "job", "task"), {"subtask_index": "0"}, {"numRecordsIn": 3})
        >>> group.logical_scope(), group.type_of("numRecordsIn")
        ('taskmanager.job.task', <MetricType.GAUGE: 'gauge'>)
    """

    scope: tuple[str, ...]
    variables: Mapping[str, str]
    metrics: Mapping[str, Any]
    types: Mapping[str, MetricType] = field(default_factory=dict)

    def logical_scope(self, delimiter: str = ".") -> str:
        """The logical scope's components joined by ``delimiter`` (Flink's ``getLogicalScope``)."""
        return delimiter.join(self.scope)

    def type_of(self, name: str) -> MetricType:
        """The type of metric ``name`` (a gauge unless ``types`` says otherwise)."""
        return self.types.get(name, MetricType.GAUGE)


#: What a metric registry asks for each report: the groups of one component now.
MetricSource = Callable[[], Iterable[MetricGroupSnapshot]]


def groups_of(scope: tuple[str, ...], variables: Mapping[str, str], values: Mapping[str, Any],
              type_of: Callable[[str], MetricType]) -> list[MetricGroupSnapshot]:
    """``values`` (Flink's metric names, some dotted) as groups under ``scope``: a dotted name is a
    metric of sub-groups (``Status.JVM.Memory.Heap.Used``: ``Used`` in ``<scope>.Status.JVM.Memory.Heap``).

        >>> [(g.logical_scope(), dict(g.metrics)) for g in groups_of(("taskmanager",), {}, {"a": 1, "Status.b": 2},
        ...                                                           lambda name: MetricType.GAUGE)]
        [('taskmanager', {'a': 1}), ('taskmanager.Status', {'b': 2})]
    """
    if not any("." in name for name in values):  # the common case: every metric in the group itself
        return [MetricGroupSnapshot(scope, variables, values, {name: type_of(name) for name in values})]
    by_scope: dict[tuple[str, ...], dict[str, Any]] = {}
    for dotted, value in values.items():
        *sub, name = dotted.split(".")
        by_scope.setdefault(scope + tuple(sub), {})[name] = value
    return [MetricGroupSnapshot(group_scope, variables, metrics, {name: type_of(name) for name in metrics})
            for group_scope, metrics in by_scope.items()]


def host_name() -> str:
    """Flink's ``<host>`` of this process's components: the machine's host name."""
    return socket.gethostname()

