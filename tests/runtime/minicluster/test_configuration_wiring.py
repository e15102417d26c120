"""The runtime reads its keys through the option registry: every key it reads is declared,
and errors name the key the user wrote (a Flink 1.x key, a configured cluster size)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streamkernel.common import Configuration
from streamkernel.common.options import (
    BackendOptions,
    RpcOptions,
    TaskManagerOptions,
    find_option,
    validate_configuration,
)
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.checkpoint.storage import CheckpointStorage
from streamkernel.runtime.minicluster.client import transient_cluster_for
from streamkernel.runtime.minicluster.limits import LIMIT_KEYS, ClusterSizeError
from streamkernel.runtime.taskmanager.worker import FORWARD_OUTPUT_KEY, WORKING_DIR_KEY, rpc_timeout_seconds


def _env(conf: dict) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
    env.set_parallelism(1)
    env.from_collection([1, 2, 3]).map(lambda x: x * 10)
    return env


@pytest.mark.parametrize("key", sorted(LIMIT_KEYS) + [FORWARD_OUTPUT_KEY, WORKING_DIR_KEY, "spark.task.cpus"])
def test_every_key_the_cluster_reads_is_declared(key: str) -> None:
    assert find_option(key) is not None, key


@pytest.mark.parametrize("key", ["streamkernel.minicluster.max-total-slots", "spark.task.cpus"])
def test_a_bad_value_of_a_newly_declared_key_fails_at_submission(key: str) -> None:
    with pytest.raises(IllegalConfigurationError, match=f"'lots' for key '{re.escape(key)}'"):
        validate_configuration({key: "lots"})


@pytest.mark.parametrize("key, what", [("minicluster.number-of-taskmanagers", "is more than the local backend hosts"),
                                       ("taskmanager.numberOfTaskSlots", "is more than one TaskManager hosts")])
def test_execute_names_the_configured_count_that_is_too_large(key: str, what: str) -> None:
    env = _env({key: "100000"})
    with pytest.raises(ClusterSizeError, match=f"configuration key {key} = 100000 {what}"):
        transient_cluster_for(env.get_stream_graph("too big"))


@pytest.mark.parametrize("key", ["minicluster.number-of-taskmanagers", "taskmanager.numberOfTaskSlots"])
@pytest.mark.parametrize("value", ["99999999999999999999", "9" * 5000])
def test_a_count_beyond_a_32_bit_int_is_refused_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(IllegalConfigurationError, match=f"for key '{key}': expected an integer") as raised:
        _env({key: value}).execute("too big")
    assert len(str(raised.value)) < 200  # neither 5000 digits nor Python's int() message


def test_an_int_option_holds_java_ints() -> None:
    assert TaskManagerOptions.NUM_TASK_SLOTS.parse("2147483647") == 2**31 - 1
    with pytest.raises(IllegalConfigurationError, match="'2147483648' for key 'taskmanager.numberOfTaskSlots'.*32-bit"):
        TaskManagerOptions.NUM_TASK_SLOTS.parse("2147483648")


@pytest.mark.parametrize("key", ["state.checkpoints.dir", "state.savepoints.dir"])
def test_a_directory_error_names_the_1x_key_the_user_wrote(key: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = _env({key: "nosuchscheme://bucket/dir"})
    env.enable_checkpointing(1000)
    with pytest.raises(IllegalConfigurationError, match=f"^{re.escape(key)}: 'nosuchscheme://bucket/dir' uses the "
                                                        "scheme 'nosuchscheme'"):
        env.execute("bad directory")


def test_the_2x_key_is_named_when_the_program_replaced_the_1x_directory(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = _env({"state.checkpoints.dir": str(tmp_path / "fine")})
    env.enable_checkpointing(1000)
    env.get_checkpoint_config().set_checkpoint_storage_dir("nosuchscheme://bucket/dir")
    with pytest.raises(IllegalConfigurationError, match="^execution.checkpointing.dir: 'nosuchscheme://"):
        env.execute("bad directory")


def test_a_deprecated_key_is_named_when_its_value_does_not_parse() -> None:
    with pytest.raises(IllegalConfigurationError, match="'soon' for key 'akka.ask.timeout'"):
        RpcOptions.ASK_TIMEOUT.get({"akka.ask.timeout": "soon"})
    with pytest.raises(IllegalConfigurationError, match="'x' for key 'state.checkpoints.num-retained'"):
        CheckpointStorage.from_configuration("job", {"state.checkpoints.num-retained": "x"})
    assert rpc_timeout_seconds({"akka.ask.timeout": "2 s"}) == 2.0 and rpc_timeout_seconds({}) == 10.0


def test_source_key_names_the_key_the_user_wrote() -> None:
    option = BackendOptions.SPARK_MASTER  # no deprecated key: always its own
    assert option.source_key({}) == "spark.master"
    storage_dir = find_option("state.checkpoints.dir")
    assert storage_dir is not None
    assert storage_dir.source_key({"state.checkpoints.dir": "/a", "execution.checkpointing.dir": "/a"}) == \
        "state.checkpoints.dir"
    assert storage_dir.source_key({"state.checkpoints.dir": "/a", "execution.checkpointing.dir": "/b"}) == \
        "execution.checkpointing.dir"
    assert storage_dir.source_key({"state.checkpoints.dir": "/a"}) == "state.checkpoints.dir"
