"""Savepoints: taken on request, restored by submitting with ``execution.state-recovery.path``,
at the same or another parallelism (keyed state is redistributed by key group).

Restoring is submitting the same program (the same operator uids) with
``execution.state-recovery.path`` (PyFlink 2.x; 1.x ``execution.savepoint.path``) set. The
sources here run at parallelism 1 (``set_parallelism`` on the source); only the keyed
operators are rescaled. The sinks overwrite ``latest[word] = count``, so the final values
show whether every key kept its count across the savepoints.
"""

from __future__ import annotations

import collections
import os
from typing import Any, Optional

import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import CheckpointFailedError, JobExecutionError
from streamkernel.runtime.checkpoint import load_checkpoint
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.state import read_checkpoint
from streamkernel.testing import Gate, ScriptedSource, wait_until

WORDS = [f"k{(i * 11) % 29}" for i in range(900)]



def counting_job(env: StreamExecutionEnvironment, source: ScriptedSource, latest: dict, parallelism: int,
                 counts_uid: str = "counts") -> None:
    """Source at parallelism 1; map, keyed counts and sink at ``parallelism``."""
    env.set_parallelism(parallelism)
    (env.from_source(source, WatermarkStrategy.no_watermarks(), "words").set_parallelism(1).uid("words")
        .map(lambda w: (w, 1)).uid("ones")
        .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).name("Counts").uid(counts_uid)
        .add_sink(lambda t: latest.__setitem__(t[0], t[1])).uid("sink"))


@pytest.fixture(autouse=True)
def _checkpoint_dir(tmp_path: Any, monkeypatch: Any) -> None:
    """Savepoints are staged in the checkpoint directory: keep it (and ./savepoints) out of the repository."""
    monkeypatch.chdir(tmp_path)


def environment(extra: Optional[dict] = None) -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(extra or {}))


def running(client: Any) -> bool:
    return all(s.state.value == "RUNNING" for s in client.get_job_details().subtasks)


# ------------------------------------------------------------------ rescaling
@pytest.mark.py_matrix
def test_savepoints_restored_at_parallelism_1_then_3_then_2_keep_every_key(tmp_path) -> None:
    first, second = Gate(), Gate()
    script = WORDS[:300] + [first] + WORDS[300:600] + [second] + WORDS[600:]
    latest: dict = {}
    with MiniCluster(1, 4) as cluster:
        env = environment()
        counting_job(env, ScriptedSource(script), latest, parallelism=1)
        client = env.execute_async("p1")
        wait_until(lambda: latest == collections.Counter(WORDS[:300]) and running(client), message="part one")
        savepoint_1 = cluster.checkpoints.stop_with_savepoint(client.get_job_id(), tmp_path / "savepoints")
        assert client.get_job_status().result() is JobStatus.FINISHED
        first.open()

        env = environment({"execution.state-recovery.path": savepoint_1})
        counting_job(env, ScriptedSource(script), latest, parallelism=3)
        client = env.execute_async("p3")
        wait_until(lambda: latest == collections.Counter(WORDS[:600]) and running(client), message="part two")
        assert [v.parallelism for v in client.get_job_details().vertices] == [1, 3, 3]
        savepoint_2 = cluster.checkpoints.stop_with_savepoint(client.get_job_id(), str(tmp_path / "savepoints"))
        second.open()

        env = environment({"execution.savepoint.path": savepoint_2})  # the 1.x key works too
        counting_job(env, ScriptedSource(script), latest, parallelism=2)
        client = env.execute_async("p2")
        client.get_job_execution_result().result(30)
        restored = client.get_job_details().checkpoints.latest_restored

    assert latest == collections.Counter(WORDS)
    assert restored.is_savepoint and restored.external_path == savepoint_2
    view = read_checkpoint(savepoint_2)
    counts = {row.key: row.value[1] for row in view.keyed_state("counts").itertuples()}
    assert counts == collections.Counter(WORDS[:600])  # every key, from 3 subtasks, in the savepoint
    assert view.metadata.operators["counts"].parallelism == 3
    assert os.path.dirname(savepoint_1) == str(tmp_path / "savepoints")


def test_the_job_client_triggers_savepoints_and_stops_with_one(tmp_path) -> None:
    gate = Gate()
    latest: dict = {}
    with MiniCluster(1, 2):
        env = environment({"execution.checkpointing.savepoint-dir": str(tmp_path / "configured")})
        counting_job(env, ScriptedSource(WORDS[:200] + [gate] + WORDS[200:]), latest, parallelism=2)
        client = env.execute_async("savepoints")
        wait_until(lambda: latest == collections.Counter(WORDS[:200]) and running(client), message="part one")
        configured = client.trigger_savepoint().result(30)
        explicit = client.trigger_savepoint(str(tmp_path / "explicit")).result(30)
        assert client.get_job_status().result() is JobStatus.RUNNING  # a savepoint does not stop the job
        stopped = client.stop_with_savepoint(savepoint_directory=str(tmp_path / "explicit")).result(30)
        assert client.get_job_status().result() is JobStatus.FINISHED
        rows = client.get_job_details().checkpoint_rows()
    assert os.path.dirname(configured) == str(tmp_path / "configured")
    assert os.path.dirname(explicit) == os.path.dirname(stopped) == str(tmp_path / "explicit")
    for path in (configured, explicit, stopped):
        completed = load_checkpoint(path)  # validated: metadata and checksums
        assert completed.is_savepoint and completed.metadata.operators["counts"].parallelism == 2
    assert [(r["type"], r["status"], r["path"]) for r in rows] == [
        ("savepoint", "COMPLETED", stopped), ("savepoint", "COMPLETED", explicit),
        ("savepoint", "COMPLETED", configured)]


