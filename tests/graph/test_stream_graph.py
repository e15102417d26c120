"""StreamGraph builder: nodes from physical transformations, edges through virtual ones."""

from __future__ import annotations

import pytest

from streamkernel.errors import InvalidProgramError
from streamkernel.graph.partitioners import (
    ForwardPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
)
from streamkernel.graph.stream_graph import StreamGraph, build_stream_graph
from streamkernel.graph.operator_specs import CoMapSpec, MapSpec, ReduceSpec, SinkSpec, SourceSpec
from streamkernel.graph.transformations import (
    DEFAULT_SLOT_SHARING_GROUP,
    ChainingStrategy,
    OneInputTransformation,
    PartitionTransformation,
    SideOutputTransformation,
    SinkTransformation,
    SourceTransformation,
    TwoInputTransformation,
    UnionTransformation,
)

pytestmark = pytest.mark.py_matrix  # also run under every declared Python (scripts/test_other_pythons.sh)


def _source(name: str = "Collection Source", parallelism: int = 2) -> SourceTransformation:
    return SourceTransformation(name, SourceSpec(source=[0]), parallelism)


def _op(input, name: str, parallelism: int | None = None) -> OneInputTransformation:
    return OneInputTransformation(name, input, MapSpec(function=str), parallelism or input.parallelism)


def _sink(input, name: str = "Print to Std. Out") -> SinkTransformation:
    return SinkTransformation(name, input, SinkSpec(sink=print), input.parallelism)


def _key_by(input, selector=lambda r: r[0]) -> PartitionTransformation:
    return PartitionTransformation(input, KeyGroupStreamPartitioner(key_selector=selector))


def _by_name(graph: StreamGraph):
    return {n.name: n for n in graph.nodes}


def test_physical_transformations_become_nodes_in_topological_order():
    source = _source()
    keyed = OneInputTransformation("Reduce", _key_by(_op(source, "Map")), ReduceSpec(function=max, key_selector=str), 2,
                                   state_key_selector=lambda r: r[0])
    sink = _sink(keyed)
    graph = build_stream_graph([sink], job_name="wc")  # only the sink: the rest is reached from it
    assert graph.job_name == "wc"
    assert [n.name for n in graph.nodes] == ["Source: Collection Source", "Map", "Reduce", "Sink: Print to Std. Out"]
    assert [n.id for n in graph.nodes] == [source.id, source.id + 1, keyed.id, sink.id]
    assert graph.sources == (graph.nodes[0],) and graph.sinks == (graph.nodes[-1],)
    assert _by_name(graph)["Reduce"].is_keyed and not _by_name(graph)["Map"].is_keyed
    assert graph.nodes[0].chaining_strategy is ChainingStrategy.HEAD


def test_default_partitioner_is_forward_or_rebalance_by_parallelism():
    source = _source(parallelism=2)
    same = _op(source, "Same")
    wider = _op(same, "Wider", parallelism=4)
    graph = build_stream_graph([wider])
    labels = [e.label for e in graph.edges]
    assert labels == ["FORWARD", "REBALANCE"]
    assert isinstance(graph.edges[1].partitioner, RebalancePartitioner)


def test_explicit_forward_with_parallelism_change_is_rejected():
    source = _source(parallelism=2)
    wrong = _op(PartitionTransformation(source, ForwardPartitioner()), "Map", parallelism=3)
    with pytest.raises(InvalidProgramError, match="Forward partitioning does not allow change of parallelism") as info:
        build_stream_graph([wrong])
    assert "'Map'" in str(info.value) and "rebalance()" in str(info.value)


def test_key_by_partitioner_gets_the_downstream_max_parallelism():
    source = _source(parallelism=2)
    default = _op(_key_by(source), "Default")
    explicit = _op(_key_by(source), "Explicit")
    explicit.max_parallelism = 16
    graph = build_stream_graph([default, explicit])
    nodes = _by_name(graph)
    edges = {graph.node(e.target_id).name: e.partitioner for e in graph.edges}
    assert edges["Default"].max_parallelism == nodes["Default"].max_parallelism == 128
    assert edges["Explicit"].max_parallelism == 16 and nodes["Explicit"].max_parallelism_configured
    assert not nodes["Default"].max_parallelism_configured

    env_wide = build_stream_graph([default], default_max_parallelism_setting=32)
    assert env_wide.edges[-1].partitioner.max_parallelism == 32


def test_default_max_parallelism_follows_parallelism():
    graph = build_stream_graph([_op(_source(parallelism=1), "Big", parallelism=200)])
    assert _by_name(graph)["Big"].max_parallelism == 512  # round_up_pow2(300)


def test_union_becomes_one_edge_per_input():
    a, b = _source("A"), _source("B")
    merged = _op(UnionTransformation([a, b]), "Merge")
    graph = build_stream_graph([merged])
    ins = graph.in_edges(merged.id)
    assert [e.source_id for e in ins] == [a.id, b.id]
    assert {e.type_number for e in ins} == {0}


def test_partitioned_union_applies_partitioner_to_every_input():
    a, b = _source("A"), _source("B")
    merged = _op(_key_by(UnionTransformation([a, b])), "Merge")
    graph = build_stream_graph([merged])
    assert [e.label for e in graph.in_edges(merged.id)] == ["HASH", "HASH"]


