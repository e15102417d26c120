"""A ended job's result as Flink's ``JobExecutionResultResponseBody`` (``/jobs/:jobid/execution-result``).

Flink's ``JobResult``: ``id``, ``application-status`` (SUCCEEDED, FAILED, CANCELED),
``accumulator-results``, ``net-runtime`` (ms) and, for a failed job, ``failure-cause`` as a
SerializedThrowable (``class``, ``stack-trace``, ``serialized-throwable``). Flink sends the
accumulators and the throwable Java-serialized (base64); streamkernel sends accumulators as
JSON values (their text when they are not JSON) and no serialized throwable (``""``): a
client never unpickles what a server sent.
"""

from __future__ import annotations

import json
import traceback
from typing import Any

from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.jobmaster.job_status import JobResult

__all__ = ["execution_result_body", "application_status", "failure_cause_body"]

_APPLICATION_STATUS = {JobStatus.FINISHED: "SUCCEEDED", JobStatus.FAILED: "FAILED", JobStatus.CANCELED: "CANCELED"}


def application_status(status: JobStatus) -> str:
    """Flink's ApplicationStatus of a job that ended in ``status``."""
    return _APPLICATION_STATUS.get(status, "UNKNOWN")


def _json_value(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)


def failure_cause_body(cause: BaseException) -> dict:
    """Flink's SerializedThrowable: the cause's class and its traceback (Python's, last line the message)."""
    text = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))
    return {"class": f"{type(cause).__module__}.{type(cause).__qualname__}", "stack-trace": text,
            "serialized-throwable": ""}


def execution_result_body(result: JobResult) -> dict:
    """``{"status": {"id": "COMPLETED"}, "job-execution-result": {...}}`` of an ended job."""
    body: dict[str, Any] = {
        "id": result.job_id,
        "application-status": application_status(result.status),
        "accumulator-results": {str(k): _json_value(v) for k, v in dict(result.accumulators).items()},
        "net-runtime": int(result.net_runtime_ms),
    }
    if result.failure_cause is not None:
        body["failure-cause"] = failure_cause_body(result.failure_cause)
    # streamkernel extras a remote client needs to raise the same error env.execute() raises locally
    body["job-name"] = result.job_name
    body["num-restarts"] = int(result.num_restarts)
    if result.failing_task:
        body["failing-task"] = str(result.failing_task)
    return {"status": {"id": "COMPLETED"}, "job-execution-result": body}

