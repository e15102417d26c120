"""Unaligned checkpoints end to end: a backpressured keyed job, exactly once across a failure.

A slow keyed operator (held on a valve) sits behind a fast source whose records fill its
input channels. With unaligned checkpoints on, its barrier overtakes the queued buffers,
which the checkpoint stores as in-flight data; a failure injected after that checkpoint
completed restores the operator's state, feeds it the in-flight records first, and the
exactly-once FileSink commits every count exactly once. Savepoints stay aligned, and a
checkpoint holding in-flight data restores at another parallelism (its records move to the
subtasks owning their keys).

The same jobs run on the ``process`` backend (2 TaskManager processes of one slot each: the
keyed exchange crosses TCP channels, whose barriers are sent without credit and announced
like local ones), where a killed TaskManager stands in for the failure, and once on ``spark``.
There the valve and the gate are ``FileGate``s: an Event would not reach another process.
"""

from __future__ import annotations

import collections
import concurrent.futures
import importlib.util
import os
import pathlib
import time
from typing import Any, Iterator

import pytest

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.common.serialization import Encoder
from streamkernel.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from streamkernel.datastream.connectors import FileSink, RollingPolicy
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import FileGate, Gate, ScriptedSource, wait_until

KEYS = ["a", "b", "c", "d", "e"]
RECORDS = [KEYS[i % len(KEYS)] for i in range(200)]
#: like tests/spark: skipped only where pyspark is not installed; deselect with -m "not spark"
SPARK = [pytest.mark.spark, pytest.mark.skipif(importlib.util.find_spec("pyspark") is None,
                                               reason="pyspark is not installed")]
BEFORE_GATE = 40  # 20 per source subtask: several buffers of 4 records queue behind the held operator


def cluster_for(backend: str) -> MiniCluster:
    """Four slots in one process (local), or two TaskManager processes of one slot each."""
    if backend == "local":
        return MiniCluster(1, 4)
    return MiniCluster(2, 1, backend=backend)


def gate_and_valve(backend: str, tmp_path: pathlib.Path) -> tuple[Any, Any]:
    """The source's gate and the slow operator's valve: in memory, or files for TaskManager processes."""
    if backend == "local":
        return Gate("gate"), Gate("valve")
    return FileGate(tmp_path, "gate"), FileGate(tmp_path, "valve")


class ValvedCount(KeyedProcessFunction):
    """Counts per key; every record waits until the test opens the valve (the slow operator)."""

    def __init__(self, valve: Any) -> None:
        self.valve = valve

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", None))

    def process_element(self, key: str, ctx: Any) -> Iterator[str]:
        self.valve.wait_open()
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{key}:{count}"


def committed_lines(path: pathlib.Path) -> list[str]:
    """Every line of the FileSink's committed part files."""
    return [line for file in sorted(path.rglob("*")) if file.is_file() and not file.name.startswith(".")
            for line in file.read_text().splitlines()]


def expected_lines(records: list[str]) -> collections.Counter:
    """Each key's running counts 1..n, once each (computed from the records, not the engine)."""
    totals = collections.Counter(records)
    return collections.Counter(f"{key}:{n}" for key, total in totals.items() for n in range(1, total + 1))


def build(tmp_path: pathlib.Path, gate: Gate, valve: Any, parallelism: int = 2,
          extra: dict | None = None) -> StreamExecutionEnvironment:
    conf = {"execution.checkpointing.dir": str(tmp_path / "checkpoints"),
            "execution.checkpointing.unaligned.enabled": "true",
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
            "taskmanager.network.batch-size": "4",
            "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "2",
            "restart-strategy.fixed-delay.delay": "10 ms", **(extra or {})}
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
    env.enable_checkpointing(3_600_000)  # on, but only the checkpoints the test triggers
    env.set_parallelism(parallelism)
    (env.from_source(ScriptedSource(RECORDS[:BEFORE_GATE] + [gate] + RECORDS[BEFORE_GATE:]),
                     WatermarkStrategy.no_watermarks(), "keys").uid("keys")
        .set_parallelism(2)  # a ScriptedSource keeps one position per subtask: it cannot rescale
        .key_by(lambda k: k).process(ValvedCount(valve)).uid("count").name("Count")
        .sink_to(FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
                 .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy()).build()).uid("out"))
    return env


def running(client: Any) -> bool:
    return client.get_job_status().result() is JobStatus.RUNNING and all(
        s.state.value == "RUNNING" for s in client.get_job_details().subtasks)


def latest_completed(cluster: MiniCluster, job_id: Any) -> Any:
    """The statistics of the job's (only) completed checkpoint, once they are reported."""
    return wait_until(lambda: cluster.checkpoints.checkpoint_stats(job_id).latest_completed,
                      message="the completed checkpoint's statistics")


