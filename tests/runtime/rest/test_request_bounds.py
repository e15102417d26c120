"""What the REST API takes from a client is bounded (issue 29, items 4 and 8), at the public
port (the front process) and at the JobManager's own endpoint behind it:

* a savepoint directory no savepoint can go to is 400 naming the field, and nothing of it is
  kept; the Python API says the same;
* a submission whose signature timestamp ``int()`` cannot read (``²³``) is 401, not 500.

Requests go through raw sockets: the tests must see exactly what the server answers.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest
from rest_client import RestClient
from rest_counting_job import start_counting_job  # tests/runtime/ is on sys.path

from streamkernel.common.job_status import JobStatus
from streamkernel.errors import CheckpointFailedError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
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
