"""Checkpoints end to end: a job checkpoints periodically, and every failure recovers from the
latest completed checkpoint, so keyed state counts each record exactly once.

The jobs count words per key (a keyed running count) over a replayable scripted source and
write every new count into an *overwriting* sink (``latest[word] = count``). The collect
and print sinks are not exactly-once (a sink sees the counts between the last checkpoint
and a failure twice), so the tests assert on the per-key FINAL values: they equal a
failure-free run only if the restored state and the restored source positions agree
exactly (state lost -> counts too low; a source replaying from the start -> counts too high).
Time bounds are generous on purpose.
"""

from __future__ import annotations

import collections
import os
import threading
from typing import Any, Optional

import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import CheckpointingMode, StreamExecutionEnvironment
from streamkernel.errors import JobExecutionError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import Fail, Gate, Pause, ScriptedSource, wait_until

WORDS = [f"w{(i * 7) % 13}" for i in range(1500)]
MORE = [f"w{(i * 5) % 17}" for i in range(1000)]



def paced(words: list, chunk: int = 25, pause_ms: int = 20) -> list:
    """The words with a short pause after every chunk, so the job runs a while."""
    script: list = []
    for i in range(0, len(words), chunk):
        script += words[i:i + chunk] + [Pause(pause_ms)]
    return script


def counting_job(env: StreamExecutionEnvironment, source: ScriptedSource, latest: dict,
                 parallelism: int = 2, read: Optional[list] = None) -> None:
    """Keyed running counts of the words into an overwriting sink (``read`` gets a 1 per record read)."""
    env.set_parallelism(parallelism)
    seen = read if read is not None else []
    (env.from_source(source, WatermarkStrategy.no_watermarks(), "words").uid("words")
        .map(lambda w: seen.append(1) or (w, 1)).name("Ones").uid("ones")
        .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).name("Counts").uid("counts")
        .add_sink(lambda t: latest.__setitem__(t[0], t[1])).uid("sink"))


def conf(tmp_path: Any, extra: Optional[dict] = None) -> Configuration:
    """Checkpoints under ``tmp_path``, fixed-delay restarts (50 ms), plus ``extra`` keys."""
    values = {"execution.checkpointing.dir": str(tmp_path / "checkpoints"),
              "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "10",
              "restart-strategy.fixed-delay.delay": "50 ms"}
    return Configuration.from_dict({**values, **(extra or {})})


def all_running(client: Any) -> bool:
    return client.get_job_status().result() is JobStatus.RUNNING and all(
        s.state.value == "RUNNING" for s in client.get_job_details().subtasks)


def completed(client: Any) -> int:
    stats = client.get_job_details().checkpoints
    return 0 if stats is None else stats.num_completed


def wait_for_new_checkpoint(client: Any, what: str) -> None:
    before = completed(client)
    wait_until(lambda: completed(client) > before, message=f"a completed checkpoint {what}")


# ------------------------------------------------------------------- exactly once
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_counts_are_exact_after_task_failures_injected_failures_and_a_killed_taskmanager(backend, tmp_path) -> None:
    crash_1, crash_2, gate, last_gate = Gate("first crash"), Gate("second crash"), Gate(), Gate("last")
    script = (paced(WORDS[:500]) + [crash_1, Fail("first crash")] + paced(WORDS[500:1000])
              + [crash_2, Fail("second crash")] + paced(WORDS[1000:]) + [gate] + paced(MORE[:600])
              + [last_gate] + MORE[600:])
    latest: dict = {}
    read: list = []
    part_a = collections.Counter(WORDS)
    with MiniCluster(2, 1) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(conf(tmp_path, {"state.backend.type": backend}))
        env.enable_checkpointing(100)
        counting_job(env, ScriptedSource(script), latest, read=read)
        client = env.execute_async(f"exactly once on {backend}")
        job_id = client.get_job_id()

        # 1. the two scripted crashes (the source raises) each restore the latest checkpoint;
        # each crash comes once a checkpoint completed while the sources held before it
        for restarts, (crash, words) in enumerate([(crash_1, WORDS[:500]), (crash_2, WORDS[:1000])]):
            wait_until(lambda words=words, restarts=restarts: latest == collections.Counter(words)
                       and all_running(client) and client.get_job_details().num_restarts == restarts,
                       message=f"the counts before the {crash.name}")
            wait_for_new_checkpoint(client, f"before the {crash.name}")
            crash.open()
        wait_until(lambda: latest == part_a and client.get_job_details().num_restarts == 2 and all_running(client),
                   message="the counts of the first part, after two scripted crashes")
        restored = client.get_job_details().checkpoints.latest_restored
        assert restored is not None and not restored.is_savepoint

        # 2. an operator fails while the sources are idle (MiniCluster.failures.fail_operator)
        wait_for_new_checkpoint(client, "before fail_operator")
        assert cluster.failures.fail_operator(job_id, "counts", subtask=0) == ["Counts -> Sink: Unnamed (1/2)"]
        wait_until(lambda: client.get_job_details().num_restarts == 3 and all_running(client), message="restart 3")
        wait_for_new_checkpoint(client, "after fail_operator")
        assert latest == part_a  # nothing was counted twice, nothing lost

        # 3. a TaskManager dies while records flow (or, on a slow machine, while the sources
        # wait at the last gate: the job cannot have finished); a replacement comes
        gate.open()
        wait_until(lambda: latest != part_a, message="the second part flowing")
        cluster.failures.kill_taskmanager("TM2")
        wait_until(lambda: str(job_id) in cluster.resource_manager.pending_requests(), message="the slot request")
        cluster.failures.add_taskmanager()
        last_gate.open()
        result = client.get_job_execution_result().result(60)
        details = client.get_job_details()

    assert latest == collections.Counter(WORDS + MORE)
    assert result.get_num_restarts() == 4
    # The sources resumed from checkpoints: only records after the last checkpoint before a
    # failure were read again (restarting from scratch would have read WORDS four more times).
    assert len(read) <= len(WORDS) + 2 * len(MORE)
    causes = [e.exception_name for e in details.exception_history]
    assert causes == ["InjectedFailure", "InjectedFailure", "InjectedFailure", "TaskManagerLostError"]
    stats = details.checkpoints
    assert stats.num_completed >= 3 and stats.latest_restored.checkpoint_id >= 1
    # NO_EXTERNALIZED_CHECKPOINTS (the default): the finished job's checkpoints are deleted
    assert os.listdir(tmp_path / "checkpoints") == []


