"""What the REST API takes from a client is bounded before it costs the cluster anything
(issue 29, items 3, 4, 7 and 8), at the public port (the front process) and at the
JobManager's own endpoint behind it:

* a body larger than its resource takes (1 MiB of JSON; a job submission up to
  ``rest.server.max-content-length``) gets 413 before it is read, an unsigned submission 401
  before it is read, and large bodies sent at once leave both processes' memory flat;
* a savepoint directory no savepoint can go to is 400 naming the field, and nothing of it is
  kept or logged; the Python API says the same;
* odd requests (deep JSON, ``%00``, unknown methods, a huge URI or header block) get Flink's
  ``{"errors": [...]}`` with a 4xx, never a 500, HTML or a closed connection;
* a submission whose signature timestamp ``int()`` cannot read (``²³``) is 401, not 500.

Requests go through raw sockets: the tests must see what the server answers (or that it
answers before the body is sent: ``Expect: 100-continue``), which no HTTP client shows.
"""

from __future__ import annotations

import concurrent.futures
import gc
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
from rest_client import RestClient
from rest_counting_job import start_counting_job  # tests/runtime/ is on sys.path

from streamkernel.common.job_status import JobStatus
from streamkernel.errors import CheckpointFailedError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.rest.handlers import dashboard
from streamkernel.runtime.rest.job_signature import CONTENT_TYPE, SIGNATURE_HEADER, TIMESTAMP_HEADER, SignatureError, verify
from streamkernel.testing.waiting import wait_until

UNKNOWN_JOB = "0" * 32
SIDES = ("front", "jobmanager")
MiB = 1 << 20


# ---------------------------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniCluster]:
    """A 1 x 2 slot cluster with its REST front; its JobManager has a log file (``/jobmanager/logs``)."""
    log = tmp_path_factory.mktemp("logs") / "jobmanager.log"
    log.write_text("started\n")
    with MiniCluster(1, 2, backend="local", configuration={"rest.port": "0", "log.file": str(log)}) as started:
        assert started._rest is not None and started._rest.front is not None
        yield started


def _port(cluster: MiniCluster, side: str) -> int:
    """The public port (the front's) or the JobManager's own, behind it."""
    endpoint = cluster._rest
    assert endpoint is not None and endpoint.front is not None and endpoint.port is not None
    return endpoint.port if side == "front" else endpoint.front.upstream_port


