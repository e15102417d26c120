"""RecordWriter: every partitioner's routing, buffering, flush, events in order, timestamps."""

from __future__ import annotations

from collections import Counter

import pytest

from streamkernel.datastream.function_base import KeySelector, Partitioner
from streamkernel.datastream.function_wrappers import KeySelectorWrapper, PartitionerWrapper
from streamkernel.graph.keygroups import assign_key_to_operator
from streamkernel.graph.partitioners import (
    BroadcastPartitioner,
    CustomPartitionerWrapper,
    ForwardPartitioner,
    GlobalPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
)
from streamkernel.runtime.core.metrics import TaskMetrics
from streamkernel.runtime.network import InputGate, PartitioningError, RecordWriter
from streamkernel.runtime.core.records import END_OF_PARTITION, DataBuffer, Watermark


def _setup(partitioner, n: int = 4, buffer_size: int = 1024, credits: int = 1000, **kwargs):
    gate = InputGate("receiver")
    channels = [gate.create_channel(0, credits=credits) for _ in range(n)]
    return RecordWriter(partitioner, channels, 0, buffer_size=buffer_size, **kwargs), channels


def _drain(channel) -> list:
    """Everything queued in ``channel`` (read directly: the gate's order is tested elsewhere)."""
    items = list(channel._queue)
    channel._queue.clear()
    return items


def _records(channel) -> tuple[list, list]:
    values, timestamps = [], []
    for item in _drain(channel):
        assert isinstance(item, DataBuffer)
        values.extend(item.values)
        timestamps.extend(item.timestamps if item.timestamps is not None else [None] * len(item.values))
    return values, timestamps


def _hash(key_selector, max_parallelism=128):
    return KeyGroupStreamPartitioner(key_selector=key_selector, max_parallelism=max_parallelism)


# ------------------------------------------------------------------------- routing
def test_forward_sends_the_whole_batch_to_its_single_channel():
    writer, (ch,) = _setup(ForwardPartitioner(), n=1)
    writer.emit([1, 2, 3], [10, 20, 30])
    writer.flush()
    assert _drain(ch) == [DataBuffer([1, 2, 3], [10, 20, 30])]


def test_global_sends_everything_to_channel_zero():
    writer, channels = _setup(GlobalPartitioner(), n=3)
    writer.emit(list(range(10)), None)
    writer.flush()
    assert _records(channels[0])[0] == list(range(10))
    assert not _drain(channels[1]) and not _drain(channels[2])


def test_hash_routes_like_key_groups_and_keeps_timestamps_with_records():
    writer, channels = _setup(_hash(KeySelectorWrapper(lambda r: r[0]), max_parallelism=128), n=3)
    records = [(f"k{i % 50}", i) for i in range(600)]
    writer.emit(records[:300], [r[1] * 10 for r in records[:300]])
    writer.emit(records[300:], [r[1] * 10 for r in records[300:]])
    writer.flush()
    seen = []
    for index, channel in enumerate(channels):
        values, timestamps = _records(channel)
        assert all(assign_key_to_operator(v[0], 128, 3) == index for v in values)
        assert timestamps == [v[1] * 10 for v in values]
        assert values == sorted(values, key=lambda r: r[1])  # order kept within a channel
        seen.extend(values)
    assert sorted(seen, key=lambda r: r[1]) == records  # nothing lost or duplicated


def test_hash_keeps_record_order_within_a_channel():
    writer, channels = _setup(_hash(lambda r: r % 5), n=2, buffer_size=7)
    writer.emit(list(range(100)), None)
    writer.flush()
    for channel in channels:
        values = _records(channel)[0]
        assert values == sorted(values)


def test_hash_with_a_keyselector_class_and_a_plain_callable():
    class ByParity(KeySelector):
        def get_key(self, value):
            return value % 2

    for selector in (ByParity(), lambda v: v % 2):
        writer, channels = _setup(_hash(selector), n=4)
        writer.emit(list(range(20)), None)
        writer.flush()
        for index, channel in enumerate(channels):
            assert all(assign_key_to_operator(v % 2, 128, 4) == index for v in _records(channel)[0])


def test_hash_with_one_channel_does_no_key_work():
    def boom(value):
        raise AssertionError("the key selector must not be called with one channel")

    writer, (ch,) = _setup(_hash(boom), n=1)
    writer.emit([1, 2], None)
    writer.flush()
    assert _records(ch)[0] == [1, 2]


def test_hash_accepts_unhashable_keys():
    writer, channels = _setup(_hash(lambda r: [r % 3, "x"]), n=2)
    writer.emit(list(range(30)), None)
    writer.flush()
    total = 0
    for index, channel in enumerate(channels):
        values = _records(channel)[0]
        total += len(values)
        assert all(assign_key_to_operator([v % 3, "x"], 128, 2) == index for v in values)
    assert total == 30


