"""Operator state: list / union list / broadcast state, snapshots, and redistribution on rescale."""

from __future__ import annotations

import pytest

from streamkernel.datastream.state import (
    BroadcastState,
    ListState,
    ListStateDescriptor,
    MapStateDescriptor,
    OperatorStateStore,
    ReadOnlyBroadcastState,
)
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.state.operator_state import (
    DefaultOperatorStateBackend,
    redistribute_operator_state,
)


def subtask_snapshot(split=(), union=(), broadcast=None) -> dict:
    b = DefaultOperatorStateBackend()
    b.get_list_state(ListStateDescriptor("offsets")).update(list(split))
    b.get_union_list_state(ListStateDescriptor("everyone")).update(list(union))
    b.get_broadcast_state(MapStateDescriptor("rules")).put_all(broadcast or {})
    return b.snapshot()


def restored(snapshot: dict) -> DefaultOperatorStateBackend:
    b = DefaultOperatorStateBackend()
    b.restore(snapshot)
    return b


def test_list_state_semantics() -> None:
    b = DefaultOperatorStateBackend()
    assert isinstance(b, OperatorStateStore)
    state = b.get_list_state(ListStateDescriptor("l"))
    assert isinstance(state, ListState)
    assert list(state.get()) == []
    state.add(1)
    state.add_all([2, 3])
    assert list(state) == [1, 2, 3]
    state.update([9])
    assert list(state.get()) == [9]
    assert b.get_list_state(ListStateDescriptor("l")) is state
    state.clear()
    assert list(state.get()) == []
    with pytest.raises(InvalidProgramError, match="None"):
        state.add(None)


def test_broadcast_state_and_read_only_view() -> None:
    b = DefaultOperatorStateBackend()
    state = b.get_broadcast_state(MapStateDescriptor("rules"))
    assert isinstance(state, BroadcastState)
    state.put("a", 1)
    state["b"] = 2
    state.put_all({"c": 3})
    state.remove("c")
    del state["missing"]
    view = b.get_read_only_broadcast_state(MapStateDescriptor("rules"))
    assert isinstance(view, ReadOnlyBroadcastState) and not isinstance(view, BroadcastState)
    assert view.get("a") == 1 and view["b"] == 2 and "a" in view and not view.contains("c")
    assert sorted(view.items()) == [("a", 1), ("b", 2)] and sorted(view) == ["a", "b"]
    assert not hasattr(view, "put")
    with pytest.raises(InvalidProgramError, match="read-only"):
        view.clear()
    for key in state.keys():  # removing while iterating is fine
        state.remove(key)
    assert view.is_empty()


def test_one_name_has_one_mode() -> None:
    b = DefaultOperatorStateBackend()
    b.get_list_state(ListStateDescriptor("s"))
    with pytest.raises(InvalidProgramError, match="'s' is split state"):
        b.get_union_list_state(ListStateDescriptor("s"))
    with pytest.raises(InvalidProgramError, match="MapStateDescriptor"):
        b.get_broadcast_state(ListStateDescriptor("s"))


def test_snapshot_format_and_isolation() -> None:
    b = DefaultOperatorStateBackend()
    offsets = b.get_list_state(ListStateDescriptor("offsets"))
    offsets.add({"partition": 0, "offset": 5})
    rules = b.get_broadcast_state(MapStateDescriptor("rules"))
    rules.put("r", [1])
    snapshot = b.snapshot()
    assert snapshot == {
        "kind": "operator",
        "states": {
            "offsets": {"mode": "split", "entries": [{"partition": 0, "offset": 5}]},
            "rules": {"mode": "broadcast", "entries": {"r": [1]}},
        },
    }
    offsets.get()[0]["offset"] = 99
    rules.get("r").append(2)
    again = restored(snapshot)
    assert list(again.get_list_state(ListStateDescriptor("offsets")).get()) == [{"partition": 0, "offset": 5}]
    assert again.get_broadcast_state(MapStateDescriptor("rules")).get("r") == [1]
    again.get_list_state(ListStateDescriptor("offsets")).add("x")  # restore copied
    assert snapshot["states"]["offsets"]["entries"] == [{"partition": 0, "offset": 5}]


def test_restore_none_is_a_fresh_start_and_mode_conflicts_fail() -> None:
    b = DefaultOperatorStateBackend()
    b.restore(None)
    assert b.state_names() == []
    b.get_union_list_state(ListStateDescriptor("offsets"))
    with pytest.raises(InvalidProgramError, match="'offsets'"):
        b.restore(subtask_snapshot(split=[1]))


def test_split_state_is_divided_evenly_in_contiguous_parts() -> None:
    old = [subtask_snapshot(split=[0, 1, 2, 3]), subtask_snapshot(split=[4, 5, 6])]
    new = redistribute_operator_state(old, 3)
    parts = [list(restored(s).get_list_state(ListStateDescriptor("offsets")).get()) for s in new]
    assert parts == [[0, 1, 2], [3, 4], [5, 6]]
    fewer = redistribute_operator_state(old, 1)
    assert list(restored(fewer[0]).get_list_state(ListStateDescriptor("offsets")).get()) == list(range(7))


def test_split_state_stays_put_when_parallelism_is_unchanged() -> None:
    old = [subtask_snapshot(split=[0, 1, 2, 3]), subtask_snapshot(split=[4])]
    new = redistribute_operator_state(old, 2)
    assert [s["states"]["offsets"]["entries"] for s in new] == [[0, 1, 2, 3], [4]]


def test_union_state_goes_to_everyone() -> None:
    old = [subtask_snapshot(union=["a"]), None, subtask_snapshot(union=["b", "c"])]
    for new_parallelism in (1, 3, 5):
        new = redistribute_operator_state(old, new_parallelism)
        assert len(new) == new_parallelism
        for snapshot in new:
            assert list(restored(snapshot).get_union_list_state(ListStateDescriptor("everyone")).get()) == ["a", "b", "c"]


def test_broadcast_state_every_subtask_gets_a_copy() -> None:
    old = [subtask_snapshot(broadcast={"v": 0}), subtask_snapshot(broadcast={"v": 1})]
    same = redistribute_operator_state(old, 2)
    assert [s["states"]["rules"]["entries"] for s in same] == [{"v": 0}, {"v": 1}]
    more = redistribute_operator_state(old, 5)
    assert [restored(s).get_broadcast_state(MapStateDescriptor("rules")).get("v") for s in more] == [0, 1, 0, 1, 0]
    with_gap = redistribute_operator_state([None, subtask_snapshot(broadcast={"v": 1})], 2)
    assert with_gap[0]["states"]["rules"]["entries"] == {"v": 1}


def test_redistribution_keeps_every_state_name_and_rejects_bad_input() -> None:
    new = redistribute_operator_state([None, None], 3)
    assert new == [{"kind": "operator", "states": {}}] * 3
    new = redistribute_operator_state([subtask_snapshot(split=[1])], 4)
    assert all(set(s["states"]) == {"offsets", "everyone", "rules"} for s in new)
    assert sum(len(s["states"]["offsets"]["entries"]) for s in new) == 1
    with pytest.raises(InvalidProgramError, match="new_parallelism"):
        redistribute_operator_state([], 0)
