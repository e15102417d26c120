"""What a TaskMetrics snapshot reads of the task's channels, writers, mailbox and checkpoints,
with the real network objects (one process, no cluster)."""

from __future__ import annotations

import threading

import pytest

from streamkernel.graph.partitioners import ForwardPartitioner
from streamkernel.runtime.core import metrics as metrics_module
from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.core.task_metric_values import task_metric_values
from streamkernel.runtime.network import InputGate, RecordWriter
from streamkernel.runtime.tasks import mailbox as mailbox_module
from streamkernel.runtime.tasks.mailbox import TaskMailbox
from streamkernel.testing import wait_until


def test_a_wait_for_credit_is_a_hard_backpressure_period_while_and_after_it_lasts() -> None:
    gate = InputGate("receiver")
    channel = gate.create_channel(0, credits=1)
    metrics = TaskMetrics("Map", 0)
    metrics.output_channels = [channel]
    writer = RecordWriter(ForwardPartitioner(), [channel], 0, buffer_size=1, metrics=metrics)
    metrics.writers = [writer]
    writer.emit([1], None)  # takes the only credit
    sender = threading.Thread(target=writer.emit, args=([2], None), daemon=True)
    sender.start()
    wait_until(lambda: channel._sender_waiting, message="the writer to block waiting for credit")
    blocked = wait_until(lambda: (s := metrics.snapshot())["max_backpressure_ns"] > 20_000_000 and s,
                         message="a wait of 20 ms under way")
    assert blocked["back_pressured"] and task_metric_values(blocked)["isBackPressured"] is True
    assert blocked["output_buffers_used"] == 1 and blocked["output_queue_length"] == 1
    assert task_metric_values(blocked)["Shuffle.Netty.Output.Buffers.outPoolUsage"] == 1.0  # the one credit in use
    gate.poll(1)
    sender.join(30)
    after = metrics.snapshot()
    assert not after["back_pressured"] and after["max_backpressure_ns"] >= blocked["max_backpressure_ns"]
    assert after["buffers_out"] == 2
    values = task_metric_values(after)
    assert values["maxHardBackPressureTimeMs"] >= 20 and values["accumulateBackPressuredTimeMs"] >= 20


def test_buffers_received_by_the_gate_and_the_queue_left_in_the_channels() -> None:
    gate = InputGate("receiver")
    channels = [gate.create_channel(0, credits=6), gate.create_channel(0, credits=6)]
    metrics = TaskMetrics("Sink", 0)
    metrics.input_channels = channels
    metrics.exclusive_buffers_per_channel = 2
    for value in range(4):
        channels[0].send(value)
    channels[1].send("x")
    for _ in range(2):
        gate.poll(1)
    snapshot = metrics.snapshot()
    assert snapshot["buffers_in_local"] == 2 and snapshot["buffers_in_remote"] == 0
    assert snapshot["input_queue_length"] == 3 and snapshot["input_buffers_total"] == 12
    # round robin took one item of each: channel 0 holds 3 (its 2 exclusive buffers and a floating one)
    assert (snapshot["input_exclusive_used"], snapshot["input_floating_used"]) == (2, 1)
    assert snapshot["input_exclusive_total"] == 4 and snapshot["input_floating_total"] == 8


class ManualClock:
    """``time`` for the metrics' modules: perf_counter_ns and time_ns that move only when told."""

    def __init__(self) -> None:
        self.ns = 1_000_000_000_000

    def perf_counter_ns(self) -> int:
        return self.ns

    def time_ns(self) -> int:
        return self.ns

    def advance_ms(self, ms: int) -> None:
        self.ns += ms * 1_000_000


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> ManualClock:
    """The mailbox's and the task metrics' clock, moved by hand."""
    manual = ManualClock()
    monkeypatch.setattr(mailbox_module, "time", manual)
    monkeypatch.setattr(metrics_module, "time", manual)
    return manual


def test_the_mailbox_counts_its_mails_and_their_waits(clock: ManualClock) -> None:
    metrics = TaskMetrics("Map", 0)
    mailbox = metrics.mailbox = TaskMailbox(lambda: None)
    mailbox.put(lambda: None)
    clock.advance_ms(20)  # the first mail waits in the mailbox: what its latency measures
    mailbox.put(lambda: None)
    assert metrics.snapshot()["mailbox_queue"] == 2
    mailbox.run_all()
    snapshot = metrics.snapshot()
    assert snapshot["mails"] == 2 and snapshot["mailbox_queue"] == 0
    assert sorted(snapshot["mailbox_latency_ms"]) == [0.0, 20.0]


def test_alignment_runs_from_the_first_barrier_to_the_snapshot_and_the_start_delay_from_the_trigger(
        clock: ManualClock) -> None:
    metrics = TaskMetrics("Keyed", 0)
    triggered = clock.time_ns() // 1_000_000 - 50  # the JobManager triggered it 50 ms ago
    metrics.barrier_arrived(7, triggered)
    clock.advance_ms(10)
    assert metrics.snapshot()["checkpoint_alignment_ns"] == 10_000_000  # so far
    metrics.barrier_arrived(7, triggered)  # the second channel's barrier: the same alignment
    metrics.checkpoint_started(7, triggered)
    done = metrics.snapshot()
    assert done["checkpoint_alignment_ns"] == 10_000_000 and done["checkpoint_start_delay_ns"] == 50_000_000
    clock.advance_ms(10)
    assert metrics.snapshot()["checkpoint_alignment_ns"] == 10_000_000  # ended
    source = TaskMetrics("Source", 0)
    source.checkpoint_started(1, clock.time_ns() // 1_000_000 - 30)  # no barrier in: a source
    assert source.snapshot()["checkpoint_alignment_ns"] == 0 and source.snapshot()["checkpoint_start_delay_ns"] == 30_000_000
