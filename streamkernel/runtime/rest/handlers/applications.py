"""Flink 2.3's application resources: ``/applications/overview``, ``/applications/:applicationid``
and its ``exceptions`` and ``jobmanager/config``; every job is one ``SingleJobApplication`` with the job's id
(:mod:`~streamkernel.runtime.rest.json_views.applications`)."""

from __future__ import annotations

from streamkernel.runtime.jobmaster.job_status import JobDetails
from streamkernel.runtime.rest.context import now_ms
from streamkernel.runtime.rest.handlers.base import RestError, RestHandler, bad_parameter
from streamkernel.runtime.rest.json_views.applications import application_details, application_overview
from streamkernel.runtime.rest.json_views.cluster import jobmanager_config
from streamkernel.runtime.rest.json_views.ids import HEX32
from streamkernel.runtime.rest.json_views.jobs import job_exceptions

__all__ = ["ROUTES"]


def _application(handler: RestHandler, applicationid: str) -> JobDetails:
    if not HEX32.match(applicationid):
        raise bad_parameter("applicationid", applicationid)
    try:
        return handler.context.dispatcher.request_job_details(applicationid.lower())
    except KeyError:
        raise RestError(404, f"Application {applicationid.lower()} not found") from None


class ApplicationsOverviewHandler(RestHandler):
    """``GET /applications/overview``: every job as its single-job application."""

    def get(self) -> None:
        """Flink 2.3's MultipleApplicationsDetails."""
        now = now_ms()
        self.write_json({"applications": [application_overview(d, now) for d in self.context.dispatcher.list_jobs()]})


class ApplicationDetailsHandler(RestHandler):
    """``GET /applications/:applicationid``: the application, its state times and its job."""

    def get(self, applicationid: str) -> None:
        """Flink 2.3's ApplicationDetailsInfo."""
        details = _application(self, applicationid)
        self.write_json(application_details(details, self.context.job_configuration(details), now_ms()))


class ApplicationExceptionsHandler(RestHandler):
    """``GET /applications/:applicationid/exceptions``: the failures of its job, newest first."""

    def get(self, applicationid: str) -> None:
        """``{"exceptionHistory": {"entries": [...]}}``."""
        entries = job_exceptions(_application(self, applicationid))["exceptionHistory"]["entries"]
        self.write_json({"exceptionHistory": {"entries": entries}})


class ApplicationConfigHandler(RestHandler):
    """``GET /applications/:applicationid/jobmanager/config``: its job's effective configuration."""

    def get(self, applicationid: str) -> None:
        """Flink 2.3's ConfigurationInfo: ``[{"key", "value"}]``."""
        details = _application(self, applicationid)
        self.write_json(jobmanager_config(self.context.job_configuration(details)))


ROUTES = [
    ("/applications/overview", ApplicationsOverviewHandler),
    ("/applications/:applicationid", ApplicationDetailsHandler),
    ("/applications/:applicationid/exceptions", ApplicationExceptionsHandler),
    ("/applications/:applicationid/jobmanager/config", ApplicationConfigHandler),
]
