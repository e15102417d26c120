"""The keyed state backends (heap and RocksDB): Flink/PyFlink state semantics, namespaces, TTL,
snapshots, rescaling.

Every test that builds a backend takes the ``backend`` fixture, a factory parametrized over
both backends (``hashmap``, ``rocksdb``): issue 4 requires them to pass the same state tests.
RocksDB specifics (files, dispose, cross-backend restore) are in test_state_rocksdb.py."""

from __future__ import annotations

import pytest

from streamkernel.common.time import Time
from streamkernel.datastream.function_base import AggregateFunction, ReduceFunction
from streamkernel.datastream.state import (
    AggregatingState,
    AggregatingStateDescriptor,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    ReducingState,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueState,
    ValueStateDescriptor,
)
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.keygroups import (
    assign_key_to_operator,
    assign_to_key_group,
    key_group_range_for_operator,
)
from streamkernel.runtime.core.clock import ManualClock, SystemClock
from streamkernel.runtime.state.api import KeyedStateBackend
from streamkernel.runtime.state.factory import create_keyed_backend
from streamkernel.runtime.state.key_groups_snapshot import select_key_groups, split_by_key_group_ranges

MAX_P = 128


BACKENDS = ["hashmap", "rocksdb"]


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path):
    """``backend(clock=None, key_groups=range(MAX_P), max_parallelism=MAX_P)`` builds a keyed
    backend of this run's kind (through the configuration, as tasks do); ``backend.kind`` names it.
    RocksDB backends live under ``tmp_path`` and are disposed after the test."""
    created: list = []

    def make(clock: ManualClock | None = None, key_groups: range = range(MAX_P),
             max_parallelism: int = MAX_P) -> KeyedStateBackend:
        made = create_keyed_backend({"state.backend.type": request.param}, max_parallelism, key_groups,
                                    working_dir=str(tmp_path / f"subtask-{len(created)}"),
                                    clock=clock if clock is not None else SystemClock())
        created.append(made)
        return made

    make.kind = request.param
    yield make
    for made in created:
        made.dispose()


class Sum(ReduceFunction):
    def reduce(self, a, b):
        return a + b


