"""Checkpoint storage: layout, atomic files, validation of torn/corrupt checkpoints, retention, savepoints."""

from __future__ import annotations

import json
import os
import pickle
import re
import threading

import pytest

from streamkernel.errors import CheckpointCorruptedError, CheckpointStorageError, IllegalConfigurationError
from streamkernel.runtime.checkpoint.metadata import JobCheckpointInfo, OperatorMetadata, VertexMetadata
from streamkernel.runtime.checkpoint.storage import CheckpointStorage, StateHandle, load_checkpoint
from streamkernel.testing import wait_until

JOB = "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"
INFO = JobCheckpointInfo(
    "counting",
    {"src": OperatorMetadata("src", "Source: numbers", 1, 1, 128, "src"),
     "counts": OperatorMetadata("counts", "Keyed Reduce", 2, 2, 128, "counts")},
    {1: VertexMetadata(1, "Source: numbers", 1, 128, ("src",)),
     2: VertexMetadata(2, "Keyed Reduce", 2, 128, ("counts",))},
)
SUBTASKS = [(1, 0), (2, 0), (2, 1)]


def _snapshot(checkpoint_id: int, subtask: tuple[int, int]) -> dict:
    return {"op": {"keyed": None, "timers": [], "operator": None, "raw": {"position": checkpoint_id, "at": subtask}}}


def _checkpoint(storage: CheckpointStorage, checkpoint_id: int):
    handles = {s: storage.write_task_state(checkpoint_id, s[0], s[1], _snapshot(checkpoint_id, s)) for s in SUBTASKS}
    return storage.finalize(checkpoint_id, handles, INFO, timestamp=1000 + checkpoint_id)


# ------------------------------------------------------------------ layout and metadata
def test_layout_metadata_and_round_trip(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB)
    completed = _checkpoint(storage, 1)
    directory = tmp_path / JOB / "chk-1"
    assert completed.path == str(directory)
    assert sorted(os.listdir(directory)) == ["1-0.state", "2-0.state", "2-1.state", "_metadata"]
    metadata = json.loads((directory / "_metadata").read_text())
    assert metadata["job_id"] == JOB and metadata["job_name"] == "counting"
    assert metadata["checkpoint_id"] == 1 and metadata["timestamp"] == 1001 and metadata["is_savepoint"] is False
    assert metadata["operators"]["counts"]["parallelism"] == 2
    assert metadata["operators"]["counts"]["max_parallelism"] == 128
    assert metadata["vertices"]["2"]["operators"] == ["counts"]
    files = {f["file"]: f for f in metadata["files"]}
    assert files["2-1.state"]["size"] == (directory / "2-1.state").stat().st_size
    assert len(files["2-1.state"]["sha256"]) == 64
    loaded = storage.latest_completed()
    assert loaded.checkpoint_id == 1 and storage.skipped_checkpoints == []
    assert loaded.task_state(2, 1) == _snapshot(1, (2, 1))
    assert set(loaded.task_states()) == set(SUBTASKS)


def test_state_handles_carry_size_and_checksum_and_leave_no_temporary_files(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB)
    handle = storage.write_task_state(3, 1, 0, {"x": list(range(1000))})
    assert isinstance(handle, StateHandle)
    assert handle.size == os.path.getsize(handle.path)
    assert os.listdir(os.path.dirname(handle.path)) == ["1-0.state"]


def test_an_unpicklable_snapshot_leaves_nothing_behind_and_names_the_subtask(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB)
    with pytest.raises(TypeError, match="subtask 1 of vertex 2"):
        storage.write_task_state(1, 2, 1, {"lock": threading.Lock()})
    assert os.listdir(storage.checkpoint_dir(1)) == []


def test_snapshots_handed_over_in_memory_are_written_at_finalize(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB)
    completed = storage.finalize(1, {s: _snapshot(1, s) for s in SUBTASKS}, INFO)
    assert storage.load(completed.path).task_state(1, 0) == _snapshot(1, (1, 0))


def test_a_state_file_outside_the_checkpoint_directory_is_refused(tmp_path) -> None:
    elsewhere = CheckpointStorage(tmp_path / "other", JOB).write_task_state(1, 1, 0, {})
    with pytest.raises(IllegalConfigurationError, match="must share the checkpoint directory"):
        CheckpointStorage(tmp_path / "main", JOB).finalize(1, {(1, 0): elsewhere}, INFO)


