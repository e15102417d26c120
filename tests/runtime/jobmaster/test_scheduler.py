"""The scheduler: ExecutionGraph + allocated slots -> task deployment descriptors (pure, no threads)."""

from __future__ import annotations

import pytest

from streamkernel.common.configuration import Configuration
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.functions import CoMapFunction
from streamkernel.graph.execution_graph import SlotId, build_execution_graph
from streamkernel.graph.job_graph import JobGraph, build_job_graph
from streamkernel.runtime.core.deployment import ChannelId
from streamkernel.runtime.jobmaster.scheduler import assign_slots, build_deployment_descriptors, deployment_order
from streamkernel.runtime.taskmanager.gateway import AllocatedSlot

JOB = "0" * 32


def _two_stage(partition: str, p_up: int, p_down: int, chaining: bool = True) -> JobGraph:
    """Source (p_up) -> Map (p_up) -> <partition> -> Sink map (p_down) -> print."""
    env = StreamExecutionEnvironment.get_execution_environment()
    if not chaining:
        env.disable_operator_chaining()
    env.set_parallelism(p_up)
    ds = env.from_collection([1, 2, 3]).rebalance().map(lambda x: x).name("Up")
    if partition == "key_by":
        moved = ds.key_by(lambda x: x)
    else:
        moved = getattr(ds, partition)()
    moved.map(lambda x: x).name("Down").set_parallelism(p_down).print().set_parallelism(p_down)
    return build_job_graph(env.get_stream_graph("wiring"))


def _edge_between(job_graph: JobGraph, up: str, down: str) -> tuple[int, int, int]:
    """(edge index, source vertex id, target vertex id) of the job edge from ``up`` to ``down``."""
    for i, e in enumerate(job_graph.edges):
        if job_graph.vertex(e.source_vertex_id).name.startswith(up) and \
                job_graph.vertex(e.target_vertex_id).name.startswith(down):
            return i, e.source_vertex_id, e.target_vertex_id
    raise AssertionError(f"no edge {up} -> {down} in {[(e.source_vertex_id, e.target_vertex_id) for e in job_graph.edges]}")


def _targets(tdds: dict, vertex: int, subtask: int, edge: int) -> list[tuple[int, int]]:
    [out] = [o for o in tdds[(vertex, subtask)].outputs if o.channel_ids and o.channel_ids[0].edge_index == edge]
    return [(c.source_subtask, c.target_subtask) for c in out.channel_ids]


def _sources(tdds: dict, vertex: int, subtask: int, edge: int) -> list[tuple[int, int]]:
    return [(d.channel_id.source_subtask, d.channel_id.target_subtask)
            for d in tdds[(vertex, subtask)].inputs if d.channel_id.edge_index == edge]


@pytest.mark.parametrize("partition,name", [("key_by", "HASH"), ("rebalance", "REBALANCE"),
                                            ("broadcast", "BROADCAST"), ("shuffle", "SHUFFLE")])
def test_all_to_all_edges_index_channels_by_target_subtask(partition: str, name: str) -> None:
    graph = _two_stage(partition, 2, 3)
    edge, up, down = _edge_between(graph, "Up", "Down")
    assert graph.edges[edge].partitioner.name == name
    tdds = build_deployment_descriptors(JOB, graph)
    for u in range(2):
        # channel i goes to downstream subtask i: a partitioner's channel index is the target
        assert _targets(tdds, up, u, edge) == [(u, 0), (u, 1), (u, 2)]
    for d in range(3):
        assert _sources(tdds, down, d, edge) == [(0, d), (1, d)]
        assert all(i.input_index == 0 for i in tdds[(down, d)].inputs)


def test_forward_edge_connects_subtask_i_to_subtask_i() -> None:
    graph = _two_stage("forward", 3, 3, chaining=False)
    edge, up, down = _edge_between(graph, "Up", "Down")
    assert graph.edges[edge].partitioner.name == "FORWARD"
    tdds = build_deployment_descriptors(JOB, graph)
    for i in range(3):
        assert _targets(tdds, up, i, edge) == [(i, i)]
        assert _sources(tdds, down, i, edge) == [(i, i)]


def test_rescale_fan_in_lists_only_the_subtasks_own_targets() -> None:
    graph = _two_stage("rescale", 4, 2)
    edge, up, down = _edge_between(graph, "Up", "Down")
    tdds = build_deployment_descriptors(JOB, graph)
    assert [_targets(tdds, up, u, edge) for u in range(4)] == [[(0, 0)], [(1, 0)], [(2, 1)], [(3, 1)]]
    assert _sources(tdds, down, 0, edge) == [(0, 0), (1, 0)]
    assert _sources(tdds, down, 1, edge) == [(2, 1), (3, 1)]


def test_rescale_fan_out_lists_targets_in_target_order() -> None:
    graph = _two_stage("rescale", 2, 4)
    edge, up, down = _edge_between(graph, "Up", "Down")
    tdds = build_deployment_descriptors(JOB, graph)
    assert _targets(tdds, up, 0, edge) == [(0, 0), (0, 1)]
    assert _targets(tdds, up, 1, edge) == [(1, 2), (1, 3)]
    assert [_sources(tdds, down, d, edge) for d in range(4)] == [[(0, 0)], [(0, 1)], [(1, 2)], [(1, 3)]]


