"""Checkpoint resources: ``/jobs/:jobid/checkpoints``, ``/checkpoints/config``,
``/checkpoints/details/:checkpointid`` and ``/checkpoints/details/:checkpointid/subtasks/:vertexid``."""

from __future__ import annotations

from streamkernel.runtime.checkpoint.history import CheckpointStats
from streamkernel.runtime.jobmaster.job_status import JobDetails
from streamkernel.runtime.rest.handlers.base import RestError, RestHandler, bad_parameter
from streamkernel.runtime.rest.json_views.checkpoints import (
    checkpoint_config,
    checkpoint_statistics,
    checkpointing_statistics,
    task_checkpoint_details,
)
from streamkernel.runtime.rest.json_views.ids import vertex_hex_ids

__all__ = ["ROUTES"]


class CheckpointingStatisticsHandler(RestHandler):
    """``GET /jobs/:jobid/checkpoints``: counts, summary, latest and history of the job's checkpoints."""

    def get(self, jobid: str) -> None:
        """Flink's CheckpointingStatistics."""
        details = self.job(jobid)
        self.write_json(checkpointing_statistics(details.checkpoints, details.vertices, vertex_hex_ids(details)))


class CheckpointConfigHandler(RestHandler):
    """``GET /jobs/:jobid/checkpoints/config``: the job's checkpointing configuration (404 when off)."""

    def get(self, jobid: str) -> None:
        """Flink's CheckpointConfigInfo."""
        details = self.job(jobid)
        body = checkpoint_config(self.context.job_configuration(details))
        if body is None:
            raise RestError(404, "Checkpointing is not enabled for this job (" + details.job_id + ").")
        self.write_json(body)


def _checkpoint(handler: RestHandler, details: JobDetails, checkpointid: str) -> CheckpointStats:
    if not checkpointid.isdigit():
        raise bad_parameter("checkpointid", checkpointid)
    stats = details.checkpoints.get(int(checkpointid)) if details.checkpoints is not None else None
    if stats is None:
        raise RestError(404, f"Could not find checkpointing statistics for checkpoint {checkpointid}.")
    return stats


class CheckpointDetailsHandler(RestHandler):
    """``GET /jobs/:jobid/checkpoints/details/:checkpointid``: one checkpoint of the history, per vertex."""

    def get(self, jobid: str, checkpointid: str) -> None:
        """Flink's CheckpointStatistics."""
        details = self.job(jobid)
        stats = _checkpoint(self, details, checkpointid)
        self.write_json(checkpoint_statistics(stats, details.vertices, vertex_hex_ids(details)))


class TaskCheckpointDetailsHandler(RestHandler):
    """``GET .../checkpoints/details/:checkpointid/subtasks/:vertexid``: one vertex's subtasks in it."""

    def get(self, jobid: str, checkpointid: str, vertexid: str) -> None:
        """Flink's TaskCheckpointStatisticsWithSubtaskDetails."""
        details = self.job(jobid)
        vertex = self.vertex(details, vertexid)
        self.write_json(task_checkpoint_details(_checkpoint(self, details, checkpointid), vertex))


ROUTES = [
    ("/jobs/:jobid/checkpoints", CheckpointingStatisticsHandler),
    ("/jobs/:jobid/checkpoints/config", CheckpointConfigHandler),
    ("/jobs/:jobid/checkpoints/details/:checkpointid", CheckpointDetailsHandler),
    ("/jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid", TaskCheckpointDetailsHandler),
]
