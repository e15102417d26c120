"""A TaskManager's and the JobManager's metrics by Flink's names, and the Flink type of a metric.

Every metric has one mapping from the snapshots streamkernel publishes to Flink's name, read by the
REST API and by the metric reporters alike (a metric added there shows in both):

* a subtask's and its operators' (``taskmanager.job.task``, ``taskmanager.job.task.operator``):
  :func:`streamkernel.runtime.core.task_metric_values.task_metric_values`;
* a job's on the JobManager (``jobmanager.job``): :func:`streamkernel.runtime.jobmaster.job_metrics.job_metric_values`;
* a TaskManager's (``taskmanager``; a dotted name is a metric of sub-groups: ``Status.JVM.Memory.Heap.Used``
  is ``Used`` in ``taskmanager.Status.JVM.Memory.Heap``): :func:`taskmanager_metric_values` here, as a
  TaskManager process computes it too, below the REST API;
* the JobManager's (``jobmanager``): :func:`jobmanager_metric_values` here.

:func:`metric_type` tells a task or operator metric's Flink type (a reporter's ``filter.includes`` can
select by it); the JobManager's and TaskManager's are gauges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional, Protocol

from streamkernel.runtime.metrics.groups import MetricType

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.jobmaster.job_status import JobDetails
    from streamkernel.runtime.taskmanager.gateway import TaskExecutorHeartbeat

__all__ = ["TaskManagerFigures", "taskmanager_metric_values", "heartbeat_memory", "jobmanager_metric_values",
           "metric_type"]


def metric_type(name: str) -> MetricType:
    """Flink's type of the task or operator metric ``name``: its rates (``...PerSecond``, but not the
    ``...TimeMsPerSecond`` ratios) are meters, its ``num...`` counts counters, the rest gauges.

        >>> metric_type("numRecordsIn"), metric_type("mailboxMailsPerSecond"), metric_type("busyTimeMsPerSecond")
        (<MetricType.COUNTER: 'counter'>, <MetricType.METER: 'meter'>, <MetricType.GAUGE: 'gauge'>)
    """
    if name.endswith("PerSecond") and not name.endswith("TimeMsPerSecond"):
        return MetricType.METER
    return MetricType.COUNTER if name.startswith("num") else MetricType.GAUGE


class TaskManagerFigures(Protocol):
    """What :func:`taskmanager_metric_values` reads of a TaskManager: the ResourceManager's
    TaskManagerSnapshot, or a TaskManager's view of itself."""

    @property
    def number_of_slots(self) -> int:
        """Its task slots."""

    @property
    def free_slots(self) -> int:
        """Slots no job holds."""

    @property
    def last_heartbeat(self) -> Optional["TaskExecutorHeartbeat"]:
        """Its latest heartbeat answer (None: none yet)."""


def heartbeat_memory(tm: TaskManagerFigures) -> dict:
    """What the TaskManager's last heartbeat said of its memory (``{}``: nothing)."""
    heartbeat = tm.last_heartbeat
    return dict(getattr(heartbeat, "memory", None) or {}) if heartbeat is not None else {}


def taskmanager_metric_values(tm: TaskManagerFigures) -> dict[str, int]:
    """A TaskManager's metrics by Flink's names (``/taskmanagers/:id/metrics``; the Web UI's TaskManager
    metrics page asks for the memory ones): its slots and running tasks; ``Status.JVM.Memory.Heap.*``
    (max: the framework and task heaps; used: the task heap estimate; committed: the resident set);
    ``Status.Flink.Memory.Managed.Total`` and ``.Used`` (what the slots' consumers reserved: RocksDB's
    shared resources, BATCH sorters); ``Status.JVM.Memory.Metaspace.Max`` (configured; no Python
    counterpart is used, so no ``.Used``); ``Status.Shuffle.Netty.*`` (its network buffers)."""
    heartbeat = tm.last_heartbeat
    values: dict[str, int] = {"Status.TaskSlots.Total": tm.number_of_slots, "Status.TaskSlots.Free": tm.free_slots,
                              "Status.Tasks.Running": len(heartbeat.tasks) if heartbeat is not None else 0}
    memory = heartbeat_memory(tm)
    configured = memory.get("configuration") or {}
    if configured:
        values["Status.JVM.Memory.Heap.Max"] = int(configured.get("frameworkHeap", 0)) + int(configured.get("taskHeap", 0))
        values["Status.JVM.Memory.Heap.Used"] = int(memory.get("task_heap_used_estimate", 0))
        values["Status.JVM.Memory.Heap.Committed"] = int(memory.get("rss", 0))
        values["Status.JVM.Memory.Metaspace.Max"] = int(configured.get("jvmMetaspace", 0))
        values["Status.Flink.Memory.Managed.Total"] = int(configured.get("managedMemory", 0))
        slots = {k: v for k, v in (getattr(heartbeat, "slot_memory", None) or {}).items() if k != "taskmanager"}
        values["Status.Flink.Memory.Managed.Used"] = sum(
            int((usage.get("rocksdb") or {}).get("capacity", 0)) + int((usage.get("operator") or {}).get("reserved", 0))
            for usage in slots.values())
    netty = getattr(heartbeat, "metrics", None) or {}
    values.update({name: int(value) for name, value in netty.items() if name.startswith("Status.Shuffle.Netty.")})
    return values


def jobmanager_metric_values(taskmanagers: Iterable[TaskManagerFigures], jobs: Iterable["JobDetails"]) -> dict[str, Any]:
    """The JobManager's metrics Flink names the same way (no JVM ones: streamkernel has none)."""
    tms = list(taskmanagers)
    return {"numRegisteredTaskManagers": len(tms),
            "numRunningJobs": sum(1 for d in jobs if not d.status.is_globally_terminal_state()),
            "taskSlotsAvailable": sum(t.free_slots for t in tms),
            "taskSlotsTotal": sum(t.number_of_slots for t in tms)}
