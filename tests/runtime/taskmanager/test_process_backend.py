"""The ``process`` backend: TaskManagers as child processes, the same jobs, recovery, and a clean stop.

Jobs here use functions defined in this module (pytest imports it with
``--import-mode=importlib``): they reach the TaskManager processes pickled by reference or
by value. Cross-process pauses use :class:`FileGate` (a Gate whose state is a file), since
a :class:`~streamkernel.testing.Gate` lives in one process. Time bounds are generous.
"""

from __future__ import annotations

import collections
import os
import socket
import sys
import threading
from typing import Any

import pytest

from streamkernel.common import Configuration, Duration, Types, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.collect import CollectSink
from streamkernel.datastream.connectors.pandas import PandasSink
from streamkernel.datastream.window import TumblingEventTimeWindows
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.taskmanager.process import ProcessTaskManagerLauncher
from streamkernel.runtime.resourcemanager.remote_taskmanagers import RemoteTaskManagers, TaskManagerStartError
from streamkernel.testing import FileGate, Pause, ScriptedSource, wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks processes through /proc")

WORDS = [f"w{(i * 7) % 13}" for i in range(1200)]


# ------------------------------------------------------------------------------- helpers

def paced(words: list, chunk: int = 50, pause_ms: int = 10) -> list:
    script: list = []
    for i in range(0, len(words), chunk):
        script += words[i:i + chunk] + [Pause(pause_ms)]
    return script


def to_pair(word: str) -> tuple:
    return word, 1


def first(pair: tuple) -> Any:
    return pair[0]


def add_counts(a: tuple, b: tuple) -> tuple:
    return a[0], a[1] + b[1]


def running_counts(words: list) -> collections.Counter:
    """What a keyed running count emits without failures: (w, 1) ... (w, n) for each word w."""
    return collections.Counter((w, i) for w, n in collections.Counter(words).items() for i in range(1, n + 1))


def checkpointed(tmp_path: Any, **extra: str) -> Configuration:
    return Configuration.from_dict({
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "10",
        "restart-strategy.fixed-delay.delay": "50 ms", **extra})


def completed(client: Any) -> int:
    stats = client.get_job_details().checkpoints
    return 0 if stats is None else stats.num_completed


def all_running(client: Any) -> bool:
    return client.get_job_status().result() is JobStatus.RUNNING and all(
        s.state.value == "RUNNING" for s in client.get_job_details().subtasks)


