"""``env.execute()`` against a running cluster's REST API (``execution.target: remote``), as
``flink run -m HOST:PORT`` configures a program's context environment.

With ``execution.target: remote``, ``rest.address`` and ``rest.port`` (Flink's keys; what
``streamkernel run -m HOST:PORT`` sets), every environment builds its job here and submits
it through :class:`~.client.RestClusterClient`:

* attached (``execution.attached: true``, the default): ``execute()`` prints ``Job has been
  submitted with JobID <id>``, polls the job's ``execution-result`` and returns its
  JobExecutionResult (raises JobExecutionError if it failed or was cancelled). A Ctrl-C or
  SIGTERM while waiting leaves the job running on the cluster and says so (as ``flink run``);
* detached (``execution.attached: false``, ``streamkernel run -m ... --detached``):
  ``execute()`` returns once submitted, with a result that has only the JobID;
* ``execute_async()`` returns a :class:`RestJobClient` (status, cancel, savepoints, result);
* ``execute_and_collect()`` submits and returns an iterator over the results the cluster's
  collect sink coordinator holds (:func:`collect_remote`, :mod:`.collect_fetcher`).
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Mapping, Optional

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.job_client import JobClient
from streamkernel.common.job_execution_result import JobExecutionResult
from streamkernel.common.job_status import JobID, JobStatus
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError, JobExecutionError
from streamkernel.runtime.rest.client import ClusterUnreachableError, RestClientError, RestClusterClient

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.datastream.closeable_iterator import CloseableIterator

__all__ = ["REMOTE_TARGET", "remote_client_for", "execute_remote", "submit_remote", "RestJobClient",
           "DetachedJobExecutionResult", "CLIENT_KEYS", "collect_remote"]

#: ``execution.target`` of a session cluster reached through its REST API (Flink's name).
REMOTE_TARGET = "remote"
#: Keys that say where the client submits; the job travels without them.
CLIENT_KEYS = ("execution.target", "execution.attached", "rest.address", "rest.port")
_POLL_S = 0.2
_CANCEL_WAIT_S = 5.0  # how long closing the results waits for the cancelled job (as locally)


def remote_client_for(configuration: Mapping[str, Any]) -> Optional[RestClusterClient]:
    """The REST client of ``execution.target: remote`` (None for any other target)."""
    if str(configuration.get("execution.target", "")).strip().lower() != REMOTE_TARGET:
        return None
    host = str(configuration.get("rest.address", "")).strip()
    if not host:
        raise IllegalConfigurationError("execution.target 'remote' needs 'rest.address' (and 'rest.port'): the "
                                        "cluster's REST address, as streamkernel run -m HOST:PORT sets them")
    text = str(configuration.get("rest.port", "8081")).strip()
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise IllegalConfigurationError(f"Invalid value {text!r} for key 'rest.port': expected a port (1-65535)")
    return RestClusterClient(host, int(text))


def _attached(configuration: Mapping[str, Any]) -> bool:
    text = str(configuration.get("execution.attached", "true")).strip().lower()
    if text not in ("true", "false"):
        raise IllegalConfigurationError(f"Invalid value {text!r} for key 'execution.attached': expected true or false")
    return text == "true"


def _submit(client: RestClusterClient, stream_graph: Any, job_id: JobID) -> JobID:
    for key in CLIENT_KEYS:  # the cluster runs the job; where the client sent it is no concern of the job's
        stream_graph.configuration.pop(key, None)
    client.submit_job(stream_graph, job_id)
    print(f"Job has been submitted with JobID {job_id}", flush=True)
    return job_id


def execute_remote(client: RestClusterClient, stream_graph: Any) -> JobExecutionResult:
    """``env.execute()`` on the remote cluster: attached, wait for the result; detached, return at once."""
    attached = _attached(stream_graph.configuration)
    job_id = JobID()  # chosen here, so an interruption during the submission can still name the job
    if not attached:
        return DetachedJobExecutionResult(_submit(client, stream_graph, job_id))
    submitted = False
    try:
        _submit(client, stream_graph, job_id)
        submitted = True
        while True:
            body = client.request_job_result(job_id)
            if body is not None:
                break
            threading.Event().wait(_POLL_S)
    except (KeyboardInterrupt, SystemExit):
        said = "Interrupted: " if submitted else \
            f"Interrupted during the submission of job {job_id}: if the cluster received it, "
        print(f"{said}job {job_id} keeps running on the cluster at {client.host}:{client.port} (cancel it "
              f"with PATCH {client.url}/jobs/{job_id}?mode=cancel, or flink cancel -m {client.host}:{client.port} "
              f"{job_id})", file=sys.stderr, flush=True)
        raise
    result = to_job_execution_result(body)
    print(f"Program execution finished\nJob with JobID {job_id} has finished.\n"
          f"Job Runtime: {result.get_net_runtime()} ms", flush=True)
    return result


def submit_remote(client: RestClusterClient, stream_graph: Any) -> "RestJobClient":
    """``env.execute_async()`` on the remote cluster: submit and return its JobClient."""
    _attached(stream_graph.configuration)  # a bad value fails here too
    return RestJobClient(client, _submit(client, stream_graph, JobID()))


def to_job_execution_result(body: Mapping[str, Any]) -> JobExecutionResult:
    """A FINISHED job's JobExecutionResult from its ``job-execution-result`` body; JobExecutionError
    (with the cluster's message) for a failed or cancelled one."""
    job_id = str(body.get("id"))
    status = str(body.get("application-status"))
    if status == "SUCCEEDED":
        return JobExecutionResult(JobID.from_hex_string(job_id), int(body.get("net-runtime", 0)),
                                  dict(body.get("accumulator-results") or {}), int(body.get("num-restarts", 0)))
    job = f"Job {body.get('job-name', '')!r} ({job_id})"
    if status == "CANCELED":
        raise JobExecutionError(f"{job} was cancelled.", job_id, JobStatus.CANCELED)
    cause = body.get("failure-cause") or {}
    lines = str(cause.get("stack-trace") or "").strip().splitlines()
    what = lines[-1] if lines else str(cause.get("class") or "unknown cause")
    restarts = int(body.get("num-restarts", 0))
    after = f" after {restarts} restart{'s' if restarts != 1 else ''}" if restarts else ""
    error = JobExecutionError(f"{job} failed on the cluster{after}: {what}", job_id, JobStatus.FAILED)
    error.remote_traceback = "\n".join(lines)  # type: ignore[attr-defined]
    raise error


class DetachedJobExecutionResult(JobExecutionResult):
    """What ``execute()`` returns in detached mode: the JobID; no runtime or accumulators (Flink's)."""

    _MESSAGE = ("Job was submitted in detached mode. Results of job execution, such as accumulators, runtime, etc. "
                "are not available.")

    def __init__(self, job_id: JobID) -> None:
        super().__init__(job_id, 0)

    def get_net_runtime(self) -> int:
        """Not available in detached mode (InvalidProgramError, as Flink's)."""
        raise InvalidProgramError(self._MESSAGE)

    def get_accumulator_result(self, accumulator_name: str) -> Any:
        """Not available in detached mode (InvalidProgramError, as Flink's)."""
        raise InvalidProgramError(self._MESSAGE)

    def get_all_accumulator_results(self) -> Dict[str, Any]:
        """Not available in detached mode (InvalidProgramError, as Flink's)."""
        raise InvalidProgramError(self._MESSAGE)

    def __repr__(self) -> str:
        return f"DetachedJobExecutionResult({self.get_job_id()})"

    __str__ = __repr__


def _in_background(name: str, work: Any) -> CompletableFuture[Any]:
    """Run ``work()`` on a daemon thread; its value (or error) completes the future."""
    future: CompletableFuture[Any] = CompletableFuture()

    def run() -> None:
        try:
            future.complete(work())
        except BaseException as error:  # noqa: BLE001 - handed to the future
            future.complete_exceptionally(error)

    threading.Thread(target=run, name=f"streamkernel REST {name}", daemon=True).start()
    return future


class RestJobClient(JobClient):
    """The JobClient of a job on a remote cluster, through its REST API (Flink's RestClusterClient-backed one)."""

    def __init__(self, client: RestClusterClient, job_id: JobID) -> None:
        self._client = client
        self._job_id = job_id

    def get_job_id(self) -> JobID:
        """The job's JobID."""
        return self._job_id

    def get_job_status(self) -> CompletableFuture[JobStatus]:
        """The job's status now (a completed future)."""
        return CompletableFuture.completed_future(self._client.get_job_status(self._job_id))

    def get_job_details(self) -> dict:
        """The job's details as ``GET /jobs/:jobid`` answers them (Flink's JobDetailsInfo)."""
        return self._client.get_job_details(self._job_id)

    def cancel(self) -> CompletableFuture[None]:
        """Cancel the job; the future completes once the job ended."""
        self._client.cancel(self._job_id)
        return _in_background("cancel", lambda: (self._client.wait_for_result(self._job_id, _POLL_S), None)[1])

    def stop_with_savepoint(self, advance_to_end_of_event_time: bool = False,
                            savepoint_directory: Optional[str] = None) -> CompletableFuture[str]:
        """Stop the job with a savepoint (``POST /jobs/:jobid/stop``); the future gets its location."""
        return _in_background("stop", lambda: self._client.stop_with_savepoint(
            self._job_id, savepoint_directory, advance_to_end_of_event_time))

    def trigger_savepoint(self, savepoint_directory: Optional[str] = None) -> CompletableFuture[str]:
        """Take a savepoint (``POST /jobs/:jobid/savepoints``); the future gets its location."""
        return _in_background("savepoint", lambda: self._client.trigger_savepoint(self._job_id, savepoint_directory))

    def get_accumulators(self) -> CompletableFuture[Dict[str, Any]]:
        """The job's accumulators (final ones once it ended; none while it runs)."""
        body = self._client.request_job_result(self._job_id)
        return CompletableFuture.completed_future(dict((body or {}).get("accumulator-results") or {}))

    def get_job_execution_result(self) -> CompletableFuture[JobExecutionResult]:
        """Completes with the JobExecutionResult once the job FINISHED (JobExecutionError otherwise)."""
        return _in_background("result", lambda: to_job_execution_result(
            self._client.wait_for_result(self._job_id, _POLL_S)))

    def __repr__(self) -> str:
        return f"RestJobClient({self._job_id} on {self._client.url})"


def collect_remote(client: RestClusterClient, stream_graph: Any, operator_id: str,
                   convert: Optional[Callable[[Any], Any]] = None) -> CloseableIterator:
    """``execute_and_collect()`` on the remote cluster: submit, then an iterator over the results
    its collect sink coordinator holds (:mod:`.collect_fetcher`).

    As the local iterator: it yields the results while the job runs, ends when the job finished,
    raises JobExecutionError (with the cluster's cause) when it failed or was cancelled, and
    closing it cancels a still running job. ``convert`` turns each result into what PyFlink's
    collect hands out. Detached mode has no client to stream to: InvalidProgramError at once.
    """
    from streamkernel.datastream.closeable_iterator import CloseableIterator
    from streamkernel.runtime.rest.collect_fetcher import CollectResultFetcher

    if not _attached(stream_graph.configuration):
        raise InvalidProgramError("execute_and_collect() needs an attached client: in detached mode "
                                  "(execution.attached: false, streamkernel run --detached) nobody receives the "
                                  "results; write them to a sink (a file sink, print()) instead")
    job_id = _submit(client, stream_graph, JobID())
    fetcher = CollectResultFetcher(client, job_id, operator_id)
    closed = threading.Event()

    def close() -> None:
        closed.set()
        fetcher.release()
        try:
            if client.request_job_result(job_id) is None:
                client.cancel(job_id)
                client.wait_for_result(job_id, _POLL_S, _CANCEL_WAIT_S)
        except (TimeoutError, ClusterUnreachableError, RestClientError):
            pass  # a slow or unreachable cluster: the job was asked to stop, or its results expire there

    def batches() -> Iterator[list]:
        for batch in fetcher.batches():
            yield batch if convert is None else list(map(convert, batch))
        if closed.is_set():
            return
        fetcher.release()
        # the last result came: a failed or cancelled job raises with its cause; a finished one ends
        # here (wait a little: another branch of the job may still run, or fail)
        try:
            body = client.wait_for_result(job_id, _POLL_S, None if fetcher.failure else _CANCEL_WAIT_S)
        except TimeoutError:
            return
        to_job_execution_result(body)

    return CloseableIterator(close=close, batches=batches())
