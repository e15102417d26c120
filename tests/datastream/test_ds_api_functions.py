"""User function interfaces, callable wrappers, window adapters and the rolling aggregations."""

from __future__ import annotations

import collections

import pytest

from streamkernel.common.types import Row
from streamkernel.datastream import functions as F
from streamkernel.datastream.function_wrappers import (
    FilterFunctionWrapper,
    KeySelectorWrapper,
    MapFunctionWrapper,
    as_function,
    describe_function,
    require_function,
)
from streamkernel.datastream.keyed_stream import KeyedStream, _AccumulateReduceFunction
from streamkernel.errors import InvalidFunctionError, InvalidProgramError


class Double(F.MapFunction):
    def map(self, value):
        return value * 2


def test_abstract_interfaces_need_their_methods() -> None:
    class Incomplete(F.MapFunction):
        pass

    with pytest.raises(TypeError):
        Incomplete()
    assert Double().map(4) == 8


def test_a_callable_is_wrapped_and_behaves_like_it() -> None:
    def parse(v):
        return int(v) + 1

    wrapped = as_function(parse, F.MapFunction, "map()")
    assert isinstance(wrapped, F.MapFunction) and isinstance(wrapped, MapFunctionWrapper)
    assert wrapped.map is parse  # no extra call layer on the hot path
    assert wrapped.map("41") == 42
    # open/close of a wrapped callable are harmless no-ops
    wrapped.open(None)
    wrapped.close()


@pytest.mark.parametrize("interface,method,func,args,expected", [
    (F.FlatMapFunction, "flat_map", lambda v: [v, v], (3,), [3, 3]),
    (F.FilterFunction, "filter", lambda v: v > 2, (3,), True),
    (F.KeySelector, "get_key", lambda v: v[0], (("k", 1),), "k"),
    (F.ReduceFunction, "reduce", lambda a, b: a + b, (1, 2), 3),
    (F.Partitioner, "partition", lambda key, n: key % n, (7, 3), 1),
])
def test_every_wrapper_calls_the_callable(interface, method, func, args, expected) -> None:
    wrapped = as_function(func, interface, "op()")
    assert isinstance(wrapped, interface)
    assert getattr(wrapped, method)(*args) == expected


def test_a_function_object_is_passed_through_unchanged() -> None:
    d = Double()
    assert as_function(d, F.MapFunction, "map()") is d


def test_key_selectors_are_callable() -> None:
    ks = as_function(lambda v: v["id"], F.KeySelector, "key_by()")
    assert isinstance(ks, KeySelectorWrapper)
    assert ks({"id": 7}) == 7
    assert F.NullByteKeySelector()("anything") == 0


def test_wrong_function_kinds_are_rejected_with_the_call_named() -> None:
    with pytest.raises(InvalidFunctionError, match=r"map\(\) expects a MapFunction or a callable"):
        as_function(42, F.MapFunction, "map()")
    with pytest.raises(InvalidFunctionError, match="FilterFunction"):
        as_function(Double(), F.FilterFunction, "filter()")  # a Function of another interface
    with pytest.raises(InvalidFunctionError, match=r"pass an instance, Double\(\)"):
        as_function(Double, F.MapFunction, "map()")


def test_builtin_types_are_valid_callables() -> None:
    assert as_function(str, F.MapFunction, "map()").map(5) == "5"


def test_require_function_names_call_and_class() -> None:
    with pytest.raises(InvalidFunctionError) as info:
        require_function(lambda v, ctx: v, F.ProcessFunction, "process()")
    message = str(info.value)
    assert "process() expects a ProcessFunction, got function" in message
    assert isinstance(info.value, TypeError)


def test_describe_function_shows_the_interface_for_callables() -> None:
    assert describe_function(as_function(lambda a, b: a, F.ReduceFunction, "reduce()")) == "ReduceFunction"
    assert describe_function(Double()) == "Double"
    assert describe_function(FilterFunctionWrapper(bool)) == "FilterFunction"


