"""The RocksDB keyed state backend's own concerns: files on disk, dispose, one snapshot format
for both backends, key encoding, the factory and its configuration, and operators without
raw dicts (the shared state semantics are tested for both backends in test_state_heap.py)."""

from __future__ import annotations

import os
import pathlib
import random
import sys
import types

import operator_harness as harness  # tests/runtime/operator_harness.py (on sys.path: conftest.py)
import pytest

from streamkernel.common import Duration, WatermarkStrategy
from streamkernel.common.time import Time
from streamkernel.common.watermark_strategy import MAX_WATERMARK, TimestampAssigner
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.function_base import AggregateFunction
from streamkernel.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from streamkernel.datastream.state_backend import EmbeddedRocksDBStateBackend, HashMapStateBackend
from streamkernel.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError
from streamkernel.graph.keygroups import assign_key_to_operator, key_group_range_for_operator
from streamkernel.runtime.core.clock import ManualClock, SystemClock
from streamkernel.runtime.state.factory import create_keyed_backend
from streamkernel.runtime.state.heap import HeapKeyedStateBackend
from streamkernel.runtime.state.rocksdb import RocksDBKeyedStateBackend

MAX_P = 128
ROCKSDB = {"state.backend.type": "rocksdb"}


@pytest.fixture
def rocks(tmp_path):
    """``rocks(key_groups=range(MAX_P), clock=None)``: RocksDB backends under tmp_path, disposed after the test."""
    created: list = []

    def make(key_groups: range = range(MAX_P), clock=None) -> RocksDBKeyedStateBackend:
        made = RocksDBKeyedStateBackend(MAX_P, key_groups, working_dir=str(tmp_path / f"subtask-{len(created)}"),
                                        ttl_clock=clock)
        created.append(made)
        return made

    yield make
    for made in created:
        made.dispose()


class Average(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return acc[0] + value, acc[1] + 1

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]


def _ttl(descriptor, ms=1000):
    descriptor.enable_time_to_live(StateTtlConfig.new_builder(Time.milliseconds(ms)).build())
    return descriptor


def descriptors():
    return [ValueStateDescriptor("v"), ListStateDescriptor("l"), MapStateDescriptor("m"),
            ReducingStateDescriptor("r", lambda a, b: a + b), AggregatingStateDescriptor("g", Average()),
            _ttl(ValueStateDescriptor("tv")), _ttl(ListStateDescriptor("tl")), _ttl(MapStateDescriptor("tm"))]


def fill_all(b, keys) -> None:
    """Every state type, with and without TTL, in the VOID namespace and in a window namespace."""
    v, ls, m, r, g, tv, tl, tm = (b.get_state(d) for d in descriptors())
    for key in keys:
        b.current_key = key
        for namespace in (None, ("w", 1)):
            b.current_namespace = namespace
            v.update({"key": key, "ns": namespace})
            ls.add_all([1, 2, key])
            m.put_all({"a": key, ("t", 2): None, 3: [key]})
            r.add(5)
            r.add(7)
            g.add(1)
            g.add(4)
            tv.update(key)
            tl.add(key)
            tm.put("u", key)
        b.current_namespace = None


def normalized(snapshot: dict) -> dict:
    """A snapshot with its entries sorted, so two backends' snapshots compare equal."""
    return {name: (state["type"], state["ttl"],
                   {group: sorted(entries, key=repr) for group, entries in state["key_groups"].items() if entries})
            for name, state in snapshot["states"].items()}


# ---------------------------------------------------------------------- files and lifecycle
def test_the_database_lives_under_the_working_dir_and_dispose_deletes_it(tmp_path) -> None:
    working_dir = tmp_path / "tm-1" / "job" / "3-0-7"
    b = create_keyed_backend(ROCKSDB, MAX_P, range(MAX_P), working_dir=str(working_dir), clock=SystemClock())
    assert isinstance(b, RocksDBKeyedStateBackend)
    state = b.get_state(ValueStateDescriptor("v"))
    b.current_key = "a"
    state.update(1)
    assert pathlib.Path(b.db_path).parent == working_dir
    assert "CURRENT" in os.listdir(b.db_path)  # a real RocksDB database
    b.dispose()
    assert not os.path.exists(b.db_path)
    assert not working_dir.exists() and working_dir.parent.exists()  # it removes only what it made
    b.dispose()  # twice is fine
    with pytest.raises(InvalidProgramError, match="disposed"):
        state.update(2)


