"""Windows: TimeWindow arithmetic, Flink's session merge algorithm, identity and serializers."""

from __future__ import annotations

import io
import pickle

import pytest

from streamkernel.datastream.windows import (
    MAX_LONG_VALUE,
    MIN_LONG_VALUE,
    CountWindow,
    CountWindowSerializer,
    GlobalWindow,
    GlobalWindowSerializer,
    TimeWindow,
    TimeWindowSerializer,
)
from streamkernel.errors import InvalidFunctionError


class RecordingCallback:
    """A MergeCallback that records every merge it is told about."""

    def __init__(self) -> None:
        self.merges: list[tuple[list[TimeWindow], TimeWindow]] = []

    def merge(self, to_be_merged, merge_result) -> None:
        self.merges.append((list(to_be_merged), merge_result))


def test_time_window_max_timestamp_is_end_minus_one() -> None:
    assert TimeWindow(0, 5000).max_timestamp() == 4999
    assert TimeWindow(-10, -5).max_timestamp() == -6


@pytest.mark.parametrize("size", [1, 3, 7, 5000])
def test_window_start_with_offset_contains_the_timestamp_and_is_aligned(size: int) -> None:
    offsets = sorted({0, 1 % size, size - 1, -(size - 1)})
    for offset in offsets:
        for timestamp in list(range(-3 * size - 2, 3 * size + 2)) + [123_456_789, -987_654_321]:
            start = TimeWindow.get_window_start_with_offset(timestamp, offset, size)
            assert start <= timestamp < start + size
            assert (start - offset) % size == 0


def test_window_start_handles_negative_remainders_like_flink() -> None:
    # Java: remainder = (-1 - 0) % 5 = -1 < 0  ->  -1 - (-1 + 5) = -5
    assert TimeWindow.get_window_start_with_offset(-1, 0, 5) == -5
    assert TimeWindow.get_window_start_with_offset(7, 2, 5) == 7
    assert TimeWindow.get_window_start_with_offset(6, 2, 5) == 2
    assert TimeWindow.get_window_start_with_offset(1, -2, 5) == -2


def test_intersects_counts_touching_windows_as_intersecting() -> None:
    assert TimeWindow(0, 5).intersects(TimeWindow(5, 10))
    assert TimeWindow(5, 10).intersects(TimeWindow(0, 5))
    assert TimeWindow(0, 10).intersects(TimeWindow(3, 4))
    assert not TimeWindow(0, 5).intersects(TimeWindow(6, 10))


def test_cover_is_the_smallest_enclosing_window() -> None:
    assert TimeWindow(0, 5).cover(TimeWindow(3, 12)) == TimeWindow(0, 12)
    assert TimeWindow(7, 9).cover(TimeWindow(1, 2)) == TimeWindow(1, 9)


def test_merge_windows_reports_each_merged_group_once() -> None:
    callback = RecordingCallback()
    windows = [TimeWindow(10, 13), TimeWindow(0, 3), TimeWindow(20, 23), TimeWindow(2, 5), TimeWindow(12, 15)]
    TimeWindow.merge_windows(windows, callback)
    merged = {result: set(group) for group, result in callback.merges}
    assert merged == {
        TimeWindow(0, 5): {TimeWindow(0, 3), TimeWindow(2, 5)},
        TimeWindow(10, 15): {TimeWindow(10, 13), TimeWindow(12, 15)},
    }
    # the lone window (20, 23) is not reported: nothing to merge


def test_merge_windows_chains_through_transitive_overlaps() -> None:
    callback = RecordingCallback()
    TimeWindow.merge_windows([TimeWindow(0, 3), TimeWindow(3, 6), TimeWindow(6, 9), TimeWindow(10, 11)], callback)
    assert len(callback.merges) == 1
    group, result = callback.merges[0]
    assert result == TimeWindow(0, 9)
    assert group == [TimeWindow(0, 3), TimeWindow(3, 6), TimeWindow(6, 9)]


def test_merge_windows_ignores_duplicates_and_accepts_a_plain_callable() -> None:
    calls = []
    TimeWindow.merge_windows([TimeWindow(0, 3), TimeWindow(0, 3)], lambda group, result: calls.append(result))
    assert calls == []  # one distinct window: nothing merges
    TimeWindow.merge_windows([TimeWindow(0, 3), TimeWindow(1, 4)], lambda group, result: calls.append(result))
    assert calls == [TimeWindow(0, 4)]


def test_merge_windows_rejects_a_callback_that_cannot_be_called() -> None:
    with pytest.raises(InvalidFunctionError, match="MergeCallback"):
        TimeWindow.merge_windows([TimeWindow(0, 3), TimeWindow(1, 4)], object())


def test_time_windows_are_values() -> None:
    assert TimeWindow(0, 5) == TimeWindow(0, 5)
    assert TimeWindow(0, 5) != TimeWindow(0, 6)
    assert len({TimeWindow(0, 5), TimeWindow(0, 5), TimeWindow(1, 5)}) == 2
    assert sorted([TimeWindow(5, 9), TimeWindow(0, 9), TimeWindow(0, 3)]) == [
        TimeWindow(0, 3), TimeWindow(0, 9), TimeWindow(5, 9)]
    assert TimeWindow(0, 5) != CountWindow(0)
    assert pickle.loads(pickle.dumps(TimeWindow(-3, 4))) == TimeWindow(-3, 4)
    with pytest.raises(AttributeError):
        TimeWindow(0, 5).start = 1  # type: ignore[misc]
    assert repr(TimeWindow(0, 5)) == "TimeWindow(start=0, end=5)"


def test_count_and_global_windows() -> None:
    assert CountWindow(3) == CountWindow(3) and CountWindow(3) != CountWindow(4)
    assert CountWindow(3).max_timestamp() == MAX_LONG_VALUE == 2**63 - 1
    assert MIN_LONG_VALUE == -(2**63)
    assert GlobalWindow.get() is GlobalWindow.get()
    assert GlobalWindow() == GlobalWindow.get()
    assert GlobalWindow.get().max_timestamp() == MAX_LONG_VALUE
    assert pickle.loads(pickle.dumps(GlobalWindow.get())) is GlobalWindow.get()
    assert {CountWindow(1): "a"}[pickle.loads(pickle.dumps(CountWindow(1)))] == "a"


def test_serializers_round_trip_through_a_byte_stream() -> None:
    windows = [TimeWindow(MIN_LONG_VALUE + 1, MAX_LONG_VALUE), TimeWindow(-5, 0), TimeWindow(0, 5000)]
    stream = io.BytesIO()
    serializer = TimeWindowSerializer()
    for window in windows:
        serializer.serialize(window, stream)
    CountWindowSerializer().serialize(CountWindow(42), stream)
    GlobalWindowSerializer().serialize(GlobalWindow.get(), stream)
    assert len(stream.getvalue()) == 3 * 16 + 8 + 1
    stream.seek(0)
    assert [serializer.deserialize(stream) for _ in windows] == windows
    assert CountWindowSerializer().deserialize(stream) == CountWindow(42)
    assert GlobalWindowSerializer().deserialize(stream) is GlobalWindow.get()
    assert stream.read() == b""
