"""JobGraph: operators fused into chains, non-chained edges kept as job edges."""

from __future__ import annotations

import pytest

from streamkernel.errors import InvalidProgramError
from streamkernel.graph.chaining import is_chainable
from streamkernel.graph.job_graph import build_job_graph
from streamkernel.graph.partitioners import KeyGroupStreamPartitioner, RebalancePartitioner
from streamkernel.graph.stream_graph import StreamEdge, StreamGraph, StreamNode, build_stream_graph
from streamkernel.graph.operator_specs import CoMapSpec, KeyedSpec, MapSpec, SinkSpec, SourceSpec, spec_class_for_kind
from streamkernel.graph.transformations import (
    ChainingStrategy,
    OneInputTransformation,
    PartitionTransformation,
    SinkTransformation,
    SourceTransformation,
    TwoInputTransformation,
    UnionTransformation,
)

pytestmark = pytest.mark.py_matrix  # also run under every declared Python (scripts/test_other_pythons.sh)


def _spec(kind: str):
    """A spec of ``kind`` with placeholder callables (the graph never calls them)."""
    cls = spec_class_for_kind(kind)
    return cls(function=str, key_selector=str) if issubclass(cls, KeyedSpec) else cls(function=str)


def _source(name: str = "Collection Source", parallelism: int = 4) -> SourceTransformation:
    return SourceTransformation(name, SourceSpec(source=[0]), parallelism)


def _op(input, name: str, kind: str = "map", parallelism: int | None = None) -> OneInputTransformation:
    return OneInputTransformation(name, input, _spec(kind), parallelism or input.parallelism)


def _sink(input, name: str = "Print to Std. Out") -> SinkTransformation:
    return SinkTransformation(name, input, SinkSpec(sink=print), input.parallelism)


def _key_by(input) -> PartitionTransformation:
    return PartitionTransformation(input, KeyGroupStreamPartitioner(key_selector=lambda r: r[0]))


def _seed_pipeline(parallelism: int = 4):
    """The seed's example: Source -> Map -> Filter -> KeyBy -> Reduce -> Sink."""
    source = _source(parallelism=parallelism)
    filtered = _op(_op(source, "Map"), "Filter", "filter")
    reduced = _op(_key_by(filtered), "Reduce", "reduce")
    return _sink(reduced)


def _names(graph: StreamGraph) -> dict[str, int]:
    return {n.name: n.id for n in graph.nodes}


def test_seed_example_chains_into_two_tasks():
    graph = build_stream_graph([_seed_pipeline()])
    job = build_job_graph(graph)
    ids = _names(graph)
    assert [v.name for v in job.vertices] == [
        "Source: Collection Source -> Map -> Filter",
        "Reduce -> Sink: Print to Std. Out",
    ]
    first, second = job.vertices
    assert first.operator_ids == (ids["Source: Collection Source"], ids["Map"], ids["Filter"])
    assert second.operator_ids == (ids["Reduce"], ids["Sink: Print to Std. Out"])
    assert first.id == first.head_id == ids["Source: Collection Source"]
    assert second.id == ids["Reduce"]
    (edge,) = job.edges
    assert (edge.source_vertex_id, edge.target_vertex_id) == (first.id, second.id)
    assert edge.stream_edge.source_id == ids["Filter"]  # the chain's tail, not its head
    assert edge.partitioner.name == "HASH"


def test_every_operator_in_exactly_one_vertex_and_job_edges_are_the_unchainable_edges():
    graph = build_stream_graph([_seed_pipeline()])
    job = build_job_graph(graph)
    all_ids = [i for v in job.vertices for i in v.operator_ids]
    assert sorted(all_ids) == sorted(n.id for n in graph.nodes)
    assert {id(e.stream_edge) for e in job.edges} == {id(e) for e in graph.edges if not is_chainable(e, graph)}
    for node in graph.nodes:
        assert node.id in job.vertex_of_operator(node.id).operator_ids


def test_chaining_disabled_gives_one_vertex_per_operator():
    graph = build_stream_graph([_seed_pipeline()], chaining_enabled=False)
    job = build_job_graph(graph)
    assert [v.name for v in job.vertices] == [n.name for n in graph.nodes]
    assert len(job.edges) == len(graph.edges)


def test_disable_chaining_on_one_operator_splits_around_it():
    source = _source()
    mapped = _op(source, "Map")
    mapped.chaining_strategy = ChainingStrategy.NEVER
    graph = build_stream_graph([_sink(_op(mapped, "Filter", "filter"))])
    names = [v.name for v in build_job_graph(graph).vertices]
    assert names == ["Source: Collection Source", "Map", "Filter -> Sink: Print to Std. Out"]


