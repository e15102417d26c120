"""ExecutionGraph: subtasks, slots needed with and without slot sharing, placement, channels."""

from __future__ import annotations

from collections import Counter

import pytest

from streamkernel.errors import InvalidProgramError, NotEnoughSlotsError
from streamkernel.graph.execution_graph import SlotId, build_execution_graph, slots_needed, subtask_channels
from streamkernel.graph.job_graph import JobGraph, build_job_graph
from streamkernel.graph.partitioners import (
    BroadcastPartitioner,
    ForwardPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
)
from streamkernel.graph.stream_graph import build_stream_graph
from streamkernel.graph.operator_specs import MapSpec, SinkSpec, SourceSpec
from streamkernel.graph.transformations import (
    OneInputTransformation,
    PartitionTransformation,
    SinkTransformation,
    SourceTransformation,
)


def _source(parallelism: int) -> SourceTransformation:
    return SourceTransformation("Kafka", SourceSpec(source=[0]), parallelism)


def _op(input, name: str, parallelism: int | None = None, partitioner=None) -> OneInputTransformation:
    if partitioner is not None:
        input = PartitionTransformation(input, partitioner)
    return OneInputTransformation(name, input, MapSpec(function=str), parallelism or input.parallelism)


def _sink(input, parallelism: int | None = None) -> SinkTransformation:
    return SinkTransformation("Out", input, SinkSpec(sink=print), parallelism or input.parallelism)


def _job(*sinks, chaining: bool = True, name: str = "wc") -> JobGraph:
    return build_job_graph(build_stream_graph(sinks, job_name=name, chaining_enabled=chaining))


def _seed_job(parallelism: int = 4, chaining: bool = True) -> JobGraph:
    """The seed's Source(Kafka) -> Map -> KeyBy -> Window -> Sink."""
    mapped = _op(_source(parallelism), "Map")
    window = _op(mapped, "Window", partitioner=KeyGroupStreamPartitioner(key_selector=lambda r: r))
    return _job(_sink(window), chaining=chaining)


def _mixed_job() -> JobGraph:
    """Source(1) -> Map(4) -> Sink(2): three vertices (parallelism changes break chains)."""
    return _job(_sink(_op(_source(1), "Map", 4), 2))


def test_seed_rule_slots_equal_max_parallelism_with_sharing():
    assert slots_needed(_seed_job(4)) == 4
    assert slots_needed(_mixed_job()) == 4


def test_without_sharing_slots_are_the_sum_of_vertex_parallelisms():
    assert slots_needed(_mixed_job(), slot_sharing=False) == 1 + 4 + 2
    assert slots_needed(_seed_job(4), slot_sharing=False) == 8  # two chains of 4 subtasks
    # The seed: "4 operators each with parallelism 8 needs only 8 slots with sharing, but 32
    # without" (key_by is an edge, not an operator: Source, Map, Window, Sink).
    assert slots_needed(_seed_job(8, chaining=False), slot_sharing=True) == 8
    assert slots_needed(_seed_job(8, chaining=False), slot_sharing=False) == 32


def test_sharing_sums_the_max_parallelism_of_each_group():
    source = _source(2)
    heavy = _op(source, "Heavy", 3)
    heavy.slot_sharing_group = "heavy"
    light = _op(heavy, "Light", 1)
    light.slot_sharing_group = "default"
    job = _job(_sink(light))
    assert slots_needed(job) == 2 + 3  # 'default': max(2, 1), 'heavy': 3


def test_sharing_places_subtask_i_of_every_vertex_in_slot_i():
    eg = build_execution_graph(_mixed_job())
    assert (eg.taskmanagers, eg.slots_per_taskmanager, eg.slots_needed) == (1, 4, 4)
    for v in eg.vertices:
        assert v.slot == SlotId(0, v.subtask_index)
    assert len(eg.in_slot(SlotId(0, 0))) == 3  # one subtask of each vertex
    assert len(eg.in_slot(SlotId(0, 3))) == 1  # only Map has a 4th subtask


def test_groups_take_consecutive_slots_and_fill_taskmanagers_in_order():
    source = _source(2)
    heavy = _op(source, "Heavy", 3)
    heavy.slot_sharing_group = "heavy"
    job = _job(_sink(heavy))
    eg = build_execution_graph(job, taskmanagers=3, slots_per_taskmanager=2)
    source_vertex, heavy_vertex = job.vertices
    assert [v.slot for v in eg.subtasks(source_vertex.id)] == [SlotId(0, 0), SlotId(0, 1)]
    assert [v.slot for v in eg.subtasks(heavy_vertex.id)] == [SlotId(1, 0), SlotId(1, 1), SlotId(2, 0)]
    assert eg.used_slots == (SlotId(0, 0), SlotId(0, 1), SlotId(1, 0), SlotId(1, 1), SlotId(2, 0))


def test_without_sharing_every_subtask_gets_its_own_slot_in_vertex_order():
    job = _mixed_job()
    eg = build_execution_graph(job, taskmanagers=2, slots_per_taskmanager=4, slot_sharing=False)
    slots = [v.slot for v in eg.vertices]
    assert len(set(slots)) == len(slots) == 7
    flat = [s.taskmanager_index * 4 + s.slot_index for s in slots]
    assert flat == list(range(7))
    assert [v.job_vertex_id for v in eg.vertices] == [v.id for v in job.vertices for _ in range(v.parallelism)]


