"""The task heap in use, estimated (issue 19; streamkernel/runtime/taskmanager/memory_watchdog.py).

The estimate is what the TaskManager uses now: its RSS minus the process's own baseline (before
any task ran), minus the managed memory its slots' RocksDB use and the network buffers holding
data; at least 0. A job whose heap state holds 50 MB makes it grow by most of that (REST
``heapUsed``, the cluster view), and it falls back once the job ended; the watchdog's "exceeds
the task heap" advice follows it.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from typing import Any

import pytest

from streamkernel.common import Types, WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.functions import KeyedProcessFunction
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.taskmanager.memory_watchdog import (
    MemoryUsage,
    ProcessMemoryWatchdog,
    managed_memory_in_use,
    network_memory_in_use,
    taskmanager_process_spec,
)
from streamkernel.testing import Gate, ScriptedSource
from streamkernel.testing.waiting import wait_until

MB = 1 << 20
#: A small TaskManager the calculation accepts: the fixed parts shrunk to fit 300m.
SMALL = {"taskmanager.memory.process.size": "300m", "taskmanager.memory.framework.heap.size": "16m",
         "taskmanager.memory.framework.off-heap.size": "16m", "taskmanager.memory.jvm-metaspace.size": "16m",
         "taskmanager.memory.jvm-overhead.min": "16m", "taskmanager.memory.network.min": "8m"}


class _Executor:
    """What the watchdog asks of a TaskExecutor: its slots' managed memory and its buffer metrics."""

    def __init__(self, rocksdb_used: int, buffers_used: int) -> None:
        self.rocksdb_used, self.buffers_used = rocksdb_used, buffers_used

    def memory_metrics(self) -> dict:
        return {0: {"managed": {"size": 64 * MB}, "rocksdb": {"used": self.rocksdb_used, "leases": 1}},
                1: {"managed": {"size": 64 * MB}}}

    def metrics(self) -> dict:
        return {"Status.Shuffle.Netty.UsedMemory": self.buffers_used}


def _watchdog(rss: int, baseline: int) -> ProcessMemoryWatchdog:
    return ProcessMemoryWatchdog("taskmanager-7", taskmanager_process_spec(SMALL), SMALL, enforce=True,
                                 read_rss=lambda: rss, baseline_rss=baseline)


# ------------------------------------------------------------------------------ the formula
def test_the_estimate_is_rss_minus_baseline_managed_and_network_in_use() -> None:
    watchdog = _watchdog(200 * MB, baseline=60 * MB)
    assert watchdog.usage().task_heap_used_estimate == 140 * MB  # type: ignore[union-attr]  # nothing attached
    watchdog.attach(_Executor(rocksdb_used=30 * MB, buffers_used=2 * MB))
    usage = watchdog.usage()
    assert isinstance(usage, MemoryUsage)
    assert usage.task_heap_used_estimate == (200 - 60 - 30 - 2) * MB
    assert (usage.baseline_rss, usage.managed_used, usage.network_used) == (60 * MB, 30 * MB, 2 * MB)
    assert usage.to_dict()["task_heap_used_estimate"] == 108 * MB
    # figures handed in (the heartbeat has them already) win over asking the TaskExecutor
    assert watchdog.usage((100 * MB, 0)).task_heap_used_estimate == 40 * MB  # type: ignore[union-attr]
    # never negative: RocksDB's cache can be charged before the RSS shows it
    assert _watchdog(50 * MB, baseline=60 * MB).usage().task_heap_used_estimate == 0  # type: ignore[union-attr]


def test_the_in_use_figures_come_from_the_slots_and_the_buffer_metrics() -> None:
    executor = _Executor(rocksdb_used=7, buffers_used=3)
    assert managed_memory_in_use(executor.memory_metrics()) == 7  # the slot's size is not use
    # BATCH sorters' memory in a slot and the RocksDB memory all slots share (fixed-per-tm) count too
    report = {0: {"managed": {"size": 64 * MB}, "operator": {"reserved": 8 * MB, "used": 3, "spilled_runs": 1}},
              "taskmanager": {"rocksdb": {"capacity": 32 * MB, "used": 5, "leases": 2}}}
    assert managed_memory_in_use(report) == 8
    assert network_memory_in_use(executor.metrics()) == 3 and network_memory_in_use({}) == 0