# ------------------------------------------------------------------ torn and corrupt checkpoints
def test_a_checkpoint_without_metadata_is_skipped_with_the_reason(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB, num_retained=3)
    _checkpoint(storage, 1)
    for subtask in SUBTASKS[:2]:  # a crash during checkpoint 2: some files, no metadata
        storage.write_task_state(2, subtask[0], subtask[1], _snapshot(2, subtask))
    latest = storage.latest_completed()
    assert latest.checkpoint_id == 1
    [skipped] = storage.skipped_checkpoints
    assert skipped.checkpoint_id == 2 and "_metadata" in skipped.reason and "never completed" in skipped.reason
    with pytest.raises(CheckpointCorruptedError, match="_metadata"):
        load_checkpoint(storage.checkpoint_dir(2))


def test_a_truncated_state_file_is_refused_and_the_previous_checkpoint_used(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB, num_retained=2)
    _checkpoint(storage, 1)
    _checkpoint(storage, 2)
    path = os.path.join(storage.checkpoint_dir(2), "2-1.state")
    with open(path, "r+b") as file:
        file.truncate(os.path.getsize(path) - 3)
    assert storage.latest_completed().checkpoint_id == 1
    [skipped] = storage.skipped_checkpoints
    assert "2-1.state" in skipped.reason and "truncated" in skipped.reason
    with pytest.raises(CheckpointCorruptedError) as error:
        load_checkpoint(storage.checkpoint_dir(2))
    assert error.value.path == path


def test_a_modified_state_file_fails_its_checksum(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB, num_retained=2)
    _checkpoint(storage, 1)
    _checkpoint(storage, 2)
    path = os.path.join(storage.checkpoint_dir(2), "1-0.state")
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF  # same size, one byte flipped
    open(path, "wb").write(bytes(data))
    assert storage.latest_completed().checkpoint_id == 1
    assert "checksum" in storage.skipped_checkpoints[0].reason
    with pytest.raises(CheckpointCorruptedError, match=r"1-0\.state.*checksum"):
        storage.load(storage.checkpoint_dir(2))


def test_missing_files_and_damaged_metadata_are_refused(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB, num_retained=3)
    for n in (1, 2, 3):
        _checkpoint(storage, n)
    os.unlink(os.path.join(storage.checkpoint_dir(3), "2-0.state"))
    with open(os.path.join(storage.checkpoint_dir(2), "_metadata"), "w") as file:
        file.write('{"format": "streamkernel-checkpoint", "vers')
    assert storage.latest_completed().checkpoint_id == 1
    reasons = [s.reason for s in storage.skipped_checkpoints]
    assert "missing" in reasons[0] and "not valid JSON" in reasons[1]


def test_no_valid_checkpoint_at_all(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB)
    assert storage.latest_completed() is None and storage.max_checkpoint_id() == 0
    storage.write_task_state(5, 1, 0, {})
    assert storage.latest_completed() is None
    assert [s.checkpoint_id for s in storage.skipped_checkpoints] == [5]
    assert storage.max_checkpoint_id() == 5
    with pytest.raises(CheckpointCorruptedError, match="no restorable checkpoint"):
        load_checkpoint(storage.job_dir)


def test_load_accepts_the_metadata_file_and_the_job_directory(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB, num_retained=2)
    _checkpoint(storage, 1)
    _checkpoint(storage, 2)
    assert load_checkpoint(os.path.join(storage.checkpoint_dir(1), "_metadata")).checkpoint_id == 1
    assert load_checkpoint(storage.job_dir).checkpoint_id == 2
    assert load_checkpoint("file://" + storage.checkpoint_dir(2)).checkpoint_id == 2
    with pytest.raises(FileNotFoundError, match="no checkpoint or savepoint"):
        load_checkpoint(tmp_path / "nothing-here")


def test_checkpoint_corrupted_error_survives_pickling() -> None:
    error = pickle.loads(pickle.dumps(CheckpointCorruptedError("/x/1-0.state", "is missing")))
    assert error.path == "/x/1-0.state" and "is missing" in str(error)


