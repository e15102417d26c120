"""Chaining rules (Flink's isChainable): each rule breaks a chain on its own."""

from __future__ import annotations

from dataclasses import replace

import pytest

from streamkernel.graph.chaining import chain_breaks, is_chainable
from streamkernel.graph.partitioners import (
    BroadcastPartitioner,
    CustomPartitionerWrapper,
    ForwardPartitioner,
    GlobalPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
)
from streamkernel.graph.stream_graph import StreamEdge, StreamGraph, build_stream_graph
from streamkernel.graph.operator_specs import CoMapSpec, KeyedSpec, SinkSpec, SourceSpec, spec_class_for_kind
from streamkernel.graph.transformations import (
    ChainingStrategy,
    OneInputTransformation,
    PartitionTransformation,
    SideOutputTransformation,
    SinkTransformation,
    SourceTransformation,
    TwoInputTransformation,
    UnionTransformation,
)


def _spec(kind: str):
    """A spec of ``kind`` with placeholder callables (the graph never calls them)."""
    cls = spec_class_for_kind(kind)
    return cls(function=str, key_selector=str) if issubclass(cls, KeyedSpec) else cls(function=str)


def _source(name: str = "Collection Source", parallelism: int = 2) -> SourceTransformation:
    return SourceTransformation(name, SourceSpec(source=[0]), parallelism)


def _op(input, name: str, kind: str = "map", parallelism: int | None = None) -> OneInputTransformation:
    return OneInputTransformation(name, input, _spec(kind), parallelism or input.parallelism)


def _pipeline(partitioner=None, chaining_enabled: bool = True, **filter_attrs):
    """Source -> Map -> Filter, all parallelism 2; Map -> Filter is chainable unless changed."""
    source = _source()
    mapped = _op(source, "Map")
    upstream = PartitionTransformation(mapped, partitioner) if partitioner is not None else mapped
    filtered = _op(upstream, "Filter", "filter")
    for attr, value in filter_attrs.items():
        setattr(filtered, attr, value)
    return build_stream_graph([filtered], chaining_enabled=chaining_enabled), mapped, filtered


def _edge(graph: StreamGraph, up_name: str, down_name: str) -> StreamEdge:
    by_name = {n.name: n.id for n in graph.nodes}
    (edge,) = [e for e in graph.edges if e.source_id == by_name[up_name] and e.target_id == by_name[down_name]]
    return edge


def test_forward_same_parallelism_same_group_chains():
    graph, _, _ = _pipeline()
    for edge in graph.edges:
        assert chain_breaks(edge, graph) == []
        assert is_chainable(edge, graph)


def test_source_head_strategy_lets_successor_chain():
    graph, _, _ = _pipeline()
    source = graph.sources[0]
    assert source.chaining_strategy is ChainingStrategy.HEAD
    assert is_chainable(_edge(graph, source.name, "Map"), graph)


def test_downstream_with_two_inputs_breaks_via_union():
    source = _source()
    left, right = _op(source, "Left"), _op(source, "Right")
    merged = _op(UnionTransformation([left, right]), "Merge")
    graph = build_stream_graph([merged])
    edge = _edge(graph, "Left", "Merge")
    assert chain_breaks(edge, graph) == ["'Merge' has 2 inputs"]
    assert not is_chainable(_edge(graph, "Right", "Merge"), graph)


def test_downstream_with_two_inputs_breaks_via_connect():
    first, second = _source("A"), _source("B")
    co = TwoInputTransformation("Co-Map", first, second, CoMapSpec(function=str), 2)
    graph = build_stream_graph([co])
    for edge in graph.edges:
        assert chain_breaks(edge, graph) == ["'Co-Map' has 2 inputs"]


def test_slot_sharing_group_change_breaks():
    graph, _, _ = _pipeline(slot_sharing_group="heavy")
    edge = _edge(graph, "Map", "Filter")
    assert chain_breaks(edge, graph) == ["slot sharing group 'default' -> 'heavy'"]
    assert is_chainable(_edge(graph, "Source: Collection Source", "Map"), graph)


def test_downstream_never_breaks():
    graph, _, _ = _pipeline(chaining_strategy=ChainingStrategy.NEVER)
    assert chain_breaks(_edge(graph, "Map", "Filter"), graph) == ["chaining disabled on 'Filter'"]


def test_upstream_never_breaks_its_out_edges():
    source = _source()
    mapped = _op(source, "Map")
    mapped.chaining_strategy = ChainingStrategy.NEVER
    filtered = _op(mapped, "Filter", "filter")
    graph = build_stream_graph([filtered])
    assert chain_breaks(_edge(graph, "Map", "Filter"), graph) == ["chaining disabled on 'Map'"]
    assert chain_breaks(_edge(graph, "Source: Collection Source", "Map"), graph) == ["chaining disabled on 'Map'"]


