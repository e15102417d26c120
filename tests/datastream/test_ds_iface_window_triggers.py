"""Triggers: Flink's firing, timer and state semantics, driven through a fake TriggerContext."""

from __future__ import annotations

from typing import Any

import pytest

from streamkernel.common.time import Duration, Time
from streamkernel.datastream.state import ReducingState, ReducingStateDescriptor, StateDescriptor
from streamkernel.datastream.window import (
    ContinuousEventTimeTrigger,
    ContinuousProcessingTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
    TriggerResult,
)
from streamkernel.datastream.windows import MIN_LONG_VALUE, GlobalWindow, TimeWindow
from streamkernel.errors import InvalidProgramError


class FakeReducingState(ReducingState):
    """ReducingState over a dict, keyed by (window, state name)."""

    def __init__(self, store: dict, key: tuple, descriptor: ReducingStateDescriptor) -> None:
        self._store, self._key = store, key
        function = descriptor.get_reduce_function()
        self._reduce = getattr(function, "reduce", function)

    def get(self) -> Any:
        return self._store.get(self._key)

    def add(self, value: Any) -> None:
        current = self._store.get(self._key)
        self._store[self._key] = value if current is None else self._reduce(current, value)

    def clear(self) -> None:
        self._store.pop(self._key, None)


class FakeContext(Trigger.OnMergeContext):
    """Timers and pane-scoped state for one key; ``window`` is the pane being handled."""

    def __init__(self, window: Any, watermark: int = MIN_LONG_VALUE, processing_time: int = 0) -> None:
        self.window = window
        self.watermark = watermark
        self.processing_time = processing_time
        self.event_timers: set[tuple[Any, int]] = set()
        self.processing_timers: set[tuple[Any, int]] = set()
        self.store: dict[tuple[Any, str], Any] = {}
        self.merged_windows: list[Any] = []

    def get_current_processing_time(self) -> int:
        return self.processing_time

    def get_metric_group(self) -> Any:
        return None

    def get_current_watermark(self) -> int:
        return self.watermark

    def register_processing_time_timer(self, time: int) -> None:
        self.processing_timers.add((self.window, time))

    def register_event_time_timer(self, time: int) -> None:
        self.event_timers.add((self.window, time))

    def delete_processing_time_timer(self, time: int) -> None:
        self.processing_timers.discard((self.window, time))

    def delete_event_time_timer(self, time: int) -> None:
        self.event_timers.discard((self.window, time))

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        assert isinstance(state_descriptor, ReducingStateDescriptor)
        return FakeReducingState(self.store, (self.window, state_descriptor.get_name()), state_descriptor)

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        target = self.get_partitioned_state(state_descriptor)
        for window in self.merged_windows:
            value = self.store.pop((window, state_descriptor.get_name()), None)
            if value is not None:
                target.add(value)

    def event_times(self) -> set[int]:
        return {time for window, time in self.event_timers if window == self.window}

    def processing_times(self) -> set[int]:
        return {time for window, time in self.processing_timers if window == self.window}


WINDOW = TimeWindow(0, 5000)


def test_trigger_result_flags() -> None:
    flags = {result: (result.is_fire(), result.is_purge()) for result in TriggerResult}
    assert flags == {
        TriggerResult.CONTINUE: (False, False),
        TriggerResult.FIRE: (True, False),
        TriggerResult.PURGE: (False, True),
        TriggerResult.FIRE_AND_PURGE: (True, True),
    }


def test_event_time_trigger_registers_the_end_of_window_and_fires_on_it() -> None:
    ctx = FakeContext(WINDOW, watermark=1000)
    trigger = EventTimeTrigger.create()
    assert trigger.on_element("x", 1200, WINDOW, ctx) is TriggerResult.CONTINUE
    assert ctx.event_times() == {4999}
    assert trigger.on_event_time(3000, WINDOW, ctx) is TriggerResult.CONTINUE
    assert trigger.on_event_time(4999, WINDOW, ctx) is TriggerResult.FIRE
    assert trigger.on_processing_time(4999, WINDOW, ctx) is TriggerResult.CONTINUE
    trigger.clear(WINDOW, ctx)
    assert ctx.event_times() == set()


