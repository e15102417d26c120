"""Redistributing an unaligned checkpoint's in-flight records when the receiver is restored at
another parallelism: per partitioner (Flink's SubtaskStateMapper), each record exactly once, in
its old channel's order, with its timestamp and input index; refused where it cannot be done."""

from __future__ import annotations

import collections
from typing import Any, Optional

import pytest

from streamkernel.common import Configuration
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.job_graph import JobGraph, build_job_graph
from streamkernel.graph.keygroups import assign_key_to_operator
from streamkernel.graph.partitioners import (
    BroadcastPartitioner,
    CustomPartitionerWrapper,
    ForwardPartitioner,
    GlobalPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
    StreamPartitioner,
)
from streamkernel.runtime.checkpoint.channel_state import channel_state_of_buffers
from streamkernel.runtime.checkpoint.in_flight_rescale import redistribute_channel_state
from streamkernel.runtime.checkpoint.metadata import JobCheckpointInfo
from streamkernel.runtime.checkpoint.restore import assign_restored_state
from streamkernel.runtime.checkpoint.storage import CheckpointStorage

KEYS = [f"k{n}" for n in range(40)]
HASH = KeyGroupStreamPartitioner(key_selector=lambda record: record[0], max_parallelism=128)
PARALLELISMS = [(2, 3), (3, 2), (1, 4), (4, 1), (3, 5)]


def old_channel_states(old_parallelism: int, two_inputs: bool = False) -> list[Optional[dict]]:
    """What each old subtask stored: buffers of ``(key, old subtask, sequence)`` records, some with
    timestamps, on input 0 (and 1); the last old subtask holds none when there are several."""
    states: list[Optional[dict]] = []
    for old in range(old_parallelism):
        if old_parallelism > 1 and old == old_parallelism - 1:
            states.append(None)
            continue
        buffers = []
        for b in range(4):
            records = [(KEYS[(old * 7 + b * 5 + i) % len(KEYS)], old, b * 10 + i) for i in range(6)]
            timestamps = [1000 * old + r[2] for r in records] if b % 2 else None
            buffers.append((b % 2 if two_inputs else 0, records, timestamps))
        states.append(channel_state_of_buffers(buffers))
    return states


def flatten(state: Optional[dict]) -> list[tuple[int, Any, Optional[int]]]:
    """``(input index, record, timestamp)`` of one channel state, in order."""
    return [(i, value, None if ts is None else ts[n]) for i, values, ts in (state or {}).get("buffers", ())
            for n, value in enumerate(values)]


@pytest.mark.parametrize("old_parallelism, new_parallelism", PARALLELISMS)
@pytest.mark.parametrize("partitioner", [HASH, RebalancePartitioner(), ShufflePartitioner(), RescalePartitioner(),
                                         ForwardPartitioner(), GlobalPartitioner()], ids=str)
@pytest.mark.parametrize("two_inputs", [False, True], ids=["one-input", "two-input"])
def test_each_record_goes_to_one_new_subtask_in_its_old_channel_order(
        partitioner: StreamPartitioner, old_parallelism: int, new_parallelism: int, two_inputs: bool) -> None:
    old = old_channel_states(old_parallelism, two_inputs)
    inputs = {0: [partitioner], 1: [partitioner]}
    new = redistribute_channel_state(old, new_parallelism, inputs)

    assert len(new) == new_parallelism
    before = [entry for state in old for entry in flatten(state)]
    after = [entry for state in new for entry in flatten(state)]
    assert collections.Counter(after) == collections.Counter(before) and len(after) == len(before)  # exactly once
    for index, state in enumerate(new):
        records = flatten(state)
        for _, (key, source, _), _ in records:
            if partitioner is HASH:  # with its key's key group, so with its key's state
                assert assign_key_to_operator(key, 128, new_parallelism) == index
            elif isinstance(partitioner, GlobalPartitioner):
                assert index == 0
            else:  # ROUND_ROBIN: old subtask j, whole, to new subtask j % n
                assert source % new_parallelism == index
        for source in range(old_parallelism):  # each old channel's records keep their order
            from_source = [entry for entry in records if entry[1][1] == source]
            assert from_source == [entry for entry in flatten(old[source]) if entry in from_source]
        assert state is None or (state["unaligned"] and state["persisted_data"] > 0)


@pytest.mark.parametrize("old_parallelism, new_parallelism", PARALLELISMS)
def test_a_broadcast_input_gives_every_new_subtask_one_copy(old_parallelism: int, new_parallelism: int) -> None:
    copy = [("x", 0, n) for n in range(5)]  # every old subtask holds the same records (its own copy)
    old = [channel_state_of_buffers([(0, list(copy), [7] * 5)]) for _ in range(old_parallelism)]
    new = redistribute_channel_state(old, new_parallelism, {0: [BroadcastPartitioner()]})
    assert [flatten(state) for state in new] == [[(0, record, 7) for record in copy]] * new_parallelism


def test_each_input_of_a_two_input_operator_follows_its_own_partitioner() -> None:
    rule = ("rule", 9, 0)  # the broadcast side of a keyed broadcast process function, 2 -> 3
    old = [channel_state_of_buffers([(0, [r for r in [(key, 0, n) for n, key in enumerate(KEYS)]
                                          if assign_key_to_operator(r[0], 128, 2) == j], None), (1, [rule], [5])])
           for j in range(2)]
    new = redistribute_channel_state(old, 3, {0: [HASH], 1: [BroadcastPartitioner()]})
    for index, state in enumerate(new):
        entries = flatten(state)
        assert [entry for entry in entries if entry[0] == 1] == [(1, rule, 5)]
        assert all(assign_key_to_operator(record[0], 128, 3) == index for i, record, _ in entries if i == 0)
    assert sorted(record[0] for state in new for i, record, _ in flatten(state) if i == 0) == sorted(KEYS)


