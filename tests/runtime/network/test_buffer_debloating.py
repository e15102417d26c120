"""Buffer debloating: the size calculation (throughput -> size, EMA, threshold, clamping), the
RecordWriter sending buffers of a channel's announced size, and the size crossing TCP."""

from __future__ import annotations

import pytest

from streamkernel.common.options import TaskManagerOptions, validate_configuration
from streamkernel.errors import IllegalConfigurationError
from streamkernel.graph.partitioners import ForwardPartitioner, KeyGroupStreamPartitioner, RebalancePartitioner
from streamkernel.runtime.core.deployment import ChannelId
from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.core.records import DataBuffer
from streamkernel.runtime.network import InputGate, NetworkShuffleEnvironment, RecordWriter, wire
from streamkernel.runtime.network.buffer_debloater import (
    BufferDebloatConfiguration,
    BufferDebloater,
    BufferSizeEMA,
    TaskDebloater,
    ThroughputCalculator,
)
from streamkernel.testing import wait_until

SECRET = b"cluster-secret-for-tests"


def config(**changes) -> BufferDebloatConfiguration:
    values = dict(enabled=True, target_ms=1000, period_ms=200, max_buffer_size=1024, min_buffer_size=1,
                  threshold_percentages=25, number_of_samples=1)
    values.update(changes)
    return BufferDebloatConfiguration(**values)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the calculation
def test_throughput_is_records_per_second_of_measured_time_and_stays_without_time() -> None:
    calculator = ThroughputCalculator()
    assert calculator.calculate_throughput(300, 200) == 1500  # 300 records in 200 ms
    assert calculator.calculate_throughput(0, 0) == 1500  # nothing measured: Flink keeps the last value
    assert calculator.calculate_throughput(0, 100) == 0


def test_the_size_spreads_target_times_throughput_over_the_buffers_in_flight() -> None:
    # 2000 records/s x 1 s over 4 channels x 4 credits = 125 records per buffer (alpha 1: no smoothing)
    assert BufferDebloater(config()).recalculate_buffer_size(2000, 16) == 125
    # target 250 ms: a quarter of that
    assert BufferDebloater(config(target_ms=250)).recalculate_buffer_size(2000, 16) == 31


def test_the_size_is_clamped_to_min_and_max() -> None:
    debloater = BufferDebloater(config(min_buffer_size=40, max_buffer_size=1024))
    assert debloater.recalculate_buffer_size(10, 8) == 40  # 1 record per buffer wanted: the minimum
    assert debloater.recalculate_buffer_size(10_000_000, 8) == 80  # growth capped at twice the last size
    grown = [debloater.recalculate_buffer_size(10_000_000, 8) for _ in range(6)]
    assert grown[-1] is None and debloater.last_buffer_size == 1024  # the maximum, announced once


def test_the_ema_smooths_with_alpha_two_over_samples_plus_one() -> None:
    ema = BufferSizeEMA(1000, 1, number_of_samples=3)  # alpha 0.5
    assert ema.calculate_buffer_size(400, 1) == 700  # 1000 + 0.5 x (400 - 1000)
    assert ema.calculate_buffer_size(400, 1) == 550
    assert BufferSizeEMA(1000, 1, number_of_samples=20).alpha == pytest.approx(2 / 21)
    with pytest.raises(ValueError, match="positive buffers"):
        ema.calculate_buffer_size(10, 0)


def test_a_size_within_the_threshold_is_not_announced_but_min_and_max_always_are() -> None:
    debloater = BufferDebloater(config(min_buffer_size=10))
    assert debloater.recalculate_buffer_size(800, 8) == 100
    assert debloater.recalculate_buffer_size(960, 8) is None  # 120: 20 % more, under the 25 % threshold
    assert debloater.last_buffer_size == 100  # the threshold is measured from the announced size
    assert debloater.recalculate_buffer_size(1040, 8) == 130  # 30 %: announced
    assert debloater.recalculate_buffer_size(88, 8) == 11
    assert debloater.recalculate_buffer_size(80, 8) == 10  # the minimum: announced although within 25 %
    assert debloater.recalculate_buffer_size(80, 8) is None  # unchanged


class FakeChannel:
    def __init__(self) -> None:
        self.announced: list[int] = []

    def announce_buffer_size(self, size: int) -> None:
        self.announced.append(size)


def test_the_task_debloater_measures_busy_time_each_period_and_announces_to_every_channel() -> None:
    metrics = TaskMetrics("Count", 0)
    channels = [FakeChannel(), FakeChannel()]
    debloater = TaskDebloater(config(target_ms=1000, period_ms=200), channels, 4, metrics, now_ns=lambda: 0)
    assert debloater.maybe_debloat(100_000_000) is None and channels[0].announced == []  # not due yet
    metrics.records_in = 200
    metrics.idle_ns = 100_000_000  # 100 of the 200 ms waited for input: 200 records in 100 ms busy
    assert debloater.maybe_debloat(200_000_000) == 250  # 2000 records/s x 1 s / (2 channels x 4 credits)
    assert [c.announced for c in channels] == [[250], [250]]
    assert debloater.next_ns == 400_000_000
    metrics.records_in = 400  # 200 more in 200 ms busy: 1000 records/s -> 125
    assert debloater.maybe_debloat(400_000_000) == 125 and channels[1].announced == [250, 125]


