"""JobExecutionResult: what a finished job reports back (id, runtime, accumulators)."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from streamkernel.common.job_status import JobID

__all__ = ["JobExecutionResult"]


class JobExecutionResult:
    """The result of a job execution: its JobID, its net runtime and its accumulators.

    streamkernel extra: :meth:`get_num_restarts`, how often the job restarted after
    failures before it finished (Flink reports it as the job metric ``numRestarts``).

        >>> result = JobExecutionResult(JobID(), 1234, {"records": 10})
        >>> result.get_net_runtime(), result.get_accumulator_result("records")
        (1234, 10)
    """

    def __init__(self, job_id: JobID, net_runtime: int, accumulators: Optional[Mapping[str, Any]] = None,
                 num_restarts: int = 0) -> None:
        self._job_id = job_id
        self._net_runtime = int(net_runtime)
        self._accumulators: Dict[str, Any] = dict(accumulators or {})
        self._num_restarts = int(num_restarts)

    def get_job_id(self) -> JobID:
        """The JobID of the executed job."""
        return self._job_id

    def is_job_execution_result(self) -> bool:
        """Always True: this is the result of an execution (PyFlink's JobSubmissionResult API)."""
        return True

    def get_job_execution_result(self) -> "JobExecutionResult":
        """This result (PyFlink's JobSubmissionResult API)."""
        return self

    def get_net_runtime(self) -> int:
        """The net execution time of the job in milliseconds, from start to its end."""
        return self._net_runtime

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        """The final value of the accumulator ``accumulator_name``, or None if there is none."""
        return self._accumulators.get(accumulator_name)

    def get_all_accumulator_results(self) -> Dict[str, Any]:
        """A dict of every accumulator's name to its final value."""
        return dict(self._accumulators)

    def get_num_restarts(self) -> int:
        """How often the job was restarted by its restart strategy (Flink's ``numRestarts``)."""
        return self._num_restarts

    def to_string(self) -> str:
        """A readable summary of the result."""
        return str(self)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, JobExecutionResult)
            and (self._job_id, self._net_runtime, self._accumulators)
            == (other._job_id, other._net_runtime, other._accumulators)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable accumulators

    def __str__(self) -> str:
        return (
            f"JobExecutionResult(job_id={self._job_id}, net_runtime={self._net_runtime} ms, "
            f"accumulators={self._accumulators}"
            + (f", num_restarts={self._num_restarts})" if self._num_restarts else ")")
        )

    __repr__ = __str__
