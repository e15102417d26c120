"""Submitting jobs to a running cluster through its REST API: ``streamkernel run -m HOST:PORT job.py``.

One cluster (in this process, serving REST on a free port, its secret under a temporary
STREAMKERNEL_HOME) takes the jobs of ``streamkernel run -m`` subprocesses; a function defined
in the job script runs on the cluster (this process). Submissions without the cluster's
secret are refused before anything of their body is unpickled.
"""

from __future__ import annotations

import os
import pickle
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Iterator

import pytest

from streamkernel.common.configuration import Configuration
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.rest.client import RestClientError, RestClusterClient
from streamkernel.runtime.rest.cluster_secret import HOME_ENV, SECRET_ENV, secret_path
from streamkernel.runtime.rest.job_signature import CONTENT_TYPE, MAX_SKEW_MS, signed_headers
from streamkernel.runtime.rest.remote_execution import RestJobClient
from streamkernel.testing.waiting import wait_until

BOUNDED_JOB = textwrap.dedent("""
    import os, sys
    from streamkernel.common import Types
    from streamkernel.datastream import StreamExecutionEnvironment

    OUT = sys.argv[1]

    def triple(x):  # defined in the script: travels to the cluster by value
        return x * 3

    def write(x):
        with open(OUT, "a") as out:
            out.write(f"{x} {os.getpid()}\\n")

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3, 4], type_info=Types.INT()).map(triple, output_type=Types.INT()) \\
        .add_sink(write).set_parallelism(1)
    result = env.execute("tripled remotely")
    print("client pid", os.getpid(), "result of", result.get_job_id(), "runtime >= 0:", result.get_net_runtime() >= 0)
""")

UNBOUNDED_JOB = textwrap.dedent("""
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.datastream.connectors import DataGeneratorSource
    from streamkernel.common.watermark_strategy import WatermarkStrategy

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_source(DataGeneratorSource(lambda i: i, None, 200), WatermarkStrategy.no_watermarks(), "forever") \\
        .add_sink(lambda x: None)
    result = env.execute("runs until cancelled")
    print("detached result:", result)
""")

