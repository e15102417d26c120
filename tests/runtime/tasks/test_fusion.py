"""Chained map / filter / flat_map run record by record in one fused loop (runtime/tasks/fusion.py).

Each test runs a real job on a local MiniCluster and checks what fusion must keep or give:
PyFlink's record-by-record order of the functions' side effects, the operators' own
record counts, errors that name the operator and the record, declared output types
converted between the fused functions, timestamps, and the runs that must not be fused.
"""

from __future__ import annotations

from typing import Any

import pytest

from streamkernel.common import Duration, WatermarkStrategy
from streamkernel.common.typeinfo import Types
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
from streamkernel.datastream.functions import ProcessFunction
from streamkernel.errors import JobExecutionError
from streamkernel.runtime.tasks import fusion
from streamkernel.runtime.tasks.chain import OperatorChain


def _env() -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    return env


@pytest.fixture
def fused_runs(monkeypatch: pytest.MonkeyPatch) -> list:
    """The FusedRun objects the job's tasks built (the task threads run in this process)."""
    built: list = []
    original = fusion.fuse_stateless_runs

    def recording(chain: OperatorChain) -> list:
        runs = original(chain)
        built.extend(runs)
        return runs

    monkeypatch.setattr("streamkernel.runtime.tasks.chain_setup.fuse_stateless_runs", recording)
    return built


def test_functions_see_each_record_in_turn_as_in_pyflink(fused_runs: list) -> None:
    """PyFlink runs chained Python functions record by record: map(1), filter(1), map(2), ...
    (the same program printed this order under real PyFlink 2.3)."""
    seen: list = []

    def first(x: int) -> int:
        seen.append(("map", x))
        return x * 10

    def keep(x: int) -> bool:
        seen.append(("filter", x))
        return x % 20 == 0

    def last(x: int) -> int:
        seen.append(("last", x))
        return x + 1

    with _env().from_collection([1, 2, 3, 4]).map(first).filter(keep).map(last).execute_and_collect() as it:
        results = list(it)
    assert results == [21, 41]
    assert seen == [("map", 1), ("filter", 10), ("map", 2), ("filter", 20), ("last", 20),
                    ("map", 3), ("filter", 30), ("map", 4), ("filter", 40), ("last", 40)]
    assert [run.kinds for run in fused_runs] == [["map", "filter", "map"]]


def test_each_operator_counts_its_own_records(fused_runs: list) -> None:
    env = _env()
    ds = (env.from_collection(list(range(100))).map(lambda x: x + 1).name("m1").filter(lambda x: x % 2 == 0)
          .name("f1").flat_map(lambda x: [x, x]).name("fm").filter(lambda x: x % 4 == 0).name("f2")
          .map(lambda x: -x).name("m2"))
    with ds.execute_and_collect() as it:
        results = list(it)
    # what each operator would have counted unfused: in and out, per operator of the run
    metrics = [(run.kinds, [(m.records_in, m.records_out) for m in run._metrics]) for run in fused_runs]
    assert sorted(results) == sorted(-x for x in range(2, 101, 2) for _ in range(2) if x % 4 == 0)
    assert metrics == [(["map", "filter", "flat_map", "filter", "map"],
                        [(100, 100), (100, 50), (50, 100), (100, 50), (50, 50)])]


def test_an_error_names_the_fused_operator_that_raised_and_its_record(fused_runs: list) -> None:
    def fragile(x: int) -> bool:
        if x == 70:
            raise ValueError("seventy")
        return True

    env = _env()
    ds = env.from_collection(list(range(20))).map(lambda x: x * 10).filter(fragile).name("fragile filter").map(str)
    with pytest.raises(JobExecutionError) as failure:
        with ds.execute_and_collect() as it:
            list(it)
    assert "'fragile filter'" in str(failure.value)
    assert "record 70" in str(failure.value)
    assert "ValueError: seventy" in str(failure.value)
    assert fused_runs and fused_runs[0].kinds == ["map", "filter", "map"]


def test_a_declared_output_type_is_not_converted_between_fused_functions(fused_runs: list) -> None:
    """PyFlink chains Python functions and converts only where records leave the chain (seen
    under PyFlink 2.3: the chained map receives the int 2, not 2.0, and a bool stays a bool)."""
    seen: list = []

    def record(x: Any) -> Any:
        seen.append(x)
        return x

    ds = (_env().from_collection([1, 2, 3]).map(lambda x: x * 2, output_type=Types.DOUBLE())
          .map(lambda x: x > 2, output_type=Types.LONG()).map(record))
    with ds.execute_and_collect() as it:
        results = list(it)
    assert seen == [False, True, True] and all(type(x) is bool for x in seen)
    assert results == [False, True, True]  # the last map declares no type: nothing converts them
    assert [run.kinds for run in fused_runs] == [["map", "map", "map"]]


def test_the_last_declared_type_of_a_run_converts_what_leaves_it(fused_runs: list) -> None:
    """Where records leave the chain they take the last operator's type: DOUBLE makes floats, and a
    filter's type is its input's."""
    ds = _env().from_collection([1, 2, 3]).map(lambda x: x, output_type=Types.DOUBLE()).filter(lambda x: x > 1)
    with ds.rebalance().map(lambda x: (x, type(x).__name__)).execute_and_collect() as it:
        results = list(it)
    assert results == [(2.0, "float"), (3.0, "float")]
    assert ["map", "filter"] in [run.kinds for run in fused_runs]