def _head(method: str, target: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: localhost", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The status, headers (lower-case names) and body of the next answer on ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"the server closed the connection without an answer (read {data[:200]!r})")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), headers, body[:length]


def _exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` whole and read the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        return _read_answer(sock)


def _flink_error(answer: tuple[int, dict[str, str], bytes]) -> tuple[int, str]:
    """(status, message) of an answer that must be Flink's one-line JSON error."""
    status, headers, body = answer
    assert headers.get("content-type", "").startswith("application/json"), (status, headers, body[:200])
    decoded = json.loads(body)
    assert list(decoded) == ["errors"] and len(decoded["errors"]) == 1, decoded
    message = decoded["errors"][0]
    assert "Traceback" not in message and "\n" not in message and len(message) < 1000, message
    return status, message


def _expecting_continue(port: int, method: str, target: str, headers: dict[str, str],
                        length: int) -> tuple[int, dict[str, str], bytes]:
    """Send headers declaring a body of ``length`` bytes with ``Expect: 100-continue`` and no
    body: the answer the server gives before reading it (100 if it would read it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(_head(method, target, {**headers, "Content-Length": str(length), "Expect": "100-continue"}))
        return _read_answer(sock)


def _forged(now_ms: Optional[int] = None) -> dict[str, str]:
    """A submission's headers that look signed (a fresh timestamp, a well-formed signature) but are not."""
    timestamp = int(now_ms if now_ms is not None else time.time() * 1000)
    return {"Content-Type": CONTENT_TYPE, TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: "hmac-sha256=" + "0" * 64}


# ------------------------------------------------------------------ item 7: odd requests
_DEEP = 50_000  # far beyond Python's recursion limit, within the 1 MiB of JSON a resource takes
ODD_REQUESTS = {
    "JSON nested 50,000 deep": (
        _head("POST", f"/jobs/{UNKNOWN_JOB}/savepoints", {"Content-Type": "application/json",
                                                          "Content-Length": str(2 * _DEEP)})
        + b"[" * _DEEP + b"]" * _DEEP, 400, "nested too deeply"),
    "a NUL in a log file's name": (_head("GET", "/jobmanager/logs/jobmanager.log%00.txt", {}), 400, "NUL"),
    "a NUL in an unknown path": (_head("GET", "/%00", {}), 400, "NUL"),
    "method FOO": (_head("FOO", "/jobs", {}), 405, "Method FOO is not allowed"),
    "method TRACE": (_head("TRACE", "/jobs", {}), 405, "Method TRACE is not allowed"),
    "a 100 KB URI": (_head("GET", "/jobs?x=" + "a" * 100_000, {}), 414, "URI too long"),
    "10,000 headers": (_head("GET", "/jobs", {f"X-Header-{i}": "v" for i in range(10_000)}), 431,
                       "header fields too large"),
}


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("what", list(ODD_REQUESTS))
def test_odd_requests_get_flinks_json_error_with_a_4xx(cluster: MiniCluster, side: str, what: str) -> None:
    request, expected, words = ODD_REQUESTS[what]
    answer = _exchange(_port(cluster, side), request)
    status, message = _flink_error(answer)
    assert status == expected and words in message, (status, message)
    if status == 405:
        assert "GET" in answer[1]["allow"]
    assert RestClient(cluster.rest_url or "").get("/jobs")[0] == 200  # and the server still answers


# ------------------------------------------------------------------ item 8: the timestamp header
@pytest.mark.parametrize("timestamp", ["²³", "9" * 5000], ids=["superscript digits", "5,000 digits"])
def test_verify_refuses_a_timestamp_int_cannot_read(timestamp: str) -> None:
    assert timestamp.isdigit()
    with pytest.raises(SignatureError, match="malformed X-Streamkernel-Timestamp"):
        verify(b"k" * 32, timestamp, "hmac-sha256=" + "0" * 64, b"job")


@pytest.mark.parametrize("side", SIDES)
def test_a_submission_with_a_timestamp_of_superscript_digits_is_401(cluster: MiniCluster, side: str) -> None:
    body = b"not a job"
    headers = {**_forged(), TIMESTAMP_HEADER: "²³", "Content-Length": str(len(body))}
    status, message = _flink_error(_exchange(_port(cluster, side), _head("POST", "/jobs", headers) + body))
    assert status == 401 and "malformed X-Streamkernel-Timestamp" in message


# ------------------------------------------------------------------ item 3: bodies
@pytest.mark.parametrize("side", SIDES)
def test_an_unsigned_or_stale_submission_is_refused_before_its_body_is_read(cluster: MiniCluster, side: str) -> None:
    port = _port(cluster, side)
    unsigned = _expecting_continue(port, "POST", "/jobs", {"Content-Type": CONTENT_TYPE}, 50 * MiB)
    status, message = _flink_error(unsigned)
    assert status == 401 and "must be signed" in message
    stale = _forged(int(time.time() * 1000) - 3_600_000)
    status, message = _flink_error(_expecting_continue(port, "POST", "/v1/jobs", stale, 50 * MiB))
    assert status == 401 and "timestamp" in message
    # well-formed signature headers: the body is read (it is what the signature signs)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(_head("POST", "/jobs", {**_forged(), "Content-Length": "8", "Expect": "100-continue"}))
        assert _read_answer(sock)[0] == 100
        sock.sendall(b"not ajob")
        status, message = _flink_error(_read_answer(sock))
    assert status == 401 and "does not match the cluster's secret" in message


@pytest.mark.parametrize("side", SIDES)
def test_a_replayed_submission_is_refused_before_its_body_is_read(cluster: MiniCluster, side: str) -> None:
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.runtime.rest.client import RestClusterClient
    from streamkernel.runtime.rest.handlers.submission import PAYLOAD_FORMAT
    from streamkernel.runtime.rest.job_signature import signed_headers
    from streamkernel.runtime.rpc.serialization import dumps

    port = _port(cluster, side)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).add_sink(lambda x: None)
    body = dumps({"format": PAYLOAD_FORMAT, "stream_graph": env.get_stream_graph("once"), "job_id": None})
    secret = RestClusterClient("127.0.0.1", _port(cluster, "front")).secret()  # registered for the front
    headers = signed_headers(secret, body)
    accepted = _exchange(port, _head("POST", "/jobs", {**headers, "Content-Length": str(len(body))}) + body)
    assert accepted[0] == 202, accepted
    status, message = _flink_error(_expecting_continue(port, "POST", "/jobs", headers, len(body)))
    assert status == 401 and "replay" in message


@pytest.mark.parametrize("side", SIDES)
def test_a_json_body_over_a_mebibyte_is_413_before_it_is_read(cluster: MiniCluster, side: str) -> None:
    port = _port(cluster, side)
    declared = _expecting_continue(port, "POST", f"/jobs/{UNKNOWN_JOB}/savepoints",
                                   {"Content-Type": "application/json"}, 2 * MiB)
    status, message = _flink_error(declared)
    assert status == 413 and "1048576 bytes of JSON" in message
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:  # chunked: counted as it comes
        sock.sendall(_head("POST", f"/jobs/{UNKNOWN_JOB}/stop", {"Transfer-Encoding": "chunked"}))
        chunk = b" " * (256 * 1024)
        try:
            for _ in range(16):
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        except OSError:  # answered and closed while we were sending
            pass
        status, message = _flink_error(_read_answer(sock))
    assert status == 413 and "more than the 1048576 bytes of JSON" in message


@pytest.mark.parametrize("side", SIDES)
def test_a_body_over_max_content_length_is_413_with_flinks_error_before_it_is_read(side: str) -> None:
    with MiniCluster(1, 1, backend="local", configuration={"rest.port": "0",
                                                           "rest.server.max-content-length": "4096"}) as small:
        port = _port(small, side)
        status, message = _flink_error(_expecting_continue(port, "POST", "/jobs", _forged(), 4097))
        assert status == 413 and message == ("Request entity too large: 4097 bytes exceed "
                                             "rest.server.max-content-length (4096 bytes)")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:  # chunked, past the key
            sock.sendall(_head("POST", "/jobs", {**_forged(), "Transfer-Encoding": "chunked"}))
            try:
                for _ in range(8):
                    sock.sendall(b"400\r\n" + b"x" * 1024 + b"\r\n")
            except OSError:
                pass
            status, message = _flink_error(_read_answer(sock))
        assert status == 413 and "more than rest.server.max-content-length (4096 bytes)" in message
        assert small.dispatcher.list_jobs() == []


def _rss(pid: int) -> int:
    """The resident set (bytes) of process ``pid`` (``VmRSS`` of /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


class _PeakRss:
    """The highest resident set of some processes while it runs (sampled every few ms)."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.peak = {name: _rss(pid) for name, pid in pids.items()}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            for name, pid in self.pids.items():
                self.peak[name] = max(self.peak[name], _rss(pid))

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join()
        return self.peak


_BLOCK = b"\x00" * MiB  # every upload sends this one buffer again and again: the sender's memory stays flat


def _upload(port: int, target: str, headers: dict[str, str], size: int, chunked: bool) -> Optional[int]:
    """POST ``size`` bytes to ``target`` as fast as the server takes them; the answer's status,
    None when the server answered and closed before the body was sent (the answer lost)."""
    framing = {"Transfer-Encoding": "chunked"} if chunked else {"Content-Length": str(size)}
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        try:
            sock.sendall(_head("POST", target, {**headers, **framing}))
            for _ in range(size // MiB):
                if chunked:
                    sock.sendall(b"%x\r\n" % MiB)
                sock.sendall(_BLOCK)
                if chunked:
                    sock.sendall(b"\r\n")
            if chunked:
                sock.sendall(b"0\r\n\r\n")
            return _read_answer(sock)[0]
        except (OSError, AssertionError):  # refused early: the server closed the connection on the body
            return None


def test_large_unsigned_bodies_at_once_leave_the_front_and_the_jobmanager_memory_flat(cluster: MiniCluster) -> None:
    """Eight 32 MiB uploads at once: unsigned submissions and JSON resources are refused
    unread; forged-signature submissions are read (streamed by the front, spooled to disk
    by the JobManager) and refused. Neither process may grow by more than a few MiB."""
    endpoint = cluster._rest
    assert endpoint is not None and endpoint.front is not None and endpoint.front.pid is not None
    port = _port(cluster, "front")
    size = 32 * MiB
    uploads = [
        ("/jobs", {"Content-Type": CONTENT_TYPE}, False),  # unsigned
        ("/jobs", {"Content-Type": CONTENT_TYPE}, True),
        ("/v1/jobs", {"Content-Type": CONTENT_TYPE}, False),
        (f"/jobs/{UNKNOWN_JOB}/savepoints", {"Content-Type": "application/json"}, False),  # JSON resources
        (f"/jobs/{UNKNOWN_JOB}/stop", {"Content-Type": "application/json"}, True),
        ("/jobs", _forged(), False),  # forged: read whole, then refused
        ("/jobs", _forged(), True),
        ("/jobs", _forged(), False),
    ]
    for target, headers, chunked in uploads[-3:]:  # warm up: the code paths and buffers a request uses
        _upload(port, target, headers, 2 * MiB, chunked)
    gc.collect()
    pids = {"front": endpoint.front.pid, "jobmanager": os.getpid()}  # the MiniCluster's JobManager: this process
    before = {name: _rss(pid) for name, pid in pids.items()}
    peak = _PeakRss(pids)
    with concurrent.futures.ThreadPoolExecutor(len(uploads)) as pool:
        statuses = list(pool.map(lambda u: _upload(port, u[0], u[1], size, u[2]), uploads))
    highest = peak.stop()
    after = {name: _rss(pid) for name, pid in pids.items()}
    growth = {name: (highest[name] - before[name]) / MiB for name in pids}
    print(f"RSS before {_mib(before)}, peak {_mib(highest)}, after {_mib(after)}; statuses {statuses}")
    assert statuses[-3:] == [401, 401, 401], statuses  # read whole, refused: the signature does not match
    assert all(status in (None, 401, 413) for status in statuses), statuses
    assert growth["front"] < 24 and growth["jobmanager"] < 24, f"grew by {growth} MiB uploading {len(uploads)} x 32 MiB"
    assert RestClient(cluster.rest_url or "").get("/jobs")[0] == 200  # and both still answer


def _mib(values: dict[str, int]) -> dict[str, str]:
    return {name: f"{value / MiB:.0f} MiB" for name, value in values.items()}


# ------------------------------------------------------------------ item 4: user strings
BAD_DIRECTORIES = {
    "5,000 characters": ("/tmp/" + "d" * 4995, "longer than 4096 characters"),
    "a newline": ("/tmp/a\nb", "control character"),
    "an unknown scheme": ("nosuchfs://bucket/savepoints", "which fsspec does not know"),
    "a file in the way": ("{file}/savepoints", "is not a directory"),
    "a name of 300 bytes": ("/tmp/" + "n" * 300, "longer than 255 bytes"),
}


@pytest.fixture
def running(cluster: MiniCluster) -> Iterator[str]:
    """A running count on the module's cluster (no periodic checkpoints), cancelled after the test."""
    job_id = start_counting_job(cluster, [])
    yield job_id
    cluster.dispatcher.cancel_job(job_id)
    wait_until(lambda: cluster.dispatcher.request_job_status(job_id).is_globally_terminal_state(),
               message="the test's job to end")


@pytest.mark.parametrize("action, field", [("savepoints", "target-directory"), ("stop", "targetDirectory")])
def test_a_savepoint_directory_none_can_go_to_is_400_naming_the_field_and_nothing_is_kept(
        cluster: MiniCluster, running: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        action: str, field: str) -> None:
    (tmp_path / "file").write_text("in the way")
    client = RestClient(cluster.rest_url or "")
    endpoint = cluster._rest
    assert endpoint is not None and endpoint.context.operations is not None
    operations = len(endpoint.context.operations)
    with caplog.at_level(logging.DEBUG, logger="streamkernel"):
        for what, (directory, words) in BAD_DIRECTORIES.items():
            body = json.dumps({field: directory.format(file=tmp_path / "file")}).encode()
            status, answer = client.request("POST", f"/jobs/{running}/{action}", body)
            assert status == 400, (what, status, answer)
            message = answer["errors"][0]
            assert f'field "{field}"' in message and words in message and len(message) < 500, (what, message)
    assert len(endpoint.context.operations) == operations  # nothing triggered
    assert cluster.dispatcher.request_job_status(running) is JobStatus.RUNNING
    checkpoints = client.ok(f"/jobs/{running}/checkpoints")
    assert checkpoints["counts"]["total"] == 0 and len(json.dumps(checkpoints)) < 10_000
    assert all(len(record.getMessage()) < 2000 for record in caplog.records), "a request's string was logged whole"


def test_a_savepoint_directory_none_can_go_to_fails_the_python_api_with_the_same_clear_error(
        cluster: MiniCluster, running: str) -> None:
    too_long = "/tmp/" + "d" * 4995
    for call in (lambda: cluster.checkpoints.trigger_savepoint(running, too_long, timeout=30),
                 lambda: cluster.checkpoints.stop_with_savepoint(running, too_long, timeout=30)):
        with pytest.raises(CheckpointFailedError) as failed:
            call()
        message = str(failed.value)
        assert "savepoint target directory" in message and "longer than 4096 characters" in message
        assert len(message) < 500, f"the error repeats the whole path ({len(message)} characters)"
    assert cluster.checkpoints.checkpoint_history(running) == []  # nothing was triggered, nothing kept
    assert cluster.dispatcher.request_job_status(running) is JobStatus.RUNNING


def test_what_is_logged_of_a_request_is_cut_short(cluster: MiniCluster, monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    def broken(self: Any, path: str) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(dashboard.DashboardHandler, "get", broken)
    long_path = "/" + "p" * 7000
    with caplog.at_level(logging.DEBUG, logger="streamkernel.runtime.rest"):
        status, message = _flink_error(_exchange(_port(cluster, "jobmanager"), _head("GET", long_path, {})))
        accesses = wait_until(lambda: [r for r in caplog.records if r.name.endswith("rest.endpoint")
                                       and r.getMessage().startswith("500 GET")],
                              message="the request's access log (written once it was answered)")
    assert status == 500 and message == "Internal server error: ZeroDivisionError: division by zero"
    failures = [r for r in caplog.records if r.name.endswith("handlers.base")]
    assert failures
    for record in failures + accesses:
        assert "ppppp" in record.getMessage() and len(record.getMessage()) < 1000, record.getMessage()[:300]