def take_backpressured_checkpoint(cluster: MiniCluster, client: Any, gate: Gate, valve: Any,
                                  held_ms: int = 0) -> str:
    """With the operator held and its channels full, trigger a checkpoint, then let the operator go
    (once ``held_ms`` passed since the trigger)."""
    job_id = client.get_job_id()
    wait_until(lambda: gate.reached and running(client), message="the sources at the gate")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(cluster.checkpoints.trigger_checkpoint, job_id)
        # the sources acknowledged: their barriers are in the channels, behind the queued buffers
        wait_until(lambda: [s.num_acknowledged for s in cluster.checkpoints.checkpoint_stats(job_id).history] == [2],
                   message="the source subtasks' acknowledgements")
        triggered = cluster.checkpoints.checkpoint_stats(job_id).history[0].trigger_timestamp
        wait_until(lambda: time.time_ns() // 1_000_000 >= triggered + held_ms, message=f"{held_ms} ms held")
        valve.open()
        return pending.result(60)


@pytest.mark.parametrize("backend", ["local", "process", pytest.param("spark", marks=SPARK)])
def test_an_unaligned_checkpoint_stores_in_flight_records_and_recovery_counts_each_exactly_once(
        tmp_path, backend: str) -> None:
    gate, valve = gate_and_valve(backend, tmp_path)
    env = build(tmp_path, gate, valve)
    with cluster_for(backend) as cluster:
        client = env.execute_async("unaligned exactly once")
        job_id = client.get_job_id()
        take_backpressured_checkpoint(cluster, client, gate, valve)
        stats = latest_completed(cluster, job_id)
        assert cluster.failures.fail_operator(job_id, "out")
        wait_until(lambda: client.get_job_details().num_restarts == 1 and running(client), message="the restart")
        gate.open()
        client.get_job_execution_result().result(60)
        details = client.get_job_details()

    assert stats.unaligned and stats.persisted_data > 0  # the barrier overtook queued records
    row = stats.row()
    assert row["unaligned"] is True and row["persisted_data"] == stats.persisted_data
    assert details.status is JobStatus.FINISHED
    assert details.checkpoints.latest_restored.checkpoint_id == stats.checkpoint_id
    assert collections.Counter(committed_lines(tmp_path / "out")) == expected_lines(RECORDS)


def test_savepoints_stay_aligned_with_unaligned_checkpoints_on(tmp_path) -> None:
    gate, valve = Gate(), Gate("valve")
    valve.open()
    env = build(tmp_path, gate, valve)
    with MiniCluster(1, 4) as cluster:
        client = env.execute_async("aligned savepoint")
        job_id = client.get_job_id()
        wait_until(lambda: gate.reached and running(client), message="the sources at the gate")
        cluster.checkpoints.trigger_savepoint(job_id, str(tmp_path / "savepoints"))
        savepoint = wait_until(lambda: cluster.checkpoints.checkpoint_stats(job_id).latest_savepoint,
                               message="the savepoint's statistics")
        gate.open()
        client.get_job_execution_result().result(60)

    assert savepoint.is_savepoint and not savepoint.unaligned and savepoint.persisted_data == 0


@pytest.mark.parametrize("old_parallelism, new_parallelism", [(2, 3), (3, 2)])
def test_in_flight_records_restored_at_another_parallelism_are_counted_exactly_once(
        tmp_path, old_parallelism: int, new_parallelism: int) -> None:
    gate, valve = Gate(), Gate("valve")
    with MiniCluster(1, 4) as cluster:
        client = build(tmp_path, gate, valve, parallelism=old_parallelism).execute_async("rescale source")
        checkpoint = take_backpressured_checkpoint(cluster, client, gate, valve)
        stats = latest_completed(cluster, client.get_job_id())
        client.cancel().result()
        open_gate = Gate()
        open_gate.open()
        rescaled = build(tmp_path, open_gate, valve, parallelism=new_parallelism,
                         extra={"execution.state-recovery.path": checkpoint}).execute_async("rescaled")
        rescaled.get_job_execution_result().result(60)
        details = rescaled.get_job_details()

    assert stats.unaligned and stats.persisted_data > 0  # in-flight records had to move
    assert details.status is JobStatus.FINISHED
    assert details.checkpoints.latest_restored.checkpoint_id == int(os.path.basename(checkpoint)[len("chk-"):])
    assert sorted({s.subtask_index for s in details.subtasks if "Count" in s.name}) == list(range(new_parallelism))
    # each key's running count: nothing lost, nothing twice
    assert collections.Counter(committed_lines(tmp_path / "out")) == expected_lines(RECORDS)


def test_a_killed_taskmanager_process_recovers_from_an_unaligned_checkpoint_exactly_once(tmp_path) -> None:
    gate, valve = gate_and_valve("process", tmp_path)
    env = build(tmp_path, gate, valve)
    with cluster_for("process") as cluster:
        client = env.execute_async("unaligned checkpoint, killed taskmanager")
        job_id = client.get_job_id()
        take_backpressured_checkpoint(cluster, client, gate, valve)
        stats = latest_completed(cluster, job_id)
        assert cluster.failures.kill_taskmanager("taskmanager-2") == "taskmanager-2"
        wait_until(lambda: client.get_job_details().num_restarts >= 1 and running(client),
                   message="the job running again on the replacement TaskManager")
        gate.open()
        client.get_job_execution_result().result(120)
        details = client.get_job_details()

    assert stats.unaligned and stats.persisted_data > 0
    assert details.status is JobStatus.FINISHED
    assert details.checkpoints.latest_restored.checkpoint_id == stats.checkpoint_id
    assert collections.Counter(committed_lines(tmp_path / "out")) == expected_lines(RECORDS)


def source_backpressured_ns(cluster: MiniCluster) -> int:
    """The source subtasks' backpressured time, from the cluster's metrics snapshot."""
    return source_metric(cluster, "backpressured_ns")


def source_metric(cluster: MiniCluster, name: str) -> int:
    """The sum of the source subtasks' metric ``name``, from the cluster's metrics snapshot."""
    return sum((s.get("metrics") or {}).get(name) or 0
               for job in cluster.inspection.snapshot()["jobs"] for vertex in job["vertices"]
               for s in vertex["subtasks"] if s["name"].startswith("Source"))


def test_a_source_held_by_an_operator_in_another_taskmanager_acknowledges_a_checkpoint_at_once(tmp_path) -> None:
    """Output availability over TCP: the source waits for a credit where it sees the trigger
    (not in a send that only the held operator could end), so it snapshots while held."""
    valve = FileGate(tmp_path, "valve")
    conf = {"execution.checkpointing.dir": str(tmp_path / "checkpoints"),
            "execution.checkpointing.unaligned.enabled": "true", "taskmanager.network.batch-size": "4"}
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
    env.enable_checkpointing(3_600_000)
    env.set_parallelism(1)
    (env.from_source(ScriptedSource(RECORDS), WatermarkStrategy.no_watermarks(), "keys").uid("keys")
        .key_by(lambda k: k).process(ValvedCount(valve)).uid("count").name("Count")
        .slot_sharing_group("held")  # its own slot: the other TaskManager, behind a TCP channel
        .add_sink(lambda line: None).uid("discard"))
    with cluster_for("process") as cluster:
        client = env.execute_async("held by a remote operator")
        job_id = client.get_job_id()
        # backpressured once the held operator's channel is full: buffers (of 4 records) queue behind
        # the one it holds (a wait for the consumer's very first credit counts as backpressure too)
        wait_until(lambda: running(client) and source_backpressured_ns(cluster) > 0
                   and source_metric(cluster, "records_out") >= 12,
                   message="the source waiting for credit from the held operator")
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(cluster.checkpoints.trigger_checkpoint, job_id)
            wait_until(lambda: [s.num_acknowledged for s in cluster.checkpoints.checkpoint_stats(job_id).history] == [1],
                       message="the held source's acknowledgement")
            acknowledged_while_held = not valve.is_open
            valve.open()
            pending.result(60)
        stats = latest_completed(cluster, job_id)
        client.get_job_execution_result().result(60)

    assert acknowledged_while_held
    assert stats.unaligned and stats.persisted_data > 0


@pytest.mark.parametrize("backend", ["local", "process"])
@pytest.mark.parametrize("timeout_ms, unaligned", [(3_600_000, False), (50, True)])
def test_a_checkpoint_aligns_until_the_aligned_checkpoint_timeout_then_goes_unaligned(
        tmp_path, timeout_ms: int, unaligned: bool, backend: str) -> None:
    gate, valve = gate_and_valve(backend, tmp_path)
    env = build(tmp_path, gate, valve, extra={"execution.checkpointing.aligned-checkpoint-timeout": f"{timeout_ms} ms"})
    with cluster_for(backend) as cluster:
        client = env.execute_async("aligned timeout")
        take_backpressured_checkpoint(cluster, client, gate, valve, held_ms=100)  # longer than 50 ms
        stats = latest_completed(cluster, client.get_job_id())
        gate.open()
        client.get_job_execution_result().result(60)

    assert stats.unaligned is unaligned and (stats.persisted_data > 0) is unaligned
    assert collections.Counter(committed_lines(tmp_path / "out")) == expected_lines(RECORDS)