def test_two_backends_in_one_working_dir_have_their_own_databases(tmp_path) -> None:
    first = RocksDBKeyedStateBackend(MAX_P, range(MAX_P), working_dir=str(tmp_path))
    second = RocksDBKeyedStateBackend(MAX_P, range(MAX_P), working_dir=str(tmp_path))
    assert first.db_path != second.db_path
    for backend, value in ((first, 1), (second, 2)):
        backend.current_key = "k"
        backend.get_state(ValueStateDescriptor("v")).update(value)
    first.current_key = "k"
    assert first.get_state(ValueStateDescriptor("v")).value() == 1
    first.dispose()
    second.current_key = "k"
    assert second.get_state(ValueStateDescriptor("v")).value() == 2  # the other database is untouched
    second.dispose()
    assert os.listdir(tmp_path) == []  # tmp_path existed before: kept, but emptied


def test_max_parallelism_must_fit_the_key_group_prefix(tmp_path) -> None:
    with pytest.raises(InvalidProgramError, match="max_parallelism"):
        RocksDBKeyedStateBackend(1 << 16, range(1 << 16), working_dir=str(tmp_path))


# ---------------------------------------------------------------------- one snapshot format
def test_a_heap_snapshot_restores_into_rocksdb_and_back_unchanged(rocks) -> None:
    clock = ManualClock(0)
    keys = list(range(30)) + ["x", ("t", 1), b"raw"]
    heap = HeapKeyedStateBackend(MAX_P, range(MAX_P), ttl_clock=clock)
    fill_all(heap, keys)
    heap_snapshot = heap.snapshot()
    rocksdb = rocks(clock=clock)
    for descriptor in descriptors():  # registered first, as operators do before a restore
        rocksdb.get_state(descriptor)
    rocksdb.restore([heap_snapshot])
    rocks_snapshot = rocksdb.snapshot()
    assert normalized(rocks_snapshot) == normalized(heap_snapshot)
    back = HeapKeyedStateBackend(MAX_P, range(MAX_P), ttl_clock=clock)
    back.restore([rocks_snapshot])
    assert normalized(back.snapshot()) == normalized(heap_snapshot)


def test_the_same_operations_give_the_same_snapshot_on_both_backends(rocks) -> None:
    clock = ManualClock(0)
    heap = HeapKeyedStateBackend(MAX_P, range(MAX_P), ttl_clock=clock)
    rocksdb = rocks(clock=clock)
    for backend in (heap, rocksdb):
        fill_all(backend, ["a", "b", 7])
    assert normalized(rocksdb.snapshot()) == normalized(heap.snapshot())


def test_rescaling_heap_snapshots_into_rocksdb_subtasks(rocks) -> None:
    keys = [f"k{i}" for i in range(200)]
    old = []
    for index in range(2):
        heap = HeapKeyedStateBackend(MAX_P, key_group_range_for_operator(MAX_P, 2, index))
        fill_all(heap, [k for k in keys if assign_key_to_operator(k, MAX_P, 2) == index])
        old.append(heap.snapshot())
    seen = []
    for index in range(3):
        b = rocks(key_groups=key_group_range_for_operator(MAX_P, 3, index))
        b.restore(old)
        found = b.keys("v")
        assert all(assign_key_to_operator(k, MAX_P, 3) == index for k in found)
        b.current_key = found[0]
        assert b.get_state(ListStateDescriptor("l")).get() == [1, 2, found[0]]
        seen.extend(found)
    assert sorted(seen) == sorted(keys)


def test_restoring_twice_replaces_entries_instead_of_appending(rocks) -> None:
    heap = HeapKeyedStateBackend(MAX_P, range(MAX_P))
    fill_all(heap, ["a"])
    b = rocks()
    b.restore([heap.snapshot()])
    b.restore([heap.snapshot()])
    b.current_key = "a"
    assert b.get_state(ListStateDescriptor("l")).get() == [1, 2, "a"]


def test_keys_and_namespaces_lists_every_entry_once(rocks) -> None:
    b = rocks()
    fill_all(b, ["a", "b"])
    assert sorted(b.keys_and_namespaces("l"), key=repr) == [("a", ("w", 1)), ("a", None), ("b", ("w", 1)), ("b", None)]
    assert b.keys_and_namespaces("unknown") == []