def test_a_value_the_last_declared_type_cannot_hold_names_the_operator_and_the_type(fused_runs: list) -> None:
    ds = (_env().from_collection([1, 2, 3]).map(lambda x: x).map(lambda x: x << 40, output_type=Types.INT())
          .name("shift"))
    with pytest.raises(JobExecutionError) as failure:
        with ds.execute_and_collect() as it:
            list(it)
    message = str(failure.value)
    assert "'shift'" in message and str(1 << 40) in message and "out of the range" in message
    assert fused_runs and fused_runs[0].kinds == ["map", "map"]


def test_timestamps_follow_their_records_through_filters_and_flat_maps(fused_runs: list) -> None:
    class Stamps(ProcessFunction):
        def process_element(self, value: Any, ctx: Any) -> Any:
            yield value, ctx.timestamp()

    strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0))
                .with_timestamp_assigner(_TimestampIsValue()))
    ds = (_env().from_collection([5, 6, 7, 8]).assign_timestamps_and_watermarks(strategy)
          .filter(lambda x: x != 6).flat_map(lambda x: [x * 100, x * 100 + 1]).map(lambda x: x)
          .process(Stamps()))
    with ds.execute_and_collect() as it:
        results = list(it)
    assert results == [(500, 5), (501, 5), (700, 7), (701, 7), (800, 8), (801, 8)]
    assert [run.kinds for run in fused_runs] == [["filter", "flat_map", "map"]]


class _TimestampIsValue(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return value


def test_keyed_operators_forks_and_side_outputs_end_a_run(fused_runs: list) -> None:
    env = _env()
    base = env.from_collection([("a", 1), ("b", 2)]).map(lambda r: r).map(lambda r: r)
    keyed = base.key_by(lambda r: r[0]).map(lambda r: r).map(lambda r: (r[0], r[1] + 1))
    fork_a = keyed.map(lambda r: r[1])
    fork_b = keyed.map(lambda r: -r[1])
    with fork_a.union(fork_b).execute_and_collect() as it:
        results = sorted(it)
    assert results == [-3, -2, 2, 3]
    kinds = sorted(tuple(run.kinds) for run in fused_runs)
    # before key_by: map -> map; after it the first map holds keyed state (not fused), the
    # next one forks into two maps (a fork ends the run): nothing else is fusable
    assert kinds == [("map", "map")]


def test_a_run_fed_by_a_typed_fork_is_fused_behind_it(fused_runs: list) -> None:
    """The first operator of a run can sit behind a typed operator that forks (a RouterOutput
    inside a TypedOutput): that link calls the fused loop too."""
    seen: list = []

    def first(x: int) -> int:
        seen.append(("first", x))
        return x

    def second(x: int) -> int:
        seen.append(("second", x))
        return x

    base = _env().from_collection([1, 2]).map(lambda x: x * 2, output_type=Types.INT())
    fused = base.map(first).map(second)
    other = base.map(lambda x: -x)
    with fused.union(other).execute_and_collect() as it:
        results = sorted(it)
    assert results == [-4, -2, 2, 4]
    assert seen == [("first", 2), ("second", 2), ("first", 4), ("second", 4)]
    assert ["map", "map"] in [run.kinds for run in fused_runs]


@pytest.mark.parametrize("output_type, record", [(Types.BYTE(), 200), (Types.SHORT(), -40000),
                                                 (Types.INT(), 2 ** 31), (Types.LONG(), 2 ** 63)])
def test_each_integral_type_keeps_its_own_range_where_records_leave_a_run(
        fused_runs: list, output_type: Any, record: int) -> None:
    ds = _env().from_collection([record]).map(lambda v: v).map(lambda v: v, output_type=output_type).name("typed")
    with pytest.raises(JobExecutionError, match="out of the range"):
        with ds.execute_and_collect() as it:
            list(it)
    assert [run.kinds for run in fused_runs] == [["map", "map"]]


def test_peeking_at_an_operator_inside_a_run_sees_what_it_emits(fused_runs: list) -> None:
    """``%flink peek`` swaps an operator's output for a tap: the run then goes operator by
    operator, so the tap of its middle operator sees that operator's records."""
    import threading

    from streamkernel.runtime.tasks.peek import tap_operator

    gate = threading.Event()

    class Gated:
        """A source-side map that holds records back until the tap is in place."""

        def __call__(self, x: int) -> int:
            gate.wait(60)
            return x

    ds = (_env().from_collection(list(range(3000))).map(Gated()).rebalance().map(lambda x: x + 1)
          .filter(lambda x: x % 2 == 0).name("evens").map(lambda x: -x))
    with ds.execute_and_collect() as it:
        from streamkernel.testing import wait_until

        wait_until(lambda: any(run.kinds == ["map", "filter", "map"] for run in fused_runs), timeout=60,
                   message="the fused run after the exchange")
        run = next(run for run in fused_runs if run.kinds == ["map", "filter", "map"])
        evens = run.operators[1]
        peeked: list = []
        peeking = threading.Thread(target=lambda: peeked.extend(tap_operator(evens, limit=10, seconds=60)))
        peeking.start()
        wait_until(lambda: evens.output is not run._outputs[1], timeout=60, message="the tap in place")
        gate.set()
        results = list(it)
        peeking.join(60)
    assert sorted(results) == sorted(-x for x in range(1, 3001) if x % 2 == 0)
    assert len(peeked) == 10 and all(value % 2 == 0 and value > 0 for value, _ in peeked)  # the filter's output
