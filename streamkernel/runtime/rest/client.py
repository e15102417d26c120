"""A client of a cluster's REST API (Flink's ``RestClusterClient``), on the standard library's urllib.

``RestClusterClient("127.0.0.1", 8081)`` submits jobs (signed with the cluster's secret:
:mod:`.cluster_secret`, :mod:`.job_signature`), reads their status, details and result,
cancels them and triggers savepoints. Every request has a timeout; errors are one line:
:class:`ClusterUnreachableError` names the address nobody answers at, :class:`RestClientError`
carries the HTTP status and Flink's error messages (401: the secret does not match).
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any, Optional

from streamkernel.common.job_status import JobID, JobStatus
from streamkernel.errors import StreamKernelError

__all__ = ["RestClusterClient", "RestClientError", "ClusterUnreachableError", "parse_address"]

#: Seconds a request waits for the connection and the answer.
DEFAULT_TIMEOUT_S = 5.0


class ClusterUnreachableError(StreamKernelError):
    """Nobody answers at the cluster's REST address (or not in time)."""


class RestClientError(StreamKernelError):
    """The REST API refused a request: ``status`` and Flink's ``errors`` messages."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def parse_address(text: str, what: str = "-m") -> tuple[str, int]:
    """``HOST:PORT`` (or ``http://HOST:PORT``, ``[::1]:PORT``) as (host, port); ValueError naming ``what``.

        >>> parse_address("127.0.0.1:8081")
        ('127.0.0.1', 8081)
    """
    value = text.strip()
    for scheme in ("http://", "https://"):
        if value.startswith(scheme):
            value = value[len(scheme):]
    value = value.rstrip("/")
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or (":" in host and
                                                                                    not host.startswith("[")):
        raise ValueError(f"{what} {text!r}: expected HOST:PORT (the cluster's REST address, e.g. 127.0.0.1:8081)")
    return host.strip("[]"), int(port)


class RestClusterClient:
    """The REST API of the cluster at ``host:port``; ``secret`` signs submissions (None: found on
    first submission by :func:`~.cluster_secret.find_secret`, ``secret_file`` first)."""

    def __init__(self, host: str, port: int, secret: Optional[bytes] = None, secret_file: Optional[str] = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.host, self.port = host, int(port)
        self._secret = secret
        self._secret_file = secret_file
        self.timeout = timeout

    @property
    def url(self) -> str:
        """``http://HOST:PORT``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def secret(self) -> bytes:
        """The cluster's secret (SecretError naming where it looked when there is none)."""
        if self._secret is None:
            from streamkernel.runtime.rest.cluster_secret import find_secret

            self._secret = find_secret(self.host, self.port, self._secret_file)
        return self._secret

    # ------------------------------------------------------------------ HTTP
    def request(self, method: str, path: str, body: Optional[bytes] = None,
                headers: Optional[dict[str, str]] = None, *, decode: bool = True) -> tuple[int, Any]:
        """Send a request; (status, decoded JSON, or the body's bytes unless ``decode``). Raises
        RestClientError for a 4xx/5xx answer, ClusterUnreachableError when nobody answers within the timeout."""
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=dict(headers or {}))
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data = response.read()
                return response.status, _decode(data) if decode else data
        except urllib.error.HTTPError as error:
            payload = _decode(error.read())
            errors = payload.get("errors") if isinstance(payload, dict) else None
            message = "; ".join(map(str, errors)) if errors else f"{error.code} {error.reason}"
            if error.code == 401:
                message = (f"the cluster at {self.host}:{self.port} refused the submission (401): {message}; "
                           f"the secret used does not match the cluster's")
            raise RestClientError(error.code, message) from None
        except (urllib.error.URLError, socket.timeout, ConnectionError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise ClusterUnreachableError(f"no streamkernel cluster answers at {self.url} ({reason})") from None

    def check_reachable(self) -> dict:
        """The cluster's ``/config`` (ClusterUnreachableError when nobody answers)."""
        return self.request("GET", "/config")[1]

    def get(self, path: str) -> Any:
        """``GET path``: the decoded JSON answer."""
        return self.request("GET", path)[1]

    def get_text(self, path: str) -> str:
        """``GET path`` answered as text, e.g. ``/jobmanager/log``."""
        return bytes(self.request("GET", path, decode=False)[1]).decode("utf-8", "replace")

    def check_rest_api(self) -> dict:
        """The cluster's ``/config`` if a Flink (or streamkernel) REST API answers at the address;
        RestClientError naming the address when another HTTP server does."""
        what = f"the HTTP server at {self.url} is not a streamkernel/Flink REST API"
        try:
            config = self.get("/config")
        except RestClientError as error:
            raise RestClientError(error.status, f"{what} (GET /config answered HTTP {error.status})") from None
        if not isinstance(config, dict) or "flink-version" not in config:
            raise RestClientError(200, f"{what} (GET /config has no flink-version)")
        return config

    def verify_secret(self) -> None:
        """An authenticated no-op: POST ``/jobs`` a signed payload that is no job. The cluster checks
        the signature first (401: RestClientError saying the secret does not match), then refuses
        the payload (400): nothing is submitted. SecretError when no secret is found."""
        from streamkernel.runtime.rest.job_signature import signed_headers
        from streamkernel.runtime.rpc.serialization import dumps

        body = dumps({"format": "streamkernel connect: a signature check, not a job"})
        try:
            self.request("POST", "/jobs", body, signed_headers(self.secret(), body))
        except RestClientError as error:
            if error.status == 400:
                return  # the signature passed; the payload was refused, as meant
            if error.status == 404:
                raise RestClientError(404, f"the cluster at {self.host}:{self.port} takes no submissions "
                                           f"(web.submit.enable is false): {error}") from None
            raise
        raise RestClientError(200, f"the cluster at {self.host}:{self.port} accepted a payload that is no job")

    def trigger_checkpoint(self, job_id: Any, timeout: float = 60.0) -> int:
        """``POST /jobs/:jobid/checkpoints`` then poll its status; the checkpoint's id."""
        body = json.dumps({}).encode()
        _, answer = self.request("POST", f"/jobs/{job_id}/checkpoints", body, {"Content-Type": "application/json"})
        operation = self._wait_for_completion(f"/jobs/{job_id}/checkpoints/{answer['request-id']}", timeout)
        return int(operation.get("checkpointId", -1))

    # ------------------------------------------------------------------ jobs
    def submit_job(self, stream_graph: Any, job_id: Optional[JobID] = None) -> JobID:
        """Pickle ``stream_graph``, sign it and POST it to ``/jobs``; the new job's JobID.

        ``job_id``: the id to give the job (the client chooses it, as Flink's does, so it knows
        the id even if the answer never comes); None: a new one."""
        from streamkernel.runtime.rest.handlers.submission import PAYLOAD_FORMAT
        from streamkernel.runtime.rest.job_signature import signed_headers
        from streamkernel.runtime.rpc.serialization import dumps

        job_id = job_id if job_id is not None else JobID()
        body = dumps({"format": PAYLOAD_FORMAT, "stream_graph": stream_graph, "job_id": str(job_id)})
        _, answer = self.request("POST", "/jobs", body, signed_headers(self.secret(), body))
        return JobID.from_hex_string(str(answer["jobUrl"]).rsplit("/", 1)[-1])

    def list_jobs(self) -> list[dict]:
        """``GET /jobs``: every job's ``{"id", "status"}``."""
        return list(self.request("GET", "/jobs")[1].get("jobs", []))

    def get_job_details(self, job_id: Any) -> dict:
        """``GET /jobs/:jobid``: Flink's JobDetailsInfo."""
        return self.request("GET", f"/jobs/{job_id}")[1]

    def get_job_status(self, job_id: Any) -> JobStatus:
        """The job's JobStatus now."""
        return JobStatus[str(self.get_job_details(job_id)["state"])]

    def request_job_result(self, job_id: Any) -> Optional[dict]:
        """The ended job's ``job-execution-result`` body; None while it runs."""
        answer = self.request("GET", f"/jobs/{job_id}/execution-result")[1]
        if answer.get("status", {}).get("id") != "COMPLETED":
            return None
        return dict(answer["job-execution-result"])

    def wait_for_result(self, job_id: Any, poll_s: float = 0.2, timeout: Optional[float] = None) -> dict:
        """Poll ``execution-result`` until the job ended; its result body (TimeoutError after ``timeout`` s)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            result = self.request_job_result(job_id)
            if result is not None:
                return result
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} did not end within {timeout} s")
            time.sleep(poll_s)

    def cancel(self, job_id: Any) -> None:
        """``PATCH /jobs/:jobid?mode=cancel`` (Flink's JobTerminationHandler); returns once accepted."""
        self.request("PATCH", f"/jobs/{job_id}?mode=cancel")

    def trigger_savepoint(self, job_id: Any, target_directory: Optional[str] = None, cancel_job: bool = False,
                          timeout: float = 60.0) -> str:
        """``POST /jobs/:jobid/savepoints`` then poll its status; the savepoint's location."""
        body = json.dumps({"target-directory": target_directory, "cancel-job": cancel_job}).encode()
        _, answer = self.request("POST", f"/jobs/{job_id}/savepoints", body, {"Content-Type": "application/json"})
        return self._wait_for_operation(f"/jobs/{job_id}/savepoints/{answer['request-id']}", timeout)

    def stop_with_savepoint(self, job_id: Any, target_directory: Optional[str] = None, drain: bool = False,
                            timeout: float = 60.0) -> str:
        """``POST /jobs/:jobid/stop`` then poll its status; the savepoint's location."""
        body = json.dumps({"targetDirectory": target_directory, "drain": drain}).encode()
        _, answer = self.request("POST", f"/jobs/{job_id}/stop", body, {"Content-Type": "application/json"})
        return self._wait_for_operation(f"/jobs/{job_id}/savepoints/{answer['request-id']}", timeout)

    def _wait_for_operation(self, path: str, timeout: float) -> str:
        return str(self._wait_for_completion(path, timeout).get("location"))

    def _wait_for_completion(self, path: str, timeout: float) -> dict:
        """Poll an asynchronous operation's status; its ``operation`` body once COMPLETED."""
        what = "checkpoint" if "/checkpoints/" in path else "savepoint"
        deadline = time.monotonic() + timeout
        while True:
            answer = self.request("GET", path)[1]
            if answer.get("status", {}).get("id") == "COMPLETED":
                operation = dict(answer.get("operation") or {})
                if "failure-cause" in operation:
                    cause = operation["failure-cause"] or {}
                    text = str(cause.get("stack-trace") or cause.get("class") or "unknown cause").strip()
                    raise RestClientError(500, f"the {what} failed: {text.splitlines()[-1] if text else ''}")
                return operation
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} did not complete within {timeout} s")
            time.sleep(0.2)

    def __repr__(self) -> str:
        return f"RestClusterClient({self.url})"


def _decode(data: bytes) -> Any:
    if not data:
        return {}
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {"errors": [data[:200].decode("utf-8", "replace")]}
