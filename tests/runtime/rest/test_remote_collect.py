"""``execute_and_collect()`` against a running cluster: the results stream back through its REST API.

One cluster runs in a separate process (``MiniCluster(1, 2, backend="process", rest=True)``,
its secret under a temporary STREAMKERNEL_HOME, commands on its stdin: failure injection);
this process is its client (``execution.target: remote``), as a notebook connected to a
standalone cluster or ``streamkernel run -m``. The collect sink's results wait on the
JobManager in a coordinator and are fetched with ``POST /jobs/:jobid/coordinators/:operatorid``
(Flink's ClientCoordinationHandler): signed, with a version and an offset.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from streamkernel.common.configuration import Configuration
from streamkernel.common.job_status import JobStatus
from streamkernel.common.watermark_strategy import WatermarkStrategy
from streamkernel.datastream.connectors import DataGeneratorSource
from streamkernel.datastream.connectors.collect import CollectSink
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.errors import InvalidProgramError, JobExecutionError
from streamkernel.runtime.rest.client import ClusterUnreachableError, RestClientError, RestClusterClient
from streamkernel.runtime.rest.cluster_secret import HOME_ENV, SECRET_ENV, SECRET_FILE_ENV
from streamkernel.runtime.rest.collect_fetcher import CollectResultFetcher, fetch_collect_request
from streamkernel.testing.waiting import wait_until

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

# The cluster's process: prints its REST URL, then takes commands on stdin until it closes.
CLUSTER = textwrap.dedent("""
    import sys
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    cluster = MiniCluster(1, 2, backend="process", rest=True, configuration={"rest.port": "0"})
    cluster.start(make_current=False)
    print("REST", cluster.rest_url, flush=True)
    for line in sys.stdin:
        words = line.split()
        if words and words[0] == "fail":
            print("FAILED", cluster.failures.fail_operator(words[1], words[2]), flush=True)
    cluster.stop()
    print("STOPPED", flush=True)
