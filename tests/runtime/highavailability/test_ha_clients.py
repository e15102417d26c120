"""Clients that find the leading JobManager through ZooKeeper: ``zookeeper://`` URLs, ``streamkernel run``
with the HA keys (or ``-m zookeeper://...``), a REST client that follows the leader across a takeover,
and the HA status ``%flink ha`` shows.

Leaders are :class:`standin_leader.StandInLeader` processes (a TEST FIXTURE standing in for the
leading JobManager: it can resign and persist a plan on demand), on the module's real ZooKeeper;
the last test uses two real leading JobManagers (MiniClusters with the HA keys) instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pytest

from ha_testkit import ha_config, wait_until
from standin_leader import REPOSITORY, StandInLeader
from streamkernel.runtime.highavailability.zookeeper_url import ZooKeeperUrlError, ha_configuration_from_url
from streamkernel.runtime.rest.cluster_secret import HOME_ENV, SECRET_ENV, SECRET_FILE_ENV

JOB = textwrap.dedent("""
    from streamkernel.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    doubled = env.from_collection([1, 2, 3]).map(lambda x: x * 2)
    with doubled.execute_and_collect() as results:
        print("RESULTS", sorted(results), flush=True)
""")

DETACHED_JOB = textwrap.dedent("""
    from streamkernel.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3]).map(lambda x: x + 1).add_sink(lambda x: None)
    env.execute("detached-ha-job")
