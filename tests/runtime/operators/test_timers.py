"""Timers: the task's processing-time service, an operator's timer service, PyFlink's TimerService."""

from __future__ import annotations

import pytest

from streamkernel.common.watermark_strategy import MIN_WATERMARK
from streamkernel.datastream.timerservice import TimerService
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.keygroups import assign_key_to_operator, key_group_range_for_operator
from streamkernel.runtime.core.clock import ManualClock
from streamkernel.runtime.state.heap import HeapKeyedStateBackend
from streamkernel.runtime.operators.timers import (
    InternalTimer,
    InternalTimerService,
    KeyedTimerService,
    ProcessingTimeService,
)

MAX_P = 128


class Recorder:
    """A Triggerable that records (domain, timestamp, key, namespace, key seen in the backend)."""

    def __init__(self, backend=None) -> None:
        self.backend = backend
        self.fired: list = []
        self.on_fire = None

    def _record(self, domain: str, timer: InternalTimer) -> None:
        seen = None if self.backend is None else (self.backend.current_key, self.backend.current_namespace)
        self.fired.append((domain, timer.timestamp, timer.key, timer.namespace, seen))
        if self.on_fire is not None:
            self.on_fire(timer)

    def on_event_time(self, timer: InternalTimer) -> None:
        self._record("event", timer)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._record("processing", timer)


def make(clock=None, key_groups=range(MAX_P)):
    clock = clock or ManualClock(0)
    backend = HeapKeyedStateBackend(MAX_P, key_groups)
    recorder = Recorder(backend)
    pts = ProcessingTimeService(clock)
    service = InternalTimerService("user-timers", backend, recorder, pts)
    return clock, backend, recorder, pts, service


# ---------------------------------------------------------------------- ProcessingTimeService
def test_processing_time_service_fires_due_callbacks_in_order() -> None:
    clock = ManualClock(100)
    service = ProcessingTimeService(clock)
    fired = []
    service.register_timer(130, lambda ts: fired.append(("b", ts)))
    service.register_timer(110, lambda ts: fired.append(("a", ts)))
    service.register_timer(130, lambda ts: fired.append(("c", ts)))
    cancelled = service.register_timer(120, lambda ts: fired.append(("x", ts)))
    cancelled.cancel()
    assert service.current_processing_time() == 100
    assert service.next_deadline() == 110
    assert service.fire_due() == 0 and fired == []
    clock.set(130)
    assert service.fire_due() == 3
    assert fired == [("a", 110), ("b", 130), ("c", 130)]  # equal times: registration order
    assert service.next_deadline() is None


def test_callbacks_may_register_timers_and_due_ones_wait_for_the_next_call() -> None:
    clock = ManualClock(0)
    service = ProcessingTimeService(clock)
    fired = []

    def periodic(ts: int) -> None:
        fired.append(ts)
        service.register_timer(ts, periodic)  # already due: must not spin inside fire_due

    service.register_timer(0, periodic)
    assert service.fire_due() == 1
    assert service.next_deadline() == 0
    assert service.fire_due() == 1
    assert fired == [0, 0]


def test_quiesce_drops_and_ignores_timers() -> None:
    clock = ManualClock(0)
    service = ProcessingTimeService(clock)
    fired = []
    service.register_timer(0, fired.append)
    service.quiesce()
    service.register_timer(0, fired.append)
    assert service.fire_due() == 0 and service.next_deadline() is None and fired == []


# ---------------------------------------------------------------------- event time
def test_event_timers_fire_in_order_with_key_context_set() -> None:
    _, backend, recorder, _, service = make()
    for key, namespace, ts in [("a", None, 30), ("b", "w", 10), ("a", "w", 20), ("c", None, 50)]:
        backend.current_key = key
        service.register_event_time_timer(namespace, ts)
    assert service.current_watermark() == MIN_WATERMARK
    service.advance_watermark(29)
    assert recorder.fired == [("event", 10, "b", "w", ("b", "w")), ("event", 20, "a", "w", ("a", "w"))]
    service.advance_watermark(30)  # <= watermark fires
    assert recorder.fired[-1] == ("event", 30, "a", None, ("a", None))
    assert service.current_watermark() == 30 and service.num_event_time_timers() == 1


