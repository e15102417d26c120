"""Buffer debloating end to end: a fast source in front of a slow keyed operator (local backend;
once on the process backend, where the sizes cross TCP).

Without debloating the operator's input channel holds ``credits x batch-size`` records once the
job is backpressured; with it the operator announces a buffer size worth ``target`` of its
throughput, so the channel holds a fraction of that, and an ALIGNED checkpoint taken while it is
backpressured completes; recovery from it counts every record exactly once.
"""

from __future__ import annotations

import collections
import pathlib
import time
from typing import Any, Iterator

from streamkernel.common import Configuration, WatermarkStrategy
from streamkernel.common.job_status import JobStatus
from streamkernel.common.serialization import Encoder
from streamkernel.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from streamkernel.datastream.connectors import FileSink, RollingPolicy
from streamkernel.datastream.connectors.datagen import DataGeneratorSource
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.testing import Gate, ScriptedSource, wait_until

KEYS = ["a", "b", "c", "d", "e"]
BATCH = 256  # taskmanager.network.batch-size: the largest buffer
CREDITS = 4  # taskmanager.network.memory.buffers-per-channel, no floating buffers: 4 credits per channel
RECORDS = [KEYS[i % len(KEYS)] for i in range(4000)]
BEFORE_GATE = 3500  # the source holds here until the test lets it go (after the failure)


class SlowCount(KeyedProcessFunction):
    """Counts per key, slowly (a slow operator is what backpressures the source)."""

    def open(self, runtime_context: Any) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", None))

    def process_element(self, key: str, ctx: Any) -> Iterator[str]:
        # the operator's cost per record, not a wait for anything: debloating sizes buffers from
        # the throughput it measures, so the operator must be slow yet moving (a held one measures 0)
        time.sleep(0.0005)
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{key}:{count}"


def build(tmp_path: pathlib.Path, debloat: bool, source: Any, remote: bool = False) -> StreamExecutionEnvironment:
    conf = {"execution.checkpointing.dir": str(tmp_path / "checkpoints"),
            "taskmanager.network.batch-size": str(BATCH),
            "taskmanager.network.memory.buffers-per-channel": str(CREDITS),
            "taskmanager.network.memory.floating-buffers-per-gate": "0",
            "taskmanager.network.memory.buffer-debloat.enabled": str(debloat).lower(),
            "taskmanager.network.memory.buffer-debloat.target": "50 ms",
            "taskmanager.network.memory.buffer-debloat.period": "10 ms",
            "taskmanager.network.memory.buffer-debloat.samples": "3",
            "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": "2",
            "restart-strategy.fixed-delay.delay": "10 ms"}
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict(conf))
    env.enable_checkpointing(3_600_000)  # on, but only the checkpoints the test triggers
    env.set_parallelism(1)
    counts = (env.from_source(source, WatermarkStrategy.no_watermarks(), "keys").uid("keys")
              .key_by(lambda k: k).process(SlowCount()).uid("count").name("Count"))
    if remote:  # its own slot: the other TaskManager process, behind a TCP channel
        counts = counts.slot_sharing_group("slow")
    (counts.sink_to(FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
                 .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy()).build()).uid("out"))
    return env


def count_channels(cluster: MiniCluster) -> list:
    """The slow operator's input channels (of the attempt running now)."""
    return [channel for gate in cluster.shuffle.input_gates() if "Count" in gate.name and not gate.is_cancelled
            for channel in gate.channels]


def backpressured_in_flight(cluster: MiniCluster) -> int:
    """Records queued in the slow operator's input channels while they are full (0: not full)."""
    channels = count_channels(cluster)
    if not channels or any(channel.available_credits > 0 for channel in channels):
        return 0  # not backpressured (yet)
    return sum(channel.queued_records() for channel in channels)


def running(client: Any) -> bool:
    return client.get_job_status().result() is JobStatus.RUNNING and all(
        s.state.value == "RUNNING" for s in client.get_job_details().subtasks)


