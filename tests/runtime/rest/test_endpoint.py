"""The REST endpoint's life: ports (fallback, ranges, any), stop leaves no thread or port,
which clusters serve it, bad configuration named by key, and the process backend."""

from __future__ import annotations

import http.client
import logging
import os
import pathlib
import re
import socket
import subprocess
import sys
import threading
from typing import Iterator

import pytest
from rest_client import RestClient
from rest_job import running_job  # tests/runtime/ is on sys.path

from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.minicluster.client import transient_cluster_for
from streamkernel.runtime.minicluster.minicluster import MiniCluster, set_current_cluster
from streamkernel.runtime.rest.endpoint import RestEndpointError, RestServerEndpoint
from streamkernel.testing.waiting import wait_until


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port some other program listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


def _port(cluster: MiniCluster) -> int:
    assert cluster.rest_url is not None and cluster.rest_url.startswith("http://127.0.0.1:")
    return int(cluster.rest_url.rsplit(":", 1)[1])


def _can_bind(port: int) -> bool:
    """Whether a server could listen on ``port`` (with SO_REUSEADDR, as servers do: a connection
    the server closed leaves the port in TIME_WAIT for a while)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(1)
        except OSError:
            return False
        return True


def test_a_taken_rest_port_falls_back_to_the_next_free_one(taken_port: int) -> None:
    with MiniCluster(1, 1, backend="local", configuration={"rest.port": str(taken_port)}) as cluster:
        assert taken_port < _port(cluster) < taken_port + 10
        assert RestClient(cluster.rest_url).ok("/overview")["taskmanagers"] == 1


def test_a_taken_bind_port_without_a_range_fails_naming_the_key(taken_port: int) -> None:
    cluster = MiniCluster(1, 1, backend="local", configuration={"rest.bind-port": str(taken_port)})
    with pytest.raises(RestEndpointError, match=rf"rest.bind-port.*{taken_port}|{taken_port}.*rest.bind-port"):
        cluster.start(make_current=False)
    assert not cluster.is_running and cluster.rest_url is None


def test_rest_port_0_takes_any_free_port_and_stop_frees_thread_and_port() -> None:
    before = set(threading.enumerate())
    cluster = MiniCluster(1, 1, backend="local", configuration={"rest.port": "0"}).start(make_current=False)
    port = _port(cluster)
    assert port > 0 and not _can_bind(port)
    assert any(t.name.startswith("streamkernel REST endpoint") for t in threading.enumerate())
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/v1/jobs")
    assert connection.getresponse().read() == b'{"jobs": []}'  # the connection stays open (keep-alive)
    cluster.stop()
    assert cluster.rest_url is None
    assert set(threading.enumerate()) - before == set()
    assert _can_bind(port)
    with pytest.raises((ConnectionError, http.client.HTTPException)):  # the server closed it
        connection.request("GET", "/v1/jobs")
        connection.getresponse()
    connection.close()


def test_a_cluster_started_again_serves_again() -> None:
    cluster = MiniCluster(1, 1, backend="local", configuration={"rest.bind-port": "0"})
    for _ in range(2):
        cluster.start(make_current=False)
        assert RestClient(cluster.rest_url).ok("/overview")["slots-total"] == 1
        cluster.stop()
        assert cluster.rest_url is None


@pytest.mark.parametrize("key, value", [("rest.bind-port", "80-70"), ("rest.bind-port", "http"),
                                        ("rest.port", "eighty"), ("rest.server.max-content-length", "0")])
def test_a_bad_rest_value_names_its_key_before_anything_starts(key: str, value: str) -> None:
    with pytest.raises(IllegalConfigurationError, match=key.replace(".", r"\.")):
        MiniCluster(1, 1, backend="local", configuration={key: value})


def test_a_non_loopback_bind_address_is_allowed_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="streamkernel.runtime.rest.endpoint"):
        with MiniCluster(1, 1, backend="local", configuration={"rest.bind-address": "0.0.0.0", "rest.port": "0",
                                                               "rest.address": "127.0.0.1"}) as cluster:
            assert RestClient(cluster.rest_url).ok("/jobs") == {"jobs": []}
    assert any("not on a loopback address" in r.getMessage() for r in caplog.records)


def test_rest_address_is_what_rest_url_shows() -> None:
    with MiniCluster(1, 1, backend="local", configuration={"rest.port": "0", "rest.address": "localhost"}) as cluster:
        assert cluster.rest_url is not None and cluster.rest_url.startswith("http://localhost:")


def test_a_cluster_asked_not_to_serve_has_no_url() -> None:
    with MiniCluster(1, 1, backend="local", rest=False) as cluster:
        assert cluster.rest_url is None


def _bounded_env(configuration: dict) -> StreamExecutionEnvironment:
    from streamkernel.common.configuration import Configuration

    conf = Configuration()
    for key, value in configuration.items():
        conf.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.from_collection([1, 2, 3]).map(lambda x: x).add_sink(lambda x: None)
    return env


def test_implicit_execute_serves_nothing_unless_a_rest_port_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    set_current_cluster(None)
    assert transient_cluster_for(_bounded_env({}).get_stream_graph(clear_transformations=False))._serve_rest is False
    started: list[str] = []
    original = RestServerEndpoint.start

    def recording_start(self: RestServerEndpoint) -> RestServerEndpoint:
        result = original(self)
        started.append(str(self.rest_url))
        return result

    monkeypatch.setattr(RestServerEndpoint, "start", recording_start)
    _bounded_env({}).execute("no web ui")
    assert started == []
    _bounded_env({"rest.port": "0"}).execute("asks for a web ui")
    assert len(started) == 1 and started[0].startswith("http://127.0.0.1:")


def test_the_process_backend_serves_taskmanagers_and_live_metrics() -> None:
    with running_job(backend="process") as job:
        assert [t["id"] for t in job.client.ok("/taskmanagers")["taskmanagers"]] == ["taskmanager-1", "taskmanager-2"]
        assert job.client.ok("/overview")["jobs-running"] == 1

        def written() -> int:
            return job.client.ok(f"/jobs/{job.job_id}")["vertices"][0]["metrics"]["write-records"]

        first = wait_until(written, message="the source's records in the heartbeats of TaskManager processes")
        wait_until(lambda: written() > first, message="the source's written records to grow")


def test_streamkernel_run_with_a_cluster_serves_the_api_and_says_where(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "import json, urllib.request\n"
        "from streamkernel.runtime.minicluster.minicluster import current_cluster\n"
        "url = current_cluster().rest_url\n"
        "print(json.loads(urllib.request.urlopen(url + '/v1/overview', timeout=30).read())['slots-total'])\n")
    done = subprocess.run([sys.executable, "-m", "streamkernel", "run", "--taskmanagers", "1", "--slots", "3",
                           "-D", "rest.port=0", str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"
    assert re.search(r"REST API and Web UI at http://127\.0\.0\.1:\d+", done.stderr)
