"""KeyedProcessOperator (state, timers, side outputs) and ReduceOperator (rolling reduce, aggregations)."""

from __future__ import annotations

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.datastream.function_base import ReduceFunction
from streamkernel.datastream.function_process import KeyedProcessFunction
from streamkernel.datastream.function_wrappers import KeySelectorWrapper, ReduceFunctionWrapper
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.datastream.time_domain import TimeDomain
from streamkernel.errors import UserFunctionError
from streamkernel.graph.operator_specs import KeyedProcessSpec, ReduceSpec
from streamkernel.runtime.state.heap import HeapKeyedStateBackend

OperatorHarness = harness.OperatorHarness

by_first = KeySelectorWrapper(lambda r: r[0])


def keyed_process(function):
    return KeyedProcessSpec(function=function, key_selector=by_first)


# ------------------------------------------------------------------ keyed process
class CountWithTimeout(KeyedProcessFunction):
    """Flink's documentation example: count per key, emit (key, count) 100 ms after the last update."""

    def open(self, runtime_context):
        self.state = runtime_context.get_state(ValueStateDescriptor("state"))

    def process_element(self, value, ctx):
        count, _ = self.state.value() or (0, None)
        self.state.update((count + 1, ctx.timestamp()))
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 100)
        yield "seen", ctx.get_current_key()

    def on_timer(self, timestamp, ctx):
        count, last = self.state.value()
        if timestamp == last + 100:
            yield ctx.get_current_key(), count, ctx.time_domain(), ctx.timestamp()


def test_keyed_process_state_and_event_time_timers():
    h = OperatorHarness(keyed_process(CountWithTimeout()), keyed=True)
    h.process([("a", 1), ("b", 1), ("a", 1)], [10, 20, 50])
    assert h.output.records == [(("seen", "a"), 10), (("seen", "b"), 20), (("seen", "a"), 50)]
    h.output.clear()
    h.watermark(115)  # a's first timer (110) fires but is stale; b's (120) not yet
    assert h.output.events == [("watermark", 115)]
    h.watermark(200)
    # timer results carry the timer timestamp and go out before the watermark that fired them
    assert h.output.events == [
        ("watermark", 115),
        ("records", [("b", 1, TimeDomain.EVENT_TIME, 120), ("a", 2, TimeDomain.EVENT_TIME, 150)], [120, 150]),
        ("watermark", 200),
    ]


def test_keyed_process_processing_time_timers_erase_the_timestamp():
    class Later(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 50)
            return ()

        def on_timer(self, timestamp, ctx):
            yield ctx.get_current_key(), timestamp, ctx.time_domain()

    h = OperatorHarness(keyed_process(Later()), keyed=True, start_ms=1000)
    h.process([("k", 1), ("k", 2)], [5, 6])  # the same timer twice: fires once
    h.advance_time(49)
    assert h.output.events == []
    h.advance_time(1)
    assert h.output.records == [(("k", 1050, TimeDomain.PROCESSING_TIME), None)]