def test_the_baseline_is_measured_when_the_taskmanager_starts() -> None:
    rss = [80 * MB]
    watchdog = ProcessMemoryWatchdog("tm", taskmanager_process_spec(SMALL), SMALL, enforce=False,
                                     read_rss=lambda: rss[0])
    assert watchdog.baseline_rss == 80 * MB
    rss[0] = 90 * MB  # the worker connected, built its TaskExecutor: still no task
    watchdog.start()
    rss[0] = 120 * MB
    assert watchdog.baseline_rss == 90 * MB and watchdog.usage().task_heap_used_estimate == 30 * MB  # type: ignore[union-attr]


def test_the_task_heap_advice_follows_the_estimate_not_the_configured_parts() -> None:
    task_heap = taskmanager_process_spec(SMALL).flink_memory.task_heap.get_bytes()
    # above the process size, but the process was big before any task ran: the task heap is not the culprit
    big_baseline = _watchdog(310 * MB, baseline=250 * MB)
    text = str(big_baseline.check())
    assert "exceeded its total process memory" in text and "raise 'taskmanager.memory.process.size'" in text
    assert "taskmanager.memory.task.heap.size" not in text, text
    # the tasks grew the process by more than the task heap: the advice names it and the estimate
    grown = _watchdog(310 * MB, baseline=20 * MB)
    grown.attach(_Executor(rocksdb_used=10 * MB, buffers_used=0))
    usage = grown.usage()
    assert usage is not None and usage.task_heap_used_estimate == 280 * MB > task_heap
    text = str(grown.check())
    assert "the task heap in use (estimated: RSS minus the process's baseline, managed memory and network buffers " \
           "in use: 280.000mb (293601280 bytes)) exceeds the task heap 'taskmanager.memory.task.heap.size'" in text, text


# ---------------------------------------------------------------------- a job's heap state
class _HoldMegabytes(KeyedProcessFunction):
    """Keeps 1 MB of bytes in heap state per key."""

    def open(self, runtime_context: Any) -> None:
        self.held = runtime_context.get_state(ValueStateDescriptor("held", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value: int, ctx: Any) -> Any:
        self.held.update(bytes([value % 256]) * MB)  # written, hence resident
        yield value


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="measures RSS through /proc")
def test_heap_state_of_50_mb_grows_the_estimate_and_it_falls_back_after_the_job() -> None:
    from streamkernel.jupyter.widgets.models import cluster_model
    from streamkernel.jupyter.widgets.text import cluster_text

    gate = Gate("state held")
    conf = {**SMALL, "heartbeat.interval": "200 ms", "rest.port": "0"}
    with MiniCluster(taskmanagers=1, slots_per_taskmanager=1, backend="local", configuration=conf) as cluster:
        url = f"{cluster.rest_url}/taskmanagers/taskmanager-1"

        def heap_used() -> int:
            return int(_get(url)["metrics"]["heapUsed"])

        wait_until(lambda: _get(url)["memoryConfiguration"]["totalProcessMemory"],
                   message="a heartbeat with the TaskManager's memory")
        before = heap_used()
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        source = ScriptedSource([*range(50), gate])
        env.from_source(source, WatermarkStrategy.no_watermarks(), "keys", type_info=Types.INT()) \
            .key_by(lambda n: n).process(_HoldMegabytes(), output_type=Types.INT()).add_sink(lambda x: None)
        client = cluster.submit(env.get_stream_graph("holds 50 MB of heap state"))
        try:
            held = wait_until(lambda: (lambda used: used if used >= before + 40 * MB else None)(heap_used()),
                              message=f"REST heapUsed to grow by 40 MB from {before >> 20} MiB")
            text = cluster_text(cluster_model(cluster.inspection.snapshot()))
            assert "task heap ~" in text, text
            shown = int(text.split("task heap ~", 1)[1].split(" MiB", 1)[0])
            assert shown >= (before + 40 * MB) >> 20, text
        finally:
            gate.open()
        client.get_job_execution_result().result(60)
        wait_until(lambda: heap_used() <= held - 40 * MB or None,
                   message=f"REST heapUsed to fall back by 40 MB from {held >> 20} MiB after the job ended")
