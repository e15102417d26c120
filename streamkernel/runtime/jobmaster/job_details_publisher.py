"""The one snapshot of a job that every reader sees, and the listeners told when its status changes."""

from __future__ import annotations

import logging
import threading
from typing import Callable

from streamkernel.runtime.jobmaster.job_status import JobDetails

__all__ = ["JobDetailsPublisher"]

_LOG = logging.getLogger(__name__)


class JobDetailsPublisher:
    """Holds a job's latest :class:`JobDetails` (immutable, safe to read from any thread) and
    calls the status listeners when a published snapshot has a new status.

    The JobMaster's thread publishes after every event it handled; readers (the Dispatcher's
    ``request_job_details``, and through it inspection, the cockpit, the magics) only read.
    """

    def __init__(self, job_name: str, first: JobDetails) -> None:
        self._job_name = job_name
        self._details = first
        self._listeners: list[Callable[[JobDetails], None]] = []
        self._lock = threading.Lock()  # guards _listeners (added from any thread)

    @property
    def details(self) -> JobDetails:
        """The latest published snapshot."""
        return self._details

    def publish(self, details: JobDetails) -> None:
        """Make ``details`` the snapshot readers see; tell the listeners if its status changed."""
        previous = self._details.status
        self._details = details
        if details.status is not previous:
            with self._lock:
                listeners = list(self._listeners)
            for listener in listeners:
                self._notify(listener, details)

    def add_listener(self, listener: Callable[[JobDetails], None]) -> None:
        """Call ``listener(details)`` now and after every change of the job's status.

        Later calls come from the publishing thread: a listener must be quick and must not
        block (e.g. unblock a collect buffer). It may see the same status twice.
        """
        with self._lock:
            self._listeners.append(listener)
        self._notify(listener, self._details)

    def _notify(self, listener: Callable[[JobDetails], None], details: JobDetails) -> None:
        try:
            listener(details)
        except Exception:  # noqa: BLE001 - a listener must not break the job
            _LOG.exception("status listener of job %r failed", self._job_name)