def test_event_time_trigger_fires_at_once_for_a_window_the_watermark_passed() -> None:
    ctx = FakeContext(WINDOW, watermark=4999)
    assert EventTimeTrigger().on_element("late", 100, WINDOW, ctx) is TriggerResult.FIRE
    assert ctx.event_times() == set()


def test_event_time_trigger_on_merge_registers_only_future_ends() -> None:
    trigger = EventTimeTrigger()
    assert trigger.can_merge()
    ctx = FakeContext(TimeWindow(0, 8000), watermark=7000)
    trigger.on_merge(TimeWindow(0, 8000), ctx)
    assert ctx.event_times() == {7999}
    ctx = FakeContext(TimeWindow(0, 8000), watermark=7999)
    trigger.on_merge(TimeWindow(0, 8000), ctx)
    assert ctx.event_times() == set()


def test_processing_time_trigger() -> None:
    ctx = FakeContext(WINDOW, processing_time=1000)
    trigger = ProcessingTimeTrigger.create()
    assert trigger.on_element("x", 0, WINDOW, ctx) is TriggerResult.CONTINUE
    assert ctx.processing_times() == {4999}
    assert trigger.on_event_time(4999, WINDOW, ctx) is TriggerResult.CONTINUE
    assert trigger.on_processing_time(4999, WINDOW, ctx) is TriggerResult.FIRE
    trigger.on_merge(TimeWindow(0, 9000), FakeContext(TimeWindow(0, 9000), processing_time=9500))
    merge_ctx = FakeContext(TimeWindow(0, 9000), processing_time=100)
    trigger.on_merge(TimeWindow(0, 9000), merge_ctx)
    assert merge_ctx.processing_times() == {8999}
    trigger.clear(WINDOW, ctx)
    assert ctx.processing_times() == set()


def test_count_trigger_fires_every_n_elements_and_resets() -> None:
    ctx = FakeContext(GlobalWindow.get())
    trigger = CountTrigger.of(3)
    results = [trigger.on_element(i, 0, GlobalWindow.get(), ctx) for i in range(7)]
    fired = [i for i, result in enumerate(results) if result is TriggerResult.FIRE]
    assert fired == [2, 5]
    assert all(r in (TriggerResult.FIRE, TriggerResult.CONTINUE) for r in results)
    assert ctx.store == {(GlobalWindow.get(), "count"): 1}
    trigger.clear(GlobalWindow.get(), ctx)
    assert ctx.store == {}
    assert repr(trigger) == "CountTrigger(3)"


def test_count_trigger_keeps_a_count_per_window_and_merges_counts() -> None:
    trigger = CountTrigger.of(4)
    a, b, merged = TimeWindow(0, 10), TimeWindow(8, 20), TimeWindow(0, 20)
    ctx = FakeContext(a)
    for _ in range(2):
        trigger.on_element("x", 1, a, ctx)
    ctx.window = b
    trigger.on_element("y", 9, b, ctx)
    ctx.window, ctx.merged_windows = merged, [a, b]
    trigger.on_merge(merged, ctx)
    assert ctx.store == {(merged, "count"): 3}
    assert trigger.on_element("z", 9, merged, ctx) is TriggerResult.FIRE


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3"])
def test_count_trigger_rejects_a_bad_size(bad: Any) -> None:
    with pytest.raises(InvalidProgramError, match="window_size"):
        CountTrigger.of(bad)


def test_purging_trigger_turns_fire_into_fire_and_purge() -> None:
    ctx = FakeContext(WINDOW, watermark=0)
    trigger = PurgingTrigger.of(CountTrigger.of(2))
    assert trigger.on_element("a", 0, WINDOW, ctx) is TriggerResult.CONTINUE
    assert trigger.on_element("b", 0, WINDOW, ctx) is TriggerResult.FIRE_AND_PURGE
    event = PurgingTrigger.of(EventTimeTrigger())
    assert event.on_event_time(4999, WINDOW, ctx) is TriggerResult.FIRE_AND_PURGE
    assert event.on_event_time(10, WINDOW, ctx) is TriggerResult.CONTINUE
    assert PurgingTrigger.of(NeverTrigger()).can_merge() is False
    assert event.can_merge() is True
    assert repr(event) == "PurgingTrigger(EventTimeTrigger())"
    with pytest.raises(InvalidProgramError, match="nested_trigger"):
        PurgingTrigger.of(lambda *a: TriggerResult.FIRE)  # type: ignore[arg-type]


