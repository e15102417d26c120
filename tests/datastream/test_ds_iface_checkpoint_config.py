"""CheckpointConfig: Flink's defaults and validation, and the round trip through configuration keys."""

from __future__ import annotations

import random

import pytest

from streamkernel.common.time import Duration, Time
from streamkernel.datastream.checkpoint_config import (
    CheckpointConfig,
    ExternalizedCheckpointCleanup,
    ExternalizedCheckpointRetention,
)
from streamkernel.datastream.checkpoint_storage import (
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from streamkernel.datastream.checkpointing_mode import CheckpointingMode
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError


def _settings(config: CheckpointConfig) -> tuple:
    return (
        config.get_checkpoint_interval(),
        config.get_checkpointing_mode(),
        config.get_checkpoint_timeout(),
        config.get_min_pause_between_checkpoints(),
        config.get_max_concurrent_checkpoints(),
        config.get_tolerable_checkpoint_failure_number(),
        config.get_externalized_checkpoint_retention(),
        config.is_unaligned_checkpoints_enabled(),
        config.get_aligned_checkpoint_timeout(),
        config.is_force_unaligned_checkpoints(),
        config.get_checkpoint_storage(),
    )


def test_defaults_are_flinks() -> None:
    config = CheckpointConfig()
    assert not config.is_checkpointing_enabled()
    assert _settings(config) == (
        -1, CheckpointingMode.EXACTLY_ONCE, 600_000, 0, 1, 0,
        ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS, False, Duration.of_millis(0), False, None,
    )
    assert config.is_fail_on_checkpointing_errors()
    assert not config.is_externalized_checkpoints_enabled()


def test_interval_enables_checkpointing_and_has_a_10_ms_minimum() -> None:
    config = CheckpointConfig()
    config.set_checkpoint_interval(10)
    assert config.is_checkpointing_enabled() and config.get_checkpoint_interval() == 10
    config.set_checkpoint_interval(Time.seconds(2))
    assert config.get_checkpoint_interval() == 2000
    with pytest.raises(InvalidProgramError, match="checkpoint_interval.*10 ms"):
        config.set_checkpoint_interval(9)
    assert config.get_checkpoint_interval() == 2000
    config.disable_checkpointing()
    assert not config.is_checkpointing_enabled()


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda c: c.set_checkpoint_timeout(9), "checkpoint_timeout"),
        (lambda c: c.set_min_pause_between_checkpoints(-1), "min_pause"),
        (lambda c: c.set_max_concurrent_checkpoints(0), "concurrent"),
        (lambda c: c.set_max_concurrent_checkpoints(1.5), "max_concurrent_checkpoints"),
        (lambda c: c.set_tolerable_checkpoint_failure_number(-1), "tolerable"),
        (lambda c: c.set_checkpointing_mode("EXACTLY_ONCE"), "checkpointing_mode"),
        (lambda c: c.set_externalized_checkpoint_retention(1), "retention_mode"),
        (lambda c: c.enable_unaligned_checkpoints("yes"), "enabled"),
        (lambda c: c.set_aligned_checkpoint_timeout(-1), "alignment_timeout"),
        (lambda c: c.set_checkpoint_storage(42), "storage"),
    ],
)
def test_bad_values_are_rejected_naming_the_argument(call, argument: str) -> None:
    config = CheckpointConfig()
    before = _settings(config)
    with pytest.raises(InvalidProgramError, match=argument):
        call(config)
    assert _settings(config) == before


