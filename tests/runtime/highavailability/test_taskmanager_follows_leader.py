"""TaskManagers follow the leading JobManager (issue 18): real ZooKeeper, real processes.

The JobManagers are the test fixture ``ha_leader_fixture.py`` (a StandaloneSessionCluster that joins
the election and publishes its RPC address and REST URL on grant), the TaskManagers the product's
``streamkernel taskmanager start`` / ``taskmanager_runner`` given only the high-availability keys.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
from ha_testkit import WAIT_S, ha_config, wait_until

from streamkernel.runtime.entrypoint.cluster_dir import ClusterDir
from streamkernel.runtime.entrypoint.commands import StandaloneClusterError, start_taskmanager
from streamkernel.runtime.entrypoint.cluster_entrypoint import StandaloneSessionCluster
from streamkernel.runtime.entrypoint.taskmanager_leader import LeaderFence, serve_following_leader
from streamkernel.runtime.highavailability import RESOURCE_MANAGER, create_ha_services
from streamkernel.runtime.highavailability.cluster_secret import read_or_create_ha_secret
from streamkernel.runtime.highavailability.leader import LeaderInformation
from streamkernel.runtime.highavailability.leader_follower import LeaderFollower
from streamkernel.runtime.rpc.transport import new_cluster_secret

FIXTURE = Path(__file__).with_name("ha_leader_fixture.py")
ROOT = Path(__file__).resolve().parents[3]

JOB = textwrap.dedent("""
    import os, sys
    from streamkernel.common import Types
    from streamkernel.datastream import StreamExecutionEnvironment

    OUT = sys.argv[1]

    def write(x):  # defined in the script: travels to the cluster by value, OUT with it
        with open(OUT, "a") as out:
            out.write(f"{x} {os.getpid()}\\n")

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3], type_info=Types.INT()).map(lambda x: x * 10, output_type=Types.INT()) \\
        .add_sink(write).set_parallelism(1)
    env.execute("after the failover")
""")

UNBOUNDED_JOB = textwrap.dedent("""
    from streamkernel.common.watermark_strategy import WatermarkStrategy
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.datastream.connectors import DataGeneratorSource

    env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(1)
    env.from_source(DataGeneratorSource(lambda i: i, None, 200), WatermarkStrategy.no_watermarks(), "forever") \\
        .add_sink(lambda x: None)
    env.execute("served by the leader that is fenced")
""")


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMKERNEL_")}
    env["STREAMKERNEL_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def sk(home: Path, *args: str) -> subprocess.CompletedProcess:
    """``streamkernel ARGS`` as a shell runs it."""
    return subprocess.run([sys.executable, "-m", "streamkernel", *args], cwd=home.parent, env=_environment(home),
                          capture_output=True, text=True, timeout=180)


def dynamic(conf: dict[str, str]) -> list[str]:
    return [part for key, value in conf.items() for part in ("-D", f"{key}={value}")]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (ProcessLookupError, OSError):
        return False


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read().decode("utf-8"))


def taskmanagers(rest_url: str) -> dict[str, dict[str, Any]]:
    """The TaskManagers a JobManager's REST API lists, by id ({} when it does not answer)."""
    try:
        listed = get_json(rest_url + "/taskmanagers")["taskmanagers"]
    except OSError:
        return {}
    return {tm["id"]: tm for tm in listed}