FAILING_JOB = textwrap.dedent("""
    from streamkernel.common.configuration import Configuration
    from streamkernel.datastream import StreamExecutionEnvironment

    def explode(x):
        raise ValueError(f"record {x} is not welcome")

    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("restart-strategy.type", "none"))
    env.from_collection([7]).map(explode).add_sink(lambda x: None)
    env.execute("fails remotely")
""")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A temporary STREAMKERNEL_HOME for the module (the cluster writes its secret there)."""
    path = tmp_path_factory.mktemp("streamkernel-home")
    saved = {k: os.environ.get(k) for k in (HOME_ENV, SECRET_ENV)}
    os.environ[HOME_ENV] = str(path)
    os.environ.pop(SECRET_ENV, None)
    yield path
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def cluster(home: Path) -> Iterator[MiniCluster]:
    """A 1 x 4 slot cluster serving REST on a free port."""
    with MiniCluster(1, 4, configuration={"rest.port": "0"}).start(make_current=False) as running:
        yield running


def _address(cluster: MiniCluster) -> tuple[str, int]:
    assert cluster.rest_url is not None
    host, _, port = cluster.rest_url[len("http://"):].rpartition(":")
    return host, int(port)


def _run(*args: str, cwd: Path, env_updates: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("STREAMKERNEL_CONFIGURATION", "STREAMKERNEL_BACKEND")}
    env.update(env_updates or {})
    return subprocess.run([sys.executable, "-m", "streamkernel", "run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _job_id(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.startswith("Job has been submitted with JobID ")]
    assert len(lines) == 1, stdout
    return lines[0].rsplit(" ", 1)[1]


def test_attached_run_submits_the_job_and_returns_its_result_once_finished(cluster: MiniCluster,
                                                                            tmp_path: Path) -> None:
    host, port = _address(cluster)
    (tmp_path / "job.py").write_text(BOUNDED_JOB)
    out = tmp_path / "out.txt"
    done = _run("-m", f"{host}:{port}", "job.py", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    job_id = _job_id(done.stdout)
    assert f"Job with JobID {job_id} has finished." in done.stdout
    assert f"result of {job_id} runtime >= 0: True" in done.stdout
    assert cluster.dispatcher.request_job_details(job_id).status is JobStatus.FINISHED
    assert cluster.dispatcher.request_job_details(job_id).job_name == "tripled remotely"
    rows = [line.split() for line in out.read_text().splitlines()]
    assert sorted(int(value) for value, _ in rows) == [3, 6, 9, 12]
    # the script's own functions ran on the cluster (this process), not in the client
    assert {int(pid) for _, pid in rows} == {os.getpid()}


def test_detached_run_returns_while_the_job_runs_and_the_rest_client_cancels_it(cluster: MiniCluster,
                                                                                tmp_path: Path) -> None:
    host, port = _address(cluster)
    (tmp_path / "job.py").write_text(UNBOUNDED_JOB)
    done = _run("-m", f"{host}:{port}", "--detached", "job.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    job_id = _job_id(done.stdout)
    assert f"detached result: DetachedJobExecutionResult({job_id})" in done.stdout
    client = RestClusterClient(host, port)
    wait_until(lambda: client.get_job_status(job_id) is JobStatus.RUNNING, message=f"job {job_id} RUNNING")
    assert client.request_job_result(job_id) is None  # IN_PROGRESS
    client.cancel(job_id)
    result = client.wait_for_result(job_id, timeout=60)
    assert result["application-status"] == "CANCELED"
    assert cluster.dispatcher.request_job_details(job_id).status is JobStatus.CANCELED


def test_sigterm_while_attached_leaves_the_remote_job_running_and_says_so(cluster: MiniCluster,
                                                                         tmp_path: Path) -> None:
    host, port = _address(cluster)
    (tmp_path / "job.py").write_text(UNBOUNDED_JOB)
    env = {k: v for k, v in os.environ.items() if k not in ("STREAMKERNEL_CONFIGURATION", "STREAMKERNEL_BACKEND")}
    before = {d.job_id for d in cluster.dispatcher.list_jobs()}
    process = subprocess.Popen([sys.executable, "-m", "streamkernel", "run", "-m", f"{host}:{port}", "job.py"],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def new_running_job() -> str | None:
            for details in cluster.dispatcher.list_jobs():
                if details.job_id not in before and details.status is JobStatus.RUNNING:
                    return details.job_id
            return None

        job_id = wait_until(new_running_job, message="the attached run's job RUNNING on the cluster")
        process.terminate()
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, stderr
    assert f"job {job_id} keeps running on the cluster at {host}:{port}" in stderr
    assert cluster.dispatcher.request_job_status(job_id) is JobStatus.RUNNING
    cluster.dispatcher.cancel_job(job_id).result(timeout=60)


def test_a_job_failing_on_the_cluster_fails_the_attached_run_with_its_cause(cluster: MiniCluster,
                                                                           tmp_path: Path) -> None:
    host, port = _address(cluster)
    (tmp_path / "job.py").write_text(FAILING_JOB)
    done = _run("-m", f"{host}:{port}", "job.py", cwd=tmp_path)
    assert done.returncode == 1
    assert "JobExecutionError: Job 'fails remotely'" in done.stderr
    assert "ValueError: record 7 is not welcome" in done.stderr
    job_id = _job_id(done.stdout)
    body = RestClusterClient(host, port).request_job_result(job_id)
    assert body is not None and body["application-status"] == "FAILED"
    assert body["failure-cause"]["class"].endswith("ValueError") or "ValueError" in body["failure-cause"]["stack-trace"]
    assert body["failure-cause"]["serialized-throwable"] == ""


class _CreatesFile:
    """Unpickling this creates ``path`` (what an attacker's pickle could do: run code)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return open, (self.path, "w")


def test_no_or_a_wrong_signature_is_refused_401_before_anything_is_unpickled(cluster: MiniCluster,
                                                                             tmp_path: Path) -> None:
    host, port = _address(cluster)
    client = RestClusterClient(host, port)
    marker = tmp_path / "unpickled"
    body = pickle.dumps(_CreatesFile(str(marker)))
    now = int(time.time() * 1000)
    attempts = {
        "no signature": {"Content-Type": CONTENT_TYPE},
        "another secret": signed_headers(b"x" * 32, body),
        "a stale timestamp": signed_headers(client.secret(), body, now - MAX_SKEW_MS - 60_000),
    }
    for what, headers in attempts.items():
        with pytest.raises(RestClientError) as refused:
            client.request("POST", "/jobs", body, headers)
        assert refused.value.status == 401, what
        assert not marker.exists(), f"{what}: the body was unpickled"
    assert "does not match the cluster's secret" in str(refused.value) or "timestamp" in str(refused.value)
    # the same body signed with the cluster's secret IS unpickled (so the checks above proved something)
    with pytest.raises(RestClientError) as not_a_job:
        client.request("POST", "/jobs", body, signed_headers(client.secret(), body))
    assert not_a_job.value.status == 400 and marker.exists()


def test_a_replayed_signed_request_is_refused_401_and_not_unpickled_again(cluster: MiniCluster,
                                                                           tmp_path: Path) -> None:
    client = RestClusterClient(*_address(cluster))
    marker = tmp_path / "unpickled"
    body = pickle.dumps(_CreatesFile(str(marker)))
    headers = signed_headers(client.secret(), body)
    with pytest.raises(RestClientError) as first:  # accepted: unpickled (then not a job: 400)
        client.request("POST", "/jobs", body, headers)
    assert first.value.status == 400 and marker.exists()
    marker.unlink()
    with pytest.raises(RestClientError) as replayed:  # the same signed request again, within the window
        client.request("POST", "/jobs", body, headers)
    assert replayed.value.status == 401 and "replay" in str(replayed.value)
    assert not marker.exists(), "a replayed request was unpickled"


def test_flinks_multipart_jobgraph_upload_gets_400_saying_how_to_submit(cluster: MiniCluster) -> None:
    client = RestClusterClient(*_address(cluster))
    with pytest.raises(RestClientError) as refused:
        client.request("POST", "/v1/jobs", b"--x\r\n\r\n--x--\r\n", {"Content-Type": "multipart/form-data; boundary=x"})
    assert refused.value.status == 400
    assert "streamkernel run -m" in str(refused.value)


def test_execute_async_gives_a_rest_job_client_and_collect_streams_back(cluster: MiniCluster) -> None:
    host, port = _address(cluster)
    conf = Configuration()
    for key, value in {"execution.target": "remote", "rest.address": host, "rest.port": str(port)}.items():
        conf.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.from_collection([1, 2, 3]).map(lambda x: x + 1).add_sink(lambda x: None)
    job = env.execute_async("async remote")
    assert isinstance(job, RestJobClient)
    result = job.get_job_execution_result().result(timeout=60)
    assert str(result.get_job_id()) == str(job.get_job_id())
    assert job.get_job_status().result() is JobStatus.FINISHED
    assert cluster.dispatcher.request_job_details(str(job.get_job_id())).job_name == "async remote"
    env2 = StreamExecutionEnvironment.get_execution_environment(conf)  # a client in the cluster's own process
    assert list(env2.from_collection([1]).execute_and_collect()) == [1]


def test_submission_disabled_is_refused_and_the_secret_file_lives_as_long_as_the_cluster(home: Path) -> None:
    with MiniCluster(1, 1, configuration={"rest.port": "0", "web.submit.enable": "false"}) \
            .start(make_current=False) as disabled:
        host, port = _address(disabled)
        path = secret_path(host, port)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).add_sink(lambda x: None)
        with pytest.raises(RestClientError) as refused:
            RestClusterClient(host, port).submit_job(env.get_stream_graph("refused"))
        assert refused.value.status == 404 and "web.submit.enable" in str(refused.value)
        assert disabled.dispatcher.list_jobs() == []
    assert not path.exists()