def test_functions_module_reexports_time_and_contexts() -> None:
    from streamkernel.datastream.timerservice import TimerService

    assert F.TimerService is TimerService
    assert issubclass(F.KeyedProcessFunction.OnTimerContext, F.KeyedProcessFunction.Context)
    assert issubclass(F.KeyedCoProcessFunction.OnTimerContext, F.KeyedCoProcessFunction.Context)
    assert issubclass(F.SinkFunction, object) and F.SourceFunction is not None


class _Ctx(F.InternalWindowFunction.InternalWindowContext):
    def __init__(self):
        self.side = []

    def current_processing_time(self):
        return 111

    def current_watermark(self):
        return 99

    def window_state(self):
        return "window-state"

    def global_state(self):
        return "global-state"

    def output(self, output_tag, value):
        self.side.append((output_tag, value))


class CountPerWindow(F.ProcessWindowFunction):
    def __init__(self):
        self.cleared = []

    def process(self, key, context, elements):
        context.output("tag", key)
        yield key, context.window(), len(list(elements)), context.current_watermark(), context.window_state()

    def clear(self, context):
        self.cleared.append(context.window())


def test_internal_window_functions_adapt_each_user_shape() -> None:
    ctx = _Ctx()
    pwf = CountPerWindow()
    iterable = F.InternalIterableProcessWindowFunction(pwf)
    assert list(iterable.process("k", "w1", ctx, [1, 2, 3])) == [("k", "w1", 3, 99, "window-state")]
    assert ctx.side == [("tag", "k")]
    single = F.InternalSingleValueProcessWindowFunction(pwf)
    assert list(single.process("k", "w2", ctx, 10)) == [("k", "w2", 1, 99, "window-state")]
    iterable.clear("w3", ctx)
    assert pwf.cleared == ["w3"]

    class Sum(F.WindowFunction):
        def apply(self, key, window, inputs):
            return [(key, sum(inputs))]

    assert list(F.InternalIterableWindowFunction(Sum()).process("k", None, ctx, [1, 2])) == [("k", 3)]
    assert list(F.InternalSingleValueWindowFunction(Sum()).process("k", None, ctx, 5)) == [("k", 5)]

    class All(F.AllWindowFunction):
        def apply(self, window, inputs):
            return [(window, list(inputs))]

    assert list(F.InternalIterableAllWindowFunction(All()).process(0, "w", ctx, [1])) == [("w", [1])]
    assert list(F.InternalSingleValueAllWindowFunction(F.PassThroughAllWindowFunction())
                .process(0, "w", ctx, 4)) == [4]
    assert list(F.PassThroughWindowFunction().apply("k", "w", [1, 2])) == [1, 2]


def _agg(kind: str, position=0) -> _AccumulateReduceFunction:
    return _AccumulateReduceFunction(position, KeyedStream.AccumulateType[kind])


def _run(func, values):
    acc = values[0]
    out = [acc]
    for v in values[1:]:
        acc = func.reduce(acc, v)
        out.append(acc)
    return out


def test_sum_min_max_on_tuples_keep_the_first_elements_other_fields() -> None:
    data = [("a", 3, "x"), ("a", 1, "y"), ("a", 5, "z")]
    assert _run(_agg("SUM", 1), data) == [("a", 3, "x"), ("a", 4, "x"), ("a", 9, "x")]
    assert _run(_agg("MIN", 1), data)[-1] == ("a", 1, "x")
    assert _run(_agg("MAX", 1), data)[-1] == ("a", 5, "x")


def test_min_by_max_by_return_whole_elements_first_on_ties() -> None:
    data = [("a", 3, "x"), ("a", 1, "y"), ("a", 1, "w"), ("a", 5, "z"), ("a", 5, "v")]
    assert _run(_agg("MIN_BY", 1), data)[-1] == ("a", 1, "y")
    assert _run(_agg("MAX_BY", 1), data)[-1] == ("a", 5, "z")


def test_aggregations_do_not_modify_their_inputs() -> None:
    first, second = ["a", 1], ["a", 2]
    assert _agg("SUM", 1).reduce(first, second) == ["a", 3]
    assert first == ["a", 1]
    r1, r2 = Row(key="a", value=1), Row(key="a", value=4)
    result = _agg("MAX", "value").reduce(r1, r2)
    assert result["value"] == 4 and result["key"] == "a" and r1["value"] == 1


