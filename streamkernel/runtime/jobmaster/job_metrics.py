"""A job's metrics as Flink's JobManager registers them (its job scope), from a published snapshot.

Flink's ``JobStatusMetrics`` (with ``metrics.job.status.enable``'s default, ``CURRENT_TIME``:
``<state>Time`` is the time since the job entered ``<state>`` while it is in it, else 0),
``DeploymentStateTimeMetrics`` (``deployingTime``), ``AllSubTasksRunningOrFinishedStateTimeMetrics``
(``allSubTasksRunningOrFinishedTime``), the restart counters, and the checkpoint statistics'
gauges (``lastCheckpoint*``, ``numberOf*Checkpoints``). :func:`job_metric_values` computes them
from a :class:`~.job_status.JobDetails` and the reader's clock, so whoever shows them (the REST
API's ``/jobs/:jobid/metrics``, a metric reporter) shows the same values; nothing is kept in
the JobMaster for them.
"""

from __future__ import annotations

from typing import Any

from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.core.deployment import ExecutionState
from streamkernel.runtime.jobmaster.job_status import JobDetails

__all__ = ["job_metric_values", "STATE_TIME_METRICS"]

#: The job states whose ``<state>Time`` Flink registers (``metrics.job.status.enable``: CURRENT_TIME).
STATE_TIME_METRICS = {JobStatus.CREATED: "createdTime", JobStatus.INITIALIZING: "initializingTime",
                      JobStatus.RUNNING: "runningTime", JobStatus.RESTARTING: "restartingTime",
                      JobStatus.CANCELLING: "cancellingTime", JobStatus.FAILING: "failingTime"}


def _since(details: JobDetails, status: JobStatus, now_ms: int) -> int:
    """Milliseconds since the job entered ``status`` if it is in it now, else 0."""
    if details.status is not status:
        return 0
    entered = details.status_timestamps.get(status.name, details.start_time)
    return max(now_ms - entered, 0)


def _deploying_time(details: JobDetails, now_ms: int) -> int:
    """Since the oldest of the subtasks in DEPLOYING went there (a streaming job deploys while
    any subtask does); 0 when none deploys."""
    deploying = [s.state_timestamps.get(ExecutionState.DEPLOYING.value, now_ms) for s in details.subtasks
                 if s.state is ExecutionState.DEPLOYING]
    return max(now_ms - min(deploying), 0) if deploying else 0


def _all_running_or_finished_time(details: JobDetails, now_ms: int) -> int:
    """Since the last subtask became RUNNING (or FINISHED) while every subtask is; else 0."""
    subtasks = details.subtasks
    if not subtasks or details.status is not JobStatus.RUNNING or any(
            s.state not in (ExecutionState.RUNNING, ExecutionState.FINISHED) for s in subtasks):
        return 0
    reached = [s.state_timestamps.get(ExecutionState.RUNNING.value, s.state_timestamps.get(s.state.value, now_ms))
               for s in subtasks]
    return max(now_ms - max(reached), 0)


def job_metric_values(details: JobDetails, now_ms: int) -> dict[str, Any]:
    """Every job metric Flink's JobManager shows for this job, by Flink's names, at ``now_ms``.

    ``uptime`` (deprecated in Flink for ``runningTime``) and ``downtime`` (for ``restartingTime``,
    ``cancellingTime``, ``failingTime``) keep their old meaning: the time running, or restarting
    or failing, now. ``numRescales`` is 0: a running job is never rescaled here (a savepoint
    restored at another parallelism is a new job). Checkpoint gauges are -1 (``n/a`` for the
    path) until a checkpoint completed; ``lastCheckpointProcessedData`` is 0 as the checkpoint
    statistics' ``processed_data`` (the bytes processed during alignment are not measured:
    exchanges inside a process hand objects over, not bytes).
    """
    values: dict[str, Any] = {
        "numRestarts": details.num_restarts, "fullRestarts": details.num_restarts, "numRescales": 0,
        "uptime": _since(details, JobStatus.RUNNING, now_ms),
        "downtime": _since(details, JobStatus.RESTARTING, now_ms) or _since(details, JobStatus.FAILING, now_ms),
        "deployingTime": _deploying_time(details, now_ms),
        "allSubTasksRunningOrFinishedTime": _all_running_or_finished_time(details, now_ms),
    }
    values.update({name: _since(details, status, now_ms) for status, name in STATE_TIME_METRICS.items()})
    stats = details.checkpoints
    if stats is None:
        return values
    latest = stats.latest_completed
    values.update({
        "totalNumberOfCheckpoints": stats.num_triggered, "numberOfInProgressCheckpoints": stats.num_in_progress,
        "numberOfCompletedCheckpoints": stats.num_completed, "numberOfFailedCheckpoints": stats.num_failed,
        "lastCompletedCheckpointId": latest.checkpoint_id if latest else -1,
        "lastCheckpointCompletedTimestamp": latest.end_timestamp if latest and latest.end_timestamp else -1,
        "lastCheckpointDuration": (latest.duration_ms or 0) if latest else -1,
        "lastCheckpointSize": latest.state_size if latest else -1,
        "lastCheckpointFullSize": latest.state_size if latest else -1,
        "lastCheckpointMetadataSize": latest.metadata_size if latest else -1,
        "lastCheckpointPersistedData": latest.persisted_data if latest else -1,
        "lastCheckpointProcessedData": 0 if latest else -1,
        "lastCheckpointExternalPath": latest.external_path if latest and latest.external_path else "n/a",
        "lastCheckpointRestoreTimestamp": stats.latest_restored.restore_timestamp if stats.latest_restored else -1,
    })
    return values