def test_a_wrong_secret_or_an_unprotected_secret_file_fails_the_run_with_one_line(cluster: MiniCluster,
                                                                                   tmp_path: Path) -> None:
    host, port = _address(cluster)
    (tmp_path / "job.py").write_text(UNBOUNDED_JOB)
    jobs_before = len(cluster.dispatcher.list_jobs())
    wrong = _run("-m", f"{host}:{port}", "job.py", cwd=tmp_path, env_updates={SECRET_ENV: "ab" * 32})
    assert wrong.returncode == 1
    assert "the secret used does not match the cluster's" in wrong.stderr and "Traceback" not in wrong.stderr
    loose = tmp_path / "loose.secret"
    loose.write_text(secret_path(host, port).read_text())
    loose.chmod(0o644)
    refused = _run("-m", f"{host}:{port}", "--secret-file", str(loose), "job.py", cwd=tmp_path)
    assert refused.returncode == 1
    assert "Permissions 0644" in refused.stderr and "too open" in refused.stderr
    assert len(cluster.dispatcher.list_jobs()) == jobs_before



def test_the_published_secret_is_the_one_the_process_taskmanagers_authenticate_with(home: Path) -> None:
    with MiniCluster(1, 1, backend="process", configuration={"rest.port": "0"}).start(make_current=False) as remote:
        host, port = _address(remote)
        published = bytes.fromhex(secret_path(host, port).read_text().strip())
        assert published == remote.taskmanager_backend.secret


def test_the_client_chooses_the_job_id_and_a_duplicate_is_refused_409(cluster: MiniCluster) -> None:
    from streamkernel.common.job_status import JobID
    from streamkernel.graph.stream_graph import StreamGraph  # noqa: F401 - the payload's type

    client = RestClusterClient(*_address(cluster))
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3]).add_sink(lambda x: None)
    chosen = JobID()
    assert client.submit_job(env.get_stream_graph("chosen id"), chosen) == chosen
    assert cluster.dispatcher.request_job_details(str(chosen)).job_name == "chosen id"
    env2 = StreamExecutionEnvironment.get_execution_environment()
    env2.from_collection([4]).add_sink(lambda x: None)
    with pytest.raises(RestClientError) as duplicate:
        client.submit_job(env2.get_stream_graph("same id"), chosen)
    assert duplicate.value.status == 409 and "Job has already been submitted" in str(duplicate.value) \
        and f"job {chosen} " in str(duplicate.value)


def test_a_signed_submission_of_several_mebibytes_is_streamed_through_the_front_and_runs(cluster: MiniCluster) -> None:
    client = RestClusterClient(*_address(cluster))
    blob = os.urandom(3 << 20)  # beyond the mebibyte of JSON, and what is kept in memory until the signature is verified
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2]).map(lambda x, carried=blob: x + len(carried)).add_sink(lambda x: None)
    job_id = str(client.submit_job(env.get_stream_graph("carries 3 MiB")))
    wait_until(lambda: cluster.dispatcher.request_job_status(job_id) is JobStatus.FINISHED,
               message="the 3 MiB job to finish")
