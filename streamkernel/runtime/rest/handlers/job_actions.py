"""The REST API's job actions: cancel (``PATCH /jobs/:jobid``), savepoints (``POST
/jobs/:jobid/savepoints`` and its status), stop-with-savepoint (``POST /jobs/:jobid/stop``) and
checkpoints on request (``POST /jobs/:jobid/checkpoints`` and its status).

Each action goes through the DispatcherGateway's futures and answers at once: a savepoint or
a checkpoint is registered in the context's :class:`~..async_operations.AsyncOperations`
under its trigger id and its status is polled; no handler waits on a future. Flink's status
codes and messages (its ``JobCancellationHandler``, ``SavepointHandlers`` and
``CheckpointHandlers``), except a failed operation's status: Flink sends a Java-serialized
throwable there, which no Python server can produce; it is a 500 with the reason in
``errors`` instead (Flink's CLI prints it).
"""

from __future__ import annotations

import re
from concurrent.futures import Future
from typing import Any, Callable

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.job_status import JobStatus
from streamkernel.common.options.checkpointing import CheckpointingOptions
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.checkpoint.filesystem import check_target_directory
from streamkernel.runtime.jobmaster.job_status import JobDetails
from streamkernel.runtime.rest.async_operations import AsyncOperations, OperationStatus, new_trigger_id
from streamkernel.runtime.rest.handlers.base import RestError, RestHandler
from streamkernel.runtime.rest.request_bodies import (
    TRIGGER_ID,
    parse_checkpoint_trigger,
    parse_savepoint_trigger,
    parse_stop_with_savepoint,
)

__all__ = ["ROUTES"]

_SAVEPOINT, _CHECKPOINT = "savepoint", "checkpoint"
_CHECKPOINT_ID = re.compile(r"chk-(\d+)/?$")


class _ActionHandler(RestHandler):
    """An action on one job: the operations store and the trigger/status answers."""

    def operations(self) -> AsyncOperations:
        """The context's store of triggered operations."""
        operations = self.context.operations
        assert operations is not None, "RestContext.__post_init__ always sets operations"
        return operations

    def trigger(self, kind: str, details: JobDetails, trigger_id: "str | None",
                start: Callable[[], "Future[Any]"]) -> None:
        """Register ``start``'s operation under ``trigger_id`` (a new one when None); 202 with the id."""
        trigger = trigger_id or new_trigger_id()
        self.operations().register(kind, details.job_id, trigger, start)
        self.write_json({"request-id": trigger}, 202)

    def status(self, kind: str, jobid: str, triggerid: str) -> OperationStatus:
        """The operation's status; 400 for a malformed id, 404 (Flink's message) for an unknown one."""
        details = self.job(jobid)
        if not TRIGGER_ID.match(triggerid):
            raise RestError(400, f"Bad request, could not parse parameters: Cannot resolve path parameter "
                                 f"(triggerid) from value \"{triggerid}\".")
        status = self.operations().status(kind, details.job_id, triggerid.lower())
        if status is None:
            raise RestError(404, f"There is no {kind} operation with triggerId={triggerid.lower()} for job "
                                 f"{details.job_id}.")
        return status

    def savepoint_directory(self, details: JobDetails, requested: "str | None", field: str) -> str:
        """The requested directory, else ``execution.checkpointing.savepoint-dir``; Flink's 400 without
        either, and 400 naming ``field`` for a requested one no savepoint can be written to (too
        long, a control character, an unknown scheme, a directory that cannot be created or
        written: :func:`~streamkernel.runtime.checkpoint.filesystem.check_target_directory`),
        before anything is triggered, kept or logged."""
        if requested is not None:
            try:
                check_target_directory(requested, f"field \"{field}\"")
            except IllegalConfigurationError as error:
                raise RestError(400, f"Bad request: {error}") from None
            return requested
        configured = CheckpointingOptions.SAVEPOINT_DIRECTORY.get(self.context.job_configuration(details))
        if configured is None:
            raise RestError(400, f"Config key [{CheckpointingOptions.SAVEPOINT_DIRECTORY.key()}] is not set. "
                                 f"Property [{field}] must be provided.")
        return str(configured)


def _failure(kind: str, error: BaseException) -> RestError:
    lines = str(error).strip().splitlines()
    reason = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return RestError(500, f"{kind.capitalize()} failed: {reason}")


class JobCancellationHandler(_ActionHandler):
    """``PATCH /jobs/:jobid[?mode=cancel]``: cancel the job (202 ``{}``)."""

    def patch(self, jobid: str) -> None:
        """Flink's JobCancellationHandler: a CANCELED job acknowledges again; another terminal one is 409."""
        modes = self.query_list("mode") or ["cancel"]
        if modes[0].lower() != "cancel":
            raise RestError(400, f"Bad request, could not parse parameters: Cannot resolve query parameter (mode) "
                                 f"from value \"{modes[0]}\"; the only termination mode is cancel (stop a job "
                                 f"with a savepoint by POST /jobs/:jobid/stop).")
        try:
            details = self.job(jobid)
        except RestError as error:
            if error.status == 404:
                raise RestError(404, "Job could not be found.") from None
            raise
        if details.status.is_globally_terminal_state() and details.status is not JobStatus.CANCELED:
            raise RestError(409, f"Job cancellation failed because the job has already reached another terminal "
                                 f"state ({details.status.name}).")
        self.context.dispatcher.cancel_job(details.job_id)  # returns at once; the future is the job's result
        self.write_json({}, 202)