def test_setters_chain_and_store_values() -> None:
    config = (
        CheckpointConfig()
        .set_checkpointing_mode(CheckpointingMode.AT_LEAST_ONCE)
        .set_checkpoint_timeout(60_000)
        .set_min_pause_between_checkpoints(500)
        .set_max_concurrent_checkpoints(3)
        .set_externalized_checkpoint_retention(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
        .enable_unaligned_checkpoints()
        .set_alignment_timeout(Duration.of_seconds(1))
        .set_force_unaligned_checkpoints()
    )
    assert config.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert config.get_checkpoint_timeout() == 60_000
    assert config.get_min_pause_between_checkpoints() == 500
    assert config.get_max_concurrent_checkpoints() == 3
    assert config.is_externalized_checkpoints_enabled()
    assert config.get_externalized_checkpoint_cleanup() is ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION
    assert config.is_unaligned_checkpoints_enabled() and config.is_force_unaligned_checkpoints()
    assert config.get_alignment_timeout() == Duration.of_seconds(1)
    config.disable_unaligned_checkpoints()
    assert not config.is_unaligned_checkpoints_enabled()


def test_fail_on_checkpointing_errors_maps_to_tolerable_failures() -> None:
    config = CheckpointConfig()
    config.set_fail_on_checkpointing_errors(False)
    assert config.get_tolerable_checkpoint_failure_number() == 2**31 - 1
    assert not config.is_fail_on_checkpointing_errors()
    config.set_fail_on_checkpointing_errors(True)
    assert config.get_tolerable_checkpoint_failure_number() == 0
    config.set_tolerable_checkpoint_failure_number(3)
    assert not config.is_fail_on_checkpointing_errors()


def test_checkpoint_storage_from_a_path_or_an_object(tmp_path) -> None:
    config = CheckpointConfig()
    config.set_checkpoint_storage_dir(tmp_path)
    assert config.get_checkpoint_storage() == FileSystemCheckpointStorage(str(tmp_path))
    config.set_checkpoint_storage("file:///tmp/ck")
    assert config.get_checkpoint_storage().get_checkpoint_path() == "file:///tmp/ck"
    storage = JobManagerCheckpointStorage()
    assert config.set_checkpoint_storage(storage).get_checkpoint_storage() is storage


def test_to_configuration_writes_flink_2_keys() -> None:
    config = CheckpointConfig().set_checkpoint_timeout(60_000).set_checkpoint_storage_dir("/data/ck")
    conf = config.to_configuration()
    assert "execution.checkpointing.interval" not in conf  # disabled
    assert conf["execution.checkpointing.timeout"] == "1 min"
    assert conf["execution.checkpointing.mode"] == "EXACTLY_ONCE"
    assert conf["execution.checkpointing.max-concurrent-checkpoints"] == "1"
    assert conf["execution.checkpointing.externalized-checkpoint-retention"] == "NO_EXTERNALIZED_CHECKPOINTS"
    assert conf["execution.checkpointing.unaligned.enabled"] == "false"
    assert conf["execution.checkpointing.dir"] == "/data/ck"
    assert conf["execution.checkpointing.storage"] == "filesystem"
    config.set_checkpoint_interval(1500)
    assert config.to_configuration()["execution.checkpointing.interval"] == "1500 ms"


def test_configuration_round_trip_of_random_settings() -> None:
    rng = random.Random(7)
    for _ in range(50):
        config = CheckpointConfig()
        config.set_checkpoint_interval(rng.choice([10, 999, 1000, 60_000, 3_600_000]))
        config.set_checkpointing_mode(rng.choice(list(CheckpointingMode)))
        config.set_checkpoint_timeout(rng.randint(10, 10**7))
        config.set_min_pause_between_checkpoints(rng.randint(0, 10**6))
        config.set_max_concurrent_checkpoints(rng.randint(1, 5))
        config.set_tolerable_checkpoint_failure_number(rng.randint(0, 9))
        config.set_externalized_checkpoint_retention(rng.choice(list(ExternalizedCheckpointRetention)))
        config.enable_unaligned_checkpoints(rng.random() < 0.5)
        config.set_aligned_checkpoint_timeout(rng.randint(0, 10**5))
        config.set_force_unaligned_checkpoints(rng.random() < 0.5)
        if rng.random() < 0.5:
            config.set_checkpoint_storage_dir(f"/ck/{rng.randint(0, 99)}")
        copy = CheckpointConfig().apply_configuration(config.to_configuration())
        assert _settings(copy) == _settings(config)


def test_apply_configuration_reads_flink_duration_notations_and_1x_keys() -> None:
    config = CheckpointConfig().apply_configuration({
        "execution.checkpointing.interval": "10 s",
        "execution.checkpointing.timeout": "1 min",
        "execution.checkpointing.min-pause": "500",
        "execution.checkpointing.mode": "at_least_once",
        "execution.checkpointing.unaligned": "TRUE",
        "execution.checkpointing.alignment-timeout": "PT2S",
        "state.checkpoints.dir": "/old/ck",
    })
    assert config.get_checkpoint_interval() == 10_000
    assert config.get_checkpoint_timeout() == 60_000
    assert config.get_min_pause_between_checkpoints() == 500
    assert config.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert config.is_unaligned_checkpoints_enabled()
    assert config.get_aligned_checkpoint_timeout() == Duration.of_seconds(2)
    assert config.get_checkpoint_storage() == FileSystemCheckpointStorage("/old/ck")
    untouched = CheckpointConfig().apply_configuration({"unrelated.key": "x"})
    assert _settings(untouched) == _settings(CheckpointConfig())


@pytest.mark.parametrize(
    "conf, key",
    [
        ({"execution.checkpointing.interval": "5 ms"}, "execution.checkpointing.interval"),
        ({"execution.checkpointing.interval": "soon"}, "execution.checkpointing.interval"),
        ({"execution.checkpointing.mode": "ONCE"}, "execution.checkpointing.mode"),
        ({"execution.checkpointing.max-concurrent-checkpoints": "two"}, "max-concurrent-checkpoints"),
        ({"execution.checkpointing.unaligned.enabled": "maybe"}, "unaligned.enabled"),
        ({"execution.checkpointing.storage": "filesystem"}, "execution.checkpointing.dir"),
        ({"execution.checkpointing.storage": "s3-magic", "execution.checkpointing.dir": "/x"},
         "execution.checkpointing.storage"),
    ],
)
def test_bad_configuration_names_the_key_and_changes_nothing(conf: dict, key: str) -> None:
    config = CheckpointConfig().set_checkpoint_timeout(30_000)
    before = _settings(config)
    with pytest.raises(IllegalConfigurationError, match=key):
        config.apply_configuration({"execution.checkpointing.timeout": "2 min", **conf})
    assert _settings(config) == before


def test_jobmanager_storage_from_configuration() -> None:
    config = CheckpointConfig().apply_configuration({"execution.checkpointing.storage": "jobmanager"})
    assert config.get_checkpoint_storage() == JobManagerCheckpointStorage()
