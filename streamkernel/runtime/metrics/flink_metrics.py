"""streamkernel's figures by Flink's metric names: the one mapping the REST API and the reporters read.

Each function turns one published snapshot into ``{Flink's metric name: value}`` for one of Flink's
metric scopes (its logical scope in brackets):

* :func:`subtask_metric_values`: a running subtask (``taskmanager.job.task``), from its
  :meth:`~streamkernel.runtime.core.metrics.TaskMetrics.snapshot`;
* :func:`operator_metric_values`: one chained operator of it (``taskmanager.job.task.operator``);
* :func:`task_metric_values`: both, as the REST API lists a subtask's metrics (``<operator>.<name>``);
* :func:`taskmanager_metric_values`: a TaskManager (``taskmanager``; dotted names are sub-groups:
  ``Status.JVM.Memory.Heap.Used`` is ``Used`` in ``taskmanager.Status.JVM.Memory.Heap``);
* :func:`jobmanager_metric_values`: the JobManager (``jobmanager``);
* :func:`job_metric_values`: a job on the JobManager (``jobmanager.job``).

A metric added here shows in ``/jobs/:id/vertices/:vid/metrics`` (and the other metric resources)
and in every reporter's output alike. :func:`metric_type` tells a metric's Flink type (a reporter's
``filter.includes`` can select by it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Protocol

from streamkernel.common.job_status import JobStatus
from streamkernel.common.watermark_strategy import MIN_WATERMARK
from streamkernel.runtime.metrics.groups import MetricType

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.jobmaster.job_status import JobDetails
    from streamkernel.runtime.taskmanager.gateway import TaskExecutorHeartbeat

__all__ = ["TaskManagerFigures", "subtask_metric_values", "operator_metric_values", "task_metric_values",
           "taskmanager_metric_values", "heartbeat_memory", "jobmanager_metric_values", "job_metric_values", "ratios", "metric_type",
           "COUNTERS"]

#: The metrics Flink counts (Counter); ``num...PerSecond`` are its meters; every other one is a gauge.
COUNTERS = frozenset({"numRecordsIn", "numRecordsOut", "numBytesIn", "numBytesOut"})


def metric_type(name: str) -> MetricType:
    """Flink's type of the metric ``name`` of this module's scopes.

        >>> metric_type("numRecordsIn"), metric_type("numRecordsInPerSecond"), metric_type("busyTimeMsPerSecond")
        (<MetricType.COUNTER: 'counter'>, <MetricType.METER: 'meter'>, <MetricType.GAUGE: 'gauge'>)
    """
    if name.startswith("num") and name.endswith("PerSecond"):
        return MetricType.METER
    return MetricType.COUNTER if name in COUNTERS else MetricType.GAUGE


def ratios(metrics: Optional[Mapping[str, Any]]) -> tuple[float, float, float]:
    """(backpressured, idle, busy) shares of the subtask's recent time (0 when unknown).

    Flink's ratios are over the last second: these are over the ``"recent"`` figures a reader adds
    (:class:`~streamkernel.runtime.metrics.recent.RecentTimes`: about a second, or since its previous
    look), else, on a first look, averages over the subtask's whole run.
    """
    if not metrics:
        return 0.0, 0.0, 0.0
    metrics = metrics.get("recent") or metrics
    if not metrics.get("uptime_ns"):
        return 0.0, 0.0, 0.0
    uptime = float(metrics["uptime_ns"])
    return tuple(round(min(max(float(metrics.get(k, 0)) / uptime, 0.0), 1.0), 3)  # type: ignore[return-value]
                 for k in ("backpressured_ns", "idle_ns", "busy_ns"))


def subtask_metric_values(metrics: Optional[Mapping[str, Any]]) -> dict[str, float]:
    """A subtask's own metrics by Flink's names (``numRecordsIn``, ``busyTimeMsPerSecond`` ...).
    Per-second figures average over the subtask's run so far."""
    if not metrics:
        return {}
    seconds = float(metrics.get("uptime_ns", 0)) / 1e9
    back, idle, busy = ratios(metrics)
    return {
        "numRecordsIn": metrics.get("records_in", 0), "numRecordsOut": metrics.get("records_out", 0),
        "numBytesIn": metrics.get("bytes_in", 0), "numBytesOut": metrics.get("bytes_out", 0),
        "numRecordsInPerSecond": round(metrics.get("records_in", 0) / seconds, 3) if seconds else 0.0,
        "numRecordsOutPerSecond": round(metrics.get("records_out", 0) / seconds, 3) if seconds else 0.0,
        "numBytesInPerSecond": round(metrics.get("bytes_in", 0) / seconds, 3) if seconds else 0.0,
        "numBytesOutPerSecond": round(metrics.get("bytes_out", 0) / seconds, 3) if seconds else 0.0,
        "busyTimeMsPerSecond": round(busy * 1000, 1), "idleTimeMsPerSecond": round(idle * 1000, 1),
        "backPressuredTimeMsPerSecond": round(back * 1000, 1),
        "accumulatedBusyTime": int(metrics.get("busy_ns", 0)) // 1_000_000,
        "accumulatedIdleTime": int(metrics.get("idle_ns", 0)) // 1_000_000,
        "accumulatedBackpressuredTime": int(metrics.get("backpressured_ns", 0)) // 1_000_000,
        "currentInputWatermark": metrics.get("input_watermark", MIN_WATERMARK),
        "currentOutputWatermark": metrics.get("output_watermark", MIN_WATERMARK),
    }


def operator_metric_values(operator: Mapping[str, Any]) -> dict[str, float]:
    """One chained operator's metrics by Flink's names (its entry in the snapshot's ``"operators"``)."""
    return {"numRecordsIn": operator.get("records_in", 0), "numRecordsOut": operator.get("records_out", 0)}


def task_metric_values(metrics: Optional[Mapping[str, Any]]) -> dict[str, float]:
    """A subtask's metrics as the REST API lists them: its own (:func:`subtask_metric_values`) and
    each chained operator's as ``<operator>.numRecordsIn``."""
    values = subtask_metric_values(metrics)
    for name, op in ((metrics or {}).get("operators") or {}).items():
        values.update({f"{name}.{metric}": value for metric, value in operator_metric_values(op).items()})
    return values


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


def job_metric_values(details: "JobDetails") -> dict[str, Any]:
    """The job-level metrics (Flink's JobManager job metrics) by name."""
    values: dict[str, Any] = {
        "numRestarts": details.num_restarts, "fullRestarts": details.num_restarts,
        "uptime": details.duration_ms if details.status is JobStatus.RUNNING else 0,
        "downtime": 0, "restartingTime": 0,
    }
    stats = details.checkpoints
    if stats is not None:
        latest = stats.latest_completed
        values.update({
            "totalNumberOfCheckpoints": stats.num_triggered, "numberOfInProgressCheckpoints": stats.num_in_progress,
            "numberOfCompletedCheckpoints": stats.num_completed, "numberOfFailedCheckpoints": stats.num_failed,
            "lastCheckpointDuration": (latest.duration_ms or 0) if latest else -1,
            "lastCheckpointSize": latest.state_size if latest else -1,
            "lastCheckpointFullSize": latest.state_size if latest else -1,
            "lastCheckpointExternalPath": latest.external_path if latest and latest.external_path else "n/a",
            "lastCheckpointRestoreTimestamp": stats.latest_restored.restore_timestamp if stats.latest_restored else -1,
        })
    return values