def test_a_savepoint_needs_a_running_job(tmp_path) -> None:
    with MiniCluster(1, 2) as cluster:
        env = environment()
        env.from_collection([1, 2, 3]).add_sink(lambda x: None)
        client = env.execute_async("short")
        client.get_job_execution_result().result(10)
        with pytest.raises(CheckpointFailedError, match="the job is FINISHED"):
            cluster.checkpoints.trigger_savepoint(client.get_job_id(), tmp_path)
        with pytest.raises(CheckpointFailedError, match="the job is FINISHED"):
            cluster.checkpoints.trigger_checkpoint(str(client.get_job_id()))


# ------------------------------------------------------------------ refusals
def _savepoint_of_part_one(cluster: MiniCluster, tmp_path: Any) -> tuple[str, list]:
    """A savepoint taken after the first 100 words, and the script (to restore the source's position)."""
    gate = Gate()
    script = WORDS[:100] + [gate] + WORDS[100:]
    latest: dict = {}
    env = environment()
    counting_job(env, ScriptedSource(script), latest, parallelism=2)
    client = env.execute_async("to be saved")
    wait_until(lambda: latest == collections.Counter(WORDS[:100]) and running(client), message="part one")
    savepoint = cluster.checkpoints.stop_with_savepoint(client.get_job_id(), tmp_path / "savepoints")
    gate.open()
    return savepoint, script


def test_restoring_a_corrupt_or_missing_savepoint_fails_clearly(tmp_path) -> None:
    with MiniCluster(1, 2) as cluster:
        savepoint, _ = _savepoint_of_part_one(cluster, tmp_path)
        victim = os.path.join(savepoint, sorted(f for f in os.listdir(savepoint) if f.endswith(".state"))[0])
        with open(victim, "r+b") as file:
            file.truncate(10)
        env = environment({"execution.state-recovery.path": savepoint})
        counting_job(env, ScriptedSource(WORDS), {}, parallelism=2)
        with pytest.raises(JobExecutionError, match="CheckpointCorruptedError") as caught:
            env.execute("from a corrupt savepoint")
        message = str(caught.value)
        assert victim in message and "truncated" in message and "execution.state-recovery.path" in message

        env = environment({"execution.state-recovery.path": str(tmp_path / "nothing-here")})
        counting_job(env, ScriptedSource(WORDS), {}, parallelism=2)
        with pytest.raises(JobExecutionError, match="no checkpoint or savepoint at .*nothing-here"):
            env.execute("from nowhere")
        assert cluster.jobs()[-1].status is JobStatus.FAILED


def test_state_without_a_matching_uid_fails_unless_unclaimed_state_is_allowed(tmp_path) -> None:
    with MiniCluster(1, 2) as cluster:
        savepoint, script = _savepoint_of_part_one(cluster, tmp_path)
        env = environment({"execution.state-recovery.path": savepoint})
        counting_job(env, ScriptedSource(script), {}, parallelism=2, counts_uid="renamed")
        with pytest.raises(JobExecutionError, match=r"operator state of 'counts' \(Counts\) has no matching uid"):
            env.execute("renamed operator")

        latest: dict = {}
        env = environment({"execution.state-recovery.path": savepoint,
                           "execution.state-recovery.ignore-unclaimed-state": "true"})
        counting_job(env, ScriptedSource(script), latest, parallelism=2, counts_uid="renamed")
        env.execute("renamed operator, state dropped")
    # the counts started from zero; the source position (uid "words") was restored: part two only
    assert latest == collections.Counter(WORDS[100:])


# ------------------------------------------------------------------ without uids
def test_a_program_built_again_without_uids_restores_its_state(tmp_path) -> None:
    # Transformation ids keep growing in a kernel; the generated operator ids do not, so
    # running the same notebook cell again after a savepoint finds its state.
    def job(env: StreamExecutionEnvironment, source: ScriptedSource, latest: dict) -> None:
        (env.from_source(source, WatermarkStrategy.no_watermarks(), "words")
            .map(lambda w: (w, 1)).key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
            .add_sink(lambda t: latest.__setitem__(t[0], t[1])))

    gate = Gate()
    script = WORDS[:100] + [gate] + WORDS[100:]
    latest: dict = {}
    with MiniCluster(1, 2) as cluster:
        env = environment()
        job(env, ScriptedSource(script), latest)
        client = env.execute_async("no uids")
        wait_until(lambda: latest == collections.Counter(WORDS[:100]) and running(client), message="part one")
        savepoint = cluster.checkpoints.stop_with_savepoint(client.get_job_id(), tmp_path / "savepoints")
        gate.open()
        env = environment({"execution.state-recovery.path": savepoint})
        job(env, ScriptedSource(script), latest)
        env.execute("no uids, restored")
    assert latest == collections.Counter(WORDS)  # counts went on from the savepoint, part two read once


def test_a_collect_sink_reader_gets_the_error_of_a_job_that_failed_to_restore(tmp_path) -> None:
    from streamkernel.datastream.connectors.collect import CollectSink

    with MiniCluster(1, 2):
        env = environment({"execution.state-recovery.path": str(tmp_path / "nothing-here")})
        sink = CollectSink()
        env.from_collection(WORDS).map(lambda w: (w, 1)).sink_to(sink)
        env.execute_async("restores from nowhere")
        # no sink subtask ever runs: the job's end must still end the reader's iteration
        with pytest.raises(JobExecutionError, match="no checkpoint or savepoint at .*nothing-here"):
            list(sink.buffer)