def process_gone(pid: int) -> bool:
    """The child ``pid`` has exited and was reaped (no zombie, no orphan)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # reaped already (by the launcher)
    else:
        return False
    return not os.path.exists(f"/proc/{pid}") or _ppid(pid) != os.getpid()


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


@pytest.fixture
def threads_before():
    before = set(threading.enumerate())
    yield before
    wait_until(lambda: not (set(threading.enumerate()) - before), 10, message="the cluster's threads to end")


# --------------------------------------------------------------------------- lifecycle
def test_taskmanagers_are_child_processes_and_stop_leaves_nothing_behind(threads_before) -> None:
    cluster = MiniCluster(2, 2, backend="process").start(make_current=False)
    try:
        backend = cluster.taskmanager_backend
        pids = backend.launcher.pids()
        assert sorted(pids) == ["taskmanager-1", "taskmanager-2"]
        assert all(_ppid(pid) == os.getpid() for pid in pids.values())
        assert cluster.total_slots == 4
        info = cluster.inspection.describe_taskmanager("taskmanager-1")
        assert info["backend"] == "process" and info["pid"] == pids["taskmanager-1"] and info["alive"]
        snapshot = cluster.inspection.snapshot()
        assert snapshot["backend"] == "process" and len(snapshot["taskmanagers"]) == 2
        address = backend.address
    finally:
        cluster.stop()
    assert all(process_gone(pid) for pid in pids.values())
    with pytest.raises(OSError):
        socket.create_connection(address, timeout=2).close()  # the JobManager's listener is closed


def test_a_taskmanager_that_dies_at_start_up_fails_start_with_its_stderr() -> None:
    from streamkernel.runtime.resourcemanager.resource_manager import ResourceManager

    resource_manager = ResourceManager()
    remote = RemoteTaskManagers(ProcessTaskManagerLauncher(), {}, lambda i: f"broken-{i + 1}")
    try:
        with pytest.raises(TaskManagerStartError, match=r"(?s)broken-1.*ended before it registered.*"
                                                          r"exited with code 1.*number_of_slots must be an int >= 1"):
            remote.start(resource_manager, 1, 0)  # 0 slots: the TaskManager raises at start-up
    finally:
        resource_manager.stop()
    assert remote.launcher.pids() == {}


# -------------------------------------------------------------------------------- jobs
def test_a_keyed_job_shuffles_across_two_taskmanager_processes(threads_before) -> None:
    with MiniCluster(2, 2, backend="process") as cluster:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(4)
        counts = (env.from_collection(WORDS).map(to_pair).key_by(first).reduce(add_counts)
                  .filter(lambda t: t[1] % 2 == 0))  # a lambda defined here travels by value
        records = list(counts.execute_and_collect("across processes"))
        [job] = cluster.inspection.snapshot()["jobs"]
    expected = collections.Counter(p for p in running_counts(WORDS).elements() if p[1] % 2 == 0)
    assert collections.Counter(records) == expected
    slots = {s["slot"].split("/")[0] for v in job["vertices"] for s in v["subtasks"]}
    assert slots == {"TM1", "TM2"}


def test_print_sink_output_and_user_prints_reach_the_driver(capsys, threads_before) -> None:
    def shout(x):
        print(f"user print {x}")
        return x * 10

    with MiniCluster(1, 2, backend="process"):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        env.from_collection([1, 2, 3]).map(shout).print()
        env.execute("prints")
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("user print")] == ["user print 1", "user print 2", "user print 3"]
    assert [line for line in out if line in ("10", "20", "30")] == ["10", "20", "30"]


def test_windows_and_a_pandas_sink_on_process_taskmanagers(threads_before) -> None:
    events = [("a", 100), ("b", 200), ("a", 900), ("a", 1100), ("b", 1500), ("a", 2500)]
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(event_time)
    sink = PandasSink("windows", columns=["key", "count"])
    with MiniCluster(2, 1, backend="process"):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        (env.from_collection(events, Types.TUPLE([Types.STRING(), Types.LONG()]))
            .assign_timestamps_and_watermarks(strategy)
            .map(lambda e: (e[0], 1))
            .key_by(first).window(TumblingEventTimeWindows.of(Duration.of_seconds(1)))
            .reduce(add_counts)
            .sink_to(sink))
        env.execute("windows")
    assert sorted(sink.records()) == [("a", 1), ("a", 1), ("a", 2), ("b", 1), ("b", 1)]
    assert sorted(sink.to_pandas()["count"]) == [1, 1, 1, 1, 2]


def event_time(value: tuple, record_timestamp: int) -> int:
    return value[1]


# --------------------------------------------------------------------- fault tolerance
def test_a_killed_taskmanager_process_is_replaced_and_the_job_ends_exactly_once(tmp_path, threads_before) -> None:
    gate = FileGate(tmp_path, "mid-job")
    script = paced(WORDS[:400]) + [gate] + paced(WORDS[400:])
    sink = CollectSink()
    with MiniCluster(2, 2, backend="process") as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(checkpointed(tmp_path))
        env.enable_checkpointing(100)
        env.set_parallelism(4)
        (env.from_source(ScriptedSource(script), WatermarkStrategy.no_watermarks(), "words")
            .map(to_pair).key_by(first).reduce(add_counts).sink_to(sink))
        client = env.execute_async("killed taskmanager")
        assert gate.wait_reached(60)
        before = completed(client)
        wait_until(lambda: completed(client) > before, message="a checkpoint while the sources hold")
        pids = dict(cluster.taskmanager_backend.launcher.pids())
        assert cluster.failures.kill_taskmanager("taskmanager-2") == "taskmanager-2"
        # the closed connection unregisters it; a new process replaces it; the job restarts
        wait_until(lambda: client.get_job_details().num_restarts >= 1 and all_running(client),
                   message="the job running again on the replacement")
        now = cluster.taskmanager_backend.launcher.pids()
        assert "taskmanager-3" in now and now["taskmanager-3"] not in pids.values()
        gate.open()
        records = list(sink.buffer)
        result = client.get_job_execution_result().result(60)
    assert collections.Counter(records) == running_counts(WORDS)  # every count exactly once
    assert result.get_num_restarts() >= 1
    assert all(process_gone(pid) for pid in pids.values())


def test_fail_operator_reaches_the_subtask_in_its_process(tmp_path, threads_before) -> None:
    gate = FileGate(tmp_path, "fail")
    script = paced(WORDS[:300]) + [gate] + paced(WORDS[300:])
    sink = CollectSink()
    with MiniCluster(2, 1, backend="process") as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(checkpointed(tmp_path))
        env.enable_checkpointing(100)
        env.set_parallelism(2)
        (env.from_source(ScriptedSource(script), WatermarkStrategy.no_watermarks(), "words")
            .map(to_pair).key_by(first).reduce(add_counts).name("Counts").uid("counts").sink_to(sink))
        client = env.execute_async("failed operator")
        assert gate.wait_reached(60)
        wait_until(lambda: all_running(client) and completed(client) > 0, message="a checkpoint")
        failed = cluster.failures.fail_operator(client.get_job_id(), "counts", subtask=1)
        assert failed == ["Counts -> Sink: Collect Sink (2/2)"]
        wait_until(lambda: client.get_job_details().num_restarts == 1 and all_running(client), message="the restart")
        gate.open()
        records = list(sink.buffer)
        client.get_job_execution_result().result(60)
    assert collections.Counter(records) == running_counts(WORDS)


def test_savepoint_and_restore_on_process_taskmanagers(tmp_path, threads_before) -> None:
    gate = FileGate(tmp_path, "savepoint")
    script = paced(WORDS[:500]) + [gate] + paced(WORDS[500:])

    def job(env: StreamExecutionEnvironment, sink: CollectSink) -> None:
        env.set_parallelism(2)
        (env.from_source(ScriptedSource(script), WatermarkStrategy.no_watermarks(), "words").uid("words")
            .map(to_pair).uid("ones").key_by(first).reduce(add_counts).uid("counts").sink_to(sink))

    with MiniCluster(2, 1, backend="process") as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(checkpointed(tmp_path))
        env.enable_checkpointing(3_600_000)
        first_sink = CollectSink()
        job(env, first_sink)
        client = env.execute_async("before the savepoint")
        assert gate.wait_reached(60)
        wait_until(lambda: all_running(client), message="every subtask running")
        checkpoint = cluster.checkpoints.trigger_checkpoint(client.get_job_id())
        assert os.path.isdir(checkpoint)
        savepoint = cluster.checkpoints.stop_with_savepoint(client.get_job_id(), str(tmp_path / "savepoints"))
        assert os.path.isdir(savepoint)
        gate.open()
        restored_env = StreamExecutionEnvironment.get_execution_environment(
            checkpointed(tmp_path, **{"execution.state-recovery.path": savepoint}))
        second_sink = CollectSink()
        job(restored_env, second_sink)
        restored_env.execute_async("restored")
        records = list(second_sink.buffer)
    final: dict = {}
    for word, count in records:
        final[word] = max(final.get(word, 0), count)
    # the keyed state came back from the savepoint and the sources went on after it (a
    # source reading from the start would count the first part twice)
    assert final == collections.Counter(WORDS)
