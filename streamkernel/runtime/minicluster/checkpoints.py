"""Checkpoints and savepoints of a MiniCluster's jobs, on request (``%flink checkpoint/savepoint``).

:class:`ClusterCheckpoints` is ``MiniCluster.checkpoints``: take a checkpoint or a savepoint
now and wait for its path, stop a job with a savepoint, read a job's checkpoint history.
It needs only the cluster's Dispatcher: requests go through it to the job's JobMaster,
which drives the job's CheckpointCoordinator; statistics come from the job's published
status snapshot.

Restoring needs no method here: a job starts from a savepoint or a retained checkpoint when
it is submitted with ``execution.state-recovery.path`` (PyFlink 2.x; 1.x
``execution.savepoint.path``) in its configuration, at the parallelism its program now
asks for::

    env.configure(Configuration.from_dict({"execution.state-recovery.path": path}))
    env.execute_async("restored")         # keyed state is redistributed by key group
"""

from __future__ import annotations

from typing import Any, Optional, Union

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.futures import result_within
from streamkernel.common.job_status import JobID
from streamkernel.runtime.checkpoint.history import CheckpointStatsSnapshot
from streamkernel.runtime.dispatcher.dispatcher import Dispatcher

__all__ = ["ClusterCheckpoints", "DEFAULT_CHECKPOINT_WAIT_SECONDS"]

#: How long ``trigger_checkpoint`` / ``trigger_savepoint`` / ``stop_with_savepoint`` wait by default.
DEFAULT_CHECKPOINT_WAIT_SECONDS = 60.0

JobIdLike = Union[JobID, str]


class ClusterCheckpoints:
    """Checkpoint requests and statistics of the jobs of one Dispatcher (``MiniCluster.checkpoints``)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def trigger_checkpoint(self, job_id: JobIdLike, timeout: Optional[float] = DEFAULT_CHECKPOINT_WAIT_SECONDS) -> str:
        """Take a checkpoint of a running job now and wait for it; returns its directory.

        Raises :class:`~streamkernel.errors.CheckpointFailedError` (a RuntimeError) saying why
        when it fails (the job is not running, a task declined ...), TimeoutError after
        ``timeout`` seconds (the checkpoint may still complete: see :meth:`checkpoint_history`).
        """
        return self._wait(self.dispatcher.trigger_checkpoint(_job(job_id)), "checkpoint", job_id, timeout)

    def trigger_savepoint(self, job_id: JobIdLike, target_dir: Optional[str] = None,
                          timeout: Optional[float] = DEFAULT_CHECKPOINT_WAIT_SECONDS) -> str:
        """Take a savepoint of a running job and wait for it; returns its directory.

        ``target_dir`` None: ``execution.checkpointing.savepoint-dir`` (1.x
        ``state.savepoints.dir``), else ``./savepoints``. Savepoints are never deleted by
        the cluster. Raises as :meth:`trigger_checkpoint`.
        """
        future = self.dispatcher.trigger_savepoint(_job(job_id), _text(target_dir))
        return self._wait(future, "savepoint", job_id, timeout)

    def stop_with_savepoint(self, job_id: JobIdLike, target_dir: Optional[str] = None,
                            timeout: Optional[float] = DEFAULT_CHECKPOINT_WAIT_SECONDS, drain: bool = False) -> str:
        """Stop the job with a synchronous savepoint (Flink's stop-with-savepoint); returns the
        savepoint's directory once the job has ended FINISHED. The sources stop at the
        savepoint's barrier and nothing read after it reaches a sink; ``drain`` (Flink's
        ``--drain``) emits MAX_WATERMARK first, so event-time windows and timers fire. The job
        keeps running if the savepoint fails (see ``JobMaster.stop_with_savepoint``)."""
        future = self.dispatcher.stop_with_savepoint(_job(job_id), _text(target_dir), drain)
        return self._wait(future, "stop-with-savepoint", job_id, timeout)

    def checkpoint_stats(self, job_id: JobIdLike) -> Optional[CheckpointStatsSnapshot]:
        """A job's checkpoint statistics (counts, history, latest completed/failed/restored)."""
        return self.dispatcher.request_job_details(_job(job_id)).checkpoints

    def checkpoint_history(self, job_id: JobIdLike) -> list[dict]:
        """A job's recent checkpoints and savepoints, newest first: ``id``, ``status``,
        ``type``, ``trigger_timestamp``, ``duration_ms``, ``state_size``, ``acknowledged``
        (``"3/3"``), ``path``, ``failure`` and ``subtasks`` (one row per acknowledgement)."""
        return self.dispatcher.request_job_details(_job(job_id)).checkpoint_rows()

    @staticmethod
    def _wait(future: CompletableFuture, what: str, job_id: JobIdLike, timeout: Optional[float]) -> str:
        try:
            return result_within(future, timeout)
        except TimeoutError:
            if future.done():
                raise
            raise TimeoutError(f"the {what} of job {job_id} did not complete within {timeout} s; it may still "
                               "complete (see MiniCluster.checkpoints.checkpoint_history)") from None


def _job(job_id: JobIdLike) -> JobID:
    return job_id if isinstance(job_id, JobID) else JobID.from_hex_string(str(job_id))


def _text(path: Any) -> Optional[str]:
    return None if path is None else str(path)