def test_same_timer_registered_twice_fires_once() -> None:
    _, backend, recorder, _, service = make()
    backend.current_key = "a"
    service.register_event_time_timer(None, 10)
    service.register_event_time_timer(None, 10)
    backend.current_key = "b"
    service.register_event_time_timer(None, 10)  # another key: another timer
    service.advance_watermark(100)
    assert [(ts, key) for _, ts, key, _, _ in recorder.fired] == [(10, "a"), (10, "b")]


def test_delete_removes_only_that_timer_and_reregistering_works() -> None:
    _, backend, recorder, _, service = make()
    backend.current_key = "a"
    service.register_event_time_timer(None, 10)
    service.register_event_time_timer(None, 20)
    service.delete_event_time_timer(None, 10)
    service.delete_event_time_timer(None, 999)  # no such timer: no error
    backend.current_key = "b"
    service.delete_event_time_timer(None, 20)  # another key's timer stays
    backend.current_key = "a"
    service.register_event_time_timer(None, 15)
    service.delete_event_time_timer(None, 15)
    service.register_event_time_timer(None, 15)
    service.advance_watermark(100)
    assert [(ts, key) for _, ts, key, _, _ in recorder.fired] == [(15, "a"), (20, "a")]


def test_timers_registered_while_firing_fire_in_the_same_advance() -> None:
    _, backend, recorder, _, service = make()

    def cascade(timer: InternalTimer) -> None:
        if timer.timestamp < 40:  # a new timer <= the watermark, for the same key
            service.register_event_time_timer(timer.namespace, timer.timestamp + 10)
        if timer.timestamp == 10:
            service.register_event_time_timer(None, 1000)  # beyond: waits

    recorder.on_fire = cascade
    backend.current_key = "k"
    service.register_event_time_timer(None, 10)
    service.advance_watermark(45)
    assert [ts for _, ts, *_ in recorder.fired] == [10, 20, 30, 40]
    assert service.event_time_timers() == [InternalTimer(1000, "k", None)]


def test_timers_registered_while_firing_wait_for_the_next_round() -> None:
    """PyFlink's rule: a round fires the timers registered before it began, in timestamp
    order; one registered meanwhile fires in a later round, after later-stamped timers."""
    _, backend, recorder, _, service = make()

    def register_earlier(timer: InternalTimer) -> None:
        if timer.timestamp == 10:
            service.register_event_time_timer(None, 20)  # between 10 and 30: still after 30
            assert service.num_event_time_timers() == 0  # not registered yet: deferred

    recorder.on_fire = register_earlier
    backend.current_key = "a"
    service.register_event_time_timer(None, 10)
    backend.current_key = "b"
    service.register_event_time_timer(None, 30)
    service.advance_watermark(50)
    assert [(ts, key) for _, ts, key, _, _ in recorder.fired] == [(10, "a"), (30, "b"), (20, "a")]
    assert recorder.fired[-1][4] == ("a", None)  # the registering key, set back when it fires


def test_deleting_during_a_round_applies_when_the_round_ends() -> None:
    """A due timer deleted during its round still fires; a timer registered and deleted in one
    round never fires; re-registering a timer that fires in this round fires it again."""
    _, backend, recorder, _, service = make()

    def on_fire(timer: InternalTimer) -> None:
        if timer.timestamp == 10:
            service.delete_event_time_timer(None, 11)  # due in this round: fires anyway
            service.register_event_time_timer(None, 12)
            service.delete_event_time_timer(None, 12)  # registered and deleted: never fires
            service.register_event_time_timer(None, 13)  # fires in this round and the next
            service.register_event_time_timer(None, 500)
        if timer.timestamp == 11:
            service.delete_event_time_timer(None, 500)  # after its registration: gone

    recorder.on_fire = on_fire
    backend.current_key = "k"
    for ts in (10, 11, 13):
        service.register_event_time_timer(None, ts)
    service.advance_watermark(100)
    assert [ts for _, ts, *_ in recorder.fired] == [10, 11, 13, 13]
    assert service.num_event_time_timers() == 0