def test_two_input_edges_are_numbered():
    a, b = _source("A"), _source("B")
    co = TwoInputTransformation("Co-Map", a, _key_by(b), CoMapSpec(function=str), 2,
                                state_key_selector2=lambda r: r)
    graph = build_stream_graph([co])
    edges = graph.in_edges(co.id)
    assert [(e.source_id, e.type_number, e.label) for e in edges] == [(a.id, 1, "FORWARD"), (b.id, 2, "HASH")]
    assert _by_name(graph)["Co-Map"].is_keyed


def test_side_output_edge_carries_its_tag():
    process = _op(_source(), "Process")
    side = _op(_key_by(SideOutputTransformation(process, "late")), "Late")
    main = _op(process, "Main")
    graph = build_stream_graph([side, main])
    out = {graph.node(e.target_id).name: e for e in graph.out_edges(process.id)}
    assert (out["Late"].output_tag, out["Late"].label) == ("late", "HASH")
    assert out["Main"].output_tag is None


def test_outermost_partitioner_wins():
    source = _source()
    mapped = _op(PartitionTransformation(PartitionTransformation(source, ShufflePartitioner()), RescalePartitioner()),
                 "Map")
    graph = build_stream_graph([mapped])
    assert graph.edges[0].label == "RESCALE"


def test_slot_sharing_group_is_inherited_unless_inputs_disagree():
    a, b = _source("A"), _source("B")
    a.slot_sharing_group = "left"
    b.slot_sharing_group = "right"
    after_a = _op(a, "AfterA")
    merged = _op(UnionTransformation([after_a, b]), "Merge")
    explicit = _op(merged, "Explicit")
    explicit.slot_sharing_group = "mine"
    follower = _op(explicit, "Follower")
    groups = {n.name: n.slot_sharing_group for n in build_stream_graph([follower]).nodes}
    assert groups == {"Source: A": "left", "Source: B": "right", "AfterA": "left",
                      "Merge": DEFAULT_SLOT_SHARING_GROUP, "Explicit": "mine", "Follower": "mine"}


def test_settings_are_carried_to_nodes():
    source = _source()
    mapped = _op(source, "Map")
    mapped.uid, mapped.description, mapped.buffer_timeout = "map-1", "the map", 5
    mapped.chaining_strategy = ChainingStrategy.NEVER
    graph = build_stream_graph([mapped], chaining_enabled=False, configuration={"state.backend.type": "rocksdb"})
    node = _by_name(graph)["Map"]
    assert (node.uid, node.description, node.buffer_timeout, node.chaining_strategy) == \
        ("map-1", "the map", 5, ChainingStrategy.NEVER)
    assert not graph.chaining_enabled and graph.configuration == {"state.backend.type": "rocksdb"}


def test_lookup_helpers():
    source = _source()
    graph = build_stream_graph([_sink(_op(source, "Map"))])
    assert graph.node(source.id).name == "Source: Collection Source"
    assert [e.target_id for e in graph.out_edges(source.id)] == [graph.nodes[1].id]
    assert graph.in_edges(source.id) == ()
    with pytest.raises(KeyError):
        graph.node(-1)


def _word_count_graph(env_factory, with_filter: bool = False, uid: str | None = None) -> StreamGraph:
    env = env_factory()
    words = env.from_collection(["a", "b"])
    if with_filter:
        words = words.filter(lambda w: w != "b")
    counted = words.map(lambda w: (w, 1)).key_by(lambda p: p[0]).reduce(lambda x, y: (x[0], x[1] + y[1]))
    if uid:
        counted.uid(uid)
    counted.print()
    return env.get_stream_graph("count", clear_transformations=True)


def test_operator_ids_are_the_same_when_the_same_program_is_built_again():
    # State without uids must find its operators when the notebook builds the job again
    # (transformation ids keep growing in the kernel; Flink's generated ids do not depend on them).
    from streamkernel.datastream import StreamExecutionEnvironment

    first = _word_count_graph(StreamExecutionEnvironment.get_execution_environment)
    second = _word_count_graph(StreamExecutionEnvironment.get_execution_environment)
    assert [n.id for n in first.nodes] != [n.id for n in second.nodes]
    assert [n.operator_id for n in first.nodes] == [n.operator_id for n in second.nodes]
    assert len({n.operator_id for n in first.nodes}) == len(first.nodes)
    assert all(n.operator_id.startswith("node-") for n in first.nodes)


def test_operator_ids_change_with_the_program_and_a_uid_wins():
    from streamkernel.datastream import StreamExecutionEnvironment

    plain = _word_count_graph(StreamExecutionEnvironment.get_execution_environment)
    filtered = _word_count_graph(StreamExecutionEnvironment.get_execution_environment, with_filter=True)
    # an operator inserted upstream moves every operator after it, as in Flink without uids
    assert plain.nodes[-1].operator_id != filtered.nodes[-1].operator_id
    named = _word_count_graph(StreamExecutionEnvironment.get_execution_environment, uid="counts")
    assert [n.operator_id for n in named.nodes if n.uid] == ["counts"]