def test_a_late_recalculation_moves_the_average_one_step_per_period_it_missed() -> None:
    metrics = TaskMetrics("Count", 0)
    channels = [FakeChannel()]
    settings = config(period_ms=200, number_of_samples=3, threshold_percentages=0)  # alpha 0.5
    debloater = TaskDebloater(settings, channels, 4, metrics, now_ns=lambda: 0)
    metrics.records_in = 240  # 240 records in 600 ms (three periods, busy): 400/s -> 100 per buffer
    assert debloater.maybe_debloat(600_000_000) == 216  # 1024 -> 562 -> 331 -> 215.5 (three steps)
    single = BufferDebloater(settings)
    assert single.recalculate_buffer_size(400, 4) == 562  # one step only


def test_options_are_flinks_keys_and_are_validated() -> None:
    assert TaskManagerOptions.BUFFER_DEBLOAT_ENABLED.get({}) is False
    settings = BufferDebloatConfiguration.from_configuration({})
    assert (settings.target_ms, settings.period_ms, settings.number_of_samples,
            settings.threshold_percentages, settings.min_buffer_size, settings.max_buffer_size) == \
        (1000, 200, 20, 25, 1, 1024)
    with pytest.raises(IllegalConfigurationError, match="taskmanager.network.memory.buffer-debloat.samples"):
        validate_configuration({"taskmanager.network.memory.buffer-debloat.samples": "0"})
    with pytest.raises(IllegalConfigurationError, match="taskmanager.memory.min-segment-size.*batch-size"):
        validate_configuration({"taskmanager.memory.min-segment-size": "64", "taskmanager.network.batch-size": "32"})


# --------------------------------------------------------------------- the sender
def _writer(partitioner, debloat: bool, n: int = 1, buffer_size: int = 1024):
    gate = InputGate("receiver")
    channels = [gate.create_channel(0, credits=1000) for _ in range(n)]
    return RecordWriter(partitioner, channels, 0, buffer_size=buffer_size, debloat=debloat), channels


def _sizes(channel) -> list[int]:
    return [len(item.values) for item in channel._queue if type(item) is DataBuffer]


def test_a_debloated_writer_sends_buffers_of_the_announced_size_splitting_a_batch() -> None:
    writer, (channel,) = _writer(ForwardPartitioner(), debloat=True)
    channel.announce_buffer_size(3)
    writer.emit(list(range(10)), list(range(100, 110)))
    assert _sizes(channel) == [3, 3, 3] and writer.pending_records == 1
    writer.flush()
    assert _sizes(channel) == [3, 3, 3, 1]
    assert [v for item in channel._queue for v in item.values] == list(range(10))
    assert [t for item in channel._queue for t in item.timestamps] == list(range(100, 110))
    assert writer.buffers_out == 4


def test_a_debloated_writer_uses_each_channels_own_size_and_never_more_than_its_own() -> None:
    writer, channels = _writer(RebalancePartitioner(), debloat=True, n=2, buffer_size=4)
    channels[0].announce_buffer_size(2)
    channels[1].announce_buffer_size(100)  # above the configured 4: 4
    writer.emit(list(range(40)), None)
    assert [_sizes(c) for c in channels] == [[2] * 10, [4] * 5]


def test_a_debloated_hash_writer_sends_full_buffers_of_the_announced_size() -> None:
    writer, channels = _writer(KeyGroupStreamPartitioner(lambda v: v, 128), debloat=True, n=2)
    for channel in channels:
        channel.announce_buffer_size(3)
    writer.emit(list(range(100)), None)
    sent = [_sizes(c) for c in channels]
    assert all(sizes and set(sizes) == {3} for sizes in sent)
    assert sum(map(sum, sent)) + writer.pending_records == 100 and writer.pending_records <= 4


def test_without_debloating_a_batch_is_never_split_and_announced_sizes_are_ignored() -> None:
    writer, (channel,) = _writer(ForwardPartitioner(), debloat=False, buffer_size=4)
    channel.announce_buffer_size(3)
    writer.emit(list(range(10)), None)
    assert _sizes(channel) == [10]


# ---------------------------------------------------------------- over TCP (process, spark)
def test_a_size_announced_by_a_consumer_reaches_its_producer_in_another_taskmanager() -> None:
    producer = NetworkShuffleEnvironment("tm-1", SECRET)
    consumer = NetworkShuffleEnvironment("tm-2", SECRET)
    try:
        first = ChannelId("job", edge_index=0, source_subtask=0, target_subtask=0)
        second = ChannelId("job", edge_index=0, source_subtask=1, target_subtask=0)
        gate = consumer.create_input_gate("Count (1/1)", [(first, 0), (second, 0)])
        gate.channels[1].announce_buffer_size(7)  # before its producer opened the stream
        out = producer.output_channel(first, consumer.data_address)
        late = producer.output_channel(second, consumer.data_address)
        gate.channels[0].announce_buffer_size(5)
        wait_until(lambda: out.buffer_size == 5, timeout=60, message="the size 5 at the producer")
        wait_until(lambda: late.buffer_size == 7, timeout=60, message="the size 7 announced before OPEN")
        writer = RecordWriter(ForwardPartitioner(), [out], 0, buffer_size=1024, debloat=True)
        writer.emit(list(range(12)), None)
        received = [gate.poll(60)[1] for _ in range(2)]
        assert [item.values for item in received] == [list(range(5)), list(range(5, 10))]
        assert writer.pending_records == 2
    finally:
        producer.close()
        consumer.close()


def test_the_new_buffer_size_frame_is_kind_34_and_round_trips() -> None:
    frame = wire.new_buffer_size_frame(3, 250)
    assert frame[0] == wire.NEW_BUFFER_SIZE == 34
    assert wire.parse_new_buffer_size(frame) == (3, 250)