def committed_lines(path: pathlib.Path) -> list[str]:
    return [line for file in sorted(path.rglob("*")) if file.is_file() and not file.name.startswith(".")
            for line in file.read_text().splitlines()]


def expected_lines(records: list[str]) -> collections.Counter:
    """Each key's running counts 1..n, once each (computed from the records, not the engine)."""
    totals = collections.Counter(records)
    return collections.Counter(f"{key}:{n}" for key, total in totals.items() for n in range(1, total + 1))


def test_without_debloating_a_backpressured_channel_holds_credits_times_batch_size(tmp_path) -> None:
    source = DataGeneratorSource(lambda i: KEYS[i % len(KEYS)], count=None)
    with MiniCluster(1, 2) as cluster:
        client = build(tmp_path, False, source).execute_async("bloated")
        in_flight = wait_until(lambda: backpressured_in_flight(cluster) >= CREDITS * BATCH - BATCH,
                               message="full buffers in the slow operator's channel")
        client.cancel().result()
    assert in_flight


def test_debloating_shrinks_the_in_flight_records_and_an_aligned_checkpoint_completes(tmp_path) -> None:
    gate = Gate()
    source = ScriptedSource(RECORDS[:BEFORE_GATE] + [gate] + RECORDS[BEFORE_GATE:])
    with MiniCluster(1, 2) as cluster:
        client = build(tmp_path, True, source).execute_async("debloated")
        job_id = client.get_job_id()
        # backpressured (every credit used) and yet at most a quarter of credits x batch-size records
        wait_until(lambda: 0 < backpressured_in_flight(cluster) <= CREDITS * BATCH // 4,
                   message="a backpressured channel holding debloated buffers")
        announced = [channel.buffer_size for channel in count_channels(cluster)]
        cluster.checkpoints.trigger_checkpoint(job_id, timeout=120)
        stats = wait_until(lambda: cluster.checkpoints.checkpoint_stats(job_id).latest_completed,
                           message="the completed checkpoint's statistics")
        wait_until(lambda: gate.reached, message="the source at its gate")
        assert cluster.failures.fail_operator(job_id, "out")
        wait_until(lambda: client.get_job_details().num_restarts == 1 and running(client), message="the restart")
        gate.open()
        client.get_job_execution_result().result(120)
        details = client.get_job_details()

    assert all(0 < size < BATCH for size in announced)
    assert not stats.unaligned and stats.persisted_data == 0
    assert details.status is JobStatus.FINISHED
    assert details.checkpoints.latest_restored.checkpoint_id == stats.checkpoint_id
    assert collections.Counter(committed_lines(tmp_path / "out")) == expected_lines(RECORDS)


def test_debloating_over_tcp_on_the_process_backend_keeps_exactly_once(tmp_path) -> None:
    """The slow operator in another TaskManager process: its sizes go to the source as
    NEW_BUFFER_SIZE frames (a producer that did not know the frame would lose its connection
    and fail the job); an aligned checkpoint completes and the result is exactly once."""
    records = RECORDS[:1500]
    source = ScriptedSource(records)
    with MiniCluster(2, 1, backend="process") as cluster:
        client = build(tmp_path, True, source, remote=True).execute_async("debloated over TCP")
        job_id = client.get_job_id()
        wait_until(lambda: running(client), message="the job running")
        cluster.checkpoints.trigger_checkpoint(job_id, timeout=120)
        stats = wait_until(lambda: cluster.checkpoints.checkpoint_stats(job_id).latest_completed,
                           message="the completed checkpoint's statistics")
        client.get_job_execution_result().result(120)
        details = client.get_job_details()

    assert not stats.unaligned
    assert details.status is JobStatus.FINISHED and details.num_restarts == 0
    assert collections.Counter(committed_lines(tmp_path / "out")) == expected_lines(records)
