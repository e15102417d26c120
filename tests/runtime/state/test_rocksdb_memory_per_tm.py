"""RocksDB memory shared TaskManager-wide (Flink's ``state.backend.rocksdb.memory.fixed-per-tm``,
``TM_SHARED_UNMANAGED``): one cache and write buffer manager for every RocksDB instance of every slot,
Flink's precedence (fixed-per-slot, then managed, then fixed-per-tm), its usage reported once, a wrong
value naming the key."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.options import validate_configuration
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.errors import IllegalConfigurationError
from streamkernel.jupyter.widgets.models import memory_line
from streamkernel.runtime.core.clock import SystemClock
from streamkernel.runtime.memory.memory_manager import MemoryManager
from streamkernel.runtime.memory.shared_resources import TaskManagerSharedResources
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.state.factory import create_keyed_backend
from streamkernel.runtime.taskmanager.task_executor import TASKMANAGER_WIDE, TaskExecutor
from streamkernel.testing import FileGate, Gate, ScriptedSource, wait_until

MB = 1 << 20
ROCKSDB = {"state.backend.type": "rocksdb"}
PER_TM = "state.backend.rocksdb.memory.fixed-per-tm"
PER_SLOT = "state.backend.rocksdb.memory.fixed-per-slot"
MANAGED = "state.backend.rocksdb.memory.managed"
UNMANAGED = {**ROCKSDB, MANAGED: "false"}


def backend(tmp_path: Any, name: str, conf: dict, manager: Any, shared: Any) -> Any:
    return create_keyed_backend(conf, 128, range(128), working_dir=str(tmp_path / name), clock=SystemClock(),
                                memory_manager=manager, shared_resources=shared)


def test_two_slots_instances_share_one_taskmanager_cache_counted_once(tmp_path) -> None:
    shared = TaskManagerSharedResources({PER_TM: "48m", "state.backend.rocksdb.memory.write-buffer-ratio": "0.3"})
    slot0, slot1 = MemoryManager(64 * MB, 0), MemoryManager(64 * MB, 1)
    a, b = backend(tmp_path, "a", UNMANAGED, slot0, shared), backend(tmp_path, "b", UNMANAGED, slot1, shared)
    try:
        assert a.shared_resources.resource is b.shared_resources.resource
        resource = a.shared_resources.resource
        # Flink's formulas with the TaskManager's ratio (0.3), from the TaskManager's configuration
        assert (resource.total_memory_size, resource.cache_capacity, resource.write_buffer_manager_capacity) == (
            48 * MB, int(2.7 * 48 * MB / 3), int(2 * 48 * MB * 0.3 / 3))
        assert slot0.metrics() == {} and slot1.metrics() == {}  # not the slots' managed memory
        count = a.get_state(ValueStateDescriptor("count"))
        for i in range(20_000):
            a.current_key = i
            count.update(os.urandom(64))
        [(kind, used)] = shared.metrics().items()
        assert kind == "rocksdb" and used["leases"] == 2 and used["capacity"] == 48 * MB
        assert used["used"] == int(resource.cache.get_usage()) and used["write_buffer_usage"] > 0
        a.dispose()
        assert shared.metrics()["rocksdb"]["leases"] == 1
    finally:
        a.dispose()
        b.dispose()
    assert shared.metrics() == {}  # dropped with its last lease


@pytest.mark.parametrize("job, taskmanager, expected", [
    ({}, {PER_TM: "40m"}, ("slot", 64 * MB)),  # managed is on by default: it wins over fixed-per-tm
    ({PER_SLOT: "24m"}, {PER_TM: "40m"}, ("slot", 24 * MB)),  # fixed-per-slot wins over everything
    ({PER_SLOT: "24m", MANAGED: "true"}, {PER_TM: "40m"}, ("slot", 24 * MB)),
    ({MANAGED: "false"}, {PER_TM: "40m"}, ("taskmanager", 40 * MB)),
    ({MANAGED: "false"}, {PER_TM: "0"}, None),  # Flink: a size of 0 shares nothing
    ({MANAGED: "false"}, {}, None),  # each instance keeps RocksDB's own caches
    ({MANAGED: "false", PER_TM: "40m"}, {}, None),  # a cluster-level option: the job's value is not read
])
def test_precedence_is_flinks(tmp_path, job: dict, taskmanager: dict, expected: Optional[tuple]) -> None:
    shared, slot = TaskManagerSharedResources(taskmanager), MemoryManager(64 * MB)
    keyed = backend(tmp_path, "a", {**ROCKSDB, **job}, slot, shared)
    try:
        where = {"slot": slot.metrics(), "taskmanager": shared.metrics()}
        if expected is None:
            assert keyed.shared_resources is None and where == {"slot": {}, "taskmanager": {}}
        else:
            scope, size = expected
            assert where[scope]["rocksdb"]["capacity"] == size
            assert [s for s, metrics in where.items() if metrics] == [scope]
    finally:
        keyed.dispose()


@pytest.mark.parametrize("value", ["lots", "-1m", "12 parsecs"])
def test_a_wrong_value_names_the_key(value: str) -> None:
    with pytest.raises(IllegalConfigurationError, match=f"'{PER_TM}'"):
        validate_configuration({PER_TM: value})
    with pytest.raises(IllegalConfigurationError, match=f"'{PER_TM}'"):
        TaskExecutor("taskmanager-x", 1, services=None, configuration={PER_TM: value})


def test_a_wrong_value_fails_the_cluster_start() -> None:
    with pytest.raises(IllegalConfigurationError, match=f"'{PER_TM}'"):
        MiniCluster(1, 1, configuration={PER_TM: "lots"}).start(make_current=False)


def key_of(value: Any) -> Any:
    return value % 50


def add(a: int, b: int) -> int:
    return a + b


def test_a_taskmanager_reports_its_shared_rocksdb_memory_once_in_the_heartbeat_and_the_cluster_view() -> None:
    gate = Gate("hold")
    conf = {**UNMANAGED, PER_TM: "40m"}
    cluster = MiniCluster(1, 2, configuration=conf).start(make_current=False)
    try:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration.from_dict({**UNMANAGED, "restart-strategy.type": "none"}))
        env.set_parallelism(2)  # one keyed subtask in each slot
        (env.from_source(ScriptedSource(list(range(500)) + [gate]), WatermarkStrategy.no_watermarks(), "numbers")
            .key_by(key_of).reduce(add).print())
        client = cluster.submit(env.get_stream_graph("keyed in two slots"))
        [taskmanager] = cluster.taskmanager_backend.taskmanagers

        def shared() -> Any:
            return taskmanager.heartbeat().slot_memory.get(TASKMANAGER_WIDE, {}).get("rocksdb")

        wait_until(lambda: gate.reached and (shared() or {}).get("leases") == 2,
                   message="the keyed subtasks of both slots to lease the TaskManager's RocksDB memory")
        memory = taskmanager.heartbeat().slot_memory
        assert shared()["capacity"] == 40 * MB and shared()["used"] > 0
        assert all("rocksdb" not in memory[slot] for slot in (0, 1))  # counted once, not per slot
        line = memory_line({"configuration": {"totalProcessMemory": 1 << 30}, "slots": memory}, 2)
        assert line is not None and line.rocksdb_used_mib == ()
        assert line.describe().endswith(f"; RocksDB uses TaskManager-wide: {shared()['used'] >> 20} MiB")
        gate.open()
        client.get_job_execution_result().result(timeout=120)
        wait_until(lambda: TASKMANAGER_WIDE not in taskmanager.heartbeat().slot_memory,
                   message="the TaskManager's RocksDB memory to be dropped with its last backend")
    finally:
        cluster.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process backend on Linux")
def test_a_process_taskmanager_reads_fixed_per_tm_from_the_cluster_configuration(tmp_path) -> None:
    gate = FileGate(tmp_path, "hold")
    conf = {**UNMANAGED, PER_TM: "24m"}
    cluster = MiniCluster(1, 2, backend="process", configuration=conf).start(make_current=False)
    try:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration.from_dict({**UNMANAGED, "restart-strategy.type": "none"}))
        env.set_parallelism(2)
        (env.from_source(ScriptedSource(list(range(200)) + [gate]), WatermarkStrategy.no_watermarks(), "numbers")
            .key_by(key_of).reduce(add).print())
        client = cluster.submit(env.get_stream_graph("keyed in a process"))
        [taskmanager_id] = cluster.taskmanager_backend.live_ids()
        gateway = cluster._resource_manager.task_executor_gateway(taskmanager_id)

        def shared() -> Any:
            return gateway.heartbeat().slot_memory.get(TASKMANAGER_WIDE, {}).get("rocksdb")

        wait_until(lambda: gate.reached and (shared() or {}).get("leases") == 2,
                   message="both slots' keyed subtasks to lease the process TaskManager's RocksDB memory")
        assert shared()["capacity"] == 24 * MB
        gate.open()
        client.get_job_execution_result().result(timeout=120)
    finally:
        cluster.stop()