def test_periodic_checkpoints_are_recorded_with_per_subtask_acknowledgements(tmp_path) -> None:
    gate = Gate()
    with MiniCluster(1, 2) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(conf(tmp_path))
        env.enable_checkpointing(50)
        counting_job(env, ScriptedSource(paced(WORDS[:100]) + [gate] + WORDS[100:200]), {})
        client = env.execute_async("statistics")
        wait_until(lambda: completed(client) >= 3, message="three checkpoints")
        rows = cluster.checkpoints.checkpoint_history(client.get_job_id())
        gate.open()
        client.get_job_execution_result().result(30)
        as_dict = client.get_job_details().to_dict()["checkpoints"]
    done = [r for r in rows if r["status"] == "COMPLETED"]
    assert len(done) >= 3 and [r["id"] for r in rows] == sorted((r["id"] for r in rows), reverse=True)
    row = done[0]
    assert row["type"] == "checkpoint" and row["acknowledged"] == "4/4" and row["state_size"] > 0
    assert row["duration_ms"] >= 0 and os.path.basename(row["path"]) == f"chk-{row['id']}"
    # two tasks (source -> map, counts -> sink) of two subtasks each acknowledged
    assert len({(s["vertex_id"], s["subtask"]) for s in row["subtasks"]}) == 4
    assert all(s["state_size"] > 0 and s["ack_timestamp"] >= row["trigger_timestamp"] for s in row["subtasks"])
    assert as_dict["counts"]["completed"] >= 3 and as_dict["history"]