# ---------------------------------------------------------------------- keys and values
def test_keys_equal_in_python_are_one_entry(rocks) -> None:
    b = rocks()
    state = b.get_state(ValueStateDescriptor("v"))
    b.current_key = 1
    state.update("one")
    for equal in (True, 1.0, 1):
        b.current_key = equal
        assert state.value() == "one"
    # a tuple holding the same string object twice pickles with a memo reference; an equal
    # tuple of two distinct string objects does not: both must still be the same key
    same = "ab" * 3
    b.current_key = (same, same)
    state.update("pair")
    b.current_key = ("".join(["ab"] * 3), "ab" * 3)
    assert state.value() == "pair"
    assert len(b.keys("v")) == 2


def test_values_read_are_copies(rocks) -> None:
    b = rocks()
    state = b.get_state(ValueStateDescriptor("v"))
    b.current_key = "k"
    state.update({"n": 1})
    state.value()["n"] = 99  # as in Flink's RocksDB backend: changes stay local until written back
    assert state.value() == {"n": 1}


def test_values_pickle_cannot_write_go_through_cloudpickle_and_others_are_a_clear_error(rocks) -> None:
    import threading

    b = rocks()
    state = b.get_state(ValueStateDescriptor("v"))
    b.current_key = "k"
    state.update(lambda x: x + 1)  # pickle refuses lambdas; cloudpickle writes them
    assert state.value()(1) == 2
    with pytest.raises(InvalidProgramError, match="rocksdb state backend cannot store a lock"):
        state.update(threading.Lock())
    b.current_key = threading.Lock()
    with pytest.raises(InvalidProgramError, match="as a key"):
        state.value()


def test_list_order_survives_many_adds_and_merges(rocks) -> None:
    b = rocks()
    descriptor = ListStateDescriptor("l")
    state = b.get_state(descriptor)
    b.current_key = "k"
    for namespace in range(5):
        b.current_namespace = namespace
        for i in range(300):
            state.add((namespace, i))
    b.current_namespace = 0
    expected = [(ns, i) for ns in (0, 3, 1) for i in range(300)]
    b.merge_namespaces(descriptor, 0, [3, 1])
    assert state.get() == expected


def test_map_state_cannot_merge_two_filled_namespaces_but_moves_one(rocks) -> None:
    b = rocks()
    descriptor = MapStateDescriptor("m")
    state = b.get_state(descriptor)
    b.current_key = "k"
    b.current_namespace = "s"
    state.put("x", 1)
    b.merge_namespaces(descriptor, "t", ["s"])
    b.current_namespace = "t"
    assert state.items() == [("x", 1)]
    b.current_namespace = "u"
    state.put("y", 2)
    with pytest.raises(InvalidProgramError, match="cannot be merged"):
        b.merge_namespaces(descriptor, "t", ["u"])


def test_no_raw_dicts(rocks) -> None:
    b = rocks()
    assert b.value_dict(ValueStateDescriptor("v")) is None
    assert b.namespaced_dict(ReducingStateDescriptor("r", lambda a, c: a + c)) is None
    assert set(b.state_names()) == {"v", "r"}


# ---------------------------------------------------------------------- the factory
def test_the_factory_chooses_by_state_backend_type(tmp_path) -> None:
    def make(conf):
        return create_keyed_backend(conf, MAX_P, range(MAX_P), working_dir=str(tmp_path / "w"), clock=SystemClock())

    assert isinstance(make({}), HeapKeyedStateBackend)
    assert isinstance(make({"state.backend.type": "hashmap"}), HeapKeyedStateBackend)
    assert isinstance(make({"state.backend": "filesystem"}), HeapKeyedStateBackend)  # 1.x
    legacy = make({"state.backend": "rocksdb"})
    assert isinstance(legacy, RocksDBKeyedStateBackend)
    legacy.dispose()
    with pytest.raises(IllegalConfigurationError, match="state.backend.type.*'hashmap'.*'rocksdb'"):
        make({"state.backend.type": "leveldb"})


def test_localdir_and_predefined_options_come_from_the_configuration(tmp_path, monkeypatch) -> None:
    calls = []
    module = types.ModuleType("my_rocksdb_options")
    module.tune = lambda options: calls.append(options)
    monkeypatch.setitem(sys.modules, "my_rocksdb_options", module)
    localdirs = [tmp_path / "disk1", tmp_path / "disk2"]
    backend = EmbeddedRocksDBStateBackend()
    backend.set_db_storage_paths(*map(str, localdirs))
    conf = dict(backend.to_configuration())
    conf["state.backend.rocksdb.predefined-options"] = "SPINNING_DISK_OPTIMIZED_HIGH_MEM"
    conf["state.backend.rocksdb.options-factory"] = "my_rocksdb_options.tune"
    b = create_keyed_backend(conf, MAX_P, range(MAX_P), working_dir=str(tmp_path / "tm" / "job" / "1-0-2"),
                             clock=SystemClock())
    assert len(calls) == 1
    assert any(pathlib.Path(b.db_path).is_relative_to(d / "job" / "1-0-2") for d in localdirs)
    b.dispose()
    conf["state.backend.rocksdb.options-factory"] = "my_rocksdb_options.missing"
    with pytest.raises(IllegalConfigurationError, match="options-factory"):
        create_keyed_backend(conf, MAX_P, range(MAX_P), working_dir=str(tmp_path / "x"), clock=SystemClock())


