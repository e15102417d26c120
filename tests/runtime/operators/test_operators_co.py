"""Two-input operators: co-map/flat-map/process, keyed co-process with timers, (keyed) broadcast process."""

from __future__ import annotations

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.datastream.function_base import CoFlatMapFunction, CoMapFunction
from streamkernel.datastream.function_process import (
    BroadcastProcessFunction,
    CoProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
)
from streamkernel.datastream.function_wrappers import KeySelectorWrapper
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.state import MapStateDescriptor, ValueStateDescriptor
from streamkernel.datastream.time_domain import TimeDomain
from streamkernel.errors import InvalidProgramError, UserFunctionError
from streamkernel.graph.operator_specs import (
    BroadcastProcessSpec,
    CoFlatMapSpec,
    CoMapSpec,
    CoProcessSpec,
    KeyedBroadcastProcessSpec,
    KeyedCoProcessSpec,
)
from streamkernel.runtime.state.operator_state import DefaultOperatorStateBackend

OperatorHarness = harness.OperatorHarness

by_first = KeySelectorWrapper(lambda r: r[0])


class Tag(CoMapFunction):
    def map1(self, value):
        return "left", value

    def map2(self, value):
        return "right", value


# ------------------------------------------------------------------ co-map / co-flat-map
def test_co_map_calls_map1_and_map2_and_keeps_timestamps():
    h = OperatorHarness(CoMapSpec(function=Tag()))
    h.process1([1, 2], [10, 20]).process2(["x"])
    assert h.output.records == [(("left", 1), 10), (("left", 2), 20), (("right", "x"), None)]
    assert h.metrics.records_in == 3 and h.metrics.records_out == 3


def test_co_map_watermark_is_the_minimum_of_both_inputs():
    h = OperatorHarness(CoMapSpec(function=Tag()))
    h.operator.process_watermark1(10)
    assert h.output.watermarks == []
    h.operator.process_watermark2(5)
    h.operator.process_watermark1(20)
    h.operator.process_watermark2(30)
    assert h.output.watermarks == [5, 20]


def test_keyed_co_map_shares_state_per_key_across_inputs():
    class Join(CoMapFunction):
        def open(self, runtime_context):
            self.last = runtime_context.get_state(ValueStateDescriptor("last"))

        def map1(self, value):
            self.last.update(value[1])
            return value

        def map2(self, value):
            return value[0], self.last.value(), value[1]

    spec = CoMapSpec(function=Join(), key_selector1=by_first, key_selector2=by_first)
    h = OperatorHarness(spec, keyed=True)
    h.process1([("a", 1), ("b", 2)]).process2([("a", "x"), ("c", "y")])
    assert h.output.values[2:] == [("a", 1, "x"), ("c", None, "y")]


def test_co_map_error_names_the_record_of_the_right_input():
    class Bad(CoMapFunction):
        def map1(self, value):
            return value

        def map2(self, value):
            return 1 / value

    h = OperatorHarness(CoMapSpec(function=Bad()), name="CoMap")
    with pytest.raises(UserFunctionError, match=r"'CoMap'.*record 0.*ZeroDivisionError"):
        h.process2([1, 0])


def test_co_flat_map_replicates_timestamps():
    class Split(CoFlatMapFunction):
        def flat_map1(self, value):
            return value.split()

        def flat_map2(self, value):
            yield from range(value)

    h = OperatorHarness(CoFlatMapSpec(function=Split()))
    h.process1(["a b", "c"], [1, 2]).process2([2, 0])
    assert h.output.records == [("a", 1), ("b", 1), ("c", 2), (0, None), (1, None)]


# ------------------------------------------------------------------ co-process
def test_co_process_context_and_side_outputs():
    side = OutputTag("side")

    class F(CoProcessFunction):
        def process_element1(self, value, ctx):
            yield "1", value, ctx.timestamp()

        def process_element2(self, value, ctx):
            ctx.output(side, value)
            yield side, -value

    h = OperatorHarness(CoProcessSpec(function=F()))
    h.process1([7], [70]).process2([3], [30])
    assert h.output.records == [(("1", 7, 70), 70)]
    assert h.output.side(side) == [(3, 30), (-3, 30)]


def test_non_keyed_co_process_refuses_timers():
    class F(CoProcessFunction):
        def process_element1(self, value, ctx):
            ctx.timer_service().register_processing_time_timer(1)

        def process_element2(self, value, ctx):
            return ()

    h = OperatorHarness(CoProcessSpec(function=F()))
    with pytest.raises(UserFunctionError, match="only supported on a keyed streams"):
        h.process1([1])


class Match(KeyedCoProcessFunction):
    """Orders (input 1) wait for payments (input 2) of the same key; time out at an event-time timer."""

    def open(self, runtime_context):
        self.order = runtime_context.get_state(ValueStateDescriptor("order"))

    def process_element1(self, value, ctx):
        self.order.update(value)
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        return ()

    def process_element2(self, value, ctx):
        order = self.order.value()
        if order is not None:
            self.order.clear()
            yield "paid", order, value, ctx.get_current_key()

    def on_timer(self, timestamp, ctx):
        order = self.order.value()
        if order is not None:
            self.order.clear()
            yield "timeout", order, ctx.time_domain(), ctx.get_current_key()


