"""Recovery never silently starts from empty state once a checkpoint completed.

A job with an exactly-once FileSink commits its output when a checkpoint completes. If a
restart then found none of the job's retained checkpoints readable and started from
scratch, its sources would read everything again and the sink would commit it twice. As
in Flink, such a restore failure is a failure of the job: the restart strategy runs, and
when it runs out the job ends FAILED with an error naming each checkpoint tried and why it
was refused. Falling back to an older valid checkpoint keeps working.
"""

from __future__ import annotations

import collections
import os
import pathlib
from typing import Any

import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.common.serialization import Encoder
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import FileSink, RollingPolicy
from streamkernel.errors import JobExecutionError
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import Gate, ScriptedSource, wait_until

RECORDS = [f"r{i:04d}" for i in range(600)]




def committed_lines(path: pathlib.Path) -> list[str]:
    """Every line of the FileSink's committed (visible) part files."""
    return [line for file in sorted(path.rglob("*")) if file.is_file() and not file.name.startswith(".")
            for line in file.read_text().splitlines()]


def file_sink_job(tmp_path: pathlib.Path, gate: Gate, retained: int) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({
        "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
        "execution.checkpointing.num-retained": str(retained),
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "2",
        "restart-strategy.fixed-delay.delay": "10 ms"}))
    env.enable_checkpointing(3_600_000)  # on, but only the checkpoints the test triggers
    env.set_parallelism(1)
    (env.from_source(ScriptedSource(RECORDS[:300] + [gate] + RECORDS[300:]), WatermarkStrategy.no_watermarks(),
                     "records").uid("records")
        .map(lambda r: r).uid("copy")
        .sink_to(FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
                 .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy()).build()).uid("out"))
    return env


def running(client: Any) -> bool:
    return client.get_job_status().result() is JobStatus.RUNNING and all(
        s.state.value == "RUNNING" for s in client.get_job_details().subtasks)


def test_a_restart_whose_checkpoints_are_all_corrupt_fails_the_job_instead_of_duplicating(tmp_path) -> None:
    gate = Gate()
    env = file_sink_job(tmp_path, gate, retained=1)
    with MiniCluster(1, 1) as cluster:
        client = env.execute_async("all checkpoints corrupt")
        job_id = client.get_job_id()
        wait_until(lambda: gate.reached and running(client), message="the source at the gate")
        checkpoint = cluster.checkpoints.trigger_checkpoint(job_id)
        wait_until(lambda: len(committed_lines(tmp_path / "out")) == 300, message="checkpoint 1's output committed")
        with open(os.path.join(checkpoint, "_metadata"), "w") as file:
            file.write("{not json")
        assert cluster.failures.fail_operator(job_id, "out")
        gate.open()  # a job restarted from scratch would read and commit everything again
        with pytest.raises(JobExecutionError) as caught:
            client.get_job_execution_result().result(60)
        details = client.get_job_details()

    assert details.status is JobStatus.FAILED
    lines = committed_lines(tmp_path / "out")
    assert len(lines) == len(set(lines)) and sorted(lines) == RECORDS[:300]  # no duplicates
    message = str(caught.value)
    assert "checkpoint 1" in message and checkpoint in message and "not valid JSON" in message
    assert "does not restart from empty state" in message
    causes = [(e.exception_name, e.restarted) for e in details.exception_history]
    # the injected failure restarts; both restarts fail to restore; the strategy (2 attempts) gives up
    assert causes == [("InjectedFailure", True), ("CheckpointCorruptedError", True),
                      ("CheckpointCorruptedError", False)]


def test_a_restart_falls_back_to_an_older_valid_checkpoint(tmp_path) -> None:
    gate = Gate()
    env = file_sink_job(tmp_path, gate, retained=2)
    with MiniCluster(1, 1) as cluster:
        client = env.execute_async("fallback")
        job_id = client.get_job_id()
        wait_until(lambda: gate.reached and running(client), message="the source at the gate")
        first = cluster.checkpoints.trigger_checkpoint(job_id)
        second = cluster.checkpoints.trigger_checkpoint(job_id)
        for name in os.listdir(second):
            if name.endswith(".state"):
                with open(os.path.join(second, name), "r+b") as file:
                    file.truncate(1)
        assert cluster.failures.fail_operator(job_id, "out")
        wait_until(lambda: client.get_job_details().num_restarts == 1 and running(client), message="the restart")
        gate.open()
        client.get_job_execution_result().result(60)
        details = client.get_job_details()

    assert details.status is JobStatus.FINISHED
    assert details.checkpoints.latest_restored.checkpoint_id == int(os.path.basename(first)[len("chk-"):])
    lines = committed_lines(tmp_path / "out")
    assert collections.Counter(lines) == collections.Counter(RECORDS)  # each record exactly once
    [skipped] = [e for e in details.exception_history if e.exception_name == "CheckpointCorruptedError"]
    assert "recovers from checkpoint 1 instead" in skipped.message


