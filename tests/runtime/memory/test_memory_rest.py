"""A TaskManager's memory as Flink's REST API shows it (issue 19): ``/taskmanagers/:id``
``memoryConfiguration`` is Flink's calculation for the cluster's ``taskmanager.memory.*`` keys, its
``totalResource`` the task heap, off-heap, managed and network memory in MiB, and its metrics the
measured process (``heapCommitted``: the resident set) and the task heap estimate."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from streamkernel.runtime.memory import task_executor_process_spec_from_config
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing.waiting import wait_until


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def test_the_rest_api_shows_each_taskmanagers_memory_configuration_as_flink_computes_it() -> None:
    conf = {"taskmanager.memory.process.size": "2g", "taskmanager.memory.managed.fraction": "0.5", "rest.port": "0"}
    spec = task_executor_process_spec_from_config({**conf, "taskmanager.numberOfTaskSlots": "2"})
    with MiniCluster(taskmanagers=1, slots_per_taskmanager=2, backend="local", configuration=conf) as cluster:
        url = f"{cluster.rest_url}/taskmanagers/taskmanager-1"
        info = wait_until(lambda: (lambda body: body if body["memoryConfiguration"]["totalProcessMemory"] else None)(
            get(url)), message="a heartbeat with the TaskManager's memory")
    memory = info["memoryConfiguration"]
    assert memory["totalProcessMemory"] == 2 << 30 == spec.get_total_process_memory_size().get_bytes()
    assert memory["managedMemory"] == spec.flink_memory.managed.get_bytes()
    assert memory["networkMemory"] == spec.flink_memory.network.get_bytes()
    assert memory["totalFlinkMemory"] == sum(memory[k] for k in (
        "frameworkHeap", "taskHeap", "frameworkOffHeap", "taskOffHeap", "networkMemory", "managedMemory"))
    assert memory["totalProcessMemory"] == memory["totalFlinkMemory"] + memory["jvmMetaspace"] + memory["jvmOverhead"]
    assert info["totalResource"]["managedMemory"] == memory["managedMemory"] >> 20
    assert info["freeResource"]["managedMemory"] == memory["managedMemory"] >> 20  # both slots free
    assert info["hardware"]["managedMemory"] == memory["managedMemory"]
    assert info["metrics"]["heapMax"] == memory["frameworkHeap"] + memory["taskHeap"]
    assert info["metrics"]["heapCommitted"] > 0  # the measured resident set of the process


def test_the_cluster_view_shows_each_taskmanagers_memory_configured_and_measured() -> None:
    from streamkernel.jupyter.widgets.models import cluster_model
    from streamkernel.jupyter.widgets.text import cluster_text

    conf = {"taskmanager.memory.process.size": "1g", "taskmanager.memory.managed.size": "256m"}
    with MiniCluster(taskmanagers=1, slots_per_taskmanager=2, backend="local", configuration=conf,
                     rest=False) as cluster:
        snapshot = cluster.inspection.snapshot()
    text = cluster_text(cluster_model(snapshot))
    assert "  memory: process 1024 MiB (RSS " in text and "managed 256 MiB (128 MiB per slot)" in text, text
    network = snapshot["taskmanagers"][0]["memory"]["metrics"]["Status.Shuffle.Netty.TotalMemorySegments"]
    assert network > 0 and f"({network} buffers, 0 in use)" in text, text
    rss = snapshot["taskmanagers"][0]["memory"]["rss"]
    assert rss > 0 and f"RSS {rss >> 20} MiB" in text


def test_the_cluster_view_shows_what_rocksdb_uses_of_each_slots_managed_memory() -> None:
    from streamkernel.common import Configuration, Types, WatermarkStrategy
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.jupyter.widgets.models import cluster_model
    from streamkernel.jupyter.widgets.text import cluster_text
    from streamkernel.testing import Gate, ScriptedSource

    gate = Gate("hold")
    with MiniCluster(taskmanagers=1, slots_per_taskmanager=1, backend="local",
                     configuration={"taskmanager.memory.managed.size": "64m"}, rest=False) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration().set_string("state.backend.type", "rocksdb"))
        env.set_parallelism(1)
        source = ScriptedSource([*range(200), gate])
        env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers", type_info=Types.INT()) \
            .key_by(lambda n: n % 10).reduce(lambda a, b: a + b).add_sink(lambda x: None)
        client = cluster.submit(env.get_stream_graph("rocksdb in a slot"))
        try:
            text = wait_until(lambda: (lambda t: t if "RocksDB uses slot 1: " in t else None)(
                cluster_text(cluster_model(cluster.inspection.snapshot()))),
                message="the slot's RocksDB usage in the cluster view")
        finally:
            gate.open()
            client.get_job_execution_result().result(60)
    assert "managed 64 MiB (64 MiB per slot)" in text, text


def test_the_web_uis_taskmanager_metrics_are_served_by_flinks_names() -> None:
    """The Web UI's TaskManager page asks /taskmanagers/:id/metrics for these eight; a running
    RocksDB job's slot shows its shared resource as managed memory in use."""
    from streamkernel.common import Configuration, Types, WatermarkStrategy
    from streamkernel.datastream import StreamExecutionEnvironment
    from streamkernel.testing import Gate, ScriptedSource

    asked = ("Status.JVM.Memory.Heap.Used,Status.JVM.Memory.Heap.Max,Status.Shuffle.Netty.UsedMemory,"
             "Status.Shuffle.Netty.TotalMemory,Status.Flink.Memory.Managed.Used,Status.Flink.Memory.Managed.Total,"
             "Status.JVM.Memory.Metaspace.Used,Status.JVM.Memory.Metaspace.Max")
    conf = {"taskmanager.memory.managed.size": "64m", "taskmanager.memory.process.size": "1g", "rest.port": "0"}
    spec = task_executor_process_spec_from_config({**conf, "taskmanager.numberOfTaskSlots": "1"})
    gate = Gate("hold")
    with MiniCluster(taskmanagers=1, slots_per_taskmanager=1, backend="local", configuration=conf) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment(
            Configuration().set_string("state.backend.type", "rocksdb"))
        env.set_parallelism(1)
        env.from_source(ScriptedSource([*range(100), gate]), WatermarkStrategy.no_watermarks(), "numbers",
                        type_info=Types.INT()).key_by(lambda n: n % 10).reduce(lambda a, b: a + b) \
            .add_sink(lambda x: None)
        client = cluster.submit(env.get_stream_graph("rocksdb in a slot"))
        url = f"{cluster.rest_url}/taskmanagers/taskmanager-1/metrics?get={asked}"
        try:
            metrics = wait_until(lambda: (lambda m: m if m.get("Status.Flink.Memory.Managed.Used") else None)(
                {entry["id"]: int(entry["value"]) for entry in get(url)}), message="managed memory in use")
        finally:
            gate.open()
            client.get_job_execution_result().result(60)
        # given back with the job's last RocksDB instance (seen at the next heartbeat)
        wait_until(lambda: {e["id"]: int(e["value"]) for e in get(url)}["Status.Flink.Memory.Managed.Used"] == 0,
                   message="the slot's managed memory released")
    assert metrics["Status.Flink.Memory.Managed.Total"] == spec.flink_memory.managed.get_bytes() == 64 << 20
    assert metrics["Status.Flink.Memory.Managed.Used"] == 64 << 20  # the slot's RocksDB cache + write buffers
    assert metrics["Status.JVM.Memory.Heap.Max"] == spec.flink_memory.get_jvm_heap_memory_size().get_bytes()
    assert metrics["Status.JVM.Memory.Metaspace.Max"] == spec.jvm_metaspace_and_overhead.metaspace.get_bytes()
    assert metrics["Status.Shuffle.Netty.TotalMemory"] == spec.flink_memory.network.get_bytes()
    assert "Status.JVM.Memory.Heap.Used" in metrics and "Status.JVM.Memory.Metaspace.Used" not in metrics
