"""A job's checkpoints as Flink's REST API shows them: ``/jobs/:jobid/checkpoints`` (counts,
summary, latest, history), ``/checkpoints/config``, ``/checkpoints/details/:checkpointid`` and
its per-vertex subtasks, from the job's published checkpoint statistics."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from streamkernel.common.options import CheckpointingOptions, StateBackendOptions
from streamkernel.runtime.checkpoint.history import CheckpointStats, CheckpointStatsSnapshot, CheckpointStatus
from streamkernel.runtime.jobmaster.job_status import VertexDetails

__all__ = ["checkpointing_statistics", "checkpoint_statistics", "checkpoint_config", "task_checkpoint_details",
           "stats_summary", "min_max_avg_summary"]

_CLASS_NAMES = {CheckpointStatus.COMPLETED: "completed", CheckpointStatus.FAILED: "failed",
                CheckpointStatus.IN_PROGRESS: "in_progress"}


def stats_summary(values: Sequence[float]) -> dict:
    """Flink's StatsSummaryDto: min, max, avg and the p50 ... p999 quantiles (0 without values)."""
    if not values:
        return {"min": 0, "max": 0, "avg": 0, "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0, "p999": 0.0}
    ordered = sorted(values)

    def quantile(q: float) -> float:  # nearest rank, as Flink's histogram of the retained values
        return float(ordered[min(int(q * len(ordered)), len(ordered) - 1)])

    return {"min": int(ordered[0]), "max": int(ordered[-1]), "avg": int(sum(ordered) / len(ordered)),
            "p50": quantile(0.5), "p90": quantile(0.9), "p95": quantile(0.95), "p99": quantile(0.99),
            "p999": quantile(0.999)}


def min_max_avg_summary(values: Sequence[float]) -> dict:
    """Flink's StatsSummaryDto of a vertex's subtasks in one checkpoint: ``min``, ``max`` and
    ``avg`` of their values, and quantiles NaN (Flink keeps no histogram per checkpoint and
    writes NaN as the string ``"NaN"``, as :meth:`~..handlers.base.RestHandler.write_json` does)."""
    nan = float("nan")
    quantiles = {"p50": nan, "p90": nan, "p95": nan, "p99": nan, "p999": nan}
    if not values:
        return {"min": 0, "max": 0, "avg": 0, **quantiles}
    return {"min": int(min(values)), "max": int(max(values)), "avg": int(sum(values) / len(values)), **quantiles}


def _checkpoint_type(stats: CheckpointStats) -> str:
    if stats.is_savepoint:
        return "SAVEPOINT"
    return "UNALIGNED_CHECKPOINT" if stats.unaligned else "CHECKPOINT"


def _vertex_stats(stats: CheckpointStats, vertex: VertexDetails) -> dict:
    acks = [a for (vertex_id, _), a in stats.acknowledged.items() if vertex_id == vertex.vertex_id]
    size = sum(a.state_size or 0 for a in acks)
    latest = max((a.ack_timestamp for a in acks), default=-1)
    return {"id": stats.checkpoint_id, "status": stats.status.value, "latest_ack_timestamp": latest,
            "checkpointed_size": size, "state_size": size,
            "end_to_end_duration": max((a.duration_ms for a in acks), default=-1),
            "alignment_buffered": 0, "processed_data": 0,
            "persisted_data": sum(a.persisted_data for a in acks),
            "num_subtasks": vertex.parallelism, "num_acknowledged_subtasks": len(acks)}


def checkpoint_statistics(stats: CheckpointStats, vertices: Sequence[VertexDetails], ids: Mapping[int, str]) -> dict:
    """Flink's CheckpointStatistics of one checkpoint (``className`` completed / failed / in_progress)."""
    body: dict[str, Any] = {
        "className": _CLASS_NAMES[stats.status], "id": stats.checkpoint_id, "status": stats.status.value,
        "is_savepoint": stats.is_savepoint, "savepointFormat": "CANONICAL" if stats.is_savepoint else None,
        "trigger_timestamp": stats.trigger_timestamp,
        "latest_ack_timestamp": stats.latest_ack_timestamp if stats.latest_ack_timestamp is not None else -1,
        "checkpointed_size": stats.state_size, "state_size": stats.state_size,
        "end_to_end_duration": stats.duration_ms if stats.duration_ms is not None else -1,
        # streamkernel does not measure buffered or processed in-flight data during alignment: 0 as Flink's unknown
        "alignment_buffered": 0, "processed_data": 0, "persisted_data": stats.persisted_data,
        "num_subtasks": stats.num_subtasks, "num_acknowledged_subtasks": stats.num_acknowledged,
        "checkpoint_type": _checkpoint_type(stats),
        "tasks": {ids[v.vertex_id]: _vertex_stats(stats, v) for v in vertices},
    }
    if stats.status is CheckpointStatus.COMPLETED:
        body.update({"external_path": stats.external_path or "<checkpoint-not-externally-addressable>",
                     "discarded": False})
    elif stats.status is CheckpointStatus.FAILED:
        body.update({"failure_timestamp": stats.end_timestamp if stats.end_timestamp is not None else -1,
                     "failure_message": stats.failure_reason})
    return body


def checkpointing_statistics(snapshot: Optional[CheckpointStatsSnapshot], vertices: Sequence[VertexDetails],
                             ids: Mapping[int, str]) -> dict:
    """Flink's CheckpointingStatistics: counts, summary (over the completed checkpoints still in
    the history), latest completed / savepoint / failed / restored, history (newest first)."""
    if snapshot is None:
        snapshot = CheckpointStatsSnapshot(0, 0, 0, 0, (), None, None, None, None)
    completed = [s for s in snapshot.history if s.status is CheckpointStatus.COMPLETED]
    sizes = [float(s.state_size) for s in completed]
    restored = snapshot.latest_restored

    def one(stats: Optional[CheckpointStats]) -> Optional[dict]:
        return None if stats is None else checkpoint_statistics(stats, vertices, ids)

    return {
        "counts": {"restored": 1 if restored is not None else 0, "total": snapshot.num_triggered,
                   "in_progress": snapshot.num_in_progress, "completed": snapshot.num_completed,
                   "failed": snapshot.num_failed},
        "summary": {"checkpointed_size": stats_summary(sizes), "state_size": stats_summary(sizes),
                    "end_to_end_duration": stats_summary([float(s.duration_ms or 0) for s in completed]),
                    "alignment_buffered": stats_summary([]), "processed_data": stats_summary([]),
                    "persisted_data": stats_summary([float(s.persisted_data) for s in completed])},
        "latest": {"completed": one(snapshot.latest_completed), "savepoint": one(snapshot.latest_savepoint),
                   "failed": one(snapshot.latest_failed),
                   "restored": None if restored is None else {
                       "id": restored.checkpoint_id, "restore_timestamp": restored.restore_timestamp,
                       "is_savepoint": restored.is_savepoint, "external_path": restored.external_path}},
        "history": [checkpoint_statistics(s, vertices, ids) for s in snapshot.history],
    }


def task_checkpoint_details(stats: CheckpointStats, vertex: VertexDetails) -> dict:
    """Flink's TaskCheckpointStatisticsWithSubtaskDetails: one vertex's subtasks in a checkpoint."""
    body = _vertex_stats(stats, vertex)
    acks = {sub: a for (vertex_id, sub), a in stats.acknowledged.items() if vertex_id == vertex.vertex_id}
    subtasks = []
    for sub in vertex.subtasks:
        ack = acks.get(sub.subtask_index)
        if ack is None:
            subtasks.append({"index": sub.subtask_index, "status": "pending_or_failed",
                             "className": "pending_or_failed"})
            continue
        size = ack.state_size or 0
        measured = ack.metrics  # what the subtask measured (-1: not measured, e.g. an older TaskManager)
        subtasks.append({"index": sub.subtask_index, "status": "completed", "ack_timestamp": ack.ack_timestamp,
                         "end_to_end_duration": ack.duration_ms, "state_size": size, "checkpointed_size": size,
                         "checkpoint": {"sync": measured.sync_ms, "async": measured.async_ms},
                         # bytes buffered or processed during alignment are not measured (objects, not bytes)
                         "alignment": {"buffered": 0, "processed": 0, "persisted": ack.persisted_data,
                                       "duration": measured.alignment_ms},
                         "start_delay": measured.start_delay_ms, "unaligned_checkpoint": ack.unaligned,
                         "aborted": False, "className": "completed"})
    done = [a for a in acks.values()]

    def measured_of(field: str) -> list[float]:
        return [float(v) for v in (getattr(a.metrics, field) for a in done) if v >= 0]

    body["summary"] = {
        "checkpointed_size": min_max_avg_summary([float(a.state_size or 0) for a in done]),
        "state_size": min_max_avg_summary([float(a.state_size or 0) for a in done]),
        "end_to_end_duration": min_max_avg_summary([float(a.duration_ms) for a in done]),
        "checkpoint_duration": {"sync": min_max_avg_summary(measured_of("sync_ms")),
                                "async": min_max_avg_summary(measured_of("async_ms"))},
        # Flink's "buffered" is a fixed zero summary (quantiles 0.0, not NaN)
        "alignment": {"buffered": stats_summary([]), "processed": min_max_avg_summary([]),
                      "persisted": min_max_avg_summary([float(a.persisted_data) for a in done]),
                      "duration": min_max_avg_summary(measured_of("alignment_ms"))},
        "start_delay": min_max_avg_summary(measured_of("start_delay_ms"))}
    body["subtasks"] = subtasks
    return body


def checkpoint_config(configuration: Mapping[str, str]) -> Optional[dict]:
    """Flink's CheckpointConfigInfo of a job (``configuration``: its effective one); None when
    checkpointing is off."""
    interval = CheckpointingOptions.CHECKPOINTING_INTERVAL.get(configuration)
    if interval is None or interval.to_milliseconds() <= 0:
        return None
    retention = str(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION.get(configuration) or "")
    directory = CheckpointingOptions.CHECKPOINTS_DIRECTORY.get(configuration)
    storage = CheckpointingOptions.CHECKPOINT_STORAGE.get(configuration) or ("filesystem" if directory else "jobmanager")
    storage = {"jobmanager": "JobManagerCheckpointStorage", "filesystem": "FileSystemCheckpointStorage"}.get(
        storage.lower(), storage)
    backend = StateBackendOptions.STATE_BACKEND.get(configuration)
    return {
        "mode": CheckpointingOptions.CHECKPOINTING_MODE.get(configuration).lower(),
        "interval": interval.to_milliseconds(),
        "timeout": CheckpointingOptions.CHECKPOINTING_TIMEOUT.get(configuration).to_milliseconds(),
        "min_pause": CheckpointingOptions.MIN_PAUSE_BETWEEN_CHECKPOINTS.get(configuration).to_milliseconds(),
        "max_concurrent": CheckpointingOptions.MAX_CONCURRENT_CHECKPOINTS.get(configuration),
        "externalization": {"enabled": retention.upper() != "NO_EXTERNALIZED_CHECKPOINTS" and bool(directory),
                            "delete_on_cancellation": retention.upper() != "RETAIN_ON_CANCELLATION"},
        "state_backend": {"hashmap": "HashMapStateBackend", "rocksdb": "EmbeddedRocksDBStateBackend"}.get(
            str(backend).lower(), str(backend)),
        "checkpoint_storage": storage,
        "unaligned_checkpoints": bool(CheckpointingOptions.ENABLE_UNALIGNED.get(configuration)),
        "tolerable_failed_checkpoints": CheckpointingOptions.TOLERABLE_FAILURE_NUMBER.get(configuration),
        "aligned_checkpoint_timeout": CheckpointingOptions.ALIGNED_CHECKPOINT_TIMEOUT.get(configuration)
        .to_milliseconds(),
        "checkpoints_after_tasks_finish": True,
        "state_changelog_enabled": False,  # streamkernel has no changelog state backend
        "changelog_periodic_materialization_interval": -1, "changelog_storage": "",
    }