def test_a_restore_failure_of_a_restart_goes_through_the_restart_strategy() -> None:
    from types import SimpleNamespace

    from streamkernel.errors import CheckpointCorruptedError
    from streamkernel.runtime.jobmaster.job_actions import JobTerminated, ScheduleRestart
    from streamkernel.runtime.jobmaster.job_state_machine import JobStateMachine
    from streamkernel.runtime.jobmaster.restart import FixedDelayRestartStrategy

    vertices = [SimpleNamespace(id=1, name="Source", parallelism=1)]
    machine = JobStateMachine("ab" * 16, "job", vertices, 1, FixedDelayRestartStrategy(1, 5), now_ms=0)
    error = CheckpointCorruptedError("/chk/job", "none restorable")
    assert machine.restore_failed(error, 1, restartable=True) == [ScheduleRestart(5)]
    assert machine.status is JobStatus.RESTARTING
    machine.restart_due(10)
    actions = machine.restore_failed(error, 11, restartable=True)  # the strategy has run out
    [terminated] = [a for a in actions if isinstance(a, JobTerminated)]
    assert terminated.result.status is JobStatus.FAILED and terminated.result.failure_cause is error
    assert [e.restarted for e in machine.exception_history] == [True, False]


def test_recovery_names_retained_checkpoints_whose_directory_is_gone(tmp_path) -> None:
    from streamkernel.errors import CheckpointCorruptedError
    from streamkernel.graph.job_graph import build_job_graph
    from streamkernel.runtime.checkpoint.storage import CheckpointStorage
    from streamkernel.runtime.jobmaster.state_recovery import StateRecovery

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).print()
    graph = build_job_graph(env.get_stream_graph())
    recovery = StateRecovery(CheckpointStorage(tmp_path, "job", num_retained=2), {}, graph)
    assert recovery.choose(1, completed_ids=()).checkpoint is None  # nothing completed: from scratch
    with pytest.raises(CheckpointCorruptedError, match=r"checkpoint 7 .*chk-7\): its directory is missing; "
                                                       r"checkpoint 6 .*directory is missing"):
        recovery.choose(1, completed_ids={5, 6, 7})


def test_a_checkpoint_directory_replaced_by_a_file_fails_the_restarts_naming_it_and_its_key(
        tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 29, item 6: the restarts of a job whose checkpoint directory became a file say so (the
    path and execution.checkpointing.dir) in the exception history and the failure, not `[Errno 20]`,
    and cleaning up its checkpoints at the end logs one line, no traceback."""
    import logging
    import shutil

    gate = Gate()
    base = tmp_path / "checkpoints"
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({
        "execution.checkpointing.dir": str(base),
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "2",
        "restart-strategy.fixed-delay.delay": "10 ms"}))
    env.enable_checkpointing(3_600_000)  # on, but only the checkpoint the test triggers
    env.set_parallelism(1)
    (env.from_source(ScriptedSource(RECORDS[:10] + [gate] + RECORDS[10:20]), WatermarkStrategy.no_watermarks(),
                     "records").uid("records")
        .map(lambda r: r).uid("copy").add_sink(lambda r: None).uid("out"))
    caplog.set_level(logging.INFO)
    with MiniCluster(1, 1) as cluster:
        client = env.execute_async("directory replaced")
        job_id = client.get_job_id()
        wait_until(lambda: gate.reached and running(client), message="the source at the gate")
        cluster.checkpoints.trigger_checkpoint(job_id)
        shutil.rmtree(base)
        base.write_text("a file where the checkpoints were\n")
        assert cluster.failures.fail_operator(job_id, "out")
        gate.open()
        with pytest.raises(JobExecutionError) as caught:
            client.get_job_execution_result().result(60)
        details = client.get_job_details()
        wait_until(lambda: any("could not clean up the checkpoints" in r.getMessage() for r in caplog.records),
                   message="the clean-up of the failed job's checkpoints to be logged")

    expected = f"The checkpoint directory '{base}' (execution.checkpointing.dir) is no longer a directory: "
    assert details.status is JobStatus.FAILED
    assert expected in str(caught.value) and "Errno" not in str(caught.value)
    restores = details.exception_history[1:]
    assert [(e.exception_name, e.restarted) for e in restores] == [("CheckpointStorageError", True),
                                                                    ("CheckpointStorageError", False)]
    assert all(e.message.startswith(expected) for e in restores)
    cleanup = [r for r in caplog.records if "could not clean up the checkpoints" in r.getMessage()]
    assert [(r.levelname, r.exc_info) for r in cleanup] == [("WARNING", None)] and expected in cleanup[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info and r.name.startswith("streamkernel.runtime")]