def test_processing_timers_registered_during_an_event_round_wait_for_it_to_end() -> None:
    clock, backend, recorder, pts, service = make(ManualClock(100))
    recorder.on_fire = lambda timer: timer.timestamp == 5 and (
        service.register_processing_time_timer(None, 50), service.delete_processing_time_timer(None, 60))
    backend.current_key = "k"
    service.register_processing_time_timer(None, 60)
    service.register_event_time_timer(None, 5)
    service.advance_watermark(5)
    assert service.num_processing_time_timers() == 1 and pts.next_deadline() == 50
    pts.fire_due()
    assert [(domain, ts) for domain, ts, *_ in recorder.fired] == [("event", 5), ("processing", 50)]


def test_timer_for_a_passed_time_fires_at_the_next_watermark() -> None:
    _, backend, recorder, _, service = make()
    service.advance_watermark(100)
    backend.current_key = "late"
    service.register_event_time_timer(None, 50)
    assert recorder.fired == []
    service.advance_watermark(101)
    assert [ts for _, ts, *_ in recorder.fired] == [50]


def test_many_deletions_compact_the_heap_without_changing_results() -> None:
    _, backend, recorder, _, service = make()
    backend.current_key = "k"
    for ts in range(5000):
        service.register_event_time_timer(None, ts)
        if ts % 10:
            service.delete_event_time_timer(None, ts)
    assert len(service._event.heap) < 5000  # rebuilt at least once
    service.advance_watermark(10**6)
    assert [ts for _, ts, *_ in recorder.fired] == list(range(0, 5000, 10))


def test_non_keyed_timer_service() -> None:
    recorder = Recorder()
    service = InternalTimerService("t", None, recorder, ProcessingTimeService(ManualClock(0)))
    service.register_event_time_timer("ns", 5)
    service.advance_watermark(5)
    assert recorder.fired == [("event", 5, None, "ns", None)]


# ---------------------------------------------------------------------- processing time
def test_processing_time_timers_with_manual_clock() -> None:
    clock, backend, recorder, pts, service = make(ManualClock(1000))
    backend.current_key = "a"
    service.register_processing_time_timer(None, 1500)
    backend.current_key = "b"
    service.register_processing_time_timer("w", 1200)
    service.register_processing_time_timer("w", 1200)  # dedup
    assert pts.next_deadline() == 1200  # the earliest is scheduled with the task's service
    clock.set(1199)
    pts.fire_due()
    assert recorder.fired == []
    clock.set(1200)
    pts.fire_due()
    assert recorder.fired == [("processing", 1200, "b", "w", ("b", "w"))]
    assert pts.next_deadline() == 1500  # re-registered after firing
    clock.set(5000)
    pts.fire_due()
    assert recorder.fired[-1] == ("processing", 1500, "a", None, ("a", None))
    assert pts.next_deadline() is None


def test_processing_time_delete_and_earlier_registration() -> None:
    clock, backend, recorder, pts, service = make()
    backend.current_key = "a"
    service.register_processing_time_timer(None, 100)
    service.register_processing_time_timer(None, 50)  # earlier: rescheduled
    assert pts.next_deadline() == 50
    service.delete_processing_time_timer(None, 50)
    clock.set(60)
    pts.fire_due()  # finds nothing due, reschedules the next
    assert recorder.fired == [] and pts.next_deadline() == 100
    clock.set(100)
    pts.fire_due()
    assert [ts for _, ts, *_ in recorder.fired] == [100]


