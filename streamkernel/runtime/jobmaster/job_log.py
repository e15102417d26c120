"""What a JobMaster logs about its job, in Flink's words (the JobManager's log file).

Every job status change is a line, as Flink's ``Job <name> (<id>) switched from state RUNNING
to RESTARTING.``, and so is every failed subtask (``... switched from RUNNING to FAILED with
failure cause: ...``, its trace below it). A job that restarts or ends FAILED concerns the
user's program: those two lines are WARNINGs marked ``extra=CONCERNS_USER`` and carry the
cause's first line, so besides the cluster's log file they reach the program's own logger,
the notebook (:mod:`streamkernel.runtime.core.engine_log`): one line per failure of the job,
however many of its subtasks failed with it (a lost TaskManager fails all of its subtasks).
"""

from __future__ import annotations

import logging
from typing import Optional

from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.core.deployment import ExecutionState
from streamkernel.runtime.core.engine_log import CONCERNS_USER

__all__ = ["log_job_status", "log_task_failed"]

_LOG = logging.getLogger("streamkernel.runtime.jobmaster")


def _cause(error: Optional[BaseException]) -> str:
    if error is None:
        return "unknown"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def log_task_failed(job_name: str, task_name: str, attempt: int, previous: ExecutionState,
                    error: Optional[BaseException]) -> None:
    """A subtask attempt of ``job_name`` failed (Flink's Task: ``... switched from RUNNING to FAILED with
    failure cause: ...``); the log file only: the job's line (:func:`log_job_status`) tells the user."""
    _LOG.warning("%s#%d of job %r switched from %s to FAILED with failure cause: %s", task_name, attempt, job_name,
                 previous.name, _cause(error),
                 exc_info=(type(error), error, error.__traceback__) if error is not None else None)


def log_job_status(job_name: str, job_id: str, previous: JobStatus, status: JobStatus,
                   cause: Optional[BaseException] = None) -> None:
    """The job went from ``previous`` to ``status``: INFO, or a WARNING for the user when it restarts or FAILED
    (with ``cause``, the failure's first line)."""
    if status in (JobStatus.RESTARTING, JobStatus.FAILED):
        _LOG.warning("Job %r (%s) switched from state %s to %s: %s", job_name, job_id, previous.name, status.name,
                     _cause(cause), extra=CONCERNS_USER)
    else:
        _LOG.info("Job %r (%s) switched from state %s to %s.", job_name, job_id, previous.name, status.name)
