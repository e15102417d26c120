"""Job submission: ``POST /jobs`` (Flink's JobSubmitHandler) and ``GET /jobs/:jobid/execution-result``.

streamkernel takes Python jobs: the body is the job pickled by ``streamkernel run -m`` (a
dict with the StreamGraph and the JobID the client chose, as Flink's client sets the
JobGraph's id: :data:`PAYLOAD_FORMAT`), signed with the cluster's secret
(:mod:`..job_signature`). What can be checked before the body is read is checked then:
its declared size (``rest.server.max-content-length``: 413), the content type (400) and the
signature's headers (present, a timestamp within five minutes: 401), so an unsigned upload is
refused unread. The body of a request that passes is spooled (in memory up to 1 MiB, on
disk past it) until its signature is verified, so forged headers cost the cluster disk for a
moment, never memory; verifying, unpickling and submitting run on a worker thread, never on
the endpoint's loop, and nothing of the body is unpickled before its signature is verified.
Flink's own multipart JobGraph upload is refused with 400 saying how to submit instead.
``web.submit.enable: false`` removes submission as Flink removes its submission handlers: 404.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import tempfile
from typing import IO, Any, Optional

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
#: How much of a submission's body is kept in memory until its signature is verified; the rest waits on disk.
_SPOOLED_IN_MEMORY = 1 << 20
_READ_CHUNK = 1 << 20


def _verified_body(context: Any, timestamp: Optional[str], signature: Optional[str], spool: IO[bytes]) -> bytes:
    """The spooled body once its signature is verified, read chunk by chunk (on a worker thread); 401 else."""
    spool.seek(0)
    try:
        verify(context.cluster_secret, timestamp, signature, iter(lambda: spool.read(_READ_CHUNK), b""))
        context.replay_guard.check(signature or "", timestamp or "", durable=True)
    except SignatureError as error:
        raise RestError(401, str(error)) from None
    except AcceptedRequestStoreError as error:
        raise RestError(503, f"Service unavailable: {error}") from None
    spool.seek(0)
    return spool.read()


def _verify_load_and_submit(context: Any, timestamp: Optional[str], signature: Optional[str],
                            spool: IO[bytes]) -> str:
    """Verify the spooled body's signature, then unpickle and submit its job (on a worker thread)."""
    try:
        body = _verified_body(context, timestamp, signature, spool)
    finally:
        spool.close()
    return _load_and_submit(context.dispatcher, body, signature or "")


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

    LARGE_BODY_METHODS = frozenset({"POST"})  # the pickled job: up to rest.server.max-content-length

    def initialize(self, context: Any, max_content_length: int) -> None:
        """As every handler's; no body spooled yet."""
        super().initialize(context, max_content_length)
        self._spool: Optional[IO[bytes]] = None
        self._received = 0

    def prepare(self) -> None:
        """Before a byte of a submission's body is read: its size (413), that submission is
        enabled (404), its content type (400) and its signature's headers (401)."""
        super().prepare()
        if self.request.method != "POST":  # GET /jobs shares this path (JobsHandler)
            return
        if not WebOptions.SUBMIT_ENABLE.get(self.context.configuration):
            raise RestError(404, f"Not found: {self.request.path} (job submission is disabled on this cluster: "
                                 f"{WebOptions.SUBMIT_ENABLE.key()} is false)")
        content_type = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type != CONTENT_TYPE:
            raise RestError(400, f"Bad request: this cluster runs Python jobs submitted with `streamkernel run -m "
                                 f"HOST:PORT job.py`; it does not take Flink's JobGraph upload "
                                 f"({content_type[:80] or 'no content type'})")
        try:  # the headers alone: an unsigned, stale or replayed upload is refused unread
            timestamp, signature = self.request.headers.get(TIMESTAMP_HEADER), self.request.headers.get(SIGNATURE_HEADER)
            verify(self.context.cluster_secret, timestamp, signature, None)
            self.context.replay_guard.refuse_accepted(signature or "", timestamp or "")
        except SignatureError as error:
            raise RestError(401, str(error)) from None
        self._spool = tempfile.SpooledTemporaryFile(_SPOOLED_IN_MEMORY, prefix="streamkernel-submission-")

    def data_received(self, chunk: bytes) -> None:
        """A submission's body goes to its spool (counted: 413 past rest.server.max-content-length)."""
        if self._spool is None:
            super().data_received(chunk)
            return
        if self._finished:
            return
        self._received += len(chunk)
        if self._received > self.body_limit():
            self._close_spool()
            self.refuse(self._too_large("more than"))
            return
        self._spool.write(chunk)

    def _close_spool(self) -> None:
        spool, self._spool = self._spool, None
        if spool is not None:
            spool.close()

    def on_finish(self) -> None:
        """The answer is sent: a spool not handed to the worker goes."""
        self._close_spool()

    def on_connection_close(self) -> None:
        """The client left: a spool not handed to the worker goes."""
        self._close_spool()
        super().on_connection_close()

    async def post(self) -> None:
        """Flink's JobSubmitHandler for streamkernel's Python jobs."""
        spool, self._spool = self._spool, None  # the worker closes it
        assert spool is not None, "prepare() spools every POST it lets through"
        executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="streamkernel REST submission")
        try:
            job_id = await asyncio.get_running_loop().run_in_executor(
                executor, _verify_load_and_submit, self.context, self.request.headers.get(TIMESTAMP_HEADER),
                self.request.headers.get(SIGNATURE_HEADER), spool)
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
