"""State backends and checkpoint storages: configuration values, 1.x mappings, validation."""

from __future__ import annotations

import pytest

from streamkernel.datastream.checkpoint_storage import (
    CheckpointStorage,
    CustomCheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)
from streamkernel.datastream.state_backend import (
    CustomStateBackend,
    EmbeddedRocksDBStateBackend,
    FsStateBackend,
    HashMapStateBackend,
    MemoryStateBackend,
    PredefinedOptions,
    RocksDBStateBackend,
    StateBackend,
    state_backend_from_configuration,
    state_backend_from_name,
)
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError


def test_each_backend_knows_its_configuration_value() -> None:
    assert HashMapStateBackend().config_value == "hashmap"
    assert EmbeddedRocksDBStateBackend().config_value == "rocksdb"
    assert MemoryStateBackend().config_value == "hashmap"
    assert FsStateBackend("/ck").config_value == "hashmap"
    assert RocksDBStateBackend("/ck").config_value == "rocksdb"
    assert CustomStateBackend("forst").config_value == "forst"
    assert HashMapStateBackend().to_configuration() == {"state.backend.type": "hashmap"}


def test_legacy_backends_are_the_2x_backends_plus_their_storage() -> None:
    memory = MemoryStateBackend(max_state_size=1024)
    assert isinstance(memory, HashMapStateBackend)
    assert memory.get_checkpoint_storage() == JobManagerCheckpointStorage(max_state_size=1024)
    assert memory.get_max_state_size() == 1024 and memory.is_using_asynchronous_snapshots()
    fs = FsStateBackend("file:///ck", "file:///sp", file_state_size_threshold=100)
    assert isinstance(fs, HashMapStateBackend)
    assert fs.get_checkpoint_storage() == FileSystemCheckpointStorage("file:///ck", 100)
    assert (fs.get_checkpoint_path(), fs.get_savepoint_path(), fs.get_min_file_size_threshold()) == (
        "file:///ck", "file:///sp", 100)
    assert fs.to_configuration() == {
        "state.backend.type": "hashmap",
        "execution.checkpointing.storage": "filesystem",
        "execution.checkpointing.dir": "file:///ck",
    }
    rocks = RocksDBStateBackend("/ck", enable_incremental_checkpointing=True)
    assert isinstance(rocks, EmbeddedRocksDBStateBackend) and rocks.is_incremental_checkpoints_enabled()
    assert rocks.get_checkpoint_storage() == FileSystemCheckpointStorage("/ck")
    stacked = RocksDBStateBackend(checkpoint_stream_backend=MemoryStateBackend())
    assert isinstance(stacked.get_checkpoint_storage(), JobManagerCheckpointStorage)
    rocks.set_number_of_transfering_threads(2)
    assert rocks.get_number_of_transfer_threads() == 2 == rocks.get_number_of_transfering_threads()


def test_legacy_backends_need_their_checkpoint_location() -> None:
    with pytest.raises(InvalidProgramError, match="checkpoint_directory_uri"):
        FsStateBackend()
    with pytest.raises(InvalidProgramError, match="checkpoint_data_uri"):
        RocksDBStateBackend()
    with pytest.raises(InvalidProgramError, match="using_asynchronous_snapshots"):
        MemoryStateBackend(using_asynchronous_snapshots="yes")