def test_producer_and_consumer_name_the_same_channels() -> None:
    graph = _two_stage("key_by", 2, 2)
    tdds = build_deployment_descriptors(JOB, graph, attempt_number=3)
    sent = {c for t in tdds.values() for o in t.outputs for c in o.channel_ids}
    read = {i.channel_id for t in tdds.values() for i in t.inputs}
    assert sent == read
    assert all(c.attempt == 3 and c.job_id == JOB for c in sent)
    assert all(t.attempt_number == 3 for t in tdds.values())


def test_two_input_operator_inputs_are_numbered_by_side() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    left = env.from_collection([1])
    right = env.from_collection(["a"])
    left.connect(right).map(_CoMap()).print()
    graph = build_job_graph(env.get_stream_graph())
    tdds = build_deployment_descriptors(JOB, graph)
    [head] = [v for v in graph.vertices if not v.name.startswith("Source")]
    inputs = tdds[(head.id, 0)].inputs
    assert sorted(i.input_index for i in inputs) == [0, 1]
    by_edge = {i.channel_id.edge_index: i.input_index for i in inputs}
    for index, edge in enumerate(graph.edges):
        if index in by_edge:
            assert by_edge[index] == edge.stream_edge.type_number - 1


class _CoMap(CoMapFunction):
    def map1(self, value: object) -> object:
        return value

    def map2(self, value: object) -> object:
        return value


def test_descriptor_carries_the_chain_nodes_and_chain_edges() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.get_config().set_global_job_parameters({"threshold": 7})
    env.from_collection([1, 2]).map(lambda x: x).filter(bool).key_by(lambda x: x).map(lambda x: x).print()
    graph = build_job_graph(env.get_stream_graph("chains"))
    tdds = build_deployment_descriptors(JOB, graph)
    for vertex in graph.vertices:
        tdd = tdds[(vertex.id, 0)]
        assert [n.id for n in tdd.nodes] == list(vertex.operator_ids)
        members = set(vertex.operator_ids)
        assert len(tdd.chain_edges) == len(vertex.operator_ids) - 1
        assert all(e.source_id in members and e.target_id in members for e in tdd.chain_edges)
        assert tdd.job_parameters == {"threshold": "7"}
        assert tdd.configuration["parallelism.default"] == "2"
    # the from_collection source runs alone (parallelism 1) and feeds Map -> Filter by REBALANCE
    source = graph.vertices[0]
    assert tdds[(source.id, 0)].inputs == ()
    assert tdds[(source.id, 0)].name_with_subtask.startswith("Source: Collection Source")


def test_configuration_argument_overrides_the_graph_configuration() -> None:
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("execution.buffer-timeout.interval", "5 ms"))
    env.from_collection([1]).print()
    graph = build_job_graph(env.get_stream_graph())
    tdds = build_deployment_descriptors(JOB, graph, configuration={"slot.request.timeout": "1 s"})
    assert all(t.configuration == {"slot.request.timeout": "1 s"} for t in tdds.values())


def test_assign_slots_keeps_slot_sharing_and_follows_allocation_order() -> None:
    graph = _two_stage("rebalance", 2, 3)
    eg = build_execution_graph(graph, 1, None)
    assert eg.slots_needed == 3
    allocated = [AllocatedSlot(SlotId(1, 0), "tm-b", JOB, "a"), AllocatedSlot(SlotId(0, 1), "tm-a", JOB, "a"),
                 AllocatedSlot(SlotId(0, 0), "tm-a", JOB, "a")]
    placement = assign_slots(eg, allocated)
    assert set(placement) == {(v.job_vertex_id, v.subtask_index) for v in eg.vertices}
    for v in eg.vertices:
        # logical slot k -> the k-th allocated slot; subtask i of every vertex shares slot i
        assert placement[(v.job_vertex_id, v.subtask_index)] is allocated[v.slot.slot_index]
        assert v.slot.slot_index == v.subtask_index
    with pytest.raises(ValueError, match="needs 3 slots, 2 were allocated"):
        assign_slots(eg, allocated[:2])


def test_deployment_order_puts_consumers_first() -> None:
    graph = _two_stage("rebalance", 2, 3)
    order = deployment_order(graph)
    position = {key[0]: i for i, key in reversed(list(enumerate(order)))}
    for edge in graph.edges:
        assert position[edge.target_vertex_id] < position[edge.source_vertex_id]
    assert len(order) == sum(v.parallelism for v in graph.vertices)


def test_channel_ids_are_plain_hashable_data() -> None:
    graph = _two_stage("key_by", 2, 2)
    tdds = build_deployment_descriptors(JOB, graph)
    ids = [c for t in tdds.values() for o in t.outputs for c in o.channel_ids]
    assert len(set(ids)) == len(ids)
    assert all(isinstance(c, ChannelId) for c in ids)
