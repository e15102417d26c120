"""JobClient: the handle a program holds on a submitted job (PyFlink's JobClient).

This module is the interface only; ``env.execute_async()`` returns an implementation that
talks to the JobManager. Every request answers with a
:class:`~streamkernel.common.completable_future.CompletableFuture`, as in PyFlink.
"""

from __future__ import annotations

import abc
from typing import Any, Dict, Optional

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.job_execution_result import JobExecutionResult
from streamkernel.common.job_status import JobID, JobStatus

__all__ = ["JobClient"]


class JobClient(abc.ABC):
    """A client that is scoped to one specific job.

        >>> client = env.execute_async("my job")              # doctest: +SKIP
        >>> client.get_job_status().result()                  # doctest: +SKIP
        <JobStatus.RUNNING: 2>
        >>> client.cancel().result()                          # doctest: +SKIP
    """

    @abc.abstractmethod
    def get_job_id(self) -> JobID:
        """The JobID that uniquely identifies the job this client is scoped to."""

    @abc.abstractmethod
    def get_job_status(self) -> CompletableFuture[JobStatus]:
        """Requests the :class:`JobStatus` of the job."""

    @abc.abstractmethod
    def cancel(self) -> CompletableFuture[None]:
        """Cancels the job; the future completes when the job is cancelled."""

    @abc.abstractmethod
    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool = False, savepoint_directory: Optional[str] = None
    ) -> CompletableFuture[str]:
        """Stops the job after taking a savepoint; the future holds the savepoint's path.

        :param advance_to_end_of_event_time: if True, sources emit ``MAX_WATERMARK`` before
            stopping, so every event-time timer and window fires.
        :param savepoint_directory: where to write the savepoint (the configured default
            directory if None).
        """

    @abc.abstractmethod
    def trigger_savepoint(self, savepoint_directory: Optional[str] = None) -> CompletableFuture[str]:
        """Takes a savepoint of the running job; the future holds the savepoint's path."""

    @abc.abstractmethod
    def get_accumulators(self) -> CompletableFuture[Dict[str, Any]]:
        """Requests the accumulators of the job, while it runs or after it finished."""

    @abc.abstractmethod
    def get_job_execution_result(self) -> CompletableFuture[JobExecutionResult]:
        """The :class:`JobExecutionResult` of the job; completes when the job finishes
        (completes exceptionally if the job fails or is cancelled)."""