class FixtureLeader:
    """One ``ha_leader_fixture.py`` process and the events it printed."""

    def __init__(self, conf: dict[str, str], home: Path, log: Path) -> None:
        self._err = open(log, "wb")
        self.process = subprocess.Popen([sys.executable, str(FIXTURE), json.dumps(conf)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self._err, env=_environment(home), text=True)
        self.events: "queue.Queue[dict[str, Any]]" = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()
        started = self.wait("started")
        self.pid, self.rest_url, self.rpc_address = started["pid"], started["rest_url"], started["rpc_address"]

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                self.events.put(json.loads(line))

    def wait(self, kind: str) -> dict[str, Any]:
        """The first event of ``kind`` (waiting for it, up to WAIT_S)."""
        def found() -> Optional[dict[str, Any]]:
            while not self.events.empty():
                self.seen.append(self.events.get())
            return next((event for event in self.seen if event["event"] == kind), None)

        return wait_until(found, f"the fixture JobManager (pid {self.process.pid}) to report {kind!r}; "
                                 f"it reported {self.seen} (exit code {self.process.poll()})", timeout=60)

    def command(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        self._err.close()


def latch_pids(conf: dict[str, str]) -> list[int]:
    """The pids of the contenders queued in the election, in latch order."""
    services: Any = create_ha_services(conf)
    try:
        children = services.client.get_children(services.paths.latch)
        ordered = sorted(children, key=lambda name: name.rsplit("__lock__", 1)[-1])
        return [json.loads(services.client.get(f"{services.paths.latch}/{c}")[0])["pid"] for c in ordered]
    finally:
        services.close()


@pytest.fixture
def cluster(zookeeper: Any, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """An HA configuration on the module's ZooKeeper, a user home, and cleanup of what the test started."""
    started: dict[str, Any] = {"conf": ha_config(zookeeper, tmp_path / "ha-storage"), "home": tmp_path / "home",
                               "leaders": [], "pids": []}
    yield started
    for pid in started["pids"]:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    for leader in started["leaders"]:
        leader.end()


def start_leader(cluster: dict[str, Any], name: str) -> FixtureLeader:
    leader = FixtureLeader(cluster["conf"], cluster["home"], cluster["home"].parent / f"{name}.err")
    cluster["leaders"].append(leader)
    return leader


def test_the_taskmanager_process_registers_at_the_standby_when_the_leader_is_killed(cluster: dict[str, Any],
                                                                                   tmp_path: Path) -> None:
    conf, home = cluster["conf"], cluster["home"]
    a = start_leader(cluster, "a")
    a.wait("granted")
    b = start_leader(cluster, "b")
    wait_until(lambda: latch_pids(conf) == [a.pid, b.pid], "the standby B queued behind A in the election")

    tm_dir = tmp_path / "tm"
    done = sk(home, "taskmanager", "start", "--dir", str(tm_dir), "--slots", "2", *dynamic(conf))
    assert done.returncode == 0, done.stderr
    found = re.fullmatch(r"pid (\d+) \((\S+)\)\n", done.stdout)
    assert found is not None, done.stdout
    pid, tm_id = int(found.group(1)), found.group(2)
    cluster["pids"].append(pid)
    assert taskmanagers(a.rest_url)[tm_id]["slotsNumber"] == 2  # `start` returned once registered at the leader

    os.kill(a.pid, signal.SIGKILL)
    b.wait("granted")
    at_b = wait_until(lambda: taskmanagers(b.rest_url).get(tm_id), f"TaskManager {tm_id} to register at B")
    assert at_b["slotsNumber"] == 2
    assert alive(pid) and (tm_dir / "pid" / "taskexecutor-0.pid").read_text().strip() == str(pid)
    log = next((tm_dir / "log").glob("*taskexecutor-0-*.log")).read_text()
    assert f"left the JobManager at {a.rpc_address}" in log and "its connection closed" in log, log
    assert re.search(rf"TaskManager {tm_id} \(pid {pid}\) left the JobManager at {a.rpc_address} \(session \S+\) "
                     rf"and joins the leading JobManager at {b.rpc_address}", log), log

    (tmp_path / "job.py").write_text(JOB)
    out = tmp_path / "out.txt"
    ran = sk(home, "run", "-m", b.rest_url.removeprefix("http://"), str(tmp_path / "job.py"), str(out))
    assert ran.returncode == 0, ran.stderr
    rows = [line.split() for line in out.read_text().splitlines()]
    assert sorted(int(value) for value, _ in rows) == [10, 20, 30]
    assert {int(where) for _, where in rows} == {pid}  # ran in the TaskManager that followed the leader

    stopped = sk(home, "taskmanager", "stop", "--dir", str(tm_dir))
    assert stopped.returncode == 0, stopped.stderr
    wait_until(lambda: not alive(pid), f"the stopped TaskManager {pid} to exit")


def test_a_leader_that_loses_leadership_alive_is_fenced_and_the_taskmanager_joins_the_new_one(
        cluster: dict[str, Any], tmp_path: Path) -> None:
    conf, home = cluster["conf"], cluster["home"]
    read_or_create_ha_secret(conf)  # as the first JobManager would: the TaskManager starts before any
    log = tmp_path / "tm.log"
    runner = subprocess.Popen([sys.executable, "-m", "streamkernel.runtime.entrypoint.taskmanager_runner",
                               "--taskmanager-id", "tm-fenced", "--slots", "1", *dynamic(conf), "-D",
                               f"log.file={log}"], env=_environment(home), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    cluster["pids"].append(runner.pid)
    wait_until(lambda: log.exists() and "waits for a leading JobManager" in log.read_text(),
               "the TaskManager to say it waits for a leader")

    a = start_leader(cluster, "a")  # no leader yet: it waited as long as it took
    a.wait("granted")
    wait_until(lambda: "tm-fenced" in taskmanagers(a.rest_url), "the waiting TaskManager to register at A")
    b = start_leader(cluster, "b")
    wait_until(lambda: latch_pids(conf) == [a.pid, b.pid], "the standby B queued behind A in the election")

    (tmp_path / "job.py").write_text(UNBOUNDED_JOB)  # a task of A's runs in the TaskManager
    submitted = sk(home, "run", "-m", a.rest_url.removeprefix("http://"), "--detached", "-D",
                   "restart-strategy.type=none", str(tmp_path / "job.py"))
    assert submitted.returncode == 0, submitted.stderr
    job = re.search(r"Job has been submitted with JobID ([0-9a-f]{32})", submitted.stdout)
    assert job is not None, submitted.stdout
    job_url = f"{a.rest_url}/jobs/{job.group(1)}"
    wait_until(lambda: (get_json(job_url)["state"], taskmanagers(a.rest_url)["tm-fenced"]["freeSlots"]) == ("RUNNING", 0),
               "the unbounded job to run on A in the TaskManager's slot")

    a.command("close")  # A leaves the election alive: its cluster still runs and still listens
    a.wait("closed")
    b.wait("granted")
    at_b = wait_until(lambda: taskmanagers(b.rest_url).get("tm-fenced"), "the TaskManager to register at B")
    assert at_b["freeSlots"] == 1  # nothing of A's job came along
    wait_until(lambda: "tm-fenced" not in taskmanagers(a.rest_url), "A to have lost the TaskManager")
    wait_until(lambda: get_json(job_url)["state"] == "FAILED", "A's job to fail: its task ended with the connection")
    assert a.process.poll() is None and runner.poll() is None
    text = log.read_text()
    assert f"left the JobManager at {a.rpc_address}" in text and "it no longer leads (fenced)" in text, text
    assert text.index("it no longer leads (fenced)") < text.index(f"joins the leading JobManager at {b.rpc_address}")

    runner.send_signal(signal.SIGTERM)  # SIGTERM ends it, exit code 0
    assert runner.wait(WAIT_S) == 0, runner.stderr.read() if runner.stderr else ""
    assert "TaskManager tm-fenced stopped (stopped)" in log.read_text()


def test_incomplete_high_availability_keys_are_one_line_naming_the_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    no_quorum = sk(home, "taskmanager", "start", "--dir", str(tmp_path / "tm"), "-D", "high-availability.type=zookeeper",
                   "-D", f"high-availability.storageDir={tmp_path / 'ha'}")
    assert no_quorum.returncode == 1 and no_quorum.stdout == ""
    assert no_quorum.stderr.count("\n") == 1 and "'high-availability.zookeeper.quorum'" in no_quorum.stderr
    no_type = sk(home, "taskmanager", "start", "--dir", str(tmp_path / "tm"), "-D",
                 "high-availability.zookeeper.quorum=localhost:2181")
    assert no_type.returncode == 1 and no_type.stderr.count("\n") == 1
    assert "high-availability.zookeeper.quorum given without 'high-availability.type=zookeeper'" in no_type.stderr
    assert not (tmp_path / "tm" / "pid").exists() or not any((tmp_path / "tm" / "pid").iterdir())


def test_no_leader_within_the_wait_names_the_cluster_id(zookeeper: Any, tmp_path: Path) -> None:
    conf = ha_config(zookeeper, tmp_path / "ha-storage", cluster_id="/nobody-leads")
    directory = ClusterDir(str(tmp_path / "tm"), conf)
    with pytest.raises(StandaloneClusterError, match="no leading JobManager of cluster 'nobody-leads' within 1 s"):
        start_taskmanager(directory, conf, timeout=1.0)
    assert directory.pids("taskexecutor") == {}  # nothing was started


def test_the_fence_trips_on_another_leader_only() -> None:
    follower = LeaderFollower()
    fence = LeaderFence(follower)
    follower_calls = LeaderFollower(on_change=fence.on_change)
    served, other = uuid.uuid4(), uuid.uuid4()
    fence.on_change(LeaderInformation(other, "h:2"))
    assert not fence.event.is_set()  # nothing served yet
    follower.notify_leader_address("h:1", served)
    fence.serve(served)
    for address, session in (("h:1", served), (None, None)):  # the same leader, or none published: no fencing
        follower_calls.notify_leader_address(address, session)
        assert not fence.event.is_set()
    follower_calls.notify_leader_address("h:2", other)
    assert fence.event.is_set()
    follower.notify_leader_address("h:2", other)
    fence.serve(other)  # serving the new leader clears it
    assert not fence.event.is_set()
    fence.serve(served)  # a leader that is no longer the follower's current one is fenced at once
    assert fence.event.is_set()


class StubRetrieval:
    """Leader retrieval the test drives by hand (``notify``), for the follower's paths without ZooKeeper."""

    cluster_id = "stub"

    def __init__(self) -> None:
        self.listener: Any = None

    def leader_retriever(self, component: str) -> "StubRetrieval":
        assert component == RESOURCE_MANAGER
        return self

    def start(self, listener: Any) -> None:
        self.listener = listener

    def stop(self) -> None:
        pass

    def notify(self, address: str) -> None:
        wait_until(lambda: self.listener is not None, "the follower to start retrieval")
        self.listener.notify_leader_address(address, uuid.uuid4())


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _follow_in_thread(services: StubRetrieval, secret: bytes, stop: threading.Event) -> tuple[threading.Thread, list]:
    ended: list[str] = []
    conf = {"taskmanager.forward-output": "false"}
    thread = threading.Thread(target=lambda: ended.append(
        serve_following_leader(services, secret, "tm-inproc", 1, conf, stop)), daemon=True)
    thread.start()
    return thread, ended


def test_waiting_for_a_leader_ends_on_stop(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streamkernel.runtime.entrypoint.taskmanager_leader")
    stop = threading.Event()
    thread, ended = _follow_in_thread(StubRetrieval(), new_cluster_secret(), stop)
    wait_until(lambda: "TaskManager tm-inproc waits for a leading JobManager of cluster 'stub'" in caplog.text,
               "the follower to say it waits")
    stop.set()
    thread.join(WAIT_S)
    assert ended == ["stopped"]


def test_a_leader_that_refuses_the_connection_is_retried_until_another_leads(
        engine_caplog: pytest.LogCaptureFixture) -> None:
    caplog = engine_caplog  # the follower logs beside a cluster in this process (in a TaskManager, to its log file)
    caplog.set_level(logging.INFO, logger="streamkernel.runtime.entrypoint.taskmanager_leader")
    secret = new_cluster_secret()
    cluster = StandaloneSessionCluster(secret, "process", configuration={"rest.port": "0"})
    cluster.start(make_current=False)
    stop = threading.Event()
    try:
        services = StubRetrieval()
        thread, ended = _follow_in_thread(services, secret, stop)
        dead = f"127.0.0.1:{_closed_port()}"  # a dead leader's address, still published
        services.notify(dead)
        wait_until(lambda: caplog.text.count(f"cannot reach the leading JobManager at {dead}") >= 2,
                   "the follower to try the refusing leader again")
        host, port = cluster.rpc_address
        services.notify(f"{host}:{port}")
        wait_until(lambda: "tm-inproc" in taskmanagers(str(cluster.rest_url)), "the TaskManager to register")
        stop.set()
        thread.join(WAIT_S)
        assert ended == ["stopped"]
    finally:
        stop.set()
        cluster.stop()
