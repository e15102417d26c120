"""Keyed operators call the key selector's plain function: no wrapper frame per record (issue 15).

``key_by(f)`` wraps ``f`` in a KeySelectorWrapper whose ``get_key`` *is* ``f``; calling the
wrapper itself (``KeySelector.__call__``) adds a Python frame per record. These tests count
the Python calls an operator makes while it processes a batch (``sys.setprofile``), not time.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any, Callable

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.datastream.function_base import KeySelector
from streamkernel.datastream.functions import CoMapFunction, KeyedProcessFunction
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.datastream.window import TumblingEventTimeWindows

N = 300


def key(record: Any) -> Any:
    """The key selector every test passes to key_by."""
    return record[0]


def add(a: Any, b: Any) -> Any:
    return a[0], a[1] + b[1]


class Passing(KeyedProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield value


class Both(CoMapFunction):
    def map1(self, value: Any) -> Any:
        return value

    def map2(self, value: Any) -> Any:
        return value


def calls_while(run: Callable[[], Any]) -> Counter:
    """How often each Python function (by name) was called while ``run()`` ran."""
    counts: Counter = Counter()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            counts[frame.f_code.co_qualname] += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return counts


def _source() -> Any:
    env = StreamExecutionEnvironment.get_execution_environment()
    return env.from_collection([("x", 0)])


BUILDS = {
    "reduce": lambda ds: ds.key_by(key).reduce(add),
    "map on a keyed stream": lambda ds: ds.key_by(key).map(lambda v: v),
    "filter on a keyed stream": lambda ds: ds.key_by(key).filter(lambda v: True),
    "keyed process": lambda ds: ds.key_by(key).process(Passing()),
    "window reduce": lambda ds: ds.key_by(key).window(TumblingEventTimeWindows.of(10)).reduce(add),
}


@pytest.mark.parametrize("name", list(BUILDS))
def test_keyed_operator_calls_the_key_function_itself(name: str) -> None:
    h = harness.OperatorHarness(BUILDS[name](_source())._transformation.operator, keyed=True)
    records = [(f"k{i % 7}", 1) for i in range(N)]
    counts = calls_while(lambda: h.process(records, list(range(N))))
    assert counts["key"] == N, counts.most_common(5)
    wrappers = {f: n for f, n in counts.items() if f.endswith("__call__") or f.endswith("get_key")}
    assert wrappers == {}, f"{name}: wrapper frames around the key selector: {wrappers}"


def test_reduce_costs_two_python_frames_per_record() -> None:
    """W2's loop: the key selector and the reduce function, nothing else per record."""
    h = harness.OperatorHarness(BUILDS["reduce"](_source())._transformation.operator, keyed=True)
    h.process([(f"k{i % 7}", 1) for i in range(7)])  # every key seen once: no first-key checks below
    records = [(f"k{i % 7}", 1) for i in range(N)]
    counts = calls_while(lambda: h.process(records))
    assert counts["key"] == N and counts["add"] == N
    assert sum(counts.values()) <= 2 * N + 20, counts.most_common(5)


def test_a_keyselector_subclass_is_called_through_get_key_once() -> None:
    class First(KeySelector):
        def get_key(self, value: Any) -> Any:
            return value[0]

    ds = _source().key_by(First()).reduce(add)
    h = harness.OperatorHarness(ds._transformation.operator, keyed=True)
    counts = calls_while(lambda: h.process([("a", 1)] * N))
    assert counts["test_a_keyselector_subclass_is_called_through_get_key_once.<locals>.First.get_key"] == N
    assert not [f for f in counts if f.endswith("__call__")], counts.most_common(5)
    assert h.output.values[-1] == ("a", N)


def test_keyed_co_map_calls_both_key_functions_itself() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    one, two = env.from_collection([("x", 0)]), env.from_collection([("y", 0)])
    ds = one.connect(two).key_by(key, key).map(Both())
    h = harness.OperatorHarness(ds._transformation.operator, keyed=True)
    counts = calls_while(lambda: (h.process1([("a", 1)] * N), h.process2([("b", 2)] * N)))
    assert counts["key"] == 2 * N
    assert not [f for f in counts if f.endswith("__call__") or f.endswith("get_key")], counts.most_common(5)