def test_aggregations_on_named_tuples_dicts_and_basic_values() -> None:
    P = collections.namedtuple("P", "k v")
    assert _agg("SUM", "v").reduce(P("a", 1), P("a", 2)) == P("a", 3)
    assert _agg("SUM", 1).reduce(P("a", 1), P("a", 2)) == P("a", 3)
    assert _agg("SUM", "n").reduce({"n": 1}, {"n": 2}) == {"n": 3}
    assert _run(_agg("SUM"), [1, 2, 3]) == [1, 3, 6]
    assert _run(_agg("MIN"), [3, 1, 2])[-1] == 1
    with pytest.raises(InvalidProgramError, match="basic type can only be 0"):
        _agg("SUM", 1).reduce(1, 2)


def test_async_retry_strategies() -> None:
    fixed = F.AsyncRetryStrategy.fixed_delay(3, 100, None, lambda e: True)
    assert fixed.can_retry(3) and not fixed.can_retry(4)
    assert fixed.get_backoff_time_millis(2) == 100
    assert fixed.get_retry_predicate().exception_predicate()(ValueError())
    expo = F.AsyncRetryStrategy.exponential_backoff(5, 10, 50, 2.0, None, None)
    assert [expo.get_backoff_time_millis(i) for i in (1, 2, 3, 4)] == [10, 20, 40, 50]
    assert not F.AsyncRetryStrategy.no_restart().can_retry(1)
    assert F.AsyncFunctionDescriptor.OutputMode.ORDERED.value == 0


def test_window_and_broadcast_functions_are_generic_as_in_pyflink() -> None:
    """PyFlink's examples subclass ``ProcessWindowFunction[tuple, tuple, str, TimeWindow]``
    and annotate ``ProcessWindowFunction.Context[TimeWindow]`` (evaluated at definition)."""
    from typing import Iterable

    from streamkernel.datastream.window import CountWindow, TimeWindow

    class Count(F.ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
        def process(self, key: str, context: F.ProcessWindowFunction.Context[TimeWindow],
                    elements: Iterable[tuple]) -> Iterable[tuple]:
            return [(key, len(list(elements)))]

    class Sum(F.WindowFunction[tuple, tuple, str, CountWindow]):
        def apply(self, key, window, inputs):
            return [(key, sum(i[0] for i in inputs))]

    assert list(Count().process("k", None, [(1,), (2,)])) == [("k", 2)]
    assert list(Sum().apply("k", None, [(1,), (2,)])) == [("k", 3)]
    assert isinstance(Count(), F.ProcessWindowFunction) and isinstance(Sum(), F.WindowFunction)
    F.AllWindowFunction[int, int, TimeWindow]
    F.ProcessAllWindowFunction[int, int, TimeWindow]
    F.ProcessAllWindowFunction.Context[TimeWindow]
    F.BroadcastProcessFunction[int, str, str]
    F.KeyedBroadcastProcessFunction[str, int, str, str]
    F.AsyncFunction[int, int]


def test_async_retry_predicates_module_as_in_pyflink() -> None:
    """PyFlink's async example: ``from pyflink.datastream import async_retry_predicates``."""
    import functools

    from streamkernel.datastream import AsyncRetryStrategy, async_retry_predicates as p

    assert p.empty_result_predicate([]) and p.empty_result_predicate(None) and not p.empty_result_predicate([1])
    assert p.has_exception_predicate(ValueError()) and not p.has_exception_predicate(None)
    on_timeout = functools.partial(p.exception_type_predicate, expected_error_type=TimeoutError)
    assert on_timeout(TimeoutError()) and not on_timeout(ValueError())
    strategy = AsyncRetryStrategy.fixed_delay(max_attempts=2, backoff_time_millis=10, result_predicate=None,
                                              exception_predicate=on_timeout)
    assert strategy.get_retry_predicate().exception_predicate() is on_timeout