class Average(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return acc[0] + value, acc[1] + 1

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return a[0] + b[0], a[1] + b[1]


# ---------------------------------------------------------------------- value state
def test_value_state_is_per_key_none_when_empty_and_update_none_clears(backend) -> None:
    b = backend()
    state = b.get_state(ValueStateDescriptor("v"))
    assert isinstance(state, ValueState)
    b.current_key = "a"
    assert state.value() is None
    state.update(0)  # falsy values are values
    assert state.value() == 0
    b.current_key = "b"
    assert state.value() is None
    state.update(5)
    b.current_key = "a"
    assert state.value() == 0
    state.update(None)
    assert state.value() is None
    assert b.keys("v") == ["b"]
    b.current_key = "b"
    state.clear()
    assert b.keys("v") == []


def test_same_name_gives_same_object_and_another_type_is_an_error(backend) -> None:
    b = backend()
    first = b.get_state(ValueStateDescriptor("s"))
    assert b.get_state(ValueStateDescriptor("s")) is first
    with pytest.raises(InvalidProgramError, match="'s'.*value state"):
        b.get_state(ListStateDescriptor("s"))


def test_get_state_rejects_non_descriptors(backend) -> None:
    with pytest.raises(InvalidProgramError, match="ValueStateDescriptor"):
        backend().get_state("count")


# ---------------------------------------------------------------------- list state
def test_list_state_semantics(backend) -> None:
    b = backend()
    state = b.get_state(ListStateDescriptor("l"))
    assert isinstance(state, ListState)
    b.current_key = 1
    assert list(state.get()) == [] and list(state) == []
    state.add("x")
    state.add_all(["y", "z"])
    assert list(state.get()) == ["x", "y", "z"]
    source = ["p", "q"]
    state.update(source)
    source.append("mutated")  # update copies, as Flink's heap backend does
    assert list(state.get()) == ["p", "q"]
    state.add_all([])
    assert list(state.get()) == ["p", "q"]
    state.update([])  # empty update clears
    assert list(state.get()) == [] and b.keys("l") == []
    with pytest.raises(InvalidProgramError, match="None"):
        state.add(None)
    with pytest.raises(InvalidProgramError, match="None"):
        state.update(None)
    with pytest.raises(InvalidProgramError, match="None"):
        state.add_all([1, None])


# ---------------------------------------------------------------------- map state
def test_map_state_semantics(backend) -> None:
    b = backend()
    state = b.get_state(MapStateDescriptor("m"))
    assert isinstance(state, MapState)
    b.current_key = "k"
    assert state.is_empty() and state.get("x") is None and not state.contains("x")
    state.put("x", 1)
    state.put_all({"y": 2, "z": 3})
    state["w"] = 4
    assert state.get("x") == 1 and state["y"] == 2 and "z" in state and state.contains("w")
    assert sorted(state.keys()) == ["w", "x", "y", "z"]
    assert sorted(state.values()) == [1, 2, 3, 4]
    assert sorted(state.items()) == [("w", 4), ("x", 1), ("y", 2), ("z", 3)]
    assert sorted(state) == ["w", "x", "y", "z"]
    for key in state.keys():  # removing while iterating is fine
        if key != "x":
            state.remove(key)
    del state["nope"]  # removing a missing key is not an error
    assert state.items() == [("x", 1)] and not state.is_empty()
    b.current_key = "other"
    assert state.is_empty()
    b.current_key = "k"
    state.remove("x")  # the last user key removes the entry of the key
    assert state.is_empty() and b.keys("m") == []
    state.put("a", None)  # None values are allowed in map state
    assert state.contains("a") and state.get("a") is None
    state.clear()
    assert state.is_empty()


# ---------------------------------------------------------------------- reducing / aggregating
@pytest.mark.parametrize("function", [Sum(), lambda a, b: a + b], ids=["ReduceFunction", "callable"])
def test_reducing_state_with_reduce_function_or_callable(backend, function) -> None:
    b = backend()
    state = b.get_state(ReducingStateDescriptor("r", function))
    assert isinstance(state, ReducingState)
    b.current_key = "a"
    assert state.get() is None
    for value in (1, 2, 3):
        state.add(value)
    assert state.get() == 6
    b.current_key = "b"
    state.add(10)
    assert state.get() == 10
    state.add(None)  # Flink: adding null clears
    assert state.get() is None
    b.current_key = "a"
    assert state.get() == 6


def test_aggregating_state(backend) -> None:
    b = backend()
    state = b.get_state(AggregatingStateDescriptor("avg", Average()))
    assert isinstance(state, AggregatingState)
    b.current_key = "a"
    assert state.get() is None
    state.add(1)
    state.add(4)
    assert state.get() == 2.5
    state.clear()
    assert state.get() is None


# ---------------------------------------------------------------------- namespaces and merges
def test_namespaces_are_separate_from_each_other_and_from_void(backend) -> None:
    b = backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.current_key = ("a", "w1")  # a tuple key must not collide with (key, namespace)
    state.update("tuple-key")
    b.current_key = "a"
    state.update("void")
    b.current_namespace = "w1"
    assert state.value() is None
    state.update("in w1")
    b.current_namespace = "w2"
    state.update("in w2")
    assert b.keys("v", "w1") == ["a"]
    assert sorted(b.keys("v"), key=str) == [("a", "w1"), "a"]
    b.current_namespace = None
    assert state.value() == "void"
    b.current_key = ("a", "w1")
    assert state.value() == "tuple-key"


def test_partitioned_state_is_bound_to_its_namespace_and_reads_the_current_key(backend) -> None:
    b = backend()
    descriptor = ReducingStateDescriptor("count", lambda x, y: x + y)
    in_w1 = b.get_partitioned_state(descriptor, "w1")
    in_w2 = b.get_partitioned_state(descriptor, "w2")
    b.current_key = "a"
    b.current_namespace = "w2"  # ignored by bound state
    in_w1.add(1)
    in_w1.add(1)
    in_w2.add(5)
    b.current_key = "b"
    in_w1.add(100)
    b.current_key = "a"
    assert in_w1.get() == 2 and in_w2.get() == 5
    assert b.get_partitioned_state(descriptor, "w1").get() == 2
    b.current_namespace = "w1"
    assert b.get_state(descriptor).get() == 2  # the same table as current-namespace access


@pytest.mark.parametrize(
    "descriptor, adds, expected",
    [
        (ListStateDescriptor("l"), {"t": [1], "s1": [2, 3], "s2": [4]}, [1, 2, 3, 4]),
        (ReducingStateDescriptor("r", lambda a, b: a + b), {"t": [1], "s1": [2, 3], "s2": [4]}, 10),
        (AggregatingStateDescriptor("g", Average()), {"t": [1], "s1": [2, 3], "s2": [6]}, 3.0),
        (ListStateDescriptor("l"), {"s1": [2], "s2": [4]}, [2, 4]),  # target empty
    ],
)
def test_merge_namespaces(backend, descriptor, adds, expected) -> None:
    b = backend()
    b.current_key = "k"
    for namespace, values in adds.items():
        b.current_namespace = namespace
        for value in values:
            b.get_state(descriptor).add(value)
    b.merge_namespaces(descriptor, "t", ["s1", "s2", "missing", "t"])
    b.current_namespace = "t"
    result = b.get_state(descriptor).get()
    assert (list(result) if isinstance(expected, list) else result) == expected
    assert b.keys(descriptor.name, "s1") == [] and b.keys(descriptor.name, "s2") == []


def test_value_state_cannot_merge(backend) -> None:
    b = backend()
    b.current_key = "k"
    b.current_namespace = "s"
    b.get_state(ValueStateDescriptor("v")).update(1)
    b.current_namespace = "t"
    b.get_state(ValueStateDescriptor("v")).update(2)
    with pytest.raises(InvalidProgramError, match="cannot be merged"):
        b.merge_namespaces(ValueStateDescriptor("v"), "t", ["s"])


# HEAP_ONLY_RAW_DICTS: value_dict/namespaced_dict expose the heap backend's own dicts; RocksDB has
# none and returns None (test_state_rocksdb.py checks that, and that operators fall back).


@pytest.mark.parametrize("backend", ["hashmap"], indirect=True)  # heap only: see HEAP_ONLY_RAW_DICTS
def test_value_dict_fast_path_is_the_state(backend) -> None:
    b = backend()
    descriptor = ValueStateDescriptor("v")
    table = b.value_dict(descriptor)
    table["a"] = 3
    b.current_key = "a"
    assert b.get_state(descriptor).value() == 3
    ttl = ValueStateDescriptor("t")
    ttl.enable_time_to_live(StateTtlConfig.new_builder(Time.seconds(1)).build())
    assert b.value_dict(ttl) is None
    assert b.namespaced_dict(ttl) is None


@pytest.mark.parametrize("backend", ["hashmap"], indirect=True)  # heap only: see HEAP_ONLY_RAW_DICTS
def test_namespaced_dict_fast_path_is_the_state_and_is_snapshotted(backend) -> None:
    b = backend()
    descriptor = ReducingStateDescriptor("panes", lambda x, y: x + y)
    panes = b.namespaced_dict(descriptor)
    panes[("k", 1000)] = 5
    b.current_key, b.current_namespace = "k", 1000
    b.get_state(descriptor).add(2)
    assert panes[("k", 1000)] == 7
    restored = backend()
    restored.restore([b.snapshot()])
    assert restored.namespaced_dict(descriptor) == {("k", 1000): 7}


# ---------------------------------------------------------------------- TTL
def ttl_config(ms: int = 100, read: bool = False, return_expired: bool = False) -> StateTtlConfig:
    builder = StateTtlConfig.new_builder(Time.milliseconds(ms))
    if read:
        builder.update_ttl_on_read_and_write()
    if return_expired:
        builder.return_expired_if_not_cleaned_up()
    return builder.build()


def with_ttl(descriptor, config):
    descriptor.enable_time_to_live(config)
    return descriptor


def test_ttl_value_on_create_and_write(backend) -> None:
    clock = ManualClock(1000)
    b = backend(clock)
    state = b.get_state(with_ttl(ValueStateDescriptor("v"), ttl_config(100)))
    b.current_key = "a"
    state.update(1)
    clock.advance(60)
    assert state.value() == 1  # a read does not prolong
    clock.advance(39)
    assert state.value() == 1  # 99 ms old
    clock.advance(1)
    assert state.value() is None  # now >= last write + ttl
    assert b.keys("v") == []  # cleaned up by the read
    state.update(2)
    clock.advance(50)
    state.update(3)  # a write prolongs
    clock.advance(99)
    assert state.value() == 3


def test_ttl_value_on_read_and_write(backend) -> None:
    clock = ManualClock(0)
    b = backend(clock)
    state = b.get_state(with_ttl(ValueStateDescriptor("v"), ttl_config(100, read=True)))
    b.current_key = "a"
    state.update(1)
    for _ in range(5):
        clock.advance(90)
        assert state.value() == 1  # every read prolongs
    clock.advance(100)
    assert state.value() is None


def test_ttl_return_expired_if_not_cleaned_up_returns_it_once(backend) -> None:
    clock = ManualClock(0)
    b = backend(clock)
    state = b.get_state(with_ttl(ValueStateDescriptor("v"), ttl_config(10, return_expired=True)))
    b.current_key = "a"
    state.update("old")
    clock.advance(50)
    assert state.value() == "old"
    assert state.value() is None


def test_ttl_list_expires_per_element(backend) -> None:
    clock = ManualClock(0)
    b = backend(clock)
    state = b.get_state(with_ttl(ListStateDescriptor("l"), ttl_config(100)))
    b.current_key = "a"
    state.add(1)
    clock.advance(50)
    state.add_all([2, 3])
    assert state.get() == [1, 2, 3]
    clock.advance(50)
    assert state.get() == [2, 3]
    clock.advance(50)
    assert state.get() == [] and b.keys("l") == []
    state.update([7])
    assert list(state) == [7]


def test_ttl_map_expires_per_user_key(backend) -> None:
    clock = ManualClock(0)
    b = backend(clock)
    state = b.get_state(with_ttl(MapStateDescriptor("m"), ttl_config(100)))
    b.current_key = "a"
    state.put("old", 1)
    clock.advance(60)
    state.put_all({"new": 2})
    clock.advance(40)
    assert not state.contains("old") and state.get("old") is None
    assert state.items() == [("new", 2)] and state.keys() == ["new"] and state.values() == [2]
    assert not state.is_empty()
    clock.advance(60)
    assert state.is_empty() and b.keys("m") == []


def test_ttl_reducing_and_aggregating_restart_after_expiry(backend) -> None:
    clock = ManualClock(0)
    b = backend(clock)
    reducing = b.get_state(with_ttl(ReducingStateDescriptor("r", Sum()), ttl_config(100)))
    aggregating = b.get_state(with_ttl(AggregatingStateDescriptor("g", Average()), ttl_config(100)))
    b.current_key = "a"
    reducing.add(1)
    aggregating.add(10)
    clock.advance(50)
    reducing.add(2)
    aggregating.add(20)
    assert reducing.get() == 3 and aggregating.get() == 15
    clock.advance(100)
    reducing.add(5)  # the expired sum is not reused
    aggregating.add(1)
    assert reducing.get() == 5 and aggregating.get() == 1


def test_ttl_merge_namespaces_drops_expired(backend) -> None:
    clock = ManualClock(0)
    b = backend(clock)
    descriptor = with_ttl(ListStateDescriptor("l"), ttl_config(100))
    b.current_key = "k"
    b.current_namespace = "s1"
    b.get_state(descriptor).add("expires")
    clock.advance(80)
    b.current_namespace = "s2"
    b.get_state(descriptor).add("lives")
    b.current_namespace = "t"
    b.get_state(descriptor).add("target")
    clock.advance(30)
    b.merge_namespaces(descriptor, "t", ["s1", "s2"])
    assert b.get_state(descriptor).get() == ["target", "lives"]


def test_expired_values_are_left_out_of_snapshots(backend) -> None:
    clock = ManualClock(0)
    b = backend(clock)
    state = b.get_state(with_ttl(ValueStateDescriptor("v"), ttl_config(100)))
    for key in ("old", "new"):
        b.current_key = key
        state.update(key)
        clock.advance(60)
    restored = backend(clock)
    restored.restore([b.snapshot()])
    assert restored.keys("v") == ["new"]


def test_restoring_without_ttl_into_ttl_state_and_back(backend) -> None:
    clock = ManualClock(0)
    plain = backend(clock)
    plain.current_key = "a"
    plain.get_state(ValueStateDescriptor("v")).update(1)
    with_ttl_backend = backend(clock)
    with_ttl_backend.restore([plain.snapshot()])
    state = with_ttl_backend.get_state(with_ttl(ValueStateDescriptor("v"), ttl_config(100)))
    with_ttl_backend.current_key = "a"
    assert state.value() == 1
    again = backend(clock)
    again.restore([with_ttl_backend.snapshot()])
    again.current_key = "a"
    assert again.get_state(ValueStateDescriptor("v")).value() == 1
    clock.advance(1000)
    assert again.get_state(ValueStateDescriptor("v")).value() == 1  # no TTL any more


# ---------------------------------------------------------------------- snapshots
def fill(b: KeyedStateBackend, keys) -> None:
    value, lists, maps = (b.get_state(ValueStateDescriptor("v")), b.get_state(ListStateDescriptor("l")),
                          b.get_state(MapStateDescriptor("m")))
    for key in keys:
        b.current_key = key
        value.update({"count": key})
        lists.add(key)
        maps.put("k", [key])
        b.current_namespace = ("window", key)
        lists.add(-1)
        b.current_namespace = None


def contents(b: KeyedStateBackend) -> dict:
    result = {}
    value, lists, maps = (b.get_state(ValueStateDescriptor("v")), b.get_state(ListStateDescriptor("l")),
                          b.get_state(MapStateDescriptor("m")))
    for key in b.keys("v"):
        b.current_key = key
        b.current_namespace = ("window", key)
        windowed = list(lists.get())
        b.current_namespace = None
        result[key] = (value.value(), list(lists.get()), maps.items(), windowed)
    return result


def test_snapshot_format_groups_by_key_group(backend) -> None:
    b = backend()
    fill(b, range(20))
    snapshot = b.snapshot()
    assert snapshot["kind"] == "keyed" and snapshot["max_parallelism"] == MAX_P
    assert set(snapshot["states"]) == {"v", "l", "m"}
    assert snapshot["states"]["v"]["type"] == "value"
    for group, entries in snapshot["states"]["l"]["key_groups"].items():
        for key, namespace, _ in entries:
            assert assign_to_key_group(key, MAX_P) == group
            assert namespace in (None, ("window", key))


def test_snapshot_is_isolated_from_later_mutation(backend) -> None:
    b = backend()
    fill(b, ["a"])
    snapshot = b.snapshot()
    b.current_key = "a"
    b.get_state(ValueStateDescriptor("v")).value()["count"] = "mutated in place"
    b.get_state(ListStateDescriptor("l")).add("more")
    b.get_state(MapStateDescriptor("m")).get("k").append("more")
    restored = backend()
    restored.restore([snapshot])
    assert contents(restored) == {"a": ({"count": "a"}, ["a"], [("k", ["a"])], [-1])}
    # and restoring copies: the restored job cannot corrupt the snapshot either
    restored.current_key = "a"
    restored.get_state(ListStateDescriptor("l")).add("restored job")
    again = backend()
    again.restore([snapshot])
    assert contents(again)["a"][1] == ["a"]


def test_snapshot_restore_round_trip(backend) -> None:
    b = backend()
    fill(b, list(range(50)) + ["x", ("t", 1)])
    restored = backend()
    restored.restore([b.snapshot()])
    assert contents(restored) == contents(b)


@pytest.mark.parametrize("old_parallelism, new_parallelism", [(2, 3), (3, 2), (4, 1), (1, 4)])
def test_rescaling_moves_each_key_to_its_new_subtask(backend, old_parallelism: int, new_parallelism: int) -> None:
    keys = [f"key-{i}" for i in range(300)] + list(range(100))
    old = []
    for index in range(old_parallelism):
        b = backend(key_groups=key_group_range_for_operator(MAX_P, old_parallelism, index))
        fill(b, [k for k in keys if assign_key_to_operator(k, MAX_P, old_parallelism) == index])
        old.append(b.snapshot())
    old.append(None)  # a subtask without state
    seen = []
    for index in range(new_parallelism):
        b = backend(key_groups=key_group_range_for_operator(MAX_P, new_parallelism, index))
        b.restore(old)
        found = contents(b)
        for key, (value, lists, maps, windowed) in found.items():
            assert assign_key_to_operator(key, MAX_P, new_parallelism) == index
            assert (value, lists, maps, windowed) == ({"count": key}, [key], [("k", [key])], [-1])
        seen.extend(found)
    assert sorted(seen, key=str) == sorted(keys, key=str)  # none lost, none duplicated


def test_split_by_key_group_ranges_matches_restore(backend) -> None:
    b = backend()
    fill(b, range(200))
    parts = split_by_key_group_ranges([b.snapshot()], MAX_P, 3)
    for index, part in enumerate(parts):
        groups = key_group_range_for_operator(MAX_P, 3, index)
        assert all(group in groups for state in part["states"].values() for group in state["key_groups"])
        target = backend(key_groups=groups)
        target.restore([part])
        assert {k for k in target.keys("v")} == {k for k in range(200)
                                                  if assign_key_to_operator(k, MAX_P, 3) == index}


def test_restore_rejects_another_max_parallelism_and_type_conflicts(backend) -> None:
    b = backend()
    fill(b, [1])
    snapshot = b.snapshot()
    with pytest.raises(InvalidProgramError, match="max parallelism"):
        backend(max_parallelism=256, key_groups=range(256)).restore([snapshot])
    other = backend()
    other.get_state(ValueStateDescriptor("l"))
    with pytest.raises(InvalidProgramError, match="'l'"):
        other.restore([snapshot])
    restored = backend()
    restored.restore([snapshot])
    with pytest.raises(InvalidProgramError, match="'v'"):
        restored.get_state(ListStateDescriptor("v"))


def test_select_key_groups_of_nothing_is_empty() -> None:
    assert select_key_groups([None, {}], range(0, 10))["states"] == {}


def test_restore_after_get_state_is_visible_through_existing_state_objects(backend) -> None:
    source = backend()
    fill(source, ["a"])
    b = backend()
    state = b.get_state(ValueStateDescriptor("v"))
    b.restore([source.snapshot()])
    b.current_key = "a"
    assert state.value() == {"count": "a"}
    b.dispose()
    if backend.kind == "hashmap":  # the heap backend just drops its dicts: state objects see empty state
        assert state.value() is None
    else:  # Flink's RocksDB backend: the database is closed and deleted, using its state is an error
        with pytest.raises(InvalidProgramError, match="disposed"):
            state.value()
