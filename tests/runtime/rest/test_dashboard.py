"""Flink's Web UI at ``/`` (handlers/dashboard.py): the fallback page without the jar, the jar's
files with their cache headers, Flink's 404 for what it refuses or lacks, and API paths that no
file of the jar can shadow; plus the applications, environment and accumulator resources the
dashboard's pages read."""

from __future__ import annotations

import dataclasses
import platform
import re
import sys
import urllib.request
import zipfile
from pathlib import Path
from typing import Iterator

import pytest
from rest_client import RestClient  # tests/runtime/ is on sys.path
from rest_job import RunningJob

from streamkernel.common.job_status import JobStatus
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.rest import web_ui
from streamkernel.runtime.rest.handlers.dashboard import api_paths
from streamkernel.runtime.rest.json_views.applications import (
    APPLICATION_STATES,
    application_details,
    application_status,
)

JOB = "0123456789abcdef0123456789abcdef"
MARKER = "STATIC FILE, NOT THE API"


def _get(url: str, headers: dict | None = None, method: str = "GET") -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture
def no_dashboard(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Flink dist jar anywhere find_dashboard looks."""
    monkeypatch.delenv("FLINK_HOME", raising=False)
    monkeypatch.setattr(web_ui, "_pyflink_dirs", lambda: [])


def _concrete(template: str) -> str:
    """A request path for a template (every parameter a well-formed, unknown id)."""
    return re.sub(r":[A-Za-z_]+", JOB, template)


@pytest.fixture
def shadowing_jar(tmp_path: Path) -> Path:
    """A dashboard jar holding a file at every API path (and at their /v1 forms)."""
    jar = tmp_path / "flink-dist-9.9.9.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("web/index.html", "<html><base href='./'>dashboard</html>")
        archive.writestr("web/main.0123456789abcdef.js", "console.log('main');")
        archive.writestr("web/assets/flink.svg", "<svg/>")
        for template in api_paths():
            path = _concrete(template).lstrip("/")
            archive.writestr(f"web/{path}", MARKER)
            archive.writestr(f"web/v1/{path}", MARKER)
    return jar


@pytest.fixture
def cluster_with(request: pytest.FixtureRequest) -> Iterator:
    clusters: list[MiniCluster] = []

    def start(configuration: dict) -> MiniCluster:
        cluster = MiniCluster(1, 1, backend="local", configuration={"rest.port": "0", **configuration})
        clusters.append(cluster.start(make_current=False))
        return cluster

    yield start
    for cluster in clusters:
        cluster.stop()


def test_without_the_jar_the_root_is_a_page_saying_how_to_get_it_listing_the_api(no_dashboard, cluster_with) -> None:
    cluster = cluster_with({})
    status, headers, body = _get(cluster.rest_url + "/")
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    page = body.decode("utf-8")
    assert web_ui.INSTALL_HINT in page
    for path in ("/overview", "/jobs/:jobid", "/jobs/:jobid/checkpoints", "/jobmanager/environment",
                 "/applications/overview", "/jobs/:jobid/vertices/:vertexid/accumulators"):
        assert f"<code>{path}</code>" in page
    status, headers, body = _get(cluster.rest_url + "/main.0123456789abcdef.js")
    assert status == 404 and headers["Content-Type"].startswith("application/json")
    assert RestClient(cluster.rest_url).get("/main.0123456789abcdef.js") == (
        404, {"errors": ["Not found: /main.0123456789abcdef.js"]})


#: The routes that answer a log file as text (``handlers/logs.py``).
LOG_FILES = {"/jobmanager/log", "/jobmanager/stdout", "/jobmanager/logs/:filename", "/taskmanagers/:taskmanagerid/log",
             "/taskmanagers/:taskmanagerid/stdout", "/taskmanagers/:taskmanagerid/logs/:filename"}


def test_api_paths_are_never_shadowed_by_a_file_of_the_dashboard(shadowing_jar: Path, cluster_with) -> None:
    cluster = cluster_with({"web.dashboard.jar": str(shadowing_jar)})
    templates = api_paths()
    assert len(templates) > 30
    for template in templates:
        for prefix in ("", "/v1"):
            path = prefix + _concrete(template)
            status, headers, body = _get(cluster.rest_url + path)
            assert MARKER.encode() not in body, f"GET {path} answered the jar's file"
            # a log file is text in Flink's shape (the in-kernel cluster has one: its log file); the rest is JSON
            expected = "text/plain" if status == 200 and template in LOG_FILES else "application/json"
            assert headers["Content-Type"].startswith(expected), f"GET {path}: {headers['Content-Type']}"
    assert RestClient(cluster.rest_url).ok("/jobs/overview") == {"jobs": []}
    assert RestClient(cluster.rest_url).ok("/v1/config")["flink-version"] == "2.3.0"


def test_the_dashboards_files_come_with_their_types_and_cache_headers(shadowing_jar: Path, cluster_with) -> None:
    cluster = cluster_with({"web.dashboard.jar": str(shadowing_jar)})
    status, headers, body = _get(cluster.rest_url + "/")
    assert (status, body) == (200, b"<html><base href='./'>dashboard</html>")
    assert headers["Content-Type"] == "text/html; charset=utf-8" and headers["Cache-Control"] == "no-cache"
    status, headers, body = _get(cluster.rest_url + "/main.0123456789abcdef.js")
    assert (status, body) == (200, b"console.log('main');")
    assert headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert headers["Cache-Control"] == "public, max-age=31536000, immutable"
    status, again, body = _get(cluster.rest_url + "/main.0123456789abcdef.js", {"If-None-Match": headers["Etag"]})
    assert (status, body) == (304, b"")
    status, headers, _ = _get(cluster.rest_url + "/assets/flink.svg")
    assert status == 200 and headers["Content-Type"] == "image/svg+xml"
    status, headers, body = _get(cluster.rest_url + "/assets/flink.svg", method="HEAD")
    assert (status, body, headers["Content-Type"]) == (200, b"", "image/svg+xml")
    client = RestClient(cluster.rest_url)
    for refused in ("/assets/missing.js", "/%2e%2e/secret.txt", "/assets/", "/..%5cweb%5cindex.html"):
        status, body = client.get(refused)
        assert status == 404 and body["errors"][0].startswith("Not found: "), refused


def test_a_dashboard_jar_that_is_no_file_is_refused_naming_the_key(tmp_path: Path) -> None:
    cluster = MiniCluster(1, 1, backend="local", configuration={"rest.port": "0",
                                                                "web.dashboard.jar": str(tmp_path / "nothing.jar")})
    with pytest.raises(IllegalConfigurationError, match=r"web\.dashboard\.jar: .*nothing\.jar.* is not a file"):
        cluster.start(make_current=False)
    assert cluster.rest_url is None


# ------------------------------------------------------------------ what the dashboard's pages read
def test_every_job_is_a_single_job_application_as_in_flink_2_3(running_job: RunningJob) -> None:
    client, jid = running_job.client, running_job.job_id
    [overview] = client.ok("/applications/overview")["applications"]
    assert overview == {"id": jid, "name": "SingleJobApplication(rest job)", "start-time": overview["start-time"],
                        "end-time": -1, "duration": overview["duration"], "status": "RUNNING",
                        "jobs": {"RUNNING": 1}}
    details = client.ok(f"/applications/{jid}")
    assert (details["id"], details["status"], details["end-time"]) == (jid, "RUNNING", -1)
    assert set(details["timestamps"]) == set(APPLICATION_STATES) and details["timestamps"]["FINISHED"] == 0
    [job] = details["jobs"]
    assert (job["jid"], job["name"], job["state"]) == (jid, "rest job", "RUNNING")
    assert client.ok(f"/v1/applications/{jid}/exceptions") == {"exceptionHistory": {"entries": []}}
    assert client.ok(f"/jobs/{jid}")["application-id"] == jid
    assert client.get(f"/applications/{JOB}") == (404, {"errors": [f"Application {JOB} not found"]})
    status, body = client.get("/applications/nope")
    assert status == 400 and "applicationid" in body["errors"][0]


def test_an_ended_jobs_application_has_its_state_and_when_it_entered_it(running_job: RunningJob) -> None:
    details = running_job.cluster.dispatcher.request_job_details(running_job.job_id)
    for status, state in ((JobStatus.FINISHED, "FINISHED"), (JobStatus.FAILED, "FAILED"),
                          (JobStatus.CANCELED, "CANCELED"), (JobStatus.CANCELLING, "CANCELING"),
                          (JobStatus.RESTARTING, "RUNNING")):
        ended = dataclasses.replace(details, status=status, end_time=details.start_time + 5,
                                    status_timestamps={**details.status_timestamps, status.name: details.start_time + 5})
        assert application_status(ended) == state
        view = application_details(ended, {}, details.start_time + 10)
        assert view["status"] == state and view["jobs"][0]["state"] == status.name
        if state != "RUNNING":
            assert view["timestamps"][state] == details.start_time + 5


def test_the_jobmanagers_environment_is_the_interpreter_and_its_path(running_job: RunningJob) -> None:
    environment = running_job.client.ok("/jobmanager/environment")
    assert set(environment) == {"jvm", "classpath"} and set(environment["jvm"]) == {"version", "arch", "options"}
    assert environment["jvm"]["version"].startswith(f"{platform.python_implementation()} {platform.python_version()}")
    assert environment["jvm"]["arch"] == platform.machine()
    assert environment["classpath"] == [p for p in sys.path if p]


def test_a_vertexs_accumulators_list_its_subtasks(running_job: RunningJob) -> None:
    client, jid = running_job.client, running_job.job_id
    vertices = client.ok(f"/jobs/{jid}")["vertices"]
    for vertex in vertices:
        path = f"/jobs/{jid}/vertices/{vertex['id']}"
        assert client.ok(path + "/accumulators") == {"id": vertex["id"], "user-accumulators": []}
        subtasks = client.ok(path + "/subtasks/accumulators")
        assert (subtasks["id"], subtasks["parallelism"]) == (vertex["id"], 2)
        assert [(s["subtask"], s["attempt"], s["user-accumulators"]) for s in subtasks["subtasks"]] == [
            (0, 0, []), (1, 0, [])]
        assert all(s["endpoint"].startswith("taskmanager-") for s in subtasks["subtasks"])
    assert client.get(f"/jobs/{jid}/vertices/{JOB}/accumulators")[0] == 404


def test_the_jobmanagers_thread_dump_names_every_thread_with_its_stack(running_job: RunningJob) -> None:
    infos = running_job.client.ok("/jobmanager/thread-dump")["threadInfos"]
    by_name = {info["threadName"]: info["stringifiedThreadInfo"] for info in infos}
    endpoint = next(name for name in by_name if name.startswith("streamkernel REST endpoint :"))
    assert by_name[endpoint].startswith(f'"{endpoint}" Id=') and " daemon\n" in by_name[endpoint]
    assert "run_forever" in by_name[endpoint]  # its loop, serving this very request
    assert "MainThread" in by_name