def test_a_directory_replaced_by_a_file_is_named_with_its_key_when_listing_writing_or_cleaning(tmp_path) -> None:
    """The base directory (or the job's) replaced by a file while the job runs: every use of the storage
    says so, naming the path and the key the user set, instead of the raw `[Errno 20] Not a directory`."""
    from streamkernel.common.job_status import JobStatus
    from streamkernel.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention

    base = tmp_path / "checkpoints"
    storage = CheckpointStorage.from_configuration(JOB, {"state.checkpoints.dir": str(base)})  # the 1.x key
    _checkpoint(storage, 1)
    storage.discard(1)
    os.rmdir(storage.job_dir)
    os.rmdir(base)
    base.write_text("not a directory\n")
    expected = re.escape(f"The checkpoint directory '{base}' (state.checkpoints.dir) is no longer a directory: ")
    for use in (storage.checkpoint_ids, storage.latest_completed, lambda: _checkpoint(storage, 2),
                lambda: storage.on_job_end(JobStatus.FAILED, ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS)):
        with pytest.raises(CheckpointStorageError, match=expected) as raised:
            use()
        assert "\n" not in str(raised.value) and "Errno" not in str(raised.value)
    assert isinstance(raised.value, OSError)  # callers catching OSError keep working

    base.unlink()
    base.mkdir()
    with open(storage.job_dir, "w") as job_file:  # the job's own directory
        job_file.write("x")
    with pytest.raises(CheckpointStorageError, match=re.escape(
            f"The checkpoint directory '{storage.job_dir}' (below state.checkpoints.dir '{base}') is no longer")):
        storage.checkpoint_ids()


# ------------------------------------------------------------------ retention
def test_only_the_retained_number_of_completed_checkpoints_is_kept(tmp_path) -> None:
    storage = CheckpointStorage.from_configuration(JOB, {"execution.checkpointing.dir": str(tmp_path),
                                                         "execution.checkpointing.num-retained": "2"})
    _checkpoint(storage, 1)
    storage.write_task_state(2, 1, 0, {})  # in progress (or aborted): not retention's business
    _checkpoint(storage, 3)
    _checkpoint(storage, 4)
    assert storage.checkpoint_ids() == [4, 3, 2]
    storage.discard(2)
    assert storage.checkpoint_ids() == [4, 3]


def test_default_retention_keeps_one(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path, JOB)
    for n in (1, 2, 3):
        _checkpoint(storage, n)
    assert storage.checkpoint_ids() == [3]
    with pytest.raises(IllegalConfigurationError, match="num-retained"):
        CheckpointStorage(tmp_path, JOB, num_retained=0)


@pytest.mark.parametrize("retention, status, deleted", [
    ("NO_EXTERNALIZED_CHECKPOINTS", "FAILED", True),
    ("NO_EXTERNALIZED_CHECKPOINTS", "FINISHED", True),
    ("DELETE_ON_CANCELLATION", "CANCELED", True),
    ("DELETE_ON_CANCELLATION", "FAILED", False),
    ("RETAIN_ON_CANCELLATION", "CANCELED", False),
    ("RETAIN_ON_CANCELLATION", "FINISHED", True),
    ("DELETE_ON_CANCELLATION", "RUNNING", False),
])
def test_externalized_retention_on_job_end(tmp_path, retention, status, deleted) -> None:
    from streamkernel.common.job_status import JobStatus
    from streamkernel.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention

    storage = CheckpointStorage(tmp_path, JOB)
    _checkpoint(storage, 1)
    savepoint = storage.write_savepoint(tmp_path / "sp", 2, {(1, 0): {"op": {}}}, INFO)
    removed = storage.on_job_end(JobStatus[status], ExternalizedCheckpointRetention[retention])
    assert bool(removed) == deleted
    assert os.path.isdir(storage.job_dir) != deleted
    assert os.path.exists(savepoint.metadata_path)  # savepoints are never deleted


# ------------------------------------------------------------------ savepoints
def test_savepoint_layout_moves_the_task_files_and_is_kept(tmp_path) -> None:
    storage = CheckpointStorage(tmp_path / "ck", JOB)
    handles = {s: storage.write_task_state(7, s[0], s[1], _snapshot(7, s)) for s in SUBTASKS}
    savepoint = storage.write_savepoint(str(tmp_path / "sp"), 7, handles, INFO, timestamp=5)
    name = os.path.basename(savepoint.path)
    assert re.fullmatch(r"savepoint-a1b2c3-[0-9a-f]{12}", name)
    assert os.path.dirname(savepoint.path) == str(tmp_path / "sp")
    assert sorted(os.listdir(savepoint.path)) == ["1-0.state", "2-0.state", "2-1.state", "_metadata"]
    assert not os.path.exists(storage.checkpoint_dir(7))  # the staging folder is gone
    loaded = load_checkpoint(savepoint.path)
    assert loaded.is_savepoint and loaded.checkpoint_id == 7 and loaded.task_state(2, 0) == _snapshot(7, (2, 0))
    for n in (8, 9):  # retention never touches savepoints
        _checkpoint(storage, n)
    assert load_checkpoint(savepoint.path).checkpoint_id == 7


