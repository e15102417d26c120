"""Jobs as Flink 2.3's applications: ``/applications/overview`` and ``/applications/:applicationid``.

Flink 2.3 wraps every job submitted to a session cluster in a ``SingleJobApplication`` whose id
is the job's id and whose name is ``SingleJobApplication(<job name>)`` (measured against
PyFlink 2.3.0's local cluster); its dashboard lists applications on the Overview page. A
streamkernel job is shown the same way: one application per job, with the job's id.
"""

from __future__ import annotations

from typing import Any, Mapping

from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.jobmaster.job_status import JobDetails
from streamkernel.runtime.rest.json_views.jobs import job_overview

__all__ = ["application_status", "application_overview", "application_details", "APPLICATION_STATES"]

#: Flink's ApplicationState values, in the order its ``timestamps`` list them.
APPLICATION_STATES = ("CREATED", "FAILING", "FAILED", "RUNNING", "CANCELED", "CANCELING", "FINISHED")

_BY_JOB_STATUS = {JobStatus.FAILING: "FAILING", JobStatus.FAILED: "FAILED", JobStatus.CANCELLING: "CANCELING",
                  JobStatus.CANCELED: "CANCELED", JobStatus.FINISHED: "FINISHED"}


def application_status(details: JobDetails) -> str:
    """The ApplicationState of a job's single-job application: the job's terminal or failing /
    canceling state, else RUNNING (an application runs while its job is initializing,
    restarting, suspended ...)."""
    return _BY_JOB_STATUS.get(details.status, "RUNNING")


def _end_time(details: JobDetails) -> int:
    return details.end_time if details.end_time is not None else -1


def application_overview(details: JobDetails, now: int) -> dict:
    """One entry of ``/applications/overview``: the application and its jobs counted by state."""
    return {"id": details.job_id, "name": f"SingleJobApplication({details.job_name})",
            "start-time": details.start_time, "end-time": _end_time(details), "duration": details.duration_at(now),
            "status": application_status(details), "jobs": {details.status.name: 1}}


def application_details(details: JobDetails, configuration: Mapping[str, str], now: int) -> dict:
    """``/applications/:applicationid``: the application, when it entered each state (0: never),
    and its job as ``/jobs/overview`` shows it."""
    status = application_status(details)
    timestamps: dict[str, Any] = {state: 0 for state in APPLICATION_STATES}
    timestamps["CREATED"] = timestamps["RUNNING"] = details.start_time
    if status != "RUNNING":
        timestamps[status] = details.status_timestamps.get(details.status.name, _end_time(details))
    return {"id": details.job_id, "name": f"SingleJobApplication({details.job_name})", "status": status,
            "start-time": details.start_time, "end-time": _end_time(details), "duration": details.duration_at(now),
            "timestamps": timestamps, "jobs": [job_overview(details, configuration, now)]}