class SavepointTriggerHandler(_ActionHandler):
    """``POST /jobs/:jobid/savepoints``: trigger a savepoint (``cancel-job``: then cancel the job)."""

    def post(self, jobid: str) -> None:
        """Flink's SavepointTriggerHandler: 202 ``{"request-id": TRIGGER}``."""
        request = parse_savepoint_trigger(self.json_body())
        details = self.job(jobid)
        directory = self.savepoint_directory(details, request.target_directory, "target-directory")
        dispatcher = self.context.dispatcher
        if request.cancel_job:
            self.trigger(_SAVEPOINT, details, request.trigger_id,
                         lambda: _savepoint_then_cancel(dispatcher, details.job_id, directory))
        else:
            self.trigger(_SAVEPOINT, details, request.trigger_id,
                         lambda: dispatcher.trigger_savepoint(details.job_id, directory))


class StopWithSavepointHandler(_ActionHandler):
    """``POST /jobs/:jobid/stop``: stop the job with a synchronous savepoint; polled as a savepoint."""

    def post(self, jobid: str) -> None:
        """Flink's StopWithSavepointHandler: 202 ``{"request-id": TRIGGER}``; ``drain: true``
        emits MAX_WATERMARK before the savepoint. The job ends FINISHED."""
        request = parse_stop_with_savepoint(self.json_body())
        details = self.job(jobid)
        directory = self.savepoint_directory(details, request.target_directory, "targetDirectory")
        dispatcher = self.context.dispatcher
        self.trigger(_SAVEPOINT, details, request.trigger_id,
                     lambda: dispatcher.stop_with_savepoint(details.job_id, directory, request.drain))


def _savepoint_then_cancel(dispatcher: Any, job_id: str, directory: Any) -> "CompletableFuture[str]":
    """Flink's cancel-with-savepoint (``cancel-job: true``): a savepoint, then cancel the job;
    the future gets the savepoint's location once the job is CANCELED (or fails with the savepoint)."""
    done: CompletableFuture[str] = CompletableFuture()

    def savepoint_done(savepoint: Future) -> None:
        error = savepoint.exception()
        if error is not None:
            done.complete_exceptionally(error)
            return

        def on_status(details: JobDetails) -> None:
            if details.status.is_globally_terminal_state():
                done.complete(savepoint.result())

        dispatcher.cancel_job(job_id)
        dispatcher.add_job_status_listener(job_id, on_status)

    dispatcher.trigger_savepoint(job_id, directory).add_done_callback(savepoint_done)
    return done


class SavepointStatusHandler(_ActionHandler):
    """``GET /jobs/:jobid/savepoints/:triggerid``: IN_PROGRESS, or COMPLETED with the location."""

    CACHEABLE = False  # polled until the operation completes

    def get(self, jobid: str, triggerid: str) -> None:
        """Flink's SavepointStatusHandler (a failure: 500 with the reason)."""
        status = self.status(_SAVEPOINT, jobid, triggerid)
        if not status.done:
            self.write_json({"status": {"id": "IN_PROGRESS"}})
        elif status.error is not None:
            raise _failure(_SAVEPOINT, status.error)
        else:
            self.write_json({"status": {"id": "COMPLETED"}, "operation": {"location": str(status.result)}})


class CheckpointTriggerHandler(_ActionHandler):
    """``POST /jobs/:jobid/checkpoints``: take a checkpoint now."""

    def post(self, jobid: str) -> None:
        """Flink's CheckpointTriggerHandler: 202 ``{"request-id": TRIGGER}``.

        ``checkpointType`` CONFIGURED, or FULL / INCREMENTAL when that is what the job is
        configured to take (``execution.checkpointing.incremental``); the other one is refused
        with 400 (the runtime takes checkpoints of one kind per job).
        """
        request = parse_checkpoint_trigger(self.json_body())
        details = self.job(jobid)
        if request.checkpoint_type != "CONFIGURED":
            incremental = CheckpointingOptions.INCREMENTAL_CHECKPOINTS.get(self.context.job_configuration(details))
            configured = "INCREMENTAL" if incremental else "FULL"
            if request.checkpoint_type != configured:
                raise RestError(400, f"Request did not match expected format CheckpointTriggerRequestBody: field "
                                     f"\"checkpointType\" {request.checkpoint_type} is not what job "
                                     f"{details.job_id} takes ({configured}, execution.checkpointing.incremental="
                                     f"{str(incremental).lower()}); use CONFIGURED or {configured}.")
        dispatcher = self.context.dispatcher
        self.trigger(_CHECKPOINT, details, request.trigger_id, lambda: dispatcher.trigger_checkpoint(details.job_id))


class CheckpointStatusHandler(_ActionHandler):
    """``GET /jobs/:jobid/checkpoints/:triggerid``: IN_PROGRESS, or COMPLETED with the checkpoint's id."""

    CACHEABLE = False  # polled until the operation completes

    def get(self, jobid: str, triggerid: str) -> None:
        """Flink's CheckpointStatusHandler (a failure: 500 with the reason)."""
        status = self.status(_CHECKPOINT, jobid, triggerid)
        if not status.done:
            self.write_json({"status": {"id": "IN_PROGRESS"}})
        elif status.error is not None:
            raise _failure(_CHECKPOINT, status.error)
        else:
            found = _CHECKPOINT_ID.search(str(status.result))
            self.write_json({"status": {"id": "COMPLETED"},
                             "operation": {"checkpointId": int(found.group(1)) if found else -1}})


ROUTES = [
    ("/jobs/:jobid", JobCancellationHandler),
    ("/jobs/:jobid/savepoints", SavepointTriggerHandler),
    ("/jobs/:jobid/savepoints/:triggerid", SavepointStatusHandler),
    ("/jobs/:jobid/stop", StopWithSavepointHandler),
    ("/jobs/:jobid/checkpoints", CheckpointTriggerHandler),
    ("/jobs/:jobid/checkpoints/:triggerid", CheckpointStatusHandler),
]