def test_a_corrupt_latest_checkpoint_is_skipped_with_the_reason_and_the_previous_one_restored(tmp_path) -> None:
    gate = Gate()
    latest: dict = {}
    with MiniCluster(1, 2) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(
            conf(tmp_path, {"execution.checkpointing.num-retained": "3"}))
        env.enable_checkpointing(3_600_000)  # on, but only the checkpoints this test triggers
        counting_job(env, ScriptedSource(paced(WORDS[:300]) + [gate] + WORDS[300:600]), latest)
        client = env.execute_async("corrupt checkpoint")
        job_id = client.get_job_id()
        wait_until(lambda: latest == collections.Counter(WORDS[:300]) and all_running(client), message="part one")
        first = cluster.checkpoints.trigger_checkpoint(job_id)
        second = cluster.checkpoints.trigger_checkpoint(job_id)
        assert os.path.basename(first) == "chk-1" and os.path.basename(second) == "chk-2"
        victim = max((os.path.join(second, f) for f in os.listdir(second) if f.endswith(".state")),
                     key=os.path.getsize)
        with open(victim, "r+b") as file:
            file.truncate(os.path.getsize(victim) // 2)
        cluster.failures.fail_operator(job_id, "counts")
        wait_until(lambda: client.get_job_details().num_restarts == 1 and all_running(client), message="the restart")
        details = client.get_job_details()
        gate.open()
        client.get_job_execution_result().result(30)
    assert details.checkpoints.latest_restored.checkpoint_id == 1
    [injected, skipped] = details.exception_history
    assert injected.exception_name == "InjectedFailure"
    assert skipped.exception_name == "CheckpointCorruptedError"
    assert "checkpoint 2 skipped at recovery" in skipped.message and "truncated" in skipped.message
    assert os.path.basename(victim) in skipped.message and "recovers from checkpoint 1 instead" in skipped.message
    assert latest == collections.Counter(WORDS[:600])


def test_too_many_failed_checkpoints_fail_the_job(tmp_path) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(conf(tmp_path, {"restart-strategy.type": "none"}))
    env.enable_checkpointing(50)
    env.set_parallelism(1)
    gate = Gate()
    (env.from_source(ScriptedSource(WORDS[:50] + [gate]), WatermarkStrategy.no_watermarks(), "words")
        .map(lambda w: (w, threading.Lock()))  # state that cannot be pickled: every snapshot fails
        .key_by(lambda t: t[0]).reduce(lambda a, b: b).uid("locks")
        .add_sink(lambda t: None))
    with pytest.raises(JobExecutionError, match="exceeded checkpoint tolerable failure threshold") as caught:
        env.execute("unpicklable state")
    assert type(caught.value.__cause__).__name__ == "CheckpointFailedError"
    assert "cannot pickle" in str(caught.value) and "declined by subtask" in str(caught.value)


# ------------------------------------------------------------------- at least once
def test_at_least_once_recovers_every_record_and_may_count_some_twice(tmp_path) -> None:
    script = paced(WORDS[:700]) + [Pause(300), Fail("crash")] + paced(WORDS[700:])
    latest: dict = {}
    env = StreamExecutionEnvironment.get_execution_environment(conf(tmp_path))
    env.enable_checkpointing(100, CheckpointingMode.AT_LEAST_ONCE)
    counting_job(env, ScriptedSource(script), latest)
    result = env.execute("at least once")
    expected = collections.Counter(WORDS)
    assert result.get_num_restarts() == 1
    assert set(latest) == set(expected)
    # AT_LEAST_ONCE does not align barriers: records that overtook a barrier on a fast
    # channel are in the snapshot AND replayed after the restore. Duplicates are allowed
    # in this mode (so a count may be higher); a lost record never is.
    assert all(latest[word] >= count for word, count in expected.items())


def test_a_job_restores_a_retained_checkpoint_by_path(tmp_path) -> None:
    gate = Gate()
    latest: dict = {}
    with MiniCluster(1, 2) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(
            conf(tmp_path, {"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}))
        env.enable_checkpointing(3_600_000)
        counting_job(env, ScriptedSource(paced(WORDS[:400]) + [gate] + WORDS[400:800]), latest)
        client = env.execute_async("retained")
        wait_until(lambda: latest == collections.Counter(WORDS[:400]) and all_running(client), message="part one")
        checkpoint = cluster.checkpoints.trigger_checkpoint(client.get_job_id())
        client.cancel().result(10)
        assert os.path.isdir(checkpoint)  # retained on cancellation
        gate.open()
        env = StreamExecutionEnvironment.get_execution_environment(conf(
            tmp_path, {"execution.state-recovery.path": os.path.dirname(checkpoint)}))  # the job's directory
        counting_job(env, ScriptedSource(paced(WORDS[:400]) + [gate] + WORDS[400:800]), latest)
        restored = env.execute_async("restored")
        restored.get_job_execution_result().result(30)
        stats: Optional[Any] = restored.get_job_details().checkpoints
    assert stats.latest_restored.checkpoint_id == 1 and stats.latest_restored.external_path == checkpoint
    assert latest == collections.Counter(WORDS[:800])


# ------------------------------------------------ the driver's decisions, without threads
def _graph_and_checkpointing(tmp_path: Any, calls: list, failures: list) -> tuple[Any, Any]:
    from streamkernel.graph.job_graph import build_job_graph
    from streamkernel.runtime.core.deployment import ExecutionAttemptId
    from streamkernel.runtime.jobmaster.checkpointing import JobCheckpointing

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.from_collection([1]).uid("src").key_by(lambda x: x).reduce(lambda a, b: a + b).uid("sum").add_sink(print)
    graph = build_job_graph(env.get_stream_graph())

    class Gateway:
        def __getattr__(self, name: str) -> Any:
            return lambda *args: calls.append((name, *args))

    def locate(key: Any) -> Any:
        return Gateway(), ExecutionAttemptId("job", key[0], key[1], 0)

    conf = {"execution.checkpointing.dir": str(tmp_path), "execution.checkpointing.interval": "1 s"}
    return graph, JobCheckpointing("job", graph, conf, locate=locate, fail_job=failures.append,
                                   stop_job=lambda request, path: None)


def test_checkpoints_run_only_while_every_subtask_of_the_attempt_runs(tmp_path) -> None:
    from streamkernel.runtime.core.deployment import ExecutionState as S

    calls: list = []
    graph, checkpointing = _graph_and_checkpointing(tmp_path, calls, [])
    keys = [(v.id, 0) for v in graph.vertices]
    source = keys[0]
    checkpointing.on_job_progress(JobStatus.RUNNING, 0, {keys[0]: S.RUNNING, keys[1]: S.INITIALIZING}, 0)
    assert not checkpointing.coordinator.is_running and checkpointing.next_wakeup_ms() is None
    checkpointing.on_job_progress(JobStatus.RUNNING, 0, dict.fromkeys(keys, S.RUNNING), 10)
    assert checkpointing.next_wakeup_ms() == 1010  # one interval after every subtask runs
    checkpointing.tick(1010)
    assert calls == [("trigger_checkpoint", calls[0][1], 1, 1010, False)] and calls[0][1].vertex_id == source[0]
    checkpointing.on_job_progress(JobStatus.RESTARTING, 0, dict.fromkeys(keys, S.CANCELING), 1020)
    assert not checkpointing.coordinator.is_running  # failover: the pending checkpoint is aborted
    assert checkpointing.stats().get(1).failure_reason.endswith("the job is RESTARTING (attempt 0)")
    checkpointing.on_job_progress(JobStatus.RUNNING, 1, dict.fromkeys(keys, S.RUNNING), 2000)
    assert checkpointing.coordinator.is_running and checkpointing.next_wakeup_ms() == 3000


def test_a_manual_checkpoint_completes_with_its_path_and_is_confirmed_to_every_subtask(tmp_path) -> None:
    from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState as S
    from streamkernel.runtime.jobmaster.checkpointing import CheckpointRequest

    calls: list = []
    graph, checkpointing = _graph_and_checkpointing(tmp_path, calls, [])
    keys = [(v.id, 0) for v in graph.vertices]
    rejected = CheckpointRequest(is_savepoint=False)
    checkpointing.request(rejected, 0)
    with pytest.raises(Exception, match="cannot take a checkpoint: the job is not running"):
        rejected.future.result(0)
    checkpointing.on_job_progress(JobStatus.RUNNING, 0, dict.fromkeys(keys, S.RUNNING), 0)
    request = CheckpointRequest(is_savepoint=False)
    checkpointing.request(request, 5)
    for vertex_id, index in keys:
        assert not request.future.done()
        checkpointing.acknowledge(ExecutionAttemptId("job", vertex_id, index, 0), 1, {"op": {}}, True, 6)
    path = request.future.result(0)
    assert path == str(tmp_path / "job" / "chk-1") and os.path.exists(os.path.join(path, "_metadata"))
    assert sorted(c[1].vertex_id for c in calls if c[0] == "notify_checkpoint_complete") == sorted(k[0] for k in keys)
    assert checkpointing.completed_ids == {1}
    # a late acknowledgement of an attempt that no longer runs is deleted, never counted
    stale = tmp_path / "job" / "chk-9"
    stale.mkdir()
    (stale / "1-0.state").write_bytes(b"x")
    from streamkernel.runtime.checkpoint import StateHandle
    checkpointing.acknowledge(ExecutionAttemptId("job", keys[0][0], 0, 0), 9,
                              StateHandle(str(stale / "1-0.state"), 1, "00"), False, 7)
    assert not stale.exists()


def test_the_job_state_machine_fails_globally_and_on_unrestorable_state() -> None:
    from types import SimpleNamespace

    from streamkernel.errors import CheckpointCorruptedError, CheckpointFailedError
    from streamkernel.runtime.jobmaster.job_actions import JobTerminated
    from streamkernel.runtime.jobmaster.job_state_machine import JobStateMachine
    from streamkernel.runtime.jobmaster.restart import FixedDelayRestartStrategy

    vertices = [SimpleNamespace(id=1, name="Source", parallelism=1)]
    machine = JobStateMachine("ab" * 16, "job", vertices, 1, FixedDelayRestartStrategy(3, 0), now_ms=0)
    machine.fail_globally(CheckpointFailedError("too many"), 1)  # CREATED: a global failure restarts
    assert machine.status is JobStatus.RESTARTING and machine.exception_history[-1].task_name is None

    machine = JobStateMachine("ab" * 16, "job", vertices, 1, FixedDelayRestartStrategy(3, 0), now_ms=0)
    machine.report_warning(CheckpointCorruptedError("/chk-2", "skipped"), 1)
    actions = machine.restore_failed(CheckpointCorruptedError("/sp/1-0.state", "truncated"), 2)
    [terminated] = [a for a in actions if isinstance(a, JobTerminated)]
    assert terminated.result.status is JobStatus.FAILED and machine.attempt == 0  # no restart
    assert [e.restarted for e in machine.exception_history] == [True, False]