""")


# ------------------------------------------------------------------------------------------- URLs
def test_url_gives_the_ha_keys() -> None:
    assert ha_configuration_from_url("zookeeper://127.0.0.1:2181/prod") == {
        "high-availability.type": "zookeeper", "high-availability.zookeeper.quorum": "127.0.0.1:2181",
        "high-availability.cluster-id": "/prod"}
    conf = ha_configuration_from_url("ZooKeeper://zk1:2181, zk2:2182/team/prod/?root=/flink-ha", storage_dir="/d")
    assert conf["high-availability.zookeeper.quorum"] == "zk1:2181,zk2:2182"
    assert conf["high-availability.cluster-id"] == "/team/prod"
    assert conf["high-availability.zookeeper.path.root"] == "/flink-ha"
    assert conf["high-availability.storageDir"] == "/d"


@pytest.mark.parametrize("url, wrong", [
    ("http://127.0.0.1:2181/prod", "the scheme must be zookeeper://"),
    ("zookeeper:///prod", "no ZooKeeper quorum"),
    ("zookeeper://zk1/prod", "quorum entry 'zk1' is not HOST:PORT"),
    ("zookeeper://zk1:2181,zk2:99999/prod", "quorum entry 'zk2:99999' is not HOST:PORT"),
    ("zookeeper://zk1:2181", "no cluster id after the quorum"),
    ("zookeeper://zk1:2181/a//b", "cluster id '/a//b' is not a ZooKeeper path"),
    ("zookeeper://zk1:2181/prod?rot=/x", "unknown query parameter 'rot'"),
    ("zookeeper://zk1:2181/prod?root=flink", "root 'flink' must start with '/'"),
    ("zookeeper://zk1:2181/prod#frag", "unexpected fragment '#frag'"),
])
def test_bad_urls_are_one_line_errors_naming_the_part(url: str, wrong: str) -> None:
    with pytest.raises(ZooKeeperUrlError) as raised:
        ha_configuration_from_url(url)
    message = str(raised.value)
    assert wrong in message and url in message and "\n" not in message


# -------------------------------------------------------------------------------------- fixtures
@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of every process of a test: its own secret registry, no secret inherited."""
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    for name in (SECRET_ENV, SECRET_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    return dict(os.environ)


@pytest.fixture
def conf(zookeeper: Any, tmp_path: Path) -> dict[str, str]:
    return ha_config(zookeeper, tmp_path / "ha-storage")


@pytest.fixture
def leaders(conf: dict[str, str], home: dict[str, str]) -> Iterator[list[StandInLeader]]:
    """Two stand-in JobManagers of the cluster; the first one leads (the second queues behind it)."""
    started: list[StandInLeader] = []
    try:
        started.append(StandInLeader(conf, home))
        started[0].wait_leader()
        started.append(StandInLeader(conf, home))
        yield started
    finally:
        for leader in started:
            leader.stop()


def _rest_jobs(url: str) -> dict[str, str]:
    from streamkernel.runtime.rest.client import RestClusterClient, parse_address

    overview = RestClusterClient(*parse_address(url)).get("/jobs/overview")
    return {job["jid"]: job["state"] for job in overview["jobs"]}


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    environment = {**env, "PYTHONPATH": os.pathsep.join([str(REPOSITORY), env.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "streamkernel", "run", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=240)


def _dynamic(conf: dict[str, str]) -> list[str]:
    return [part for key, value in conf.items() for part in ("-D", f"{key}={value}")]


# ------------------------------------------------------------------------------- streamkernel run
def test_run_with_the_ha_keys_submits_to_the_leader(leaders: list[StandInLeader], conf: dict[str, str],
                                                    home: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(JOB)
    done = _run([*_dynamic(conf), "job.py"], tmp_path, home)
    assert done.returncode == 0, done.stderr
    assert "RESULTS [2, 4, 6]" in done.stdout  # the script ran here, its job on the leader
    assert f"the leading JobManager of cluster {conf['high-availability.cluster-id']} is at " \
           f"{leaders[0].rest_url}" in done.stderr
    job_id = done.stdout.split("Job has been submitted with JobID ")[1].split()[0]
    assert _rest_jobs(leaders[0].rest_url).get(job_id) == "FINISHED"
    assert job_id not in _rest_jobs(leaders[1].rest_url)  # the standby got nothing


def test_run_detached_with_a_zookeeper_url_submits_to_the_new_leader(
        leaders: list[StandInLeader], conf: dict[str, str], home: dict[str, str], tmp_path: Path) -> None:
    leaders[0].resign()
    leaders[1].wait_leader()
    (tmp_path / "job.py").write_text(DETACHED_JOB)
    url = f"zookeeper://{conf['high-availability.zookeeper.quorum']}{conf['high-availability.cluster-id']}"
    done = _run(["--detached", "-m", url, "-D", f"high-availability.storageDir={conf['high-availability.storageDir']}",
                 "job.py"], tmp_path, home)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.split("Job has been submitted with JobID ")[1].split()[0]
    wait_until(lambda: _rest_jobs(leaders[1].rest_url).get(job_id) == "FINISHED",
               f"job {job_id} FINISHED on the new leader {leaders[1].rest_url}")
    assert job_id not in _rest_jobs(leaders[0].rest_url)


def test_run_errors_are_one_line(zookeeper: Any, home: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(DETACHED_JOB)
    bad = _run(["-m", "zookeeper://127.0.0.1/prod", "job.py"], tmp_path, home)
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "quorum entry '127.0.0.1' is not HOST:PORT" in bad.stderr
    nobody = ha_config(zookeeper, tmp_path / "empty-storage",
                       **{"high-availability.zookeeper.client.connection-timeout": "1 s"})
    alone = _run([*_dynamic(nobody), "job.py"], tmp_path, home)
    assert alone.returncode == 1
    assert "no leading JobManager of cluster" in alone.stderr and alone.stderr.strip().count("\n") == 0


# -------------------------------------------------------------------- following and the HA status
def test_remote_cluster_follows_the_leader_and_reads_the_ha_status(
        leaders: list[StandInLeader], conf: dict[str, str], home: dict[str, str]) -> None:
    from streamkernel.runtime.highavailability.ha_status import read_ha_status
    from streamkernel.runtime.highavailability.leader_follower import NoLeaderError
    from streamkernel.runtime.rest.remote_cluster import RemoteCluster

    url = f"zookeeper://{conf['high-availability.zookeeper.quorum']}{conf['high-availability.cluster-id']}"
    job_id = uuid.uuid4().hex
    leaders[0].put_execution_plan(job_id)
    remote = RemoteCluster.connect_ha(url, configuration={
        "high-availability.storageDir": conf["high-availability.storageDir"]})
    try:
        assert remote.rest_url == leaders[0].rest_url
        status = read_ha_status(remote.ha_services)
        assert status.rest_url == leaders[0].rest_url and status.rpc_address == "127.0.0.1:6123"
        assert [c.rest_url for c in status.contenders] == [leaders[0].rest_url, leaders[1].rest_url]
        assert [c.leader for c in status.contenders] == [True, False]
        assert [(j.job_id, j.store) for j in status.jobs] == [(job_id, "execution-plans")]
        asked: list[str] = []  # what the leader's REST API knows of a persisted job names it
        named = read_ha_status(remote.ha_services, lambda url: asked.append(url) or {job_id: ("etl", "RUNNING")})
        assert asked == [leaders[0].rest_url] and (named.jobs[0].name, named.jobs[0].status) == ("etl", "RUNNING")
        leaders[0].resign()
        wait_until(lambda: remote.rest_url == leaders[1].rest_url, "the client following the new leader")
        assert remote.jobs() == []  # read from the new leader
        assert read_ha_status(remote.ha_services).contenders[0].rest_url == leaders[1].rest_url
        leaders[1].resign()
        wait_until(lambda: remote.client.leader is None, "no leader once both resigned")
        with pytest.raises(NoLeaderError, match="no leading JobManager of cluster .* right now"):
            remote.jobs()
    finally:
        remote.disconnect()
    assert remote.ha_services.connection_state == "LOST"  # the session is closed


def test_ha_status_of_an_in_kernel_cluster_with_the_ha_keys(leaders: list[StandInLeader],
                                                            conf: dict[str, str]) -> None:
    from streamkernel.jupyter.ha_commands import ha_status_of

    # before the leading MiniCluster exposes ha_services, its configuration is enough
    status = ha_status_of(SimpleNamespace(ha_services=None, configuration=dict(conf)))
    assert status is not None and status.rest_url == leaders[0].rest_url and len(status.contenders) == 2
    assert ha_status_of(SimpleNamespace(ha_services=None, configuration={"rest.port": "0"})) is None


# ------------------------------------------------------------------ with the real leading JobManager
REAL_JOBMANAGER = textwrap.dedent("""
    import json, sys
    from streamkernel.runtime.minicluster.minicluster import MiniCluster
    cluster = MiniCluster(1, 2, rest=True, configuration={**json.loads(sys.argv[1]), "rest.port": "0"}).start()
    print(cluster.rest_url, flush=True)
    sys.stdin.read()  # until the test closes our stdin
    cluster.stop()
""")


def test_run_and_a_following_client_with_real_leading_jobmanagers(conf: dict[str, str], home: dict[str, str],
                                                                  tmp_path: Path) -> None:
    import json

    from streamkernel.runtime.highavailability.ha_status import read_ha_status
    from streamkernel.runtime.rest.leader_client import rest_jobs_overview
    from streamkernel.runtime.rest.remote_cluster import RemoteCluster

    environment = {**home, "PYTHONPATH": os.pathsep.join([str(REPOSITORY), home.get("PYTHONPATH", "")])}
    processes: dict[str, subprocess.Popen] = {}
    try:
        for _ in range(2):  # two in-kernel-style JobManagers with the HA keys: one leads, one waits
            process = subprocess.Popen([sys.executable, "-c", REAL_JOBMANAGER, json.dumps(conf)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment)
            assert process.stdout is not None
            processes[process.stdout.readline().strip()] = process
        (tmp_path / "job.py").write_text(JOB)
        done = _run([*_dynamic(conf), "job.py"], tmp_path, home)
        assert done.returncode == 0, done.stderr
        assert "RESULTS [2, 4, 6]" in done.stdout
        job_id = done.stdout.split("Job has been submitted with JobID ")[1].split()[0]
        url = f"zookeeper://{conf['high-availability.zookeeper.quorum']}{conf['high-availability.cluster-id']}"
        remote = RemoteCluster.connect_ha(url, configuration={
            "high-availability.storageDir": conf["high-availability.storageDir"]})
        try:
            first = remote.rest_url
            assert first in processes and job_id in _rest_jobs(first)
            status = read_ha_status(remote.ha_services, rest_jobs_overview)
            assert len(status.contenders) == 2 and status.rest_url == first
            assert [(j.job_id, j.store, j.status) for j in status.jobs] == \
                [(job_id, "job-result-store (clean)", "FINISHED")]
            stopping = processes.pop(first)
            assert stopping.stdin is not None
            stopping.stdin.close()  # the leader stops: the standby takes over
            stopping.wait(timeout=60)
            wait_until(lambda: remote.client.leader is not None and remote.rest_url in processes,
                       "the client following the standby that took over")
            assert remote.jobs() == []
        finally:
            remote.disconnect()
    finally:
        for process in processes.values():
            if process.stdin is not None and not process.stdin.closed:
                process.stdin.close()
            process.wait(timeout=60)
