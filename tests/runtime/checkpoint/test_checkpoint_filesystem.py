"""Checkpoint storage says where it writes: local paths, file:// and memory:// (any fsspec
scheme) work; a scheme that is unknown or not installed, and a directory that is a regular
file, are refused at submission with the configuration key."""

from __future__ import annotations

import collections
import os
import uuid
from typing import Any

import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.checkpoint import filesystem as fs
from streamkernel.runtime.checkpoint.storage import CheckpointStorage, load_checkpoint
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import Gate, ScriptedSource, wait_until

WORDS = [f"w{(i * 7) % 13}" for i in range(400)]




def counting_env(conf: dict, script: list, latest: dict) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({
        "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "3",
        "restart-strategy.fixed-delay.delay": "10 ms", **conf}))
    env.enable_checkpointing(3_600_000)  # only the checkpoints the test triggers
    env.set_parallelism(2)
    (env.from_source(ScriptedSource(script), WatermarkStrategy.no_watermarks(), "words").uid("words")
        .key_by(lambda w: w).map(lambda w: (w, 1)).uid("ones")
        .key_by(lambda t: t[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid("counts")
        .add_sink(lambda t: latest.__setitem__(t[0], t[1])).uid("sink"))
    return env


def running(client: Any) -> bool:
    return client.get_job_status().result() is JobStatus.RUNNING and all(
        s.state.value == "RUNNING" for s in client.get_job_details().subtasks)


def checkpoint_restore_and_finish(conf: dict) -> tuple[str, list, Any]:
    """Run a keyed count, checkpoint at a gate, fail an operator, restore; returns the
    checkpoint's path, the names in it while the job ran (a FINISHED job's checkpoints are
    deleted) and the job's details. The counts are exact only if the restore worked."""
    gate, latest = Gate(), {}
    env = counting_env(conf, WORDS[:200] + [gate] + WORDS[200:], latest)
    with MiniCluster(1, 2) as cluster:
        client = env.execute_async("storage")
        job_id = client.get_job_id()
        wait_until(lambda: latest == collections.Counter(WORDS[:200]) and running(client), message="part one")
        path = cluster.checkpoints.trigger_checkpoint(job_id)
        assert load_checkpoint(path).checkpoint_id == 1  # readable where it was written
        contents = sorted(fs.listdir(path))
        assert cluster.failures.fail_operator(job_id, "counts")
        wait_until(lambda: client.get_job_details().num_restarts == 1 and running(client), message="the restart")
        gate.open()
        client.get_job_execution_result().result(60)
        details = client.get_job_details()
    assert latest == collections.Counter(WORDS)
    assert details.checkpoints.latest_restored.checkpoint_id == 1
    return path, contents, details


def test_a_keyed_job_checkpoints_to_memory_and_restores_from_it(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # before fsspec, memory://x became the local folder ./memory:/x
    base = f"memory://streamkernel-test-{uuid.uuid4().hex}"
    path, contents, details = checkpoint_restore_and_finish({"execution.checkpointing.dir": base})
    assert path == f"{base}/{details.job_id}/chk-1"
    assert details.checkpoints.latest_restored.external_path == path
    assert "_metadata" in contents and any(name.endswith(".state") for name in contents)
    assert not os.path.exists("memory:") and fs.listdir(base) == []  # the finished job's checkpoints deleted


def test_a_file_url_checkpoint_directory_is_the_local_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path, contents, _ = checkpoint_restore_and_finish({"execution.checkpointing.dir": f"file://{tmp_path}/chk"})
    assert path.startswith(f"{tmp_path}/chk/") and "_metadata" in contents
    assert not os.path.exists("file:")


def submit_with(conf: dict) -> None:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
    env.set_parallelism(1)
    env.from_collection([1, 2]).print()
    with MiniCluster(1, 1):
        env.execute("refused")


def test_an_unknown_scheme_is_refused_at_submission_naming_the_key(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(IllegalConfigurationError, match=r"^execution.checkpointing.dir: 'nosuch://b/chk' uses the "
                                                        r"scheme 'nosuch', which fsspec does not know"):
        submit_with({"execution.checkpointing.dir": "nosuch://b/chk"})
    assert not os.path.exists("nosuch:")


def test_a_scheme_whose_package_is_missing_is_refused_naming_the_key_and_package(monkeypatch) -> None:
    from fsspec.registry import known_implementations

    # a scheme fsspec's registry knows, whose implementation package is not installed (as s3fs may be)
    monkeypatch.setitem(known_implementations, "skfake",
                        {"class": "skfake_fs_missing.SkFakeFileSystem", "err": "Install skfake-fs to access SkFake"})
    with pytest.raises(IllegalConfigurationError,
                       match=r"^state.savepoints.dir: 'skfake://b/sp' uses the skfake:// "
                             r"file system, .*Install skfake-fs .*'skfake_fs_missing'"):
        submit_with({"state.savepoints.dir": "skfake://b/sp"})
    message = known_implementations["s3"]["err"]
    with pytest.raises(IllegalConfigurationError) as caught:
        fs.check_location("s3://bucket/chk", "execution.checkpointing.dir")
    if "s3fs" in message and not _installed("s3fs"):  # on this machine s3fs is not installed
        assert "execution.checkpointing.dir" in str(caught.value) and "s3fs" in str(caught.value)


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def test_a_checkpoint_directory_that_is_a_regular_file_is_refused_naming_the_key(tmp_path) -> None:
    (tmp_path / "chk").write_text("not a directory")
    with pytest.raises(IllegalConfigurationError,
                       match=rf"^state.checkpoints.dir: {tmp_path}/chk is a regular file, not a directory"):
        submit_with({"state.checkpoints.dir": str(tmp_path / "chk")})


def test_memory_storage_validates_and_skips_a_corrupt_checkpoint(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    storage = CheckpointStorage(f"memory://streamkernel-test-{uuid.uuid4().hex}", "job", num_retained=2)
    from streamkernel.runtime.checkpoint.metadata import JobCheckpointInfo

    info = JobCheckpointInfo("job", {}, {})
    for checkpoint_id in (1, 2):
        handle = storage.write_task_state(checkpoint_id, 1, 0, {"op": {"raw": checkpoint_id}})
        storage.finalize(checkpoint_id, {(1, 0): handle}, info)
    fs.write_bytes(fs.join(storage.checkpoint_dir(2), "1-0.state"), b"x")
    assert storage.latest_completed().task_state(1, 0) == {"op": {"raw": 1}}
    assert "truncated" in storage.skipped_checkpoints[0].reason
    fs.rmtree(storage.base_dir)


@pytest.mark.parametrize("directory, words", [
    ("", "the directory is empty"),
    ("/tmp/" + "d" * 4995, "(5000 characters) is longer than 4096 characters"),
    ("/tmp/a\x00b", "contains a control character"),
    ("/tmp/line\nbreak", "contains a control character"),
    ("/tmp/" + "n" * 256, "has a name longer than 255 bytes"),
    ("{tmp}/file/below", "cannot be created: '{tmp}/file' is not a directory"),
    ("nosuchfs://bucket/sp", "which fsspec does not know"),
])
def test_a_savepoint_target_no_savepoint_can_go_to_is_refused_saying_why_in_a_line(tmp_path, directory: str,
                                                                                    words: str) -> None:
    (tmp_path / "file").write_text("in the way")
    with pytest.raises(IllegalConfigurationError) as refused:
        fs.check_target_directory(directory.format(tmp=tmp_path), "target-directory")
    message = str(refused.value)
    assert message.startswith("target-directory: ") and words.format(tmp=tmp_path) in message, message
    assert len(message) < 500 and "\n" not in message


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write to any directory")
def test_a_savepoint_target_this_process_may_not_write_to_is_refused(tmp_path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(IllegalConfigurationError, match="cannot be created or written: this process may not write"):
        fs.check_target_directory(locked / "savepoints", "target_dir")


def test_a_savepoint_target_that_can_be_written_is_accepted_and_nothing_is_created(tmp_path) -> None:
    target = tmp_path / "not" / "yet" / "there"
    assert fs.check_target_directory(str(target), "target_dir") == str(target)
    assert not (tmp_path / "not").exists()
    assert fs.check_target_directory(f"file://{tmp_path}", "target_dir") == str(tmp_path)
    assert fs.check_target_directory("memory://savepoints/x/", "target_dir") == "memory://savepoints/x"
