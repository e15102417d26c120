"""The REST front process: answers from its cache for ``max-age`` until an action, stops with
the cluster, is replaced by the JobManager's own server when killed, and exits when the
JobManager's process dies."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from typing import Iterator

import pytest
from rest_client import RestClient  # tests/runtime/ is on sys.path

from streamkernel.common.watermark_strategy import WatermarkStrategy
from streamkernel.datastream.connectors import DataGeneratorSource
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.runtime.minicluster.minicluster import MiniCluster, set_current_cluster
from streamkernel.runtime.rest import context as rest_context
from streamkernel.runtime.rest.front import CachedAnswer, ResponseCache, max_age
from streamkernel.testing.waiting import wait_until

FRONT_MODULE = b"streamkernel.runtime.rest.front"


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def front_pids(parent: int) -> list[int]:
    """The REST front processes whose parent is ``parent`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
            with open(f"/proc/{entry}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and FRONT_MODULE in command and _alive(int(entry)):
            found.append(int(entry))
    return found


def _answer(status: int, cache_control: str) -> CachedAnswer:
    return CachedAnswer(status, "", (("Content-Type", "application/json"), ("Cache-Control", cache_control)), b"{}")


def test_max_age_reads_cache_control_of_a_200_only() -> None:
    assert max_age(_answer(200, "max-age=1")) == 1.0
    assert max_age(_answer(200, "public, max-age=31536000, immutable")) == 31536000.0
    assert max_age(_answer(200, "no-cache")) == 0.0
    assert max_age(_answer(200, "private, max-age=5")) == 0.0
    assert max_age(_answer(404, "max-age=1")) == 0.0
    assert max_age(CachedAnswer(200, "", (), b"")) == 0.0


def test_the_cache_forgets_answers_when_their_age_passes_and_when_full() -> None:
    now = [100.0]
    cache = ResponseCache(capacity=2, clock=lambda: now[0])
    cache.put("a", _answer(200, "max-age=1"))
    cache.put("never", _answer(200, "no-cache"))
    assert cache.get("a") is not None and cache.get("never") is None and len(cache) == 1
    now[0] += 1.0
    assert cache.get("a") is None  # its second has passed
    for key in ("b", "c", "d"):
        cache.put(key, _answer(200, "max-age=60"))
    assert len(cache) == 2 and cache.get("b") is None and cache.get("d") is not None  # the oldest went first
    cache.clear()
    assert len(cache) == 0
    asked_before = cache.generation
    cache.clear()  # e.g. a job changed status while the answer was on its way
    cache.put("late", _answer(200, "max-age=60"), asked_before)
    assert cache.get("late") is None
    cache.put("late", _answer(200, "max-age=60"), cache.generation)
    assert cache.get("late") is not None


@pytest.fixture
def long_lived_answers(monkeypatch: pytest.MonkeyPatch) -> Iterator[MiniCluster]:
    """A local cluster whose snapshot answers may be reused for an hour (so that no test depends on time)."""
    monkeypatch.setattr(rest_context, "MAX_ANSWER_AGE_S", 3600)
    cluster = MiniCluster(1, 2, backend="local", configuration={"rest.port": "0", "web.refresh-interval": "3600000"})
    cluster.start(make_current=False)
    try:
        yield cluster
    finally:
        set_current_cluster(None)
        cluster.stop()


def _submit(cluster: MiniCluster, count: int | None) -> str:
    """Submit a job through the Python API (not through the REST front): ``count`` records
    (finished when this returns), or None: unbounded, 200 a second (running when this returns)."""
    set_current_cluster(cluster)
    env = StreamExecutionEnvironment.get_execution_environment()
    source = DataGeneratorSource(lambda i: i, count, None if count is not None else 200.0)
    env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers").add_sink(lambda x: None).name("discard")
    job = env.execute_async("behind the front")
    set_current_cluster(None)
    if count is not None:
        job.get_job_execution_result().result(60)
    else:
        wait_until(lambda: cluster.dispatcher.request_job_status(str(job.get_job_id())).name == "RUNNING",
                   message="the job to run")
    return str(job.get_job_id())


def test_the_front_answers_from_its_cache_until_an_action_or_a_jobs_status_changes(
        long_lived_answers: MiniCluster) -> None:
    cluster = long_lived_answers
    assert cluster.rest_url is not None
    client = RestClient(cluster.rest_url)
    with urllib.request.urlopen(cluster.rest_url + "/jobs/overview", timeout=30) as first:
        assert first.headers["Cache-Control"] == "max-age=3600"
        assert first.read() == b'{"jobs": []}'
    # a job submitted in the JobManager's process (not through the front) shows at once: the
    # JobManager tells the front its answers are old (max-age is an hour here)
    job_id = _submit(cluster, None)
    wait_until(lambda: [j["jid"] for j in client.ok("/jobs/overview")["jobs"]] == [job_id],
               message="the new job in the front's /jobs/overview")
    # what changes without a status change (records, checkpoints) ages as in Flink's cache: an
    # answer (its "now" included) stays while time passes (a status change published just after a
    # read may empty the cache once more: then the next answer is the one that stays)
    def cached_while_time_passed() -> dict | None:
        seen = client.ok(f"/jobs/{job_id}")
        wait_until(lambda: time.time() * 1000 > seen["now"] + 20, message="time to pass")
        return seen if client.ok(f"/jobs/{job_id}") == seen else None

    seen = wait_until(cached_while_time_passed, message="an answer of the front's cache")
    # a client fetching collected results POSTs many times a second: those requests read, the cache stays
    assert client.request("POST", f"/jobs/{job_id}/coordinators/{'0' * 32}", b"{}")[0] in (400, 401, 404)
    assert client.ok(f"/jobs/{job_id}") == seen
    # a resource polled for a change is never reused: it is fresh
    assert client.ok(f"/jobs/{job_id}/execution-result")["status"]["id"] == "IN_PROGRESS"
    # an action through the front empties the cache
    assert client.request("POST", f"/jobs/{job_id}/checkpoints", b"{}")[0] == 202
    assert client.ok(f"/jobs/{job_id}")["now"] > seen["now"]
    assert client.request("PATCH", f"/jobs/{job_id}?mode=cancel")[0] == 202


def test_without_the_front_every_answer_is_the_jobmanagers_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rest_context, "MAX_ANSWER_AGE_S", 3600)
    configuration = {"rest.port": "0", "web.refresh-interval": "3600000", "streamkernel.rest.front-process": "false"}
    with MiniCluster(1, 2, backend="local", configuration=configuration) as cluster:
        assert front_pids(os.getpid()) == []
        client = RestClient(cluster.rest_url)
        assert client.ok("/jobs/overview") == {"jobs": []}
        job_id = _submit(cluster, 10)
        assert [job["jid"] for job in client.ok("/jobs/overview")["jobs"]] == [job_id]
    set_current_cluster(None)


def test_a_killed_front_leaves_the_jobmanager_answering_and_stop_leaves_no_front(
        engine_caplog: pytest.LogCaptureFixture) -> None:
    caplog = engine_caplog  # an engine record, not the program's: it goes to the cluster's log file
    assert front_pids(os.getpid()) == []
    cluster = MiniCluster(1, 1, backend="local", configuration={"rest.port": "0"}).start(make_current=False)
    try:
        assert cluster.rest_url is not None
        client = RestClient(cluster.rest_url)
        assert client.ok("/overview")["taskmanagers"] == 1
        fronts = front_pids(os.getpid())
        assert len(fronts) == 1
        with caplog.at_level(logging.WARNING, logger="streamkernel.runtime.rest.endpoint"):
            os.kill(fronts[0], signal.SIGKILL)
            wait_until(lambda: "answers the REST API" in caplog.text, message="the endpoint noticing its front's loss")
        assert "REST front process" in caplog.text and "exited with code -9" in caplog.text
        assert client.ok("/overview")["slots-total"] == 1  # the same port, answered by the JobManager's process
    finally:
        cluster.stop()
    assert front_pids(os.getpid()) == []


def test_another_cluster_stopped_normally_leaves_no_front() -> None:
    with MiniCluster(1, 1, backend="local", configuration={"rest.port": "0"}) as cluster:
        assert RestClient(cluster.rest_url).ok("/overview")["taskmanagers"] == 1
        fronts = front_pids(os.getpid())
        assert len(fronts) == 1
    set_current_cluster(None)
    assert front_pids(os.getpid()) == [] and not _alive(fronts[0])


def test_the_front_exits_when_the_jobmanagers_process_dies() -> None:
    program = ("import sys\nfrom streamkernel.runtime.minicluster.minicluster import MiniCluster\n"
               "cluster = MiniCluster(1, 1, backend='local', configuration={'rest.port': '0'}).start()\n"
               "print(cluster.rest_url, flush=True)\nsys.stdin.read()\n")
    jobmanager = subprocess.Popen([sys.executable, "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert jobmanager.stdout is not None
        url = jobmanager.stdout.readline().decode().strip()
        assert RestClient(url).ok("/overview")["taskmanagers"] == 1
        fronts = front_pids(jobmanager.pid)
        assert len(fronts) == 1
        jobmanager.kill()
        jobmanager.wait()
        wait_until(lambda: not _alive(fronts[0]), message=f"the front (pid {fronts[0]}) exiting after its JobManager")
    finally:
        if jobmanager.poll() is None:
            jobmanager.kill()
            jobmanager.wait()
