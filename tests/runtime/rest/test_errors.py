"""Errors of the REST API as Flink sends them (``{"errors": [...]}``), the ``/v1`` prefix, and
the bodies Flink's CLI sends; never a traceback."""

from __future__ import annotations

import logging

import pytest
from rest_client import RestClient
from rest_job import RunningJob  # tests/runtime/ is on sys.path

from streamkernel.runtime.rest.handlers import cluster as cluster_handlers


def _error(response: tuple[int, object]) -> tuple[int, str]:
    status, body = response
    assert isinstance(body, dict) and list(body) == ["errors"] and len(body["errors"]) == 1, body
    message = body["errors"][0]
    assert "Traceback" not in message and "\n" not in message
    return status, message


def test_unknown_path_is_404(running_job: RunningJob) -> None:
    assert _error(running_job.client.get("/nothing/here")) == (404, "Not found: /nothing/here")
    assert _error(running_job.client.get("/v1/jobs/x/y/z/w")) == (404, "Not found: /v1/jobs/x/y/z/w")


def test_unknown_and_malformed_ids(running_job: RunningJob) -> None:
    unknown = "0" * 32
    assert _error(running_job.client.get(f"/jobs/{unknown}")) == (404, f"Job {unknown} not found")
    assert _error(running_job.client.get(f"/jobs/{unknown}/checkpoints"))[0] == 404
    status, message = _error(running_job.client.get("/jobs/not-a-job-id"))
    assert status == 400 and "jobid" in message and "not-a-job-id" in message
    assert _error(running_job.client.get(f"/jobs/{running_job.job_id}/vertices/xyz"))[0] == 400
    assert _error(running_job.client.get(f"/jobs/{running_job.job_id}/vertices/{unknown}"))[0] == 404
    assert _error(running_job.client.get(f"/jobs/{running_job.job_id}/checkpoints/details/abc"))[0] == 400
    assert _error(running_job.client.get("/taskmanagers/no-such-tm"))[0] == 404


def test_a_method_the_resource_has_not_is_405(running_job: RunningJob) -> None:
    status, message = _error(running_job.client.request("PUT", "/jobs", b"{}"))
    assert status == 405 and "PUT" in message
    assert _error(running_job.client.request("DELETE", "/v1/overview"))[0] == 405


def test_the_v1_prefix_and_a_get_with_a_body_as_flinks_cli_sends(running_job: RunningJob) -> None:
    plain = running_job.client.ok("/jobs")
    assert running_job.client.get("/v1/jobs", body=b"{}") == (200, plain)
    assert running_job.client.get(f"/v1/jobs/{running_job.job_id}/", body=b"{}")[0] == 200  # a trailing slash too


def test_a_body_over_the_limit_is_413_and_nothing_else_happens() -> None:
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    with MiniCluster(1, 1, backend="local", configuration={"rest.port": "0",
                                                           "rest.server.max-content-length": "64"}) as cluster:
        assert cluster.rest_url is not None
        client = RestClient(cluster.rest_url)
        status, message = _error(client.request("POST", "/v1/jobs", b"x" * 1000))
        assert status == 413 and "rest.server.max-content-length" in message
        assert client.get("/v1/jobs", body=b"{}")[0] == 200  # a body within the limit is fine
        assert client.ok("/jobs") == {"jobs": []}  # the server still answers


def test_a_handler_bug_is_a_one_line_500_and_is_logged(running_job: RunningJob, monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    def broken(*args: object) -> dict:
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr(cluster_handlers, "dashboard_config", broken)
    with caplog.at_level(logging.ERROR, logger="streamkernel.runtime.rest.handlers.base"):
        status, message = _error(running_job.client.get("/config"))
    assert status == 500 and message == "Internal server error: ZeroDivisionError: division by zero"
    assert any("ZeroDivisionError" in (r.exc_text or "") or r.exc_info for r in caplog.records)