def test_downstream_head_starts_new_chain():
    graph, _, _ = _pipeline(chaining_strategy=ChainingStrategy.HEAD)
    assert chain_breaks(_edge(graph, "Map", "Filter"), graph) == ["'Filter' starts a new chain"]


def test_upstream_head_does_not_break():
    source = _source()
    mapped = _op(source, "Map")
    mapped.chaining_strategy = ChainingStrategy.HEAD
    graph = build_stream_graph([_op(mapped, "Filter", "filter")])
    assert is_chainable(_edge(graph, "Map", "Filter"), graph)
    assert not is_chainable(_edge(graph, "Source: Collection Source", "Map"), graph)


@pytest.mark.parametrize("partitioner, name", [
    (KeyGroupStreamPartitioner(key_selector=lambda x: x), "HASH"),
    (RebalancePartitioner(), "REBALANCE"),
    (RescalePartitioner(), "RESCALE"),
    (ShufflePartitioner(), "SHUFFLE"),
    (BroadcastPartitioner(), "BROADCAST"),
    (GlobalPartitioner(), "GLOBAL"),
    (CustomPartitionerWrapper(partitioner=lambda k, n: 0, key_selector=lambda x: x), "CUSTOM"),
])
def test_non_forward_partitioner_breaks(partitioner, name):
    graph, _, _ = _pipeline(partitioner)
    assert chain_breaks(_edge(graph, "Map", "Filter"), graph) == [f"partitioner is {name}, not FORWARD"]


def test_explicit_forward_partitioner_chains():
    graph, _, _ = _pipeline(ForwardPartitioner())
    assert is_chainable(_edge(graph, "Map", "Filter"), graph)


def test_parallelism_change_breaks():
    # A FORWARD edge between different parallelisms cannot come out of build_stream_graph,
    # so change the parallelism on the built graph to test this rule alone.
    graph, _, _ = _pipeline()
    nodes = tuple(replace(n, parallelism=4) if n.name == "Filter" else n for n in graph.nodes)
    graph = replace(graph, nodes=nodes)
    edge = _edge(graph, "Map", "Filter")
    assert isinstance(edge.partitioner, ForwardPartitioner)
    assert chain_breaks(edge, graph) == ["parallelism 2 -> 4"]


def test_parallelism_change_from_api_breaks_twice():
    source = _source(parallelism=1)
    graph = build_stream_graph([_op(source, "Map", parallelism=4)])
    assert chain_breaks(graph.edges[0], graph) == ["partitioner is REBALANCE, not FORWARD", "parallelism 1 -> 4"]


def test_chaining_disabled_for_the_job_breaks_every_edge():
    graph, _, _ = _pipeline(chaining_enabled=False)
    for edge in graph.edges:
        assert chain_breaks(edge, graph) == ["operator chaining disabled for the job"]


def test_side_output_edge_chains_under_the_same_rules():
    source = _source()
    process = _op(source, "Process", "process")
    late = _op(SideOutputTransformation(process, "late"), "Late Map")
    graph = build_stream_graph([late])
    edge = _edge(graph, "Process", "Late Map")
    assert edge.output_tag == "late"
    assert is_chainable(edge, graph)

    late.slot_sharing_group = "other"
    graph = build_stream_graph([late])
    assert chain_breaks(_edge(graph, "Process", "Late Map"), graph) == ["slot sharing group 'default' -> 'other'"]


def test_all_reasons_are_listed():
    source = _source()
    mapped = _op(source, "Map")
    mapped.chaining_strategy = ChainingStrategy.NEVER
    keyed = PartitionTransformation(mapped, KeyGroupStreamPartitioner(key_selector=lambda x: x))
    reduce = _op(keyed, "Reduce", "reduce", parallelism=3)
    reduce.chaining_strategy = ChainingStrategy.HEAD
    reduce.slot_sharing_group = "b"
    graph = build_stream_graph([SinkTransformation("Print", reduce, SinkSpec(sink=print), 3)], chaining_enabled=False)
    reasons = chain_breaks(_edge(graph, "Map", "Reduce"), graph)
    assert reasons == [
        "slot sharing group 'default' -> 'b'",
        "chaining disabled on 'Map'",
        "'Reduce' starts a new chain",
        "partitioner is HASH, not FORWARD",
        "parallelism 2 -> 3",
        "operator chaining disabled for the job",
    ]