def test_keyed_process_timer_can_register_timers_and_delete():
    class Chain(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(10)
            ctx.timer_service().register_event_time_timer(99)
            ctx.timer_service().delete_event_time_timer(99)
            return ()

        def on_timer(self, timestamp, ctx):
            yield timestamp
            if timestamp < 30:
                ctx.timer_service().register_event_time_timer(timestamp + 10)

    h = OperatorHarness(keyed_process(Chain()), keyed=True)
    h.process([("x", 0)])
    h.watermark(100)
    assert h.output.records == [(10, 10), (20, 20), (30, 30)]


def test_keyed_process_side_outputs_from_elements_and_timers():
    late = OutputTag("late")

    class F(KeyedProcessFunction):
        def process_element(self, value, ctx):
            if ctx.timestamp() < ctx.timer_service().current_watermark():
                ctx.output(late, value)
                return
            ctx.timer_service().register_event_time_timer(ctx.timestamp())
            yield value

        def on_timer(self, timestamp, ctx):
            yield late, ("timer", ctx.get_current_key())

    h = OperatorHarness(keyed_process(F()), keyed=True)
    h.process([("a", 1)], [10])
    h.watermark(20)
    h.process([("b", 2), ("c", 3)], [5, 30])
    assert h.output.values == [("a", 1), ("c", 3)]
    assert h.output.side(late) == [(("timer", "a"), 10), (("b", 2), 5)]


def test_keyed_process_errors_name_record_and_timer():
    class F(KeyedProcessFunction):
        def process_element(self, value, ctx):
            if value[1] < 0:
                raise ValueError("negative")
            ctx.timer_service().register_event_time_timer(7)
            return ()

        def on_timer(self, timestamp, ctx):
            raise RuntimeError("timer broke")

    h = OperatorHarness(keyed_process(F()), keyed=True, name="KeyedProcess")
    with pytest.raises(UserFunctionError, match=r"record \('z', -1\).*ValueError: negative"):
        h.process([("a", 1), ("z", -1)])
    h = OperatorHarness(keyed_process(F()), keyed=True, name="KeyedProcess")
    h.process([("k", 1)])
    with pytest.raises(UserFunctionError, match=r"on_timer\(7\).*EVENT_TIME timer of key 'k'.*timer broke"):
        h.watermark(10)


def test_keyed_process_without_on_timer_ignores_fired_timers():
    class NoTimer(KeyedProcessFunction):
        def process_element(self, value, ctx):
            ctx.timer_service().register_event_time_timer(1)
            yield value

    h = OperatorHarness(keyed_process(NoTimer()), keyed=True)
    h.process([("a", 1)]).watermark(5)
    assert h.output.values == [("a", 1)] and h.output.watermarks == [5]


# ------------------------------------------------------------------ reduce
def test_reduce_emits_running_value_per_record_first_as_is():
    spec = ReduceSpec(function=ReduceFunctionWrapper(lambda a, b: (a[0], a[1] + b[1])), key_selector=by_first)
    h = OperatorHarness(spec, keyed=True)
    h.process([("a", 1), ("b", 5), ("a", 2)], [1, 2, 3]).process([("a", 3), ("b", 1)])
    assert h.output.records == [(("a", 1), 1), (("b", 5), 2), (("a", 3), 3), (("a", 6), None), (("b", 6), None)]
    assert h.metrics.records_in == 5 and h.metrics.records_out == 5


def test_reduce_state_is_a_checkpointed_keyed_value_state_and_restores_elsewhere():
    spec = ReduceSpec(function=ReduceFunctionWrapper(lambda a, b: (a[0], a[1] + b[1])), key_selector=by_first)
    h = OperatorHarness(spec, keyed=True)
    h.process([("a", 1), ("b", 2), ("a", 3)])
    snapshot = h.backend.snapshot()
    assert "_reduce_state" in snapshot["states"]

    # restore into two half-range backends (rescaling to parallelism 2): each key continues where it was
    outputs = []
    for key_groups in (range(0, 64), range(64, 128)):
        backend = HeapKeyedStateBackend(128, key_groups)
        backend.restore([snapshot])
        h2 = OperatorHarness(spec, keyed_backend=backend)
        mine = [r for r in [("a", 10), ("b", 10)] if r[0] in backend.keys("_reduce_state")]
        h2.process(mine)
        outputs.extend(h2.output.values)
    assert sorted(outputs) == [("a", 14), ("b", 12)]


def test_reduce_without_the_raw_dict_fast_path_gives_the_same_results():
    class PlainBackend:
        """A backend offering only the protocol (no value_dict): the operator uses ValueState."""

        def __init__(self):
            self._inner = HeapKeyedStateBackend(128, range(0, 128))

        def __getattr__(self, name):
            if name == "value_dict":
                raise AttributeError(name)
            return getattr(self._inner, name)

        def __setattr__(self, name, value):
            if name == "_inner":
                object.__setattr__(self, name, value)
            else:
                setattr(self._inner, name, value)

    spec = ReduceSpec(function=ReduceFunctionWrapper(lambda a, b: a + b), key_selector=KeySelectorWrapper(len))
    h = OperatorHarness(spec, keyed_backend=PlainBackend())
    assert h.operator._table is None
    h.process(["a", "bb", "c", "dd", "e"])
    assert h.output.values == ["a", "bb", "ac", "bbdd", "ace"]


def test_reduce_function_class_and_error():
    class Max(ReduceFunction):
        def reduce(self, a, b):
            if b[1] is None:
                raise TypeError("no value")
            return b if b[1] > a[1] else a

    h = OperatorHarness(ReduceSpec(function=Max(), key_selector=by_first), keyed=True, name="Reduce")
    h.process([("k", 3), ("k", 1), ("k", 5)])
    assert h.output.values == [("k", 3), ("k", 3), ("k", 5)]
    with pytest.raises(UserFunctionError, match=r"'Reduce'.*record \('k', None\).*no value"):
        h.process([("k", 9), ("k", None)])


@pytest.mark.parametrize("call, expected", [
    (lambda ks: ks.sum(1), [("a", 3, "x"), ("b", 1, "y"), ("a", 7, "x"), ("a", 8, "x")]),
    (lambda ks: ks.max(1), [("a", 3, "x"), ("b", 1, "y"), ("a", 4, "x"), ("a", 4, "x")]),
    (lambda ks: ks.min(1), [("a", 3, "x"), ("b", 1, "y"), ("a", 3, "x"), ("a", 1, "x")]),
    (lambda ks: ks.max_by(1), [("a", 3, "x"), ("b", 1, "y"), ("a", 4, "z"), ("a", 4, "z")]),
    (lambda ks: ks.min_by(1), [("a", 3, "x"), ("b", 1, "y"), ("a", 3, "x"), ("a", 1, "w")]),
])
def test_aggregation_kind_runs_like_reduce(call, expected):
    env = StreamExecutionEnvironment.get_execution_environment()
    records = [("a", 3, "x"), ("b", 1, "y"), ("a", 4, "z"), ("a", 1, "w")]
    stream = call(env.from_collection(records).key_by(lambda r: r[0]))
    spec = stream._transformation.operator
    assert spec.kind == "aggregation"
    h = OperatorHarness(spec, keyed=True)
    h.process(records)
    assert h.output.values == expected
