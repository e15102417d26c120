"""AsyncWaitOperator: ordered / unordered results, capacity, timeouts, retries, watermarks, checkpoints."""

from __future__ import annotations

import asyncio
import threading
import time

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.datastream.function_async import AsyncFunction, AsyncRetryStrategy
from streamkernel.errors import UserFunctionError
from streamkernel.graph.operator_specs import AsyncWaitSpec
from streamkernel.testing import wait_until

OperatorHarness = harness.OperatorHarness


def async_op(function, mode="ORDERED", timeout=600_000, capacity=100, retry=None, **kwargs):
    """The operator under test; the timeout (real time) is long unless a test is about timeouts:
    tests hold records in flight behind gates, which on a loaded machine can take seconds."""
    spec = AsyncWaitSpec(function=function, timeout=timeout, capacity=capacity, output_mode=mode,
                         retry_strategy=retry, key_selector=None)
    return OperatorHarness(spec, **kwargs)


def poll_until(h, condition, limit_s=60.0):
    """Drive the task's processing-time callbacks (every 5 ms of manual time) until ``condition()``."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        h.advance_time(5)
        time.sleep(0.001)


class Gated(AsyncFunction):
    """Values listed in ``wait_for`` complete only after the value they name completed."""

    def __init__(self, wait_for=None):
        self.wait_for = wait_for or {}
        self.events = None

    async def async_invoke(self, value):
        if self.events is None:
            self.events = {}
        own = self.events.setdefault(value, asyncio.Event())
        other = self.wait_for.get(value)
        if other is not None:
            await self.events.setdefault(other, asyncio.Event()).wait()
        own.set()
        return [value * 10]


def test_ordered_mode_emits_in_input_order_with_input_timestamps():
    h = async_op(Gated({1: 3, 2: 3}), "ORDERED")
    h.process([1, 2, 3], [100, 200, 300])
    h.finish()
    assert h.output.records == [(10, 100), (20, 200), (30, 300)]
    assert h.metrics.records_in == 3 and h.metrics.records_out == 3
    h.close()


def test_unordered_mode_emits_as_calls_complete():
    h = async_op(Gated({1: 2}), "UNORDERED")
    h.process([1, 2])
    h.finish()
    assert h.output.values == [20, 10]
    h.close()


def test_results_are_drained_by_the_processing_time_callback():
    class Echo(AsyncFunction):
        async def async_invoke(self, value):
            return [value, value]

    h = async_op(Echo())
    h.process(["a"])
    poll_until(h, lambda: h.output.values == ["a", "a"])
    assert h.output.timestamps == [None, None]
    h.close()


def test_capacity_bounds_calls_in_flight():
    state = {"now": 0, "max": 0}

    class Slow(AsyncFunction):
        async def async_invoke(self, value):
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
            await asyncio.sleep(0.002)
            state["now"] -= 1
            return [value]

    h = async_op(Slow(), "UNORDERED", capacity=3)
    h.process(list(range(20)))
    h.finish()
    assert sorted(h.output.values) == list(range(20))
    assert 1 <= state["max"] <= 3
    h.close()


def test_timeout_without_override_fails_naming_the_record():
    class Hang(AsyncFunction):
        async def async_invoke(self, value):
            await asyncio.sleep(30)
            return [value]

    h = async_op(Hang(), timeout=20, name="Async Wait")
    with pytest.raises(UserFunctionError, match=r"'Async Wait'.*record 'stuck'.*timeout of 20 ms") as info:
        h.process(["stuck"])  # the failure surfaces wherever the task drains completed calls
        h.finish()
    assert isinstance(info.value.__cause__, TimeoutError)
    h.close()


def test_timeout_override_gives_fallback_results():
    class Fallback(AsyncFunction):
        async def async_invoke(self, value):
            if value == "slow":
                await asyncio.sleep(30)
            return [value]

        def timeout(self, value):
            return [("default", value)]

    h = async_op(Fallback(), timeout=20)
    h.process(["slow", "fast"], [1, 2])
    h.finish()
    assert h.output.records == [(("default", "slow"), 1), ("fast", 2)]
    h.close()


def test_failed_call_fails_the_job_with_the_record():
    class Broken(AsyncFunction):
        async def async_invoke(self, value):
            raise ConnectionError(f"no route for {value}")

    h = async_op(Broken())
    with pytest.raises(UserFunctionError, match=r"record 42.*ConnectionError: no route for 42"):
        h.process([42])
        h.finish()
    h.close()


def test_retry_strategy_retries_failed_and_unsatisfying_attempts():
    attempts = {}

    class Flaky(AsyncFunction):
        async def async_invoke(self, value):
            attempts[value] = attempts.get(value, 0) + 1
            if value == "err" and attempts[value] < 3:
                raise ConnectionError("try again")
            if value == "empty" and attempts[value] < 2:
                return []
            return [(value, attempts[value])]

    retry = AsyncRetryStrategy.fixed_delay(5, 1, lambda results: not results, lambda exc: True)
    h = async_op(Flaky(), retry=retry)
    h.process(["err", "empty", "ok"])
    h.finish()
    assert h.output.values == [("err", 3), ("empty", 2), ("ok", 1)]
    h.close()


def test_retry_gives_up_after_the_attempts_allowed():
    class AlwaysFails(AsyncFunction):
        async def async_invoke(self, value):
            raise ConnectionError("down")

    h = async_op(AlwaysFails(), retry=AsyncRetryStrategy.fixed_delay(2, 1, None, lambda exc: True))
    with pytest.raises(UserFunctionError, match="ConnectionError: down"):
        h.process([1])
        h.finish()
    h.close()


def test_watermarks_wait_for_the_records_before_them_even_unordered():
    gate = threading.Event()
    second_done = threading.Event()

    class F(AsyncFunction):
        async def async_invoke(self, value):
            if value == "first":
                while not gate.is_set():
                    await asyncio.sleep(0.001)
            else:
                second_done.set()
            return [value]

    h = async_op(F(), "UNORDERED")
    h.process(["first"], [1])
    h.watermark(5)
    h.process(["second"], [6])
    assert second_done.wait(60)
    # "second" completed: its result waits in the operator (in the hand-over queue, or already
    # taken from it when the call finished before process() returned), not yet emitted
    op = h.operator
    wait_until(lambda: not op._completed.empty() or any(e.done for e in op._pending.values()),
               message="the result of 'second' to reach the operator")
    h.advance_time(5)
    assert h.output.events == []  # "second" came after the watermark: it may not overtake it
    gate.set()
    h.finish()
    assert h.output.events == [("records", ["first"], [1]), ("watermark", 5), ("records", ["second"], [6])]
    h.close()


def test_watermark_passes_at_once_when_nothing_is_in_flight():
    h = async_op(Gated())
    h.watermark(7)
    assert h.output.watermarks == [7]
    h.close()


def test_snapshot_holds_in_flight_records_and_restore_invokes_them_again():
    gate = threading.Event()

    class Blocked(AsyncFunction):
        async def async_invoke(self, value):
            while not gate.is_set():
                await asyncio.sleep(0.001)
            return [value]

    h = async_op(Blocked())
    h.process(["a", "b"], [1, 2])
    snapshot = h.operator.snapshot_state(1)
    assert snapshot == {"in_flight": [("a", 1), ("b", 2)]}
    h.close()

    class Again(AsyncFunction):
        async def async_invoke(self, value):
            return [("again", value)]

    restored = async_op(Again(), restored_state=snapshot)
    restored.process(["c"], [3])
    restored.finish()
    assert restored.output.records == [(("again", "a"), 1), (("again", "b"), 2), (("again", "c"), 3)]
    restored.close()


def test_close_stops_the_event_loop_thread_and_cancels_calls():
    class Hang(AsyncFunction):
        async def async_invoke(self, value):
            await asyncio.sleep(30)
            return [value]

    before = {t.name for t in threading.enumerate()}
    h = async_op(Hang())
    h.process([1])
    started = [t for t in threading.enumerate() if t.name.startswith("async-wait") and t.name not in before]
    assert len(started) == 1
    h.close()
    assert not started[0].is_alive()


def test_plain_function_returning_a_list_is_accepted_and_none_is_an_error():
    class Sync(AsyncFunction):
        def async_invoke(self, value):  # not a coroutine: accepted as a convenience
            return [value] if value else None

    h = async_op(Sync())
    h.process([1])
    h.finish()
    assert h.output.values == [1]
    with pytest.raises(UserFunctionError, match="must return a list"):
        h.process([0])
        h.finish()
    h.close()