# ---------------------------------------------------------------------- operators and jobs
class _Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def _run_jobs(backend, localdir: pathlib.Path) -> tuple:
    """A running reduce, tumbling and session event-time windows, on one state backend."""
    if isinstance(backend, EmbeddedRocksDBStateBackend):
        backend.set_db_storage_paths(str(localdir))
    rng = random.Random(3)
    events = [(rng.choice("abcdefg"), i * 37 + rng.randint(0, 400)) for i in range(400)]
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(500)).with_timestamp_assigner(_Ts())
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.set_state_backend(backend)
    stream = env.from_collection(events).assign_timestamps_and_watermarks(strategy)
    keyed = stream.map(lambda e: (e[0], 1)).key_by(lambda e: e[0])
    running = keyed.reduce(lambda a, b: (a[0], a[1] + b[1])).execute_and_collect()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.set_state_backend(backend)
    stream = env.from_collection(events).assign_timestamps_and_watermarks(strategy).key_by(lambda e: e[0])
    tumbling = stream.window(TumblingEventTimeWindows.of(Duration.of_seconds(1))) \
        .reduce(lambda a, b: (a[0], max(a[1], b[1]))).execute_and_collect()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.set_state_backend(backend)
    stream = env.from_collection(events).assign_timestamps_and_watermarks(strategy).key_by(lambda e: e[0])
    sessions = stream.window(EventTimeSessionWindows.with_gap(Duration.of_millis(300))) \
        .reduce(lambda a, b: (a[0], max(a[1], b[1]))).execute_and_collect()
    return sorted(running), sorted(tumbling), sorted(sessions)


def test_jobs_give_the_same_results_on_both_backends_and_leave_no_database(tmp_path) -> None:
    localdir = tmp_path / "rocksdb"
    heap = _run_jobs(HashMapStateBackend(), localdir)
    rocksdb = _run_jobs(EmbeddedRocksDBStateBackend(), localdir)
    assert rocksdb == heap
    assert len(heap[0]) == 400 and heap[1] and heap[2]
    assert localdir.is_dir() and list(localdir.iterdir())  # the rocksdb jobs kept their state there
    assert list(localdir.rglob("rocksdb-*")) == []  # and every task disposed its backend


def first(record):
    return record[0]


def add_counts(a, b):
    return a[0], a[1] + b[1]


def _window_harness(build, **kwargs):
    env = StreamExecutionEnvironment.get_execution_environment()
    stream = build(env.from_collection([("x", 0)]))
    return harness.OperatorHarness(stream._transformation.operator, keyed=True, **kwargs)


def test_a_window_fast_path_snapshot_continues_on_rocksdb_through_the_general_path(rocks) -> None:
    rng = random.Random(7)
    events = [((rng.choice("abc"), rng.randint(1, 9)), max(0, i * 5 + rng.randint(-30, 30))) for i in range(200)]
    build = (lambda ds: ds.key_by(first).window(TumblingEventTimeWindows.of(50)).allowed_lateness(30)
             .reduce(add_counts))

    def run(h, part):
        for value, ts in part:
            h.process([value], [ts])
            h.watermark(ts - 40)

    whole = _window_harness(build)
    run(whole, events)
    whole.watermark(MAX_WATERMARK)

    before = _window_harness(build)  # heap: the fast path, panes keyed by window start
    assert before.operator._fast is not None
    run(before, events[:100])
    backend = rocks()
    backend.restore([before.backend.snapshot()])
    after = _window_harness(build, keyed_backend=backend)
    assert after.operator._fast is None  # no raw dict: the general path, TimeWindow namespaces
    after.operator.current_watermark = before.operator.current_watermark
    run(after, events[100:])
    after.watermark(MAX_WATERMARK)
    assert sorted(before.output.records + after.output.records) == sorted(whole.output.records)