def test_keyed_co_process_state_is_shared_and_timers_fire():
    spec = KeyedCoProcessSpec(function=Match(), key_selector1=by_first, key_selector2=by_first)
    h = OperatorHarness(spec, keyed=True)
    h.process1([("o1", 1), ("o2", 2)], [100, 100])
    h.process2([("o1", "card")], [105])
    assert h.output.records == [(("paid", ("o1", 1), ("o1", "card"), "o1"), 105)]
    h.output.clear()
    h.operator.process_watermark1(200)
    assert h.output.events == []  # input 2 holds the watermark back
    h.operator.process_watermark2(200)
    assert h.output.events == [
        ("records", [("timeout", ("o2", 2), TimeDomain.EVENT_TIME, "o2")], [110]),
        ("watermark", 200),
    ]


def test_keyed_co_process_accepts_a_plain_co_process_function():
    class F(CoProcessFunction):
        def process_element1(self, value, ctx):
            yield ctx.timer_service().current_watermark()

        def process_element2(self, value, ctx):
            return ()

    spec = KeyedCoProcessSpec(function=F(), key_selector1=by_first, key_selector2=by_first)
    h = OperatorHarness(spec, keyed=True)
    h.watermark(3)
    h.process1([("a", 1)])
    assert h.output.values == [3]


# ------------------------------------------------------------------ broadcast
RULES = MapStateDescriptor("rules")


class ApplyRules(BroadcastProcessFunction):
    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(value[0], value[1])
        yield "rule", value[0], ctx.timestamp(), ctx.current_watermark()

    def process_element(self, value, ctx):
        rule = ctx.get_broadcast_state(RULES).get(value)
        yield value, rule


def broadcast_spec(function, keyed=False):
    if keyed:
        return KeyedBroadcastProcessSpec(function=function, broadcast_state_descriptors=(RULES,), key_selector=by_first)
    return BroadcastProcessSpec(function=function, broadcast_state_descriptors=(RULES,))


def test_broadcast_side_writes_state_that_the_other_side_reads():
    operator_state = DefaultOperatorStateBackend()
    h = OperatorHarness(broadcast_spec(ApplyRules()), operator_state=operator_state)
    h.process1(["a"])
    h.process2([("a", "upper")], [5])
    h.process1(["a", "b"])
    assert h.output.values == [("a", None), ("rule", "a", 5, h.operator.current_watermark), ("a", "upper"),
                               ("b", None)]
    # the state lives in the operator state backend, which the task checkpoints
    assert operator_state.snapshot()["states"]["rules"]["entries"] == {"a": "upper"}


def test_broadcast_state_is_read_only_in_process_element():
    class Cheat(BroadcastProcessFunction):
        def process_broadcast_element(self, value, ctx):
            return ()

        def process_element(self, value, ctx):
            ctx.get_broadcast_state(RULES).put("x", 1)

    h = OperatorHarness(broadcast_spec(Cheat()))
    with pytest.raises(UserFunctionError, match="record 'v'"):
        h.process1(["v"])


def test_broadcast_state_restored_by_the_task_is_visible():
    operator_state = DefaultOperatorStateBackend()
    operator_state.get_broadcast_state(RULES).put("a", "restored")
    snapshot = operator_state.snapshot()
    fresh = DefaultOperatorStateBackend()
    fresh.restore(snapshot)  # the task restores operator state before open()
    h = OperatorHarness(broadcast_spec(ApplyRules()), operator_state=fresh)
    h.process1(["a"])
    assert h.output.values == [("a", "restored")]


def test_undeclared_broadcast_state_is_a_clear_error():
    class Typo(BroadcastProcessFunction):
        def process_broadcast_element(self, value, ctx):
            ctx.get_broadcast_state(MapStateDescriptor("rulez"))

        def process_element(self, value, ctx):
            return ()

    h = OperatorHarness(broadcast_spec(Typo()))
    with pytest.raises(UserFunctionError, match="does not exist") as info:
        h.process2([1])
    assert isinstance(info.value.__cause__, InvalidProgramError)


def test_keyed_broadcast_keyed_state_timers_and_broadcast_state():
    class Alert(KeyedBroadcastProcessFunction):
        def open(self, runtime_context):
            self.total = runtime_context.get_state(ValueStateDescriptor("total"))

        def process_broadcast_element(self, value, ctx):
            ctx.get_broadcast_state(RULES).put("limit", value)
            return ()

        def process_element(self, value, ctx):
            total = (self.total.value() or 0) + value[1]
            self.total.update(total)
            limit = ctx.get_broadcast_state(RULES).get("limit")
            if limit is not None and total > limit:
                ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1)
            yield ctx.get_current_key(), total

        def on_timer(self, timestamp, ctx):
            yield ("alert", ctx.get_current_key(), self.total.value(), ctx.time_domain(),
                   ctx.get_broadcast_state(RULES).get("limit"))

    h = OperatorHarness(broadcast_spec(Alert(), keyed=True), keyed=True)
    h.process1([("a", 5), ("b", 1)], [1, 2])
    h.process2([4], [3])
    h.process1([("a", 1), ("b", 1)], [4, 5])
    h.watermark(10)
    assert h.output.records == [
        (("a", 5), 1), (("b", 1), 2), (("a", 6), 4), (("b", 2), 5),
        (("alert", "a", 6, TimeDomain.EVENT_TIME, 4), 5),
    ]
    assert h.output.watermarks == [10]
