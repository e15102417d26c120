"""What Flink 2.3's own ``flink`` CLI sends and prints, pinned against a recording HTTP server.

The server here stands in for nobody: it answers with Flink's JSON shapes and records each
request exactly as the real CLI (``tests/flink_tools.py``) sends it, so these tests fix the
requests and the output that streamkernel's REST endpoint must satisfy for ``flink list``,
``cancel``, ``savepoint`` and ``stop --savepointPath``, and check that the helper's
configuration makes a wrong address fail at once instead of retrying for 75 s.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

_spec = importlib.util.spec_from_file_location("flink_tools", Path(__file__).with_name("flink_tools.py"))
assert _spec is not None and _spec.loader is not None
flink_tools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(flink_tools)

RUNNING_JOB = "0123456789abcdef0123456789abcdef"
CREATED_JOB = "fedcba9876543210fedcba9876543210"
FINISHED_JOB = "00000000000000000000000000000001"
TRIGGER_ID = "aaaabbbbccccddddeeeeffff00001111"
TIMEOUT = 120.0


def _job(jid: str, name: str, state: str, start: int, end: int = -1) -> dict[str, Any]:
    # The fields Flink 2.3's JobDetails needs to deserialize: "pending-operators" (an int) and
    # "tasks" with "total" are required; jobType/schedulerType may be left out.
    return {"jid": jid, "name": name, "state": state, "start-time": start, "end-time": end,
            "duration": 1000, "last-modification": start, "pending-operators": 0,
            "tasks": {"total": 2, "running": 2 if state == "RUNNING" else 0}}


OVERVIEW = {"jobs": [
    _job(RUNNING_JOB, "word count", "RUNNING", 1_700_000_000_000),   # 14.11.2023 22:13:20 UTC
    _job(CREATED_JOB, "waiting job", "CREATED", 1_700_000_060_000),  # 14.11.2023 22:14:20 UTC
    _job(FINISHED_JOB, "done job", "FINISHED", 1_700_000_120_000, 1_700_000_180_000),
]}


class RecordingServer:
    """A ThreadingHTTPServer on 127.0.0.1 that records (method, path, body) and answers from ``routes``.

    ``routes`` maps (method, path) to a list of (status, json body) answered in turn (the last
    one repeats); anything else gets Flink's 404 error body.
    """

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.routes: dict[tuple[str, str], list[tuple[int, Any]]] = {}
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8") if length else ""
                with owner._lock:
                    owner.requests.append((self.command, self.path, json.loads(raw) if raw else None))
                    owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                    answers = owner.routes.get((self.command, self.path))
                    if answers:
                        status, body = answers.pop(0) if len(answers) > 1 else answers[0]
                    else:
                        status, body = 404, {"errors": [f"Not found: {self.path}"]}
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="recording-rest", daemon=True)

    def __enter__(self) -> RecordingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()


@pytest.fixture
def rest() -> Iterator[RecordingServer]:
    flink_tools.flink_home()  # skip before starting anything when the tools are missing
    flink_tools.java_executable()
    with RecordingServer() as server:
        yield server


def test_list_gets_the_jobs_overview_and_prints_running_and_scheduled_jobs(rest: RecordingServer) -> None:
    rest.routes[("GET", "/v1/jobs/overview")] = [(200, OVERVIEW)]
    code, out, err = flink_tools.run_flink_cli(["list"], rest.address, TIMEOUT)
    assert code == 0, out + err
    assert rest.requests == [("GET", "/v1/jobs/overview", {})]
    assert rest.headers[0]["content-type"] == "application/json; charset=UTF-8"
    lines = [line for line in out.splitlines() if line != "Waiting for response..."]
    assert lines == [
        "------------------ Running/Restarting Jobs -------------------",
        f"14.11.2023 22:13:20 : {RUNNING_JOB} : word count (RUNNING)",
        "--------------------------------------------------------------",
        "----------------------- Scheduled Jobs -----------------------",
        f"14.11.2023 22:14:20 : {CREATED_JOB} : waiting job (CREATED)",
        "--------------------------------------------------------------",
    ]


def test_list_says_so_when_there_are_no_jobs(rest: RecordingServer) -> None:
    rest.routes[("GET", "/v1/jobs/overview")] = [(200, {"jobs": []})]
    code, out, err = flink_tools.run_flink_cli(["list"], rest.address, TIMEOUT)
    assert code == 0, out + err
    assert "No running jobs." in out and "No scheduled jobs." in out


def test_cancel_patches_the_job_with_mode_cancel(rest: RecordingServer) -> None:
    rest.routes[("PATCH", f"/v1/jobs/{RUNNING_JOB}?mode=cancel")] = [(202, {})]
    code, out, err = flink_tools.run_flink_cli(["cancel", RUNNING_JOB], rest.address, TIMEOUT)
    assert code == 0, out + err
    assert rest.requests == [("PATCH", f"/v1/jobs/{RUNNING_JOB}?mode=cancel", {})]
    assert f"Cancelled job {RUNNING_JOB}." in out


def test_savepoint_triggers_then_polls_until_completed(rest: RecordingServer, tmp_path: Path) -> None:
    location = f"file:{tmp_path}/savepoint-012345-0123456789ab"
    rest.routes[("POST", f"/v1/jobs/{RUNNING_JOB}/savepoints")] = [(202, {"request-id": TRIGGER_ID})]
    rest.routes[("GET", f"/v1/jobs/{RUNNING_JOB}/savepoints/{TRIGGER_ID}")] = [
        (200, {"status": {"id": "IN_PROGRESS"}}),
        (200, {"status": {"id": "COMPLETED"}, "operation": {"location": location}}),
    ]
    code, out, err = flink_tools.run_flink_cli(["savepoint", RUNNING_JOB, str(tmp_path)], rest.address, TIMEOUT)
    assert code == 0, out + err
    assert rest.requests == [
        ("POST", f"/v1/jobs/{RUNNING_JOB}/savepoints",
         {"target-directory": str(tmp_path), "cancel-job": False, "formatType": "CANONICAL", "triggerId": None}),
        ("GET", f"/v1/jobs/{RUNNING_JOB}/savepoints/{TRIGGER_ID}", {}),
        ("GET", f"/v1/jobs/{RUNNING_JOB}/savepoints/{TRIGGER_ID}", {}),
    ]
    assert f"Savepoint completed. Path: {location}" in out


def test_a_failed_savepoint_reaches_the_user_as_an_error_body(rest: RecordingServer, tmp_path: Path) -> None:
    # Flink answers COMPLETED with an "operation": {"failure-cause": {...}} whose
    # "serialized-throwable" the CLI Java-deserializes (a SerializedThrowable): a Python server
    # cannot make one, so it reports the failure as Flink's error body, which the CLI prints.
    rest.routes[("POST", f"/v1/jobs/{RUNNING_JOB}/savepoints")] = [(202, {"request-id": TRIGGER_ID})]
    rest.routes[("GET", f"/v1/jobs/{RUNNING_JOB}/savepoints/{TRIGGER_ID}")] = [
        (500, {"errors": ["Savepoint failed: disk full"]})]
    code, out, err = flink_tools.run_flink_cli(["savepoint", RUNNING_JOB, str(tmp_path)], rest.address, TIMEOUT)
    assert code != 0
    assert "Savepoint failed: disk full" in out + err


def test_stop_with_savepoint_posts_stop_then_polls_the_savepoint(rest: RecordingServer, tmp_path: Path) -> None:
    location = f"file:{tmp_path}/savepoint-012345-ba9876543210"
    rest.routes[("POST", f"/v1/jobs/{RUNNING_JOB}/stop")] = [(202, {"request-id": TRIGGER_ID})]
    rest.routes[("GET", f"/v1/jobs/{RUNNING_JOB}/savepoints/{TRIGGER_ID}")] = [
        (200, {"status": {"id": "COMPLETED"}, "operation": {"location": location}})]
    code, out, err = flink_tools.run_flink_cli(["stop", "--savepointPath", str(tmp_path), RUNNING_JOB],
                                               rest.address, TIMEOUT)
    assert code == 0, out + err
    assert rest.requests == [
        ("POST", f"/v1/jobs/{RUNNING_JOB}/stop",
         {"targetDirectory": str(tmp_path), "drain": False, "formatType": "CANONICAL", "triggerId": None}),
        ("GET", f"/v1/jobs/{RUNNING_JOB}/savepoints/{TRIGGER_ID}", {}),
    ]
    assert f"Savepoint completed. Path: {location}" in out


def test_an_error_body_reaches_the_user(rest: RecordingServer) -> None:
    code, out, err = flink_tools.run_flink_cli(["cancel", FINISHED_JOB], rest.address, TIMEOUT)
    assert code != 0
    assert rest.requests == [("PATCH", f"/v1/jobs/{FINISHED_JOB}?mode=cancel", {})]
    assert f"Not found: /v1/jobs/{FINISHED_JOB}?mode=cancel" in out + err


def test_nothing_listening_fails_at_once_instead_of_retrying() -> None:
    with socket.socket() as probe:  # a port nobody listens on once this is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, out, err = flink_tools.run_flink_cli(["list"], f"127.0.0.1:{port}", 60.0)  # Flink's defaults retry ~75 s
    assert code != 0
    assert "Connection refused" in out + err


def test_a_bad_address_is_refused_before_running_anything() -> None:
    with pytest.raises(ValueError, match="rest_address must be host:port"):
        flink_tools.run_flink_cli(["list"], "http://127.0.0.1", TIMEOUT)