def test_never_trigger_never_fires() -> None:
    ctx = FakeContext(GlobalWindow.get())
    trigger = NeverTrigger()
    window = GlobalWindow.get()
    assert {trigger.on_element(1, 0, window, ctx), trigger.on_event_time(2**62, window, ctx),
            trigger.on_processing_time(2**62, window, ctx)} == {TriggerResult.CONTINUE}
    assert ctx.event_timers == set() and ctx.processing_timers == set()


def test_continuous_event_time_trigger_fires_every_interval_until_the_end() -> None:
    window = TimeWindow(0, 4500)
    ctx = FakeContext(window, watermark=0)
    trigger = ContinuousEventTimeTrigger.of(Time.seconds(1))
    assert trigger.interval == 1000
    assert trigger.on_element("x", 1500, window, ctx) is TriggerResult.CONTINUE
    assert ctx.event_times() == {4499, 2000}  # window end, and the next interval boundary
    trigger.on_element("y", 1700, window, ctx)  # a pending firing is kept, not moved
    assert ctx.event_times() == {4499, 2000}
    fired = []
    time: Any = 2000
    while time is not None:
        ctx.watermark = time
        if trigger.on_event_time(time, window, ctx).is_fire():
            fired.append(time)
        later = sorted(t for t in ctx.event_times() if t > time)
        time = later[0] if later else None
    assert fired == [2000, 3000, 4000, 4499]


def test_continuous_event_time_trigger_fires_late_elements_and_clears_its_timer() -> None:
    window = TimeWindow(0, 4500)
    trigger = ContinuousEventTimeTrigger.of(1000)
    assert trigger.on_element("late", 10, window, FakeContext(window, watermark=5000)) is TriggerResult.FIRE
    ctx = FakeContext(window, watermark=0)
    trigger.on_element("x", 10, window, ctx)
    trigger.clear(window, ctx)
    assert ctx.event_times() == {4499} and ctx.store == {}
    with pytest.raises(InvalidProgramError, match="interval"):
        ContinuousEventTimeTrigger.of(Duration.of_millis(0))


def test_continuous_event_time_trigger_keeps_the_earliest_firing_on_merge() -> None:
    trigger = ContinuousEventTimeTrigger.of(1000)
    a, b, merged = TimeWindow(0, 9000), TimeWindow(5000, 12000), TimeWindow(0, 12000)
    ctx = FakeContext(a, watermark=0)
    trigger.on_element("x", 500, a, ctx)
    ctx.window = b
    trigger.on_element("y", 5200, b, ctx)
    ctx.window, ctx.merged_windows = merged, [a, b]
    trigger.on_merge(merged, ctx)
    assert ctx.store == {(merged, "fire-time"): 1000}
    assert 1000 in ctx.event_times()


def test_continuous_processing_time_trigger() -> None:
    window = TimeWindow(0, 10_000)
    ctx = FakeContext(window, processing_time=1234)
    trigger = ContinuousProcessingTimeTrigger.of(Time.seconds(1))
    assert trigger.on_element("x", 0, window, ctx) is TriggerResult.CONTINUE
    assert ctx.processing_times() == {2000}
    assert trigger.on_processing_time(1500, window, ctx) is TriggerResult.CONTINUE
    assert trigger.on_processing_time(2000, window, ctx) is TriggerResult.FIRE
    assert ctx.processing_times() == {2000, 3000}
    assert trigger.on_event_time(3000, window, ctx) is TriggerResult.CONTINUE
    trigger.clear(window, ctx)
    assert ctx.processing_times() == {2000} and ctx.store == {}
    assert repr(trigger) == "ContinuousProcessingTimeTrigger(1000)"


def test_trigger_interface_requires_every_callback() -> None:
    class OnlyElement(Trigger):
        def on_element(self, element, timestamp, window, ctx):
            return TriggerResult.FIRE

    with pytest.raises(TypeError):
        OnlyElement()  # type: ignore[abstract]