def test_hash_key_selector_failure_names_the_record_and_keeps_nothing_of_the_batch():
    writer, channels = _setup(_hash(lambda r: r["key"]), n=2)
    writer.emit([{"key": 1}], None)
    with pytest.raises(PartitioningError, match=r"record \{'nokey': 2\}") as info:
        writer.emit([{"key": 3}, {"nokey": 2}], None)
    assert isinstance(info.value.__cause__, KeyError)
    writer.flush()
    assert sorted(r["key"] for c in channels for r in _records(c)[0]) == [1]


def test_hash_uses_the_default_max_parallelism_when_unset():
    writer, channels = _setup(KeyGroupStreamPartitioner(key_selector=lambda v: v), n=2)
    writer.emit(list(range(40)), None)
    writer.flush()
    for index, channel in enumerate(channels):
        assert all(assign_key_to_operator(v, 128, 2) == index for v in _records(channel)[0])


def test_rebalance_is_balanced_and_continues_across_batches():
    writer, channels = _setup(RebalancePartitioner(), n=3)
    start = writer._next
    writer.emit([0, 1], [100, 101])
    writer.emit([2, 3, 4, 5], [102, 103, 104, 105])
    writer.emit([6], [106])
    writer.flush()
    per_channel = [_records(c) for c in channels]
    for offset in range(3):
        values, timestamps = per_channel[(start + offset) % 3]
        assert values == list(range(offset, 7, 3))  # record j went to channel start + j
        assert timestamps == [v + 100 for v in values]
    assert sorted(len(v) for v, _ in per_channel) == [2, 2, 3]


def test_rebalance_senders_start_at_different_channels():
    gate = InputGate("g")
    channels = [gate.create_channel(0) for _ in range(4)]
    starts = {RecordWriter(RebalancePartitioner(), channels, i)._next for i in range(4)}
    assert starts == {0, 1, 2, 3}


def test_rescale_round_robins_over_its_channel_subset():
    writer, channels = _setup(RescalePartitioner(), n=2)
    for i in range(5):
        writer.emit([i], None)
    writer.flush()
    assert [_records(c)[0] for c in channels] == [[0, 2, 4], [1, 3]]


def test_shuffle_spreads_records_randomly_and_loses_none():
    writer, channels = _setup(ShufflePartitioner(), n=4)
    writer.emit(list(range(4000)), list(range(4000)))
    writer.flush()
    per_channel = [_records(c) for c in channels]
    assert sorted(v for values, _ in per_channel for v in values) == list(range(4000))
    assert all(values == timestamps for values, timestamps in per_channel)
    assert all(len(values) > 500 for values, _ in per_channel)  # 1000 expected each


def test_broadcast_sends_every_record_to_every_channel_sharing_the_list():
    writer, channels = _setup(BroadcastPartitioner(), n=3, buffer_size=4)
    batch, stamps = [1, 2, 3, 4], [5, 6, 7, 8]
    writer.emit(batch, stamps)
    buffers = [_drain(c) for c in channels]
    assert all(b == [DataBuffer(batch, stamps)] for b in buffers)
    assert all(b[0].values is batch for b in buffers)  # one list, not copies
    writer.emit([9], None)
    writer.flush()
    assert all(_records(c)[0] == [9] for c in channels)
    assert writer.records_out == 5  # counted once per record, not per channel


def test_custom_partitioner_gets_the_selected_key_and_channel_count():
    calls = []

    class Mod(Partitioner):
        def partition(self, key, num_partitions):
            calls.append(num_partitions)
            return key % num_partitions

    writer, channels = _setup(CustomPartitionerWrapper(partitioner=Mod(), key_selector=lambda r: r[0]), n=3)
    records = [(i, chr(97 + i)) for i in range(9)]
    writer.emit(records, list(range(9)))
    writer.flush()
    for index, channel in enumerate(channels):
        values, timestamps = _records(channel)
        assert [v[0] % 3 for v in values] == [index] * 3
        assert timestamps == [v[0] for v in values]
    assert set(calls) == {3}


def test_custom_partitioner_out_of_range_is_a_clear_error():
    wrapper = CustomPartitionerWrapper(partitioner=PartitionerWrapper(lambda k, n: k), key_selector=lambda r: r)
    writer, _ = _setup(wrapper, n=2)
    with pytest.raises(PartitioningError, match=r"returned 5 for record 5.*0\.\.1"):
        writer.emit([0, 1, 5], None)
    with pytest.raises(PartitioningError, match="must be an int"):
        writer.emit(["a"], None)


