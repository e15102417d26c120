"""Managed memory bounds RocksDB per slot (Flink's ``state.backend.rocksdb.memory.*``): the
sizes from the slot's managed share with Flink's formulas, one cache shared by a slot's
instances, its usage reported by the TaskManager, the fixed-per-slot override, unmanaged mode."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.options import validate_configuration
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.core.clock import SystemClock
from streamkernel.runtime.memory import task_executor_process_spec_from_config, with_default_process_size
from streamkernel.runtime.memory.memory_manager import MemoryManager, managed_memory_per_slot
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.state.factory import create_keyed_backend
from streamkernel.runtime.state.rocksdb_memory import (
    calculate_actual_cache_capacity,
    calculate_write_buffer_manager_capacity,
)
from streamkernel.testing import FileGate, Gate, ScriptedSource, wait_until

MB = 1 << 20
ROCKSDB = {"state.backend.type": "rocksdb"}


def backend(tmp_path: Any, name: str, conf: dict, manager: Any) -> Any:
    return create_keyed_backend(conf, 128, range(128), working_dir=str(tmp_path / name), clock=SystemClock(),
                                memory_manager=manager)


# ------------------------------------------------------------------ sizes
@pytest.mark.parametrize("total,ratio", [(300 * MB, 0.5), (1000, 0.25), (123_456_789, 0.3), (7, 0.9)])
def test_cache_and_write_buffer_capacities_follow_flinks_formulas(total: int, ratio: float) -> None:
    # RocksDBMemoryControllerUtils: (long) ((3 - r) * M / 3) and (long) (2 * M * r / 3)
    assert calculate_actual_cache_capacity(total, ratio) == int((3 - ratio) * total / 3)
    assert calculate_write_buffer_manager_capacity(total, ratio) == int(2 * total * ratio / 3)


def test_a_slots_share_is_the_managed_memory_of_flinks_calculation_divided_by_the_slots() -> None:
    conf = {"taskmanager.memory.process.size": "4g", "taskmanager.numberOfTaskSlots": "4"}
    spec = task_executor_process_spec_from_config(with_default_process_size(conf, "taskmanager"))
    assert managed_memory_per_slot(conf, 4) == spec.get_managed_memory_per_slot().get_bytes()
    # the default 1728m process: Flink's managed memory is 0.4 of the Flink memory (1280m - 5 bytes rounding)
    default = task_executor_process_spec_from_config(with_default_process_size({}, "taskmanager"))
    assert managed_memory_per_slot({}, 2) == default.flink_memory.managed.get_bytes() // 2
    assert managed_memory_per_slot({"taskmanager.memory.managed.size": "300m"}, 3) == 100 * MB


def test_the_shared_resources_are_sized_from_the_slots_managed_memory(tmp_path) -> None:
    manager = MemoryManager(300 * MB)
    keyed = backend(tmp_path, "a", {**ROCKSDB, "state.backend.rocksdb.memory.write-buffer-ratio": "0.4"}, manager)
    try:
        shared = keyed.shared_resources.resource
        assert (shared.total_memory_size, shared.cache_capacity, shared.write_buffer_manager_capacity) == (
            300 * MB, int(2.6 * 300 * MB / 3), int(0.8 * 300 * MB / 3))
        assert shared.write_buffer_manager.get_buffer_size() == shared.write_buffer_manager_capacity
    finally:
        keyed.dispose()


def test_fixed_per_slot_overrides_the_managed_memory(tmp_path) -> None:
    manager = MemoryManager(300 * MB)
    conf = {**ROCKSDB, "state.backend.rocksdb.memory.fixed-per-slot": "48m",
            "state.backend.rocksdb.memory.managed": "false"}
    keyed = backend(tmp_path, "a", conf, manager)
    try:
        assert manager.metrics()["rocksdb"]["capacity"] == 48 * MB
        assert manager.metrics()["rocksdb"]["cache_capacity"] == int(2.5 * 48 * MB / 3)
    finally:
        keyed.dispose()


def test_unmanaged_mode_shares_nothing_and_leaves_the_slot_untouched(tmp_path) -> None:
    manager = MemoryManager(300 * MB)
    keyed = backend(tmp_path, "a", {**ROCKSDB, "state.backend.rocksdb.memory.managed": "false"}, manager)
    try:
        assert keyed.shared_resources is None
        assert manager.metrics() == {}
    finally:
        keyed.dispose()


def test_a_share_too_small_for_a_memtables_arena_block_logs_flinks_warning(tmp_path, caplog) -> None:
    # 64 MiB write buffers have 8 MiB arena blocks; 16 MiB * 0.5 gives a 5.3 MiB write buffer
    # manager whose mutable limit (7/8) is smaller: Flink warns that RocksDB flushes constantly
    with caplog.at_level("WARNING", logger="streamkernel.runtime.state.rocksdb_memory"):
        backend(tmp_path, "small", ROCKSDB, MemoryManager(16 * MB)).dispose()
    assert "arenaBlockSize 8388608 > mutableLimit 4893354" in caplog.text
    assert "taskmanager.memory.managed.size" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="streamkernel.runtime.state.rocksdb_memory"):
        backend(tmp_path, "large", ROCKSDB, MemoryManager(32 * MB)).dispose()
    assert "arenaBlockSize" not in caplog.text


@pytest.mark.parametrize("conf,named", [
    ({"state.backend.rocksdb.memory.write-buffer-ratio": "1.0"}, "write-buffer-ratio"),
    ({"state.backend.rocksdb.memory.high-prio-pool-ratio": "0"}, "high-prio-pool-ratio"),
    ({"state.backend.rocksdb.memory.write-buffer-ratio": "0.9",
      "state.backend.rocksdb.memory.high-prio-pool-ratio": "0.5"}, "writeBufferRatio 0.9 with highPriPoolRatio 0.5"),
    ({"state.backend.rocksdb.memory.fixed-per-slot": "0"}, "fixed-per-slot"),
])
def test_bad_memory_settings_fail_at_submission_naming_the_key(conf: dict, named: str) -> None:
    with pytest.raises(IllegalConfigurationError, match=named):
        validate_configuration(conf)


def test_bad_ratios_fail_execute_before_any_task_runs() -> None:
    seen: list = []
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(
        {**ROCKSDB, "state.backend.rocksdb.memory.write-buffer-ratio": "0.8",
         "state.backend.rocksdb.memory.high-prio-pool-ratio": "0.5"}))
    env.from_collection([1, 2, 3]).key_by(key_of).map(seen.append)
    with pytest.raises(IllegalConfigurationError, match="writeBufferRatio 0.8 with highPriPoolRatio 0.5"):
        env.execute("bad ratios")
    assert seen == []


# ------------------------------------------------------------------ sharing and usage
def test_two_backends_of_one_slot_share_one_cache_and_release_it_with_the_last(tmp_path) -> None:
    manager, other_slot = MemoryManager(64 * MB, 0), MemoryManager(64 * MB, 1)
    a, b = backend(tmp_path, "a", ROCKSDB, manager), backend(tmp_path, "b", ROCKSDB, manager)
    c = backend(tmp_path, "c", ROCKSDB, other_slot)
    try:
        assert a.shared_resources.resource is b.shared_resources.resource
        assert c.shared_resources.resource is not a.shared_resources.resource
        assert manager.metrics()["rocksdb"]["leases"] == 2
        idle = other_slot.metrics()["rocksdb"]["write_buffer_usage"]  # c's empty memtable
        count = a.get_state(ValueStateDescriptor("count"))
        for i in range(20_000):
            a.current_key = i
            count.update(os.urandom(64))
        used = manager.metrics()["rocksdb"]
        assert used["write_buffer_usage"] > 0 and used["used"] >= used["write_buffer_usage"]
        assert used["write_buffer_usage"] > idle
        assert other_slot.metrics()["rocksdb"]["write_buffer_usage"] == idle  # c's slot saw none of a's writes
        a.dispose()
        assert manager.metrics()["rocksdb"]["leases"] == 1
    finally:
        for keyed in (a, b, c):
            keyed.dispose()
    assert manager.metrics() == {} and other_slot.metrics() == {}


def key_of(value: Any) -> Any:
    return value % 50


def add(a: int, b: int) -> int:
    return a + b


def test_two_keyed_operators_in_one_slot_share_one_cache_reported_by_the_taskmanager() -> None:
    gate = Gate("hold")
    conf = {**ROCKSDB, "taskmanager.memory.managed.size": "96m"}
    cluster = MiniCluster(1, 1, configuration=conf).start(make_current=False)
    try:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration.from_dict({**ROCKSDB, "restart-strategy.type": "none"}))
        env.set_parallelism(1)
        (env.from_source(ScriptedSource(list(range(500)) + [gate]), WatermarkStrategy.no_watermarks(), "numbers")
            .key_by(key_of).reduce(add).key_by(key_of).reduce(add).print())
        client = cluster.submit(env.get_stream_graph("two keyed operators"))
        [taskmanager] = cluster.taskmanager_backend.taskmanagers

        def slot_rocksdb() -> Any:
            return taskmanager.heartbeat().slot_memory[0].get("rocksdb")

        wait_until(lambda: gate.reached and (slot_rocksdb() or {}).get("leases") == 2,
                   message="both keyed operators of the slot to lease its RocksDB memory")
        used = slot_rocksdb()
        assert used["capacity"] == 96 * MB and taskmanager.heartbeat().slot_memory[0]["managed"]["size"] == 96 * MB
        assert used["used"] > 0
        gate.open()
        client.get_job_execution_result().result(timeout=120)
        wait_until(lambda: "rocksdb" not in taskmanager.heartbeat().slot_memory[0],
                   message="the slot's RocksDB memory to be released with its last backend")
    finally:
        cluster.stop()


def test_a_bad_memory_configuration_fails_at_cluster_start_naming_the_key() -> None:
    with pytest.raises(IllegalConfigurationError, match="taskmanager.memory"):
        MiniCluster(1, 1, configuration={"taskmanager.memory.process.size": "64m"}).start(make_current=False)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process backend on Linux")
def test_a_process_taskmanager_sizes_its_slots_from_the_cluster_configuration(tmp_path) -> None:
    gate = FileGate(tmp_path, "hold")
    conf = {**ROCKSDB, "taskmanager.memory.managed.size": "64m", "state.backend.rocksdb.memory.write-buffer-ratio": "0.3"}
    cluster = MiniCluster(1, 2, backend="process", configuration=conf).start(make_current=False)
    try:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration.from_dict({**conf, "restart-strategy.type": "none"}))
        env.set_parallelism(1)
        (env.from_source(ScriptedSource(list(range(200)) + [gate]), WatermarkStrategy.no_watermarks(), "numbers")
            .key_by(key_of).reduce(add).print())
        client = cluster.submit(env.get_stream_graph("keyed in a process"))
        [taskmanager_id] = cluster.taskmanager_backend.live_ids()
        gateway = cluster._resource_manager.task_executor_gateway(taskmanager_id)

        def used_slots() -> dict:
            return {slot: m["rocksdb"] for slot, m in gateway.heartbeat().slot_memory.items() if "rocksdb" in m}

        wait_until(lambda: gate.reached and len(used_slots()) == 1, message="the keyed subtask's slot to use RocksDB")
        [(slot, rocksdb)] = used_slots().items()
        assert gateway.heartbeat().slot_memory[slot]["managed"]["size"] == 32 * MB  # 64m over two slots
        assert (rocksdb["capacity"], rocksdb["write_buffer_manager_capacity"]) == (32 * MB, int(2 * 32 * MB * 0.3 / 3))
        gate.open()
        client.get_job_execution_result().result(timeout=120)
    finally:
        cluster.stop()
