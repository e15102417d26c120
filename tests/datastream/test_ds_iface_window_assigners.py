"""Window assigners: window placement, Flink's argument validation, defaults and labels."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from streamkernel.common.time import Duration, Time
from streamkernel.datastream.state import ValueState, ValueStateDescriptor
from streamkernel.datastream.window import (
    CountSlidingWindowAssigner,
    CountTrigger,
    CountTumblingWindowAssigner,
    CountWindow,
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    EventTimeTrigger,
    GlobalWindow,
    GlobalWindows,
    MergingWindowAssigner,
    NeverTrigger,
    ProcessingTimeSessionWindows,
    ProcessingTimeTrigger,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TimeWindow,
    TimeWindowSerializer,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
)
from streamkernel.datastream.windows import MIN_LONG_VALUE
from streamkernel.errors import InvalidFunctionError, InvalidProgramError


class DictValueState(ValueState):
    def __init__(self, store: dict, name: str) -> None:
        self._store, self._name = store, name

    def value(self) -> Any:
        return self._store.get(self._name)

    def update(self, value: Any) -> None:
        self._store[self._name] = value

    def clear(self) -> None:
        self._store.pop(self._name, None)


class FakeRuntimeContext:
    def __init__(self) -> None:
        self.store: dict[str, Any] = {}

    def get_state(self, descriptor: ValueStateDescriptor) -> DictValueState:
        return DictValueState(self.store, descriptor.get_name())


class FakeAssignerContext(WindowAssigner.WindowAssignerContext):
    def __init__(self, now: int = 0) -> None:
        self.now = now
        self.runtime_context = FakeRuntimeContext()

    def get_current_processing_time(self) -> int:
        return self.now

    def get_runtime_context(self) -> FakeRuntimeContext:
        return self.runtime_context


CTX = FakeAssignerContext()


@pytest.mark.parametrize("size", [Time.seconds(5), Duration.of_seconds(5), 5000, datetime.timedelta(seconds=5)])
def test_tumbling_event_time_accepts_time_duration_and_millis(size: Any) -> None:
    assigner = TumblingEventTimeWindows.of(size)
    assert assigner.assign_windows("x", 7000, CTX) == [TimeWindow(5000, 10000)]
    assert assigner.assign_windows("x", -1, CTX) == [TimeWindow(-5000, 0)]
    assert assigner.get_size() == 5000
    assert str(assigner) == repr(assigner) == "TumblingEventTimeWindows(5000)"


def test_tumbling_offset_shifts_window_starts() -> None:
    assigner = TumblingEventTimeWindows.of(Time.hours(1), Time.minutes(15))
    windows = assigner.assign_windows("x", 0, CTX)
    assert windows == [TimeWindow(-45 * 60_000, 15 * 60_000)]
    negative = TumblingEventTimeWindows.of(Time.days(1), Time.hours(-8))
    start = negative.assign_windows("x", 0, CTX)[0].start
    assert start % 86_400_000 == 16 * 3_600_000


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: TumblingEventTimeWindows.of(0), "size"),
        (lambda: TumblingEventTimeWindows.of(Time.seconds(-1)), "size"),
        (lambda: TumblingEventTimeWindows.of(1000, 1000), "offset"),
        (lambda: TumblingProcessingTimeWindows.of(1000, -1000), "offset"),
        (lambda: TumblingEventTimeWindows.of("5 s"), "size"),
        (lambda: SlidingEventTimeWindows.of(0, 1000), "size"),
        (lambda: SlidingEventTimeWindows.of(10_000, 0), "slide"),
        (lambda: SlidingEventTimeWindows.of(10_000, 2000, 2000), "offset"),
        (lambda: SlidingProcessingTimeWindows.of(10_000, 2000, 3000), "offset"),
        (lambda: EventTimeSessionWindows.with_gap(0), "gap"),
        (lambda: ProcessingTimeSessionWindows.with_gap(Time.milliseconds(-5)), "gap"),
        (lambda: CountTumblingWindowAssigner.of(0), "window_size"),
        (lambda: CountSlidingWindowAssigner.of(3, 0), "window_slide"),
    ],
)
def test_bad_arguments_raise_naming_the_argument(call: Any, argument: str) -> None:
    with pytest.raises(InvalidProgramError, match=argument):
        call()


@pytest.mark.parametrize(
    "assigner",
    [
        TumblingEventTimeWindows.of(1000),
        SlidingEventTimeWindows.of(1000, 500),
        EventTimeSessionWindows.with_gap(1000),
        DynamicEventTimeSessionWindows.with_dynamic_gap(lambda element: 1000),
    ],
)
@pytest.mark.parametrize("timestamp", [None, MIN_LONG_VALUE])
def test_event_time_assigners_need_a_timestamp(assigner: WindowAssigner, timestamp: Any) -> None:
    with pytest.raises(InvalidProgramError, match="assign_timestamps_and_watermarks") as error:
        assigner.assign_windows("record", timestamp, CTX)
    assert type(assigner).__name__ in str(error.value)


def test_processing_time_assigners_use_the_context_clock() -> None:
    ctx = FakeAssignerContext(now=12_345)
    assert TumblingProcessingTimeWindows.of(Time.seconds(10)).assign_windows("x", None, ctx) == [
        TimeWindow(10_000, 20_000)]
    assert SlidingProcessingTimeWindows.of(10_000, 5000).assign_windows("x", None, ctx) == [
        TimeWindow(10_000, 20_000), TimeWindow(5000, 15_000)]
    assert ProcessingTimeSessionWindows.with_gap(100).assign_windows("x", 1, ctx) == [TimeWindow(12_345, 12_445)]


@pytest.mark.parametrize("size, slide, offset", [(10, 5, 0), (10, 3, 1), (7, 7, 0), (4, 6, -2), (9, 2, 1)])
def test_sliding_windows_are_exactly_those_containing_the_timestamp(size: int, slide: int, offset: int) -> None:
    assigner = SlidingEventTimeWindows.of(size, slide, offset)
    for timestamp in range(-40, 40):
        windows = assigner.assign_windows("x", timestamp, CTX)
        expected = {TimeWindow(start, start + size) for start in range(-200, 200)
                    if (start - offset) % slide == 0 and start <= timestamp < start + size}
        assert set(windows) == expected
        assert [w.start for w in windows] == sorted((w.start for w in windows), reverse=True)


def test_defaults_and_time_kind_of_time_assigners() -> None:
    cases = [
        (TumblingEventTimeWindows.of(1000), EventTimeTrigger, True),
        (SlidingEventTimeWindows.of(1000, 500), EventTimeTrigger, True),
        (EventTimeSessionWindows.with_gap(1000), EventTimeTrigger, True),
        (DynamicEventTimeSessionWindows.with_dynamic_gap(lambda e: 1), EventTimeTrigger, True),
        (TumblingProcessingTimeWindows.of(1000), ProcessingTimeTrigger, False),
        (SlidingProcessingTimeWindows.of(1000, 500), ProcessingTimeTrigger, False),
        (ProcessingTimeSessionWindows.with_gap(1000), ProcessingTimeTrigger, False),
        (DynamicProcessingTimeSessionWindows.with_dynamic_gap(lambda e: 1), ProcessingTimeTrigger, False),
    ]
    for assigner, trigger_class, event_time in cases:
        assert type(assigner.get_default_trigger()) is trigger_class
        assert type(assigner.get_default_trigger(env=None)) is trigger_class
        assert assigner.is_event_time() is event_time
        assert isinstance(assigner.get_window_serializer(), TimeWindowSerializer)


def test_session_windows_merge_overlapping_sessions() -> None:
    assigner = EventTimeSessionWindows.with_gap(Time.seconds(3))
    assert isinstance(assigner, MergingWindowAssigner)
    windows = [w for ts in (0, 2000, 10_000) for w in assigner.assign_windows("x", ts, CTX)]
    assert windows == [TimeWindow(0, 3000), TimeWindow(2000, 5000), TimeWindow(10_000, 13_000)]
    merges = []
    assigner.merge_windows(windows, lambda group, result: merges.append((set(group), result)))
    assert merges == [({TimeWindow(0, 3000), TimeWindow(2000, 5000)}, TimeWindow(0, 5000))]
    assert repr(assigner) == "EventTimeSessionWindows(3000)"
    assert assigner.get_gap() == 3000


def test_dynamic_session_gap_from_extractor_or_callable() -> None:
    class ByField(SessionWindowTimeGapExtractor):
        def extract(self, element: Any) -> int:
            return element["gap"]

    from_class = EventTimeSessionWindows.with_dynamic_gap(ByField())
    assert isinstance(from_class, DynamicEventTimeSessionWindows)
    assert from_class.assign_windows({"gap": 250}, 1000, CTX) == [TimeWindow(1000, 1250)]
    from_callable = DynamicProcessingTimeSessionWindows.with_dynamic_gap(lambda e: Time.seconds(e))
    assert from_callable.assign_windows(2, None, FakeAssignerContext(now=10)) == [TimeWindow(10, 2010)]
    assert repr(from_callable) == "DynamicProcessingTimeSessionWindows()"
    with pytest.raises(InvalidProgramError, match="0 < gap"):
        from_class.assign_windows({"gap": 0}, 1000, CTX)
    with pytest.raises(InvalidFunctionError, match="extractor"):
        ProcessingTimeSessionWindows.with_dynamic_gap(42)


def test_global_windows() -> None:
    assigner = GlobalWindows.create()
    assert assigner.assign_windows("x", None, CTX) == [GlobalWindow.get()]
    assert isinstance(assigner.get_default_trigger(), NeverTrigger)
    assert not assigner.is_event_time()
    assert repr(assigner) == "GlobalWindows()"


def test_count_tumbling_windows_number_consecutive_elements_per_key() -> None:
    ctx = FakeAssignerContext()
    assigner = CountTumblingWindowAssigner.of(3)
    ids = [assigner.assign_windows(i, None, ctx)[0].id for i in range(8)]
    assert ids == [0, 0, 0, 1, 1, 1, 2, 2]
    other_key = FakeAssignerContext()  # each key has its own counter state
    assert assigner.assign_windows("y", None, other_key) == [CountWindow(0)]
    trigger = assigner.get_default_trigger()
    assert isinstance(trigger, CountTrigger) and trigger.get_window_size() == 3
    assert repr(assigner) == "CountTumblingWindowAssigner(3)"


@pytest.mark.parametrize("size, slide", [(3, 2), (4, 1), (2, 3), (5, 5)])
def test_count_sliding_windows_hold_their_range_of_positions(size: int, slide: int) -> None:
    ctx = FakeAssignerContext()
    assigner = CountSlidingWindowAssigner.of(size, slide)
    for position in range(25):
        windows = assigner.assign_windows(position, None, ctx)
        expected = [CountWindow(i) for i in range(position, -1, -1)
                    if i * slide <= position < i * slide + size]
        assert windows == expected
    assert assigner.get_default_trigger().get_window_size() == size
    assert repr(assigner) == f"CountSlidingWindowAssigner({size}, {slide})"