def test_custom_partitioner_failure_names_the_record():
    wrapper = CustomPartitionerWrapper(partitioner=PartitionerWrapper(lambda k, n: 1 // k), key_selector=lambda r: r)
    writer, _ = _setup(wrapper, n=2)
    with pytest.raises(PartitioningError, match="ZeroDivisionError.*on record 0") as info:
        writer.emit([1, 0], None)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_custom_partitioner_runs_even_with_one_channel():
    wrapper = CustomPartitionerWrapper(partitioner=PartitionerWrapper(lambda k, n: 3), key_selector=lambda r: r)
    writer, _ = _setup(wrapper, n=1)
    with pytest.raises(PartitioningError):
        writer.emit([1], None)


# ----------------------------------------------------------------- buffering, events
def test_buffers_are_sent_when_full_and_the_rest_on_flush():
    writer, (ch,) = _setup(ForwardPartitioner(), n=1, buffer_size=4)
    writer.emit([1, 2], None)
    assert _drain(ch) == [] and writer.pending_records == 2
    writer.emit([3, 4, 5], None)
    assert _drain(ch) == [DataBuffer([1, 2, 3, 4, 5], None)]
    writer.emit([6], None)
    writer.flush()
    assert _drain(ch) == [DataBuffer([6], None)]
    writer.flush()  # nothing pending: nothing sent
    assert _drain(ch) == []
    assert (writer.records_out, writer.buffers_out) == (6, 2)


def test_emit_never_modifies_the_callers_lists():
    writer, (ch,) = _setup(ForwardPartitioner(), n=1, buffer_size=10)
    batch, stamps = [1, 2], [3, 4]
    writer.emit(batch, stamps)
    writer.emit([5], [6])
    writer.flush()
    assert (batch, stamps) == ([1, 2], [3, 4])
    assert _drain(ch) == [DataBuffer([1, 2, 5], [3, 4, 6])]


def test_records_with_and_without_timestamps_never_share_a_buffer():
    writer, (ch,) = _setup(ForwardPartitioner(), n=1)
    writer.emit([1], None)
    writer.emit([2], [20])
    writer.emit([3], None)
    writer.flush()
    assert _drain(ch) == [DataBuffer([1], None), DataBuffer([2], [20]), DataBuffer([3], None)]


def test_events_flush_pending_records_first_and_reach_every_channel_in_order():
    writer, channels = _setup(RebalancePartitioner(), n=2)
    writer.emit([1, 2, 3], [1, 2, 3])
    writer.broadcast_event(Watermark(3))
    writer.emit([4], [4])
    writer.broadcast_event(END_OF_PARTITION)
    items = [_drain(c) for c in channels]
    for channel_items in items:
        kinds = [type(i).__name__ for i in channel_items]
        assert kinds[0] == "DataBuffer" and channel_items[1] == Watermark(3)
        assert channel_items[-1] is END_OF_PARTITION
    records = sorted(v for ci in items for i in ci if isinstance(i, DataBuffer) for v in i.values)
    assert records == [1, 2, 3, 4]
    assert writer.buffers_out == 3  # events are not counted as buffers


def test_empty_batches_send_nothing():
    writer, channels = _setup(_hash(lambda v: v), n=2)
    writer.emit([], None)
    writer.flush()
    assert all(_drain(c) == [] for c in channels) and writer.records_out == 0


def test_backpressure_is_measured_on_the_writer_and_the_task_metrics():
    import threading

    gate = InputGate("g")
    channel = gate.create_channel(0, credits=1)
    metrics = TaskMetrics("Map", 0)
    writer = RecordWriter(ForwardPartitioner(), [channel], 0, buffer_size=1, metrics=metrics)
    writer.emit([1], None)  # takes the only credit
    sender = threading.Thread(target=writer.emit, args=([2], None), daemon=True)
    sender.start()
    from streamkernel.testing import wait_until

    wait_until(lambda: channel._sender_waiting, message="the writer to block waiting for credit")
    assert gate.poll(1)[1].values == [1]
    sender.join(30)
    assert writer.backpressured_ns > 0
    assert metrics.backpressured_ns == writer.backpressured_ns
    assert gate.poll(1)[1].values == [2]


def test_a_writer_needs_channels_and_a_positive_buffer_size():
    with pytest.raises(ValueError, match="at least one channel"):
        RecordWriter(RebalancePartitioner(), [], 0)
    gate = InputGate("g")
    with pytest.raises(ValueError, match="buffer_size"):
        RecordWriter(RebalancePartitioner(), [gate.create_channel(0)], 0, buffer_size=0)


def test_hash_distribution_matches_key_groups_for_many_keys():
    writer, channels = _setup(_hash(lambda r: r), n=4, buffer_size=64)
    keys = [f"user{i}" for i in range(2000)]
    writer.emit(keys, None)
    writer.flush()
    expected = Counter(assign_key_to_operator(k, 128, 4) for k in keys)
    assert {i: len(_records(c)[0]) for i, c in enumerate(channels)} == dict(expected)
