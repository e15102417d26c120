"""The terminal rendering: every node with its lines, edges as 'A --HASH--> B', clusters indented."""

from __future__ import annotations

from streamkernel.graph.execution_graph import ExecutionEdge, ExecutionGraph, ExecutionVertex, SlotId
from streamkernel.graph.job_graph import JobEdge, JobGraph, JobVertex
from streamkernel.graph.partitioners import KeyGroupStreamPartitioner
from streamkernel.graph.stream_graph import build_stream_graph
from streamkernel.graph.operator_specs import MapSpec, ReduceSpec, SinkSpec, SourceSpec
from streamkernel.graph.transformations import (
    OneInputTransformation,
    PartitionTransformation,
    SinkTransformation,
    SourceTransformation,
)
from streamkernel.viz import (
    RenderedEdge,
    RenderedGraph,
    RenderedNode,
    render_execution_graph,
    render_stream_graph,
    to_text,
)


def _pipeline(parallelism: int = 2):
    src = SourceTransformation("numbers", SourceSpec(source=[0]), 1)
    m = OneInputTransformation("Map", src, MapSpec(function=str), parallelism)
    keyed = PartitionTransformation(m, KeyGroupStreamPartitioner(key_selector=lambda x: x))
    r = OneInputTransformation("Reduce", keyed, ReduceSpec(function=max, key_selector=str), parallelism, state_key_selector=lambda x: x)
    s = SinkTransformation("out", r, SinkSpec(sink=print), parallelism)
    return build_stream_graph([s], job_name="pipeline"), (src, m, r, s)


def _execution_graph(parallelism: int = 3) -> ExecutionGraph:
    """Source(1) -> Map(p) -HASH-> Reduce(p); TaskManager i+1 holds slot 1 only, 2 slots each offered."""
    sg, (src, m, r, s) = _pipeline(parallelism)
    jg = JobGraph("pipeline", (
        JobVertex(src.id, "Source: numbers", (src.id,), 1, 128, "default"),
        JobVertex(m.id, "Map", (m.id,), parallelism, 128, "default"),
        JobVertex(r.id, "Reduce -> Sink: out", (r.id, s.id), parallelism, 128, "default"),
    ), tuple(JobEdge(e.source_id, e.target_id, e) for e in sg.edges if e.target_id != s.id), sg)
    vertices = tuple(ExecutionVertex(v.id, i, v.parallelism, v.name, SlotId(i // 2, i % 2))
                     for v in jg.vertices for i in range(v.parallelism))
    edges = tuple(ExecutionEdge((je.source_vertex_id, u), (je.target_vertex_id, d), je.partitioner.name)
                  for je in jg.edges
                  for u in range(jg.vertex(je.source_vertex_id).parallelism)
                  for d in range(jg.vertex(je.target_vertex_id).parallelism))
    return ExecutionGraph(jg, vertices, edges, 2, 2, False, 7)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" *"))


def test_every_node_and_its_lines_are_listed() -> None:
    sg, _ = _pipeline(parallelism=4)
    text = to_text(render_stream_graph(sg))
    lines = text.splitlines()
    assert lines[0] == "StreamGraph: pipeline"
    for node in sg.nodes:
        at = next(i for i, line in enumerate(lines) if line.strip() == node.name)
        assert lines[at + 1].strip() == f"parallelism {node.parallelism}"
        assert _indent(lines[at + 1]) > _indent(lines[at])


def test_edges_read_as_arrows_with_the_partitioner() -> None:
    sg, _ = _pipeline()
    text = to_text(render_stream_graph(sg))
    assert "Source: numbers --REBALANCE--> Map" in text
    assert "Map --HASH--> Reduce" in text
    assert "Reduce --FORWARD--> Sink: out" in text


def test_highlighted_nodes_are_starred() -> None:
    sg, (_, m, _, _) = _pipeline()
    lines = to_text(render_stream_graph(sg, highlight={m.id})).splitlines()
    starred = [line for line in lines if line.lstrip().startswith("* ")]
    assert [line.strip() for line in starred] == ["* Map"]
    assert "(* = highlighted)" in lines
    assert "(* = highlighted)" not in to_text(render_stream_graph(sg))


def test_clusters_become_indented_sections() -> None:
    eg = _execution_graph(parallelism=3)
    lines = to_text(render_execution_graph(eg)).splitlines()
    assert "slot sharing off" in lines[1]
    headers = [(i, line) for i, line in enumerate(lines) if line.strip().startswith(("TaskManager", "Slot"))]
    assert [h.strip() for _, h in headers] == ["TaskManager 1", "Slot 1", "Slot 2", "TaskManager 2", "Slot 1"]
    tm_indent, slot_indent = _indent(headers[0][1]), _indent(headers[1][1])
    assert slot_indent > tm_indent
    bounds = [i for i, _ in headers] + [next(i for i, line in enumerate(lines) if line == "Edges:")]
    sections = {}
    for (start, _), end, key in zip(headers, bounds[1:], ["tm1", "tm1s1", "tm1s2", "tm2", "tm2s1"]):
        sections[key] = [line.strip(" *") for line in lines[start + 1:end] if line.strip()]
    assert sections["tm1s1"] == ["Source: numbers (1/1)", "Map (1/3)", "Reduce -> Sink: out (1/3)"]
    assert sections["tm1s2"] == ["Map (2/3)", "Reduce -> Sink: out (2/3)"]
    assert sections["tm2s1"] == ["Map (3/3)", "Reduce -> Sink: out (3/3)"]
    assert all(_indent(line) > slot_indent for line in lines[headers[1][0] + 1:headers[2][0]])


def test_only_visible_edges_are_listed_and_labels_fit_one_line(monkeypatch) -> None:
    import streamkernel.viz.render_graphs as render_graphs

    monkeypatch.setattr(render_graphs, "FULL_CHANNELS_LIMIT", 4)
    eg = _execution_graph(parallelism=3)
    rendered = render_execution_graph(eg)
    text = to_text(rendered)
    edge_lines = text.split("Edges:\n", 1)[1].splitlines()
    assert len(edge_lines) == len([e for e in rendered.edges if e.visible]) == 3 + 1
    assert "Map (1/3) --HASH, all-to-all: 3 x 3 channels--> Reduce -> Sink: out (1/3)" in text


def test_repeated_names_are_told_apart_in_edges() -> None:
    g = RenderedGraph("t", (RenderedNode("a", ("Map",)), RenderedNode("b", ("Map",)), RenderedNode("c", ("Sink",))),
                      (RenderedEdge("a", "b", "FORWARD"), RenderedEdge("b", "c", "")))
    text = to_text(g)
    assert "Map [a] --FORWARD--> Map [b]" in text
    assert "Map [b] --> Sink" in text


def test_multiline_names_and_titles_stay_readable() -> None:
    g = RenderedGraph("first\nsecond", (RenderedNode("a", ("two\nlines", "parallelism 1")),
                                        RenderedNode("b", ("B",))), (RenderedEdge("a", "b", "HASH"),))
    lines = to_text(g).splitlines()
    assert lines[:2] == ["first", "second"]
    assert "two lines --HASH--> B" in lines[-1]
    assert any(line.strip() == "lines" for line in lines)