def test_processing_timer_callback_registering_more_timers() -> None:
    """PyFlink: a timer registered while processing-time timers fire waits for the next
    round (the next callback), even if already due."""
    clock, backend, recorder, pts, service = make()
    recorder.on_fire = lambda timer: timer.timestamp < 300 and service.register_processing_time_timer(
        None, timer.timestamp + 100)
    backend.current_key = "k"
    service.register_processing_time_timer(None, 100)
    clock.set(250)
    pts.fire_due()
    assert [ts for _, ts, *_ in recorder.fired] == [100]
    pts.fire_due()
    assert [ts for _, ts, *_ in recorder.fired] == [100, 200]
    clock.set(1000)
    pts.fire_due()
    assert [ts for _, ts, *_ in recorder.fired] == [100, 200, 300]


# ---------------------------------------------------------------------- snapshots
def test_snapshot_restore_round_trip() -> None:
    clock, backend, _, _, service = make()
    for key in ("a", "b"):
        backend.current_key = key
        service.register_event_time_timer("w", 10)
        service.register_processing_time_timer(None, 500)
    snapshot = service.snapshot()
    assert snapshot["kind"] == "timers" and snapshot["name"] == "user-timers"
    clock2, backend2, recorder2, pts2, service2 = make(ManualClock(1000))
    service2.restore([snapshot, {"kind": "timers", "name": "other", "max_parallelism": MAX_P,
                                 "event_time": {0: [("zzz", None, 1)]}, "processing_time": {}}],
                     range(MAX_P), MAX_P)
    assert pts2.next_deadline() == 500  # restored processing timers are scheduled (and overdue)
    pts2.fire_due()
    service2.advance_watermark(10)
    assert sorted((d, ts, k, ns) for d, ts, k, ns, _ in recorder2.fired) == [
        ("event", 10, "a", "w"), ("event", 10, "b", "w"),
        ("processing", 500, "a", None), ("processing", 500, "b", None)]


def test_rescaling_timers_two_to_three_subtasks() -> None:
    keys = [f"k{i}" for i in range(200)]
    snapshots = []
    for index in range(2):
        _, backend, _, _, service = make(key_groups=key_group_range_for_operator(MAX_P, 2, index))
        for key in keys:
            if assign_key_to_operator(key, MAX_P, 2) == index:
                backend.current_key = key
                service.register_event_time_timer(None, 7)
        snapshots.append(service.snapshot())
    fired = []
    for index in range(3):
        groups = key_group_range_for_operator(MAX_P, 3, index)
        _, _, recorder, _, service = make(key_groups=groups)
        service.restore(snapshots, groups, MAX_P)
        service.advance_watermark(7)
        for _, _, key, _, _ in recorder.fired:
            assert assign_key_to_operator(key, MAX_P, 3) == index
        fired.extend(key for _, _, key, _, _ in recorder.fired)
    assert sorted(fired) == sorted(keys)


def test_restore_with_another_max_parallelism_fails() -> None:
    _, backend, _, _, service = make()
    backend.current_key = "a"
    service.register_event_time_timer(None, 1)
    with pytest.raises(InvalidProgramError, match="max parallelism"):
        make()[4].restore([service.snapshot()], range(256), 256)


# ---------------------------------------------------------------------- KeyedTimerService
def test_keyed_timer_service_is_pyflinks_timer_service() -> None:
    clock, backend, recorder, pts, service = make(ManualClock(42))
    timers = KeyedTimerService(service)
    assert isinstance(timers, TimerService)
    assert timers.current_processing_time() == 42
    assert timers.current_watermark() == MIN_WATERMARK
    backend.current_key = "a"
    timers.register_event_time_timer(10)
    timers.register_event_time_timer(11.0)
    timers.register_processing_time_timer(50)
    timers.delete_event_time_timer(11)
    with pytest.raises(InvalidProgramError, match="timestamp"):
        timers.register_event_time_timer("soon")
    service.advance_watermark(20)
    clock.set(50)
    pts.fire_due()
    assert timers.current_watermark() == 20
    assert recorder.fired == [("event", 10, "a", None, ("a", None)),
                              ("processing", 50, "a", None, ("a", None))]