""")


class RemoteCluster:
    """The cluster's process, its address and a REST client of it; its output is read by a thread
    (so that it never blocks on a full pipe) into :attr:`lines`."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, name="remote cluster output", daemon=True).start()
        self.url = self.next_line("REST ").split()[1]
        host, _, port = self.url[len("http://"):].rpartition(":")
        self.host, self.port = host, int(port)
        self.client = RestClusterClient(host, self.port)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def next_line(self, start: str) -> str:
        """The next line of the cluster's output that starts with ``start`` (waits up to 60 s)."""
        while True:
            try:
                line = self.lines.get(timeout=60)
            except queue.Empty:
                raise AssertionError(f"the cluster process printed no line starting with {start!r} in 60 s") from None
            if line is None:
                raise AssertionError(f"the cluster process ended (exit {self.process.wait()}) before a line "
                                     f"starting with {start!r}")
            if line.startswith(start):
                return line.strip()

    def command(self, line: str, answer: str) -> str:
        """Send a command; the line of the cluster's output that starts with ``answer``."""
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.next_line(answer)

    def conf(self, **keys: str) -> Configuration:
        """A client configuration submitting to this cluster (plus ``keys``: ``__`` for a dot, ``_`` for a dash)."""
        conf = Configuration()
        for key, value in {"execution.target": "remote", "rest.address": self.host, "rest.port": str(self.port),
                           **{k.replace("__", ".").replace("_", "-"): v
                              for k, v in keys.items()}}.items():
            conf.set_string(key, value)
        return conf


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(child) for child in text)
    return found


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"  # a zombie waiting for its reaper is gone too


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemoteCluster]:
    """The cluster in its own process; stopped (it and its TaskManager processes) at the end."""
    home = tmp_path_factory.mktemp("streamkernel-home")
    saved = {k: os.environ.get(k) for k in (HOME_ENV, SECRET_ENV, SECRET_FILE_ENV)}
    os.environ[HOME_ENV] = str(home)
    os.environ.pop(SECRET_ENV, None)
    os.environ.pop(SECRET_FILE_ENV, None)
    env = {k: v for k, v in os.environ.items() if k not in ("STREAMKERNEL_CONFIGURATION", "STREAMKERNEL_BACKEND")}
    # the functions of this module travel by reference: the cluster imports it as this process does
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE), *filter(None, [env.get("PYTHONPATH")])])
    process = subprocess.Popen([sys.executable, "-c", CLUSTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env=env, cwd=str(home))
    children: list[int] = []
    try:
        running = RemoteCluster(process)
        children = _children(process.pid)
        assert children, "a process cluster has TaskManager processes"
        yield running
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(10)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    wait_until(lambda: all(_gone(pid) for pid in children), message=f"TaskManager processes {children} left running")


def _job_id(out: str) -> str:
    lines = [line for line in out.splitlines() if line.startswith("Job has been submitted with JobID ")]
    assert lines, out
    return lines[-1].rsplit(" ", 1)[1]


def square(x: int) -> tuple:
    return x, x * x


def explode(x: int) -> int:
    if x == 7:
        raise ValueError(f"record {x} is not welcome")
    return x


def identity(x: int) -> int:
    return x


def _unbounded(env: StreamExecutionEnvironment, name: str = "forever", per_second: float = 200) -> Any:
    return env.from_source(DataGeneratorSource(identity, None, per_second), WatermarkStrategy.no_watermarks(), name)


def test_a_bounded_job_gives_exactly_its_records_and_ends(cluster: RemoteCluster) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(cluster.conf())
    env.set_parallelism(1)
    data = list(range(500))
    with env.from_collection(data).map(square).execute_and_collect("bounded collect") as results:
        got = list(results)
    assert got == [(x, x * x) for x in data]
    env = StreamExecutionEnvironment.get_execution_environment(cluster.conf())
    assert env.from_collection(data).execute_and_collect(limit=3) == data[:3]


def test_closing_the_iterator_of_an_unbounded_job_cancels_it(cluster: RemoteCluster,
                                                             capsys: pytest.CaptureFixture) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(cluster.conf())
    env.set_parallelism(1)
    results = _unbounded(env).execute_and_collect("unbounded collect")
    job_id = _job_id(capsys.readouterr().out)
    assert [next(results) for _ in range(25)] == list(range(25))
    assert cluster.client.get_job_status(job_id) is JobStatus.RUNNING
    results.close()
    wait_until(lambda: cluster.client.get_job_status(job_id) is JobStatus.CANCELED,
               message=f"job {job_id} cancelled once its results were closed")
    assert list(results) == []


def test_a_failing_job_raises_in_the_client_with_its_cause(cluster: RemoteCluster) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(cluster.conf(restart_strategy__type="none"))
    env.set_parallelism(1)
    results = env.from_collection([1, 2, 7, 8]).map(explode).execute_and_collect("fails remotely")
    with pytest.raises(JobExecutionError, match="ValueError: record 7 is not welcome"):
        list(results)


def test_detached_mode_refuses_execute_and_collect_before_submitting(cluster: RemoteCluster) -> None:
    jobs_before = len(cluster.client.list_jobs())
    env = StreamExecutionEnvironment.get_execution_environment(cluster.conf(execution__attached="false"))
    with pytest.raises(InvalidProgramError, match="execute_and_collect.. needs an attached client"):
        env.from_collection([1, 2]).execute_and_collect()
    assert len(cluster.client.list_jobs()) == jobs_before


def _submit_with_collect_sink(cluster: RemoteCluster, data: list, capacity: int = 100_000,
                              **keys: str) -> tuple[str, str]:
    """Submit a job whose records go to a collect sink; (job id, the sink's operator id)."""
    env = StreamExecutionEnvironment.get_execution_environment(cluster.conf(**keys))
    env.set_parallelism(1)
    sink = CollectSink(capacity=capacity)
    env.from_collection(data).sink_to(sink).name("Collect Sink")
    job_id = cluster.client.submit_job(env.get_stream_graph("raw collect", clear_transformations=True))
    return str(job_id), sink.buffer_id


def test_a_request_without_the_clusters_secret_gets_401_and_no_results(cluster: RemoteCluster) -> None:
    job_id, operator_id = _submit_with_collect_sink(cluster, list(range(30)))
    cluster.client.wait_for_result(job_id, 0.1, 60)  # all results wait on the JobManager
    first = fetch_collect_request(cluster.client, job_id, operator_id, "", 0, max_results=10)
    assert first is not None and first["results"] == list(range(10))
    taken = len(first["results"])
    stranger = RestClusterClient(cluster.host, cluster.port, secret=b"not the cluster's secret, 32 bytes")
    with pytest.raises(RestClientError) as refused:  # it would acknowledge what the client has
        fetch_collect_request(stranger, job_id, operator_id, first["version"], taken, max_results=10)
    assert refused.value.status == 401 and "does not match the cluster's secret" in str(refused.value)
    unsigned = cluster.client.request  # no signature headers at all
    with pytest.raises(RestClientError) as bare:
        unsigned("POST", f"/jobs/{job_id}/coordinators/{operator_id}", b"{}", {"Content-Type": "application/json"})
    assert bare.value.status == 401
    # nothing was acknowledged by the refused requests: the results from 0 on are still there
    again = fetch_collect_request(cluster.client, job_id, operator_id, first["version"], 0, max_results=10)
    assert again is not None and again["results"][:taken] == first["results"]
    fetch_collect_request(cluster.client, job_id, operator_id, first["version"], 0, release=True)


def test_a_lost_response_asked_again_with_the_same_offset_gives_the_same_results(cluster: RemoteCluster) -> None:
    data = list(range(100))
    job_id, operator_id = _submit_with_collect_sink(cluster, data)
    cluster.client.wait_for_result(job_id, 0.1, 60)  # all results wait on the JobManager
    version, offset, received = "", 0, []
    while True:
        batch = fetch_collect_request(cluster.client, job_id, operator_id, version, offset, max_results=7)
        lost_and_asked_again = fetch_collect_request(cluster.client, job_id, operator_id, batch["version"], offset,
                                                     max_results=7)
        assert lost_and_asked_again == batch
        version = batch["version"]
        received.extend(batch["results"])
        offset += len(batch["results"])
        if batch["end"]:
            break
    assert received == data
    with pytest.raises(RestClientError, match="acknowledged already"):  # acknowledged results are gone
        fetch_collect_request(cluster.client, job_id, operator_id, version, 0)
    with pytest.raises(RestClientError) as other:
        fetch_collect_request(cluster.client, job_id, operator_id, "f" * 32, offset)
    assert other.value.status == 400 and "another coordinator" in str(other.value)
    fetch_collect_request(cluster.client, job_id, operator_id, version, offset, release=True)
    with pytest.raises(RestClientError) as released:
        fetch_collect_request(cluster.client, job_id, operator_id, version, offset)
    assert released.value.status == 404


class LosingClient(RestClusterClient):
    """A client whose every third collect response is lost after the cluster answered it."""

    requests = lost = 0

    def request(self, method: str, path: str, body: Any = None, headers: Any = None) -> tuple[int, Any]:
        answer = super().request(method, path, body, headers)
        if "/coordinators/" in path:
            self.requests += 1
            if self.requests % 3 == 1:
                self.lost += 1
                raise ClusterUnreachableError(f"no streamkernel cluster answers at {self.url} (timed out)")
        return answer


def test_the_fetcher_asks_again_for_a_lost_response_and_gets_every_result_once(cluster: RemoteCluster) -> None:
    data = list(range(1000))
    job_id, operator_id = _submit_with_collect_sink(cluster, data)
    client = LosingClient(cluster.host, cluster.port)
    fetcher = CollectResultFetcher(client, job_id, operator_id, max_results=64)
    received = [record for batch in fetcher.batches() for record in batch]
    assert received == data
    assert client.lost >= len(data) // 64 // 2  # (at least 16 answers needed: every third one was lost)
    fetcher.release()


def test_a_job_whose_client_went_away_still_finishes(cluster: RemoteCluster) -> None:
    # 5 results fit on the JobManager; nobody fetches the rest: after the client timeout they are dropped
    # (one record per batch: a batch larger than the room left is taken whole when nothing waits)
    job_id, operator_id = _submit_with_collect_sink(cluster, list(range(200)), capacity=5,
                                                    collect_sink__client_timeout="100 ms",
                                                    taskmanager__network__batch_size="1")
    result = cluster.client.wait_for_result(job_id, 0.1, 60)
    assert result["application-status"] == "SUCCEEDED"
    # a client coming back is told its results are gone (dropped, or forgotten with the ended job)
    with pytest.raises(RestClientError, match="dropped: no request came for 0.1 s|results were released"):
        fetch_collect_request(cluster.client, job_id, operator_id, "", 0)


def test_with_exactly_once_checkpoints_a_restart_shows_each_record_once(cluster: RemoteCluster,
                                                                        capsys: pytest.CaptureFixture) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(cluster.conf(
        execution__checkpointing__interval="100 ms", execution__checkpointing__mode="EXACTLY_ONCE",
        restart_strategy__type="fixed-delay", restart_strategy__fixed_delay__attempts="3",
        restart_strategy__fixed_delay__delay="50 ms"))
    env.set_parallelism(1)
    results = _unbounded(env, "restarted").map(identity).name("identity").execute_and_collect("exactly once")
    job_id = _job_id(capsys.readouterr().out)
    try:
        before = [next(results) for _ in range(30)]
        failed = cluster.command(f"fail {job_id} identity", "FAILED")
        assert "identity" in failed, failed
        after = [next(results) for _ in range(60)]
    finally:
        results.close()
    assert before + after == list(range(90))
    exceptions = cluster.client.request("GET", f"/jobs/{job_id}/exceptions")[1]
    assert "InjectedFailure" in str(exceptions), exceptions


SCRIPT = textwrap.dedent("""
    from streamkernel.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    print("before the loop")
    with env.from_collection(["a", "b", "c"]).map(lambda s: s.upper()).execute_and_collect() as results:
        for record in results:
            print("collected", record)
    print("after the loop")
""")


def test_streamkernel_run_m_prints_the_collected_records_where_the_script_prints(cluster: RemoteCluster,
                                                                                 tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("STREAMKERNEL_CONFIGURATION", "STREAMKERNEL_BACKEND")}
    run = subprocess.run([sys.executable, "-m", "streamkernel", "run", "-m", f"{cluster.host}:{cluster.port}",
                          "job.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stdout.splitlines() if not line.startswith("Job has been submitted")]
    assert lines == ["before the loop", "collected A", "collected B", "collected C", "after the loop"], run.stdout


# ------------------------------------------------------------- the coordinator alone (no cluster)
def test_the_coordinator_holds_at_most_its_capacity_until_the_client_acknowledges() -> None:
    from streamkernel.runtime.rest.collect_coordinator import CollectSinkCoordinator

    coordinator = CollectSinkCoordinator("a" * 32, capacity=4, client_timeout_s=600)
    assert coordinator.put_batch([0, 1, 2])
    assert not coordinator.put_batch([3, 4], timeout=0.01)  # full: the writer waits (backpressure)
    first = coordinator.fetch("", 0, 10)
    assert first["results"] == [0, 1, 2] and not first["end"]
    assert not coordinator.put_batch([3, 4], timeout=0.01)  # answered is not acknowledged
    assert coordinator.fetch(first["version"], 3, 10)["results"] == []  # acknowledges 0..2
    assert coordinator.put_batch([3, 4], timeout=0.01)
    assert coordinator.put_transaction("t1", [5]) and coordinator.put_transaction("t1", [5])  # once
    coordinator.writer_finished(0)
    last = coordinator.fetch(first["version"], 3, 10)
    assert last["results"] == [3, 4, 5] and last["end"] and last["failure"] is None


def test_a_client_that_went_away_does_not_keep_the_writers_blocked() -> None:
    from streamkernel.runtime.rest.collect_coordinator import CollectSinkCoordinator, CoordinationError

    coordinator = CollectSinkCoordinator("b" * 32, capacity=2, client_timeout_s=0.05)
    assert coordinator.put_batch([1, 2])
    # nobody fetches: once client_timeout_s passed since the last request, the writer goes on
    assert coordinator.put_batch([3, 4]) and coordinator.put_batch([5, 6])
    with pytest.raises(CoordinationError, match="dropped: no request came for 0.05 s .collect-sink.client-timeout"):
        coordinator.fetch("", 0, 10)  # a client coming back is told, not handed a gap


def test_a_failed_job_hands_out_what_it_held_then_ends_with_its_failure() -> None:
    from streamkernel.runtime.rest.collect_coordinator import CollectSinkCoordinator

    coordinator = CollectSinkCoordinator("c" * 32, capacity=10, client_timeout_s=600)
    coordinator.put_batch([1, 2])
    coordinator.fail("job x failed: ValueError: boom")
    assert coordinator.put_batch([3])  # a late write of the failing job is dropped, not blocked
    answer = coordinator.fetch("", 0, 1)
    assert answer["results"] == [1] and not answer["end"]
    answer = coordinator.fetch(answer["version"], 1, 10)
    assert answer["results"] == [2] and answer["end"] and "ValueError: boom" in answer["failure"]