def test_savepoint_directory_defaults(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    storage = CheckpointStorage.from_configuration(JOB, {})
    assert storage.job_dir == str(tmp_path / "checkpoints" / JOB)
    savepoint = storage.write_savepoint(None, 1, {(1, 0): {}}, INFO)
    assert os.path.dirname(savepoint.path) == str(tmp_path / "savepoints")
    configured = storage.write_savepoint(None, 2, {(1, 0): {}}, INFO,
                                         conf={"state.savepoints.dir": str(tmp_path / "mine")})
    assert os.path.dirname(configured.path) == str(tmp_path / "mine")


# ------------------------------------------------------------------ with real tasks
def test_running_tasks_write_through_the_storage_factory_and_the_checkpoint_restores(tmp_path) -> None:
    import dataclasses

    from streamkernel.common import Configuration, WatermarkStrategy
    from streamkernel.runtime.core.deployment import ExecutionState
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.datastream.connectors.datagen import DataGeneratorSource
    from streamkernel.graph.job_graph import build_job_graph
    from streamkernel.runtime.checkpoint.restore import assign_restored_state
    from streamkernel.runtime.minicluster.minicluster import MiniCluster
    from streamkernel.runtime.tasks.task import Task

    acks: dict = {}
    lock = threading.Lock()
    tasks: list = []

    class Responder:
        def acknowledge(self, attempt_id, checkpoint_id, handle, metrics=None) -> None:
            with lock:
                acks[(attempt_id.vertex_id, attempt_id.subtask_index)] = handle

        def decline(self, attempt_id, checkpoint_id, reason) -> None:  # pragma: no cover - fails the test below
            raise AssertionError(reason)

    def factory(tdd, services, on_state_change):
        task = Task(tdd, dataclasses.replace(services, checkpoint_responder=Responder(),
                                             checkpoint_storage=CheckpointStorage.from_configuration), on_state_change)
        tasks.append(task)
        return task

    # Retained on cancellation: the test plays the JobMaster's part once the job was cancelled.
    conf = {"execution.checkpointing.dir": str(tmp_path),
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
    with MiniCluster(taskmanagers=1, slots_per_taskmanager=2, task_factory=factory):
        env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
        env.set_parallelism(2)
        (env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=20000.0),
                         WatermarkStrategy.no_watermarks(), "gen").uid("gen")
            .key_by(lambda x: x % 5).reduce(lambda a, b: a + b).uid("sums").add_sink(lambda v: None).uid("sink"))
        job_graph = build_job_graph(env.get_stream_graph())
        subtasks = sum(vertex.parallelism for vertex in job_graph.vertices)
        client = env.execute_async("stored")
        # The source is unbounded: every task reaches RUNNING and stays there until the cancel.
        wait_until(lambda: len(tasks) == subtasks and all(t.state == ExecutionState.RUNNING for t in tasks),
                   message=f"all {subtasks} tasks of the job to be RUNNING (have {tasks})")
        for task in [t for t in tasks if not t.tdd.inputs]:
            task.trigger_checkpoint(1, 1000)
        wait_until(lambda: len(acks) == subtasks, message=f"checkpoint 1 acknowledged by all {subtasks} tasks")
        client.cancel().result(timeout=60)
    job_id = tasks[0].tdd.job_id
    assert all(isinstance(handle, StateHandle) for handle in acks.values())
    storage = CheckpointStorage.from_configuration(job_id, conf)
    completed = storage.finalize(1, acks, JobCheckpointInfo.from_job_graph(job_graph))
    assert storage.latest_completed().checkpoint_id == 1
    source_raw = {i: completed.task_state(v, i)["gen"]["raw"] for (v, i) in acks if "gen" in completed.task_state(v, i)}
    assert len(source_raw) == 2 and all(raw is not None for raw in source_raw.values())
    restored = assign_restored_state(completed, job_graph)  # same job, same parallelism: each keeps its own
    assert {i: ops["gen"]["raw"] for (_, i), ops in restored.items() if "gen" in ops} == source_raw