def test_rocksdb_settings_and_their_configuration() -> None:
    backend = EmbeddedRocksDBStateBackend()
    assert not backend.is_incremental_checkpoints_enabled()
    assert backend.get_db_storage_paths() == []
    assert backend.get_predefined_options() is PredefinedOptions.DEFAULT
    assert backend.get_number_of_transfer_threads() == 4
    assert backend.get_options() is None
    assert backend.to_configuration() == {"state.backend.type": "rocksdb"}
    backend.set_db_storage_paths("/disk1", "/disk2")
    backend.set_predefined_options(PredefinedOptions.FLASH_SSD_OPTIMIZED)
    backend.set_number_of_transfer_threads(8)
    backend.set_options("my.factory")
    assert backend.get_options() == "my.factory"
    conf = backend.to_configuration()
    restored = state_backend_from_configuration(conf)
    assert isinstance(restored, EmbeddedRocksDBStateBackend)
    assert restored.get_db_storage_paths() == ["/disk1", "/disk2"]
    assert restored.get_predefined_options() is PredefinedOptions.FLASH_SSD_OPTIMIZED
    assert restored.get_number_of_transfer_threads() == 8
    incremental = state_backend_from_configuration(
        {"state.backend": "rocksdb", "state.backend.incremental": "true"})
    assert incremental.is_incremental_checkpoints_enabled()
    backend.set_db_storage_paths()
    assert backend.get_db_storage_paths() == []


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda b: b.set_number_of_transfer_threads(0), "threads"),
        (lambda b: b.set_predefined_options("DEFAULT"), "options"),
        (lambda b: b.set_db_storage_paths(""), "path"),
        (lambda b: b.set_options(""), "options_factory_class_name"),
    ],
)
def test_rocksdb_validation(call, argument: str) -> None:
    with pytest.raises(InvalidProgramError, match=argument):
        call(EmbeddedRocksDBStateBackend())


def test_incremental_flag_must_be_a_boolean() -> None:
    with pytest.raises(InvalidProgramError, match="enable_incremental_checkpointing"):
        EmbeddedRocksDBStateBackend("yes")


def test_state_backend_from_name() -> None:
    assert type(state_backend_from_name("HashMap")) is HashMapStateBackend
    assert type(state_backend_from_name(" rocksdb ")) is EmbeddedRocksDBStateBackend
    assert type(state_backend_from_name("jobmanager")) is HashMapStateBackend
    with pytest.raises(IllegalConfigurationError, match="state.backend.type.*'memory'"):
        state_backend_from_name("memory")
    assert state_backend_from_configuration({"parallelism.default": "2"}) is None
    with pytest.raises(IllegalConfigurationError, match="predefined-options"):
        state_backend_from_configuration({"state.backend.type": "rocksdb",
                                          "state.backend.rocksdb.predefined-options": "FAST"})


def test_checkpoint_storages() -> None:
    jm = JobManagerCheckpointStorage()
    assert isinstance(jm, CheckpointStorage)
    assert jm.get_max_state_size() == 5 * 1024 * 1024 and jm.get_checkpoint_path() is None
    assert jm.to_configuration() == {"execution.checkpointing.storage": "jobmanager"}
    fs = FileSystemCheckpointStorage("s3://bucket/ck")
    assert fs.get_checkpoint_path() == "s3://bucket/ck" and fs.get_savepoint_path() is None
    assert fs.get_min_file_size_threshold() == 20 * 1024 and fs.get_write_buffer_size() == 4096
    assert fs == FileSystemCheckpointStorage("s3://bucket/ck") != FileSystemCheckpointStorage("/other")
    custom = CustomCheckpointStorage("remote", {"remote.url": "x"})
    assert custom.to_configuration() == {"execution.checkpointing.storage": "remote", "remote.url": "x"}


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: JobManagerCheckpointStorage(max_state_size=0), "max_state_size"),
        (lambda: FileSystemCheckpointStorage(None), "checkpoint_path"),
        (lambda: FileSystemCheckpointStorage(""), "checkpoint_path"),
        (lambda: FileSystemCheckpointStorage("/ck", 2 * 1024 * 1024), "file_state_size_threshold"),
        (lambda: FileSystemCheckpointStorage("/ck", write_buffer_size=-2), "write_buffer_size"),
        (lambda: CustomCheckpointStorage(""), "storage_type"),
    ],
)
def test_checkpoint_storage_validation(call, argument: str) -> None:
    with pytest.raises(InvalidProgramError, match=argument):
        call()


def test_backends_are_state_backends() -> None:
    for backend in (HashMapStateBackend(), EmbeddedRocksDBStateBackend(), CustomStateBackend("x")):
        assert isinstance(backend, StateBackend)
        assert backend.get_checkpoint_storage() is None
