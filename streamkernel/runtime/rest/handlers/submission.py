"""Job submission: ``POST /jobs`` (Flink's JobSubmitHandler) and ``GET /jobs/:jobid/execution-result``.

streamkernel takes Python jobs: the body is the job pickled by ``streamkernel run -m`` (a
dict with the StreamGraph and the JobID the client chose, as Flink's client sets the
JobGraph's id: :data:`PAYLOAD_FORMAT`), signed with the cluster's secret
(:mod:`..job_signature`). The signature is checked before anything of the body is
unpickled; unpickling and submitting run on a worker thread, never on the endpoint's loop.
Flink's own multipart JobGraph upload is refused with 400 saying how to submit instead.
``web.submit.enable: false`` removes submission as Flink removes its submission handlers: 404.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
from typing import Any

from streamkernel.common.options.cluster import WebOptions
from streamkernel.runtime.rest.accepted_requests import AcceptedRequestStoreError
from streamkernel.runtime.rest.handlers.base import RestError, RestHandler
from streamkernel.runtime.rest.job_signature import (
    CONTENT_TYPE,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    SignatureError,
    verify,
)
from streamkernel.runtime.rest.json_views.job_result import execution_result_body

__all__ = ["ROUTES", "PAYLOAD_FORMAT", "JobSubmitHandler", "JobExecutionResultHandler", "job_id_of_signature"]

#: The version of the submitted payload ``{"format": 1, "stream_graph": StreamGraph, "job_id": hex or None}``.
PAYLOAD_FORMAT = 1


def job_id_of_signature(signature: str) -> str:
    """The job id of a signed submission whose payload names none: derived from its signature, so
    that the same request, replayed, names the same job (and is refused as a duplicate)."""
    return hashlib.sha256(signature.strip().encode("utf-8", "replace")).hexdigest()[:32]


def _load_and_submit(dispatcher: Any, body: bytes, signature: str) -> str:
    """Unpickle a verified payload and submit its job (on a worker thread); the job's id."""
    from streamkernel.graph.stream_graph import StreamGraph
    from streamkernel.runtime.rpc.serialization import loads

    try:
        payload = loads(body)
    except Exception as error:  # noqa: BLE001 - the client's module missing here, a broken pickle ...
        raise RestError(400, f"Bad request, the job could not be loaded on the cluster: {type(error).__name__}: "
                             f"{error}") from None
    if not isinstance(payload, dict) or payload.get("format") != PAYLOAD_FORMAT or \
            not isinstance(payload.get("stream_graph"), StreamGraph):
        raise RestError(400, f"Bad request, expected a streamkernel job payload of format {PAYLOAD_FORMAT} "
                             f"(a newer or older streamkernel run -m?)")
    from streamkernel.errors import IllegalConfigurationError, InvalidProgramError
    from streamkernel.runtime.dispatcher.dispatcher import DuplicateJobSubmissionError
    from streamkernel.runtime.rest.collect_coordinator import (
        install_collect_coordinators,
        release_coordinators,
        watch_collect_coordinators,
    )

    stream_graph = payload["stream_graph"]
    coordinators: list = []
    try:  # collect sinks: their results wait here for the client (execute_and_collect)
        coordinators = install_collect_coordinators(stream_graph, getattr(dispatcher, "configuration", {}))
        job_id = dispatcher.submit_job(stream_graph, job_id=payload.get("job_id") or job_id_of_signature(signature))
    except DuplicateJobSubmissionError as error:
        release_coordinators(coordinators)
        raise RestError(409, f"Job submission failed: {error}") from None
    except (IllegalConfigurationError, InvalidProgramError) as error:
        release_coordinators(coordinators)
        raise RestError(400, f"Job submission failed: {error}") from None
    except BaseException:
        release_coordinators(coordinators)
        raise
    if coordinators:
        watch_collect_coordinators(dispatcher, str(job_id), coordinators)
    return str(job_id)


class JobSubmitHandler(RestHandler):
    """``POST /jobs``: submit a job signed with the cluster's secret; 202 ``{"jobUrl": "/jobs/<id>"}``."""

    async def post(self) -> None:
        """Flink's JobSubmitHandler for streamkernel's Python jobs."""
        if not WebOptions.SUBMIT_ENABLE.get(self.context.configuration):
            raise RestError(404, f"Not found: {self.request.path} (job submission is disabled on this cluster: "
                                 f"{WebOptions.SUBMIT_ENABLE.key()} is false)")
        content_type = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type != CONTENT_TYPE:
            raise RestError(400, f"Bad request: this cluster runs Python jobs submitted with `streamkernel run -m "
                                 f"HOST:PORT job.py`; it does not take Flink's JobGraph upload "
                                 f"({content_type or 'no content type'})")
        body = bytes(self._body)
        try:  # before anything of the body is unpickled
            timestamp, signature = self.request.headers.get(TIMESTAMP_HEADER), self.request.headers.get(SIGNATURE_HEADER)
            verify(self.context.cluster_secret, timestamp, signature, body)
            self.context.replay_guard.check(signature or "", timestamp or "", durable=True)
        except SignatureError as error:
            raise RestError(401, str(error)) from None
        except AcceptedRequestStoreError as error:
            raise RestError(503, f"Service unavailable: {error}") from None
        executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="streamkernel REST submission")
        try:
            job_id = await asyncio.get_running_loop().run_in_executor(
                executor, _load_and_submit, self.context.dispatcher, body, signature or "")
        finally:
            executor.shutdown(wait=False)
        self.write_json({"jobUrl": f"/jobs/{job_id}"}, 202)


class JobExecutionResultHandler(RestHandler):
    """``GET /jobs/:jobid/execution-result``: IN_PROGRESS, or COMPLETED with the job's result."""

    CACHEABLE = False  # polled until it changes, or taken to see the moment

    def get(self, jobid: str) -> None:
        """Flink's JobExecutionResultResponseBody."""
        details = self.job(jobid)
        future = self.context.dispatcher.job_result_future(details.job_id)
        if not details.status.is_globally_terminal_state() or not future.done():
            self.write_json({"status": {"id": "IN_PROGRESS"}})
            return
        self.write_json(execution_result_body(future.result()))


ROUTES = [
    ("/jobs", JobSubmitHandler),
    ("/jobs/:jobid/execution-result", JobExecutionResultHandler),
]
