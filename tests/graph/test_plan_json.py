"""Execution-plan JSON: Flink's JSONGenerator format, read by Flink's plan visualizer."""

from __future__ import annotations

import json

from streamkernel.graph.partitioners import KeyGroupStreamPartitioner, RebalancePartitioner
from streamkernel.graph.plan_json import execution_plan_json
from streamkernel.graph.stream_graph import StreamGraph, build_stream_graph
from streamkernel.graph.operator_specs import CoMapSpec, MapSpec, SinkSpec, SourceSpec
from streamkernel.graph.transformations import (
    OneInputTransformation,
    PartitionTransformation,
    SinkTransformation,
    SourceTransformation,
    TwoInputTransformation,
)


def _source(name: str = "Collection Source", parallelism: int = 1) -> SourceTransformation:
    return SourceTransformation(name, SourceSpec(source=[0]), parallelism)


def _op(input, name: str, parallelism: int | None = None, partitioner=None) -> OneInputTransformation:
    if partitioner is not None:
        input = PartitionTransformation(input, partitioner)
    return OneInputTransformation(name, input, MapSpec(function=str), parallelism or input.parallelism)


def _sink(input, name: str = "Print to Std. Out") -> SinkTransformation:
    return SinkTransformation(name, input, SinkSpec(sink=print), input.parallelism)


def _plan(*sinks) -> tuple[StreamGraph, list[dict]]:
    graph = build_stream_graph(sinks)
    return graph, json.loads(execution_plan_json(graph))["nodes"]


def test_nodes_carry_flink_fields():
    source = _source()
    keyed = _op(source, "Reduce", 2, partitioner=KeyGroupStreamPartitioner(key_selector=lambda r: r))
    graph, nodes = _plan(_sink(keyed))
    # PyFlink runs the key selector in an operator of its own before the HASH partitioning
    assert [n["pact"] for n in nodes] == ["Data Source", "Operator", "Operator", "Data Sink"]
    assert [(n["type"], n["parallelism"]) for n in nodes] == [
        ("Source: Collection Source", 1), ("_stream_key_by_map_operator", 1), ("Reduce", 2),
        ("Sink: Print to Std. Out", 2)]
    assert all(n["type"] == n["contents"] for n in nodes)
    assert "predecessors" not in nodes[0]
    assert nodes[1]["predecessors"] == [{"id": nodes[0]["id"], "ship_strategy": "FORWARD", "side": "second"}]
    assert nodes[2]["predecessors"] == [{"id": nodes[1]["id"], "ship_strategy": "HASH", "side": "second"}]
    assert nodes[3]["predecessors"] == [{"id": nodes[2]["id"], "ship_strategy": "FORWARD", "side": "second"}]


def test_contents_is_the_description_when_set():
    source = _source()
    mapped = _op(source, "Map")
    mapped.description = "parses lines into words"
    _, nodes = _plan(_sink(mapped))
    assert (nodes[1]["type"], nodes[1]["contents"]) == ("Map", "parses lines into words")


def test_every_input_is_a_predecessor_with_its_ship_strategy():
    co = TwoInputTransformation("Co-Map", _source("A"), _op(_source("B"), "B2", partitioner=RebalancePartitioner()),
                                CoMapSpec(function=str), 1)
    graph, nodes = _plan(_sink(co))
    (entry,) = [n for n in nodes if n["type"] == "Co-Map"]
    ids = {n["type"]: n["id"] for n in nodes}
    assert entry["predecessors"] == [
        {"id": ids["Source: A"], "ship_strategy": "FORWARD", "side": "second"},
        {"id": ids["B2"], "ship_strategy": "FORWARD", "side": "second"},
    ]
    (b2,) = [n for n in nodes if n["type"] == "B2"]
    assert b2["predecessors"][0]["ship_strategy"] == "REBALANCE"


def test_nodes_are_topological_with_sinks_last():
    source = _source()
    early_sink = _sink(source, "Early")  # created before Map, still listed after it (Flink's order)
    late_sink = _sink(_op(source, "Map"), "Late")
    graph, nodes = _plan(early_sink, late_sink)
    assert [n["type"] for n in nodes] == ["Source: Collection Source", "Map", "Sink: Early", "Sink: Late"]
    seen: set[int] = set()
    for entry in nodes:
        assert all(p["id"] in seen for p in entry.get("predecessors", []))
        seen.add(entry["id"])


def test_text_is_pretty_printed_like_flink():
    source = _source()
    graph = build_stream_graph([_op(source, "Map")])
    s, m = (n.id for n in graph.nodes)
    expected = (
        '{\n'
        '  "nodes" : [ {\n'
        f'    "id" : {s},\n'
        '    "type" : "Source: Collection Source",\n'
        '    "pact" : "Data Source",\n'
        '    "contents" : "Source: Collection Source",\n'
        '    "parallelism" : 1\n'
        '  }, {\n'
        f'    "id" : {m},\n'
        '    "type" : "Map",\n'
        '    "pact" : "Operator",\n'
        '    "contents" : "Map",\n'
        '    "parallelism" : 1,\n'
        '    "predecessors" : [ {\n'
        f'      "id" : {s},\n'
        '      "ship_strategy" : "FORWARD",\n'
        '      "side" : "second"\n'
        '    } ]\n'
        '  } ]\n'
        '}'
    )
    assert execution_plan_json(graph) == expected


def test_names_with_quotes_and_unicode_stay_valid_json():
    source = _source('Reader "α"')
    graph, nodes = _plan(_sink(source))
    assert nodes[0]["type"] == 'Source: Reader "α"'
    assert "α" in execution_plan_json(graph)


def test_empty_graph():
    assert json.loads(execution_plan_json(StreamGraph("empty", (), ()))) == {"nodes": []}


def _plan_of(build) -> list[tuple]:
    """(type, parallelism, [(predecessor type, ship strategy)]) per node of the plan ``build(env)`` makes."""
    from streamkernel.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    build(env)
    nodes = json.loads(env.get_execution_plan())["nodes"]
    types = {n["id"]: n["type"] for n in nodes}
    return [(n["type"], n["parallelism"], [(types[p["id"]], p["ship_strategy"]) for p in n.get("predecessors", [])])
            for n in nodes]


def test_print_at_another_parallelism_keeps_pyflinks_map_to_text_at_the_environments():
    # PyFlink 2.3 (env p=4, map(f).print().set_parallelism(1)): "Map, Map" at 4, REBALANCE to the sink at 1
    def build(env):
        env.set_parallelism(4)
        env.from_collection([1, 2]).map(lambda x: x).print().set_parallelism(1)

    assert _plan_of(build) == [
        ("Source: Collection Source", 1, []),
        ("Map, Map", 4, [("Source: Collection Source", "REBALANCE")]),
        ("Sink: Print to Std. Out", 1, [("Map, Map", "REBALANCE")]),
    ]


def test_map_to_text_takes_the_parallelism_the_environment_had_when_print_was_called():
    # as %%flink --parallelism 4 does: the operators get 4, the environment goes back to 2 afterwards
    def build(env):
        env.set_parallelism(4)
        env.from_collection([1, 2]).map(lambda x: x).print()
        env.set_parallelism(2)

    assert _plan_of(build)[1:] == [
        ("Map, Map", 4, [("Source: Collection Source", "REBALANCE")]),
        ("Sink: Print to Std. Out", 4, [("Map, Map", "FORWARD")]),
    ]