def test_start_new_chain_splits_before_the_operator_only():
    source = _source()
    mapped = _op(source, "Map")
    filtered = _op(mapped, "Filter", "filter")
    filtered.chaining_strategy = ChainingStrategy.HEAD
    graph = build_stream_graph([_sink(filtered)])
    names = [v.name for v in build_job_graph(graph).vertices]
    assert names == ["Source: Collection Source -> Map", "Filter -> Sink: Print to Std. Out"]


def test_vertex_takes_head_parallelism_max_parallelism_and_group():
    source = _source(parallelism=1)
    mapped = _op(source, "Map", parallelism=3)
    mapped.slot_sharing_group = "compute"
    mapped.max_parallelism = 64
    graph = build_stream_graph([_sink(mapped)])
    job = build_job_graph(graph)
    source_vertex, map_vertex = job.vertices
    assert (source_vertex.parallelism, source_vertex.slot_sharing_group) == (1, "default")
    assert map_vertex.name == "Map -> Sink: Print to Std. Out"
    assert (map_vertex.parallelism, map_vertex.max_parallelism, map_vertex.slot_sharing_group) == (3, 64, "compute")
    assert job.edges[0].partitioner.name == "REBALANCE"


def test_chain_fork_uses_flink_chained_name():
    source = _source()
    mapped = _op(source, "Map")
    filtered = _op(mapped, "Filter", "filter")
    sink_a = _sink(filtered, "A")
    sink_b = _sink(mapped, "B")
    graph = build_stream_graph([sink_a, sink_b])
    job = build_job_graph(graph)
    (vertex,) = job.vertices
    assert vertex.name == "Source: Collection Source -> Map -> (Filter -> Sink: A, Sink: B)"
    order = [graph.nodes.index(graph.node(i)) for i in vertex.operator_ids]
    assert order == sorted(order) and len(order) == 5
    assert job.edges == ()


def test_union_input_is_a_new_head():
    left, right = _source("Left"), _source("Right")
    merged = _op(UnionTransformation([left, right]), "Merge")
    graph = build_stream_graph([_sink(merged)])
    job = build_job_graph(graph)
    assert [v.name for v in job.vertices] == ["Source: Left", "Source: Right", "Merge -> Sink: Print to Std. Out"]
    merge_id = _names(graph)["Merge"]
    assert [e.target_vertex_id for e in job.edges] == [merge_id, merge_id]
    assert {e.partitioner.name for e in job.edges} == {"FORWARD"}


def test_two_input_operator_is_a_new_head():
    co = TwoInputTransformation("Co-Map", _source("A"), _source("B"), CoMapSpec(function=str), 4)
    graph = build_stream_graph([_sink(co)])
    job = build_job_graph(graph)
    assert [v.name for v in job.vertices] == ["Source: A", "Source: B", "Co-Map -> Sink: Print to Std. Out"]
    assert sorted(e.stream_edge.type_number for e in job.edges) == [1, 2]


def test_vertices_in_topological_order_even_if_nodes_are_not():
    graph = build_stream_graph([_sink(_op(PartitionTransformation(_source(), RebalancePartitioner()), "Map"))])
    shuffled = StreamGraph(graph.job_name, tuple(reversed(graph.nodes)), graph.edges)
    job = build_job_graph(shuffled)
    position = {v.id: i for i, v in enumerate(job.vertices)}
    assert [v.name for v in job.vertices] == ["Source: Collection Source", "Map -> Sink: Print to Std. Out"]
    for edge in job.edges:
        assert position[edge.source_vertex_id] < position[edge.target_vertex_id]


def test_job_graph_keeps_name_and_stream_graph():
    graph = build_stream_graph([_seed_pipeline()], job_name="wc")
    job = build_job_graph(graph)
    assert job.job_name == "wc" and job.stream_graph is graph
    assert [n.name for n in job.operators(job.vertices[1].id)] == ["Reduce", "Sink: Print to Std. Out"]
    with pytest.raises(KeyError):
        job.vertex(10**9)


def test_cycle_is_rejected():
    spec = MapSpec(function=str)
    a = StreamNode(1, "A", spec, 1, 128, "default", ChainingStrategy.ALWAYS)
    b = StreamNode(2, "B", spec, 1, 128, "default", ChainingStrategy.ALWAYS)
    graph = StreamGraph("loop", (a, b), (StreamEdge(1, 2, RebalancePartitioner()), StreamEdge(2, 1, RebalancePartitioner())))
    with pytest.raises(InvalidProgramError, match="cycle"):
        build_job_graph(graph)