def test_default_cluster_is_one_taskmanager_sized_to_fit():
    for sharing in (True, False):
        eg = build_execution_graph(_mixed_job(), slot_sharing=sharing)
        assert eg.taskmanagers == 1
        assert eg.total_slots == eg.slots_needed == slots_needed(_mixed_job(), sharing)
        assert len(eg.used_slots) == eg.slots_needed


def test_subtask_names_are_one_based():
    job = _seed_job(4)
    eg = build_execution_graph(job)
    names = [v.name for v in eg.subtasks(job.vertices[1].id)]
    assert names == [f"Window -> Sink: Out ({i}/4)" for i in range(1, 5)]


def test_not_enough_slots_names_the_shortfall():
    job = _seed_job(8)
    with pytest.raises(NotEnoughSlotsError) as info:
        build_execution_graph(job, taskmanagers=2, slots_per_taskmanager=2)
    message = str(info.value)
    assert "job 'wc' needs 8 task slots" in message
    assert "slot sharing on" in message
    assert "2 TaskManagers x 2 slots = 4; 4 slots short" in message
    assert "Add TaskManagers or slots, or lower the parallelism" in message


def test_not_enough_slots_without_sharing_counts_every_subtask():
    job = _seed_job(2)
    build_execution_graph(job, taskmanagers=1, slots_per_taskmanager=2)  # fits with sharing
    with pytest.raises(NotEnoughSlotsError, match=r"needs 4 task slots \(slot sharing off.*1 TaskManager x 3 slots "
                                                  r"= 3; 1 slot short"):
        build_execution_graph(job, taskmanagers=1, slots_per_taskmanager=3, slot_sharing=False)


@pytest.mark.parametrize("kwargs, argument", [
    ({"taskmanagers": 0}, "taskmanagers"),
    ({"taskmanagers": -1}, "taskmanagers"),
    ({"taskmanagers": 1.5}, "taskmanagers"),
    ({"slots_per_taskmanager": 0}, "slots_per_taskmanager"),
    ({"slots_per_taskmanager": True}, "slots_per_taskmanager"),
])
def test_cluster_size_is_validated(kwargs, argument):
    with pytest.raises(InvalidProgramError, match=argument):
        build_execution_graph(_mixed_job(), **kwargs)


def test_forward_edges_connect_subtask_i_to_i():
    job = _job(_sink(_op(_source(3), "Map")), chaining=False)
    eg = build_execution_graph(job)
    forward = [(e.source[1], e.target[1]) for e in eg.edges if e.source[0] == job.vertices[0].id]
    assert forward == [(0, 0), (1, 1), (2, 2)]
    assert {e.partitioner_name for e in eg.edges} == {"FORWARD"}


def test_hash_and_rebalance_edges_connect_all_to_all():
    job = _mixed_job()
    eg = build_execution_graph(job)
    per_edge = Counter((e.source[0], e.target[0]) for e in eg.edges)
    assert sorted(per_edge.values()) == [1 * 4, 4 * 2]
    keyed = _seed_job(3)
    assert len(build_execution_graph(keyed).edges) == 9


def test_rescale_edges_are_pointwise_in_the_execution_graph():
    job = _job(_sink(_op(_source(4), "Map", 2, partitioner=RescalePartitioner())))
    eg = build_execution_graph(job)
    assert sorted((e.source[1], e.target[1]) for e in eg.edges) == [(0, 0), (1, 0), (2, 1), (3, 1)]
    assert {e.partitioner_name for e in eg.edges} == {"RESCALE"}


@pytest.mark.parametrize("p_u, p_d", [(4, 2), (2, 4), (3, 2), (2, 3), (5, 3), (3, 7), (1, 4), (4, 1), (3, 3)])
def test_pointwise_blocks_are_contiguous_and_cover_both_sides(p_u, p_d):
    pairs = subtask_channels(RescalePartitioner(), p_u, p_d)
    assert len(set(pairs)) == len(pairs)
    readers = {d: sorted(u for u, dd in pairs if dd == d) for d in range(p_d)}
    writers = {u: sorted(d for uu, d in pairs if uu == u) for u in range(p_u)}
    assert all(readers[d] for d in range(p_d)) and all(writers[u] for u in range(p_u))
    if p_u >= p_d:  # each downstream reads a contiguous block; each upstream writes to one downstream
        assert all(block == list(range(block[0], block[-1] + 1)) for block in readers.values())
        assert all(len(w) == 1 for w in writers.values())
        assert [readers[d][0] for d in range(p_d)] == sorted(readers[d][0] for d in range(p_d))
    else:  # each upstream writes a contiguous block; each downstream reads from one upstream
        assert all(block == list(range(block[0], block[-1] + 1)) for block in writers.values())
        assert all(len(r) == 1 for r in readers.values())


def test_pointwise_matches_flink_for_uneven_splits():
    # Flink's EdgeManagerBuildUtil.connectPointwise: 3 -> 2 gives {0} and {1, 2}; 2 -> 3 gives {0, 1} and {2}.
    assert subtask_channels(RescalePartitioner(), 3, 2) == ((0, 0), (1, 1), (2, 1))
    assert subtask_channels(RescalePartitioner(), 2, 3) == ((0, 0), (0, 1), (1, 2))


def test_subtask_channels_of_non_pointwise_partitioners():
    assert len(subtask_channels(BroadcastPartitioner(), 2, 3)) == 6
    assert len(subtask_channels(RebalancePartitioner(), 3, 3)) == 9
    assert subtask_channels(ForwardPartitioner(), 2, 2) == ((0, 0), (1, 1))
    with pytest.raises(InvalidProgramError):
        subtask_channels(RebalancePartitioner(), 0, 3)