@pytest.mark.parametrize("old_parallelism, new_parallelism", [(2, 3), (3, 2)])
def test_a_custom_partitioner_or_mixed_partitioners_are_refused_naming_them(
        old_parallelism: int, new_parallelism: int) -> None:
    old = old_channel_states(old_parallelism)
    custom = CustomPartitionerWrapper(partitioner=lambda key, n: 0, key_selector=lambda record: record[0])
    with pytest.raises(InvalidProgramError, match=r"^restoring 'op': in-flight records of input 0 came through a "
                                                  r"CUSTOM edge.*cannot be redistributed"):
        redistribute_channel_state(old, new_parallelism, {0: [custom]}, describe=lambda why: f"restoring 'op': {why}")
    with pytest.raises(InvalidProgramError, match=r"partitioned differently \(BROADCAST/HASH\)"):
        redistribute_channel_state(old, new_parallelism, {0: [HASH, BroadcastPartitioner()]})
    with pytest.raises(InvalidProgramError, match=r"input 0, which no network edge reaches in the new job"):
        redistribute_channel_state(old, new_parallelism, {1: [HASH]})
    # an input without in-flight records never matters
    assert redistribute_channel_state(old, new_parallelism, {0: [HASH], 1: [custom]})


def test_a_key_selector_failing_on_an_in_flight_record_names_the_record() -> None:
    failing = KeyGroupStreamPartitioner(key_selector=lambda record: record["no such field"], max_parallelism=128)
    with pytest.raises(InvalidProgramError, match=r"key selector .* raised TypeError.*\('k0', 0, 0\)"):
        redistribute_channel_state(old_channel_states(2), 3, {0: [failing]})


# ------------------------------------------------------------------ assign_restored_state


def _job(parallelism: int, edge: str = "key_by") -> JobGraph:
    env = StreamExecutionEnvironment.get_execution_environment(Configuration.from_dict({}))
    env.set_parallelism(parallelism)
    source = env.from_collection([("k0", 0, 0)]).uid("src").set_parallelism(1)
    routed = (source.key_by(lambda record: record[0]) if edge == "key_by"
              else source.partition_custom(lambda key, n: 0, lambda record: record[0]))
    routed.map(lambda record: record).uid("counts").add_sink(lambda value: None).uid("sink")
    return build_job_graph(env.get_stream_graph())


def _counts_vertex(job: JobGraph) -> int:
    return next(v.id for v in job.vertices if any(n.uid == "counts" for n in job.operators(v.id)))


def _checkpoint(tmp_path, job: JobGraph, states: list[Optional[dict]]) -> Any:
    storage = CheckpointStorage(tmp_path, "job")
    vertex = _counts_vertex(job)
    handles = {}
    for index, state in enumerate(states):
        snapshot = {"counts": {"keyed": None, "timers": [], "operator": None, "raw": None, "channel_state": state}}
        handles[(vertex, index)] = storage.write_task_state(7, vertex, index, snapshot)
    return storage.finalize(7, handles, JobCheckpointInfo.from_job_graph(job))


@pytest.mark.parametrize("old_parallelism, new_parallelism", [(2, 3), (3, 2)])
def test_restoring_a_keyed_operator_at_another_parallelism_moves_its_in_flight_records_by_key(
        tmp_path, old_parallelism: int, new_parallelism: int) -> None:
    records = [(key, 0, n) for n, key in enumerate(KEYS)]
    states = [channel_state_of_buffers([(0, [r for r in records if assign_key_to_operator(r[0], 128, old_parallelism)
                                             == old], None)]) for old in range(old_parallelism)]
    completed = _checkpoint(tmp_path, _job(old_parallelism), states)
    job = _job(new_parallelism)
    vertex = _counts_vertex(job)
    assigned = assign_restored_state(completed, job)
    restored = {index: flatten(assigned[(vertex, index)]["counts"].get("channel_state"))
                for index in range(new_parallelism) if (vertex, index) in assigned}
    assert sorted(record for records in restored.values() for _, record, _ in records) == sorted(records)
    for index, restored_records in restored.items():
        assert all(assign_key_to_operator(record[0], 128, new_parallelism) == index
                   for _, record, _ in restored_records)


def test_restoring_in_flight_records_of_a_custom_partitioned_input_elsewhere_is_refused(tmp_path) -> None:
    states = [channel_state_of_buffers([(0, [("k1", 0, 0)], None)]), None]
    completed = _checkpoint(tmp_path, _job(2, "custom"), states)
    with pytest.raises(InvalidProgramError) as caught:
        assign_restored_state(completed, _job(3, "custom"))
    message = str(caught.value)
    assert message.startswith("cannot restore 'counts'") and "at parallelism 3 from unaligned checkpoint 7" in message
    assert "CUSTOM" in message and "restore it at parallelism 2" in message
    same = _job(2, "custom")  # at the same parallelism nothing moves
    assert flatten(assign_restored_state(completed, same)[(_counts_vertex(same), 0)]["counts"]["channel_state"]) == [
        (0, ("k1", 0, 0), None)]
