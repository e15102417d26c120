"""DOT text: names, highlight, edge labels, clusters, escaping, determinism (checked by `dot` when installed)."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

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
    RenderedCluster,
    RenderedEdge,
    RenderedGraph,
    RenderedNode,
    render_execution_graph,
    render_job_graph,
    render_stream_graph,
    to_dot,
)
from streamkernel.viz.dot import HIGHLIGHT_STYLE, escape_label

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's `dot` program is not installed (apt-get install graphviz)")

AWKWARD = [
    'say "hi"',
    "a <b> c -> d",
    "C:\\temp\\",  # ends with a backslash: must not escape the closing quote
    "first line\nsecond line",
    "\\n is not a newline, \\l neither",
    "Tom & Jerry &amp; co",
]


def _pipeline(names=("Map", "Reduce"), parallelism: int = 2):
    src = SourceTransformation("numbers", SourceSpec(source=[0]), 1)
    m = OneInputTransformation(names[0], src, MapSpec(function=str), parallelism)
    keyed = PartitionTransformation(m, KeyGroupStreamPartitioner(key_selector=lambda x: x))
    r = OneInputTransformation(names[1], keyed, ReduceSpec(function=max, key_selector=str), parallelism, state_key_selector=lambda x: x)
    s = SinkTransformation("out", r, SinkSpec(sink=print), parallelism)
    return build_stream_graph([s], job_name="pipeline"), (src, m, r, s)


def _graphs(parallelism: int = 2):
    """A StreamGraph and matching hand-built JobGraph and ExecutionGraph (2 TaskManagers x 1 slot)."""
    sg, (src, m, r, s) = _pipeline(parallelism=parallelism)
    jg = JobGraph("pipeline", (
        JobVertex(src.id, "Source: numbers", (src.id,), 1, 128, "default"),
        JobVertex(m.id, "Map", (m.id,), parallelism, 128, "default"),
        JobVertex(r.id, "Reduce -> Sink: out", (r.id, s.id), parallelism, 128, "default"),
    ), tuple(JobEdge(e.source_id, e.target_id, e) for e in sg.edges if e.target_id != s.id), sg)
    vertices = tuple(ExecutionVertex(v.id, i, v.parallelism, v.name, SlotId(i, 0))
                     for v in jg.vertices for i in range(v.parallelism))
    edges = tuple(ExecutionEdge((je.source_vertex_id, u), (je.target_vertex_id, d), je.partitioner.name)
                  for je in jg.edges
                  for u in range(jg.vertex(je.source_vertex_id).parallelism)
                  for d in range(jg.vertex(je.target_vertex_id).parallelism))
    eg = ExecutionGraph(jg, vertices, edges, parallelism, 1, True, parallelism)
    return sg, jg, eg, (src, m, r, s)


def _node_statements(dot: str) -> dict[str, str]:
    """Node id -> its DOT statement line."""
    return {m.group(1): m.group(0) for m in re.finditer(r'^\s*"([^"]+)" \[label=.*$', dot, re.M)}


def _cluster_of_nodes(dot: str) -> dict[str, list[str]]:
    """Node id -> the cluster names enclosing its statement, outermost first."""
    stack: list[str] = []
    where: dict[str, list[str]] = {}
    for line in dot.splitlines():
        opened = re.match(r"\s*subgraph (cluster_\w+) \{", line)
        if opened:
            stack.append(opened.group(1))
        elif line.strip() == "}" and stack:
            stack.pop()
        else:
            node = re.match(r'\s*"([^"]+)" \[label=', line)
            if node:
                where[node.group(1)] = list(stack)
    return where


def _run_dot(dot: str, fmt: str = "svg") -> str:
    done = subprocess.run(["dot", f"-T{fmt}"], input=dot.encode("utf-8"), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Warning" not in done.stderr and b"Error" not in done.stderr, done.stderr.decode()
    return done.stdout.decode("utf-8")


def _svg_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg.encode("utf-8"))
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


# --------------------------------------------------------------------------- content

def test_every_operator_name_appears_in_every_graph() -> None:
    sg, jg, eg, _ = _graphs()
    for rendered in (render_stream_graph(sg), render_job_graph(jg), render_execution_graph(eg)):
        dot = to_dot(rendered)
        assert dot.startswith("digraph ")
        assert "rankdir=LR" in dot
        for node in rendered.nodes:
            assert f'label="{escape_label(node.label)}"' in dot
    job_dot = to_dot(render_job_graph(jg))
    for node in sg.nodes:
        assert escape_label(node.name) in job_dot


def test_highlighted_nodes_are_drawn_differently() -> None:
    sg, (_, m, r, _) = _pipeline()
    plain = _node_statements(to_dot(render_stream_graph(sg)))
    marked = _node_statements(to_dot(render_stream_graph(sg, highlight={m.id})))
    fill = f'fillcolor="{HIGHLIGHT_STYLE["fillcolor"]}"'
    assert fill in marked[f"n{m.id}"] and fill not in plain[f"n{m.id}"]
    assert marked[f"n{m.id}"] != plain[f"n{m.id}"]
    assert marked[f"n{r.id}"] == plain[f"n{r.id}"]
    assert sum(fill in s for s in marked.values()) == 1


def test_sources_and_sinks_have_their_own_shapes() -> None:
    sg, (src, m, _, s) = _pipeline()
    statements = _node_statements(to_dot(render_stream_graph(sg)))
    shape = {k: re.search(r"shape=(\w+)", v).group(1) for k, v in statements.items()}
    assert len({shape[f"n{src.id}"], shape[f"n{m.id}"], shape[f"n{s.id}"]}) == 3


def test_edges_are_labelled_with_the_partitioner() -> None:
    sg, (src, m, r, s) = _pipeline()
    dot = to_dot(render_stream_graph(sg))
    assert re.search(rf'"n{src.id}" -> "n{m.id}" \[label="REBALANCE"\]', dot)
    assert re.search(rf'"n{m.id}" -> "n{r.id}" \[label="HASH"\]', dot)
    assert re.search(rf'"n{r.id}" -> "n{s.id}" \[label="FORWARD"\]', dot)


def test_execution_graph_clusters_per_taskmanager_and_slot(monkeypatch) -> None:
    import streamkernel.viz.render_graphs as render_graphs

    monkeypatch.setattr(render_graphs, "FULL_CHANNELS_LIMIT", 1)
    _, jg, eg, _ = _graphs(parallelism=2)
    dot = to_dot(render_execution_graph(eg))
    where = _cluster_of_nodes(dot)
    for ev in eg.vertices:
        tm = ev.slot.taskmanager_index + 1
        assert where[f"t{ev.job_vertex_id}_{ev.subtask_index}"] == [f"cluster_tm{tm}", f"cluster_tm{tm}_slot1"]
    assert 'label="TaskManager 2"' in dot and 'label="Slot 1"' in dot
    assert dot.count("REBALANCE") == 2  # the source fans out to both Map subtasks, one arrow each
    assert dot.count("all-to-all: 2 x 2 channels") == 1  # HASH between 2 and 2 subtasks: one arrow
    assert dot.count("style=invis") == 1  # ... plus a layout-only one to the second Reduce subtask


def test_output_is_deterministic() -> None:
    first = to_dot(render_execution_graph(_graphs(parallelism=3)[2]))
    second = to_dot(render_execution_graph(_graphs(parallelism=3)[2]))
    # fresh transformations get fresh ids: compare with the ids normalised away
    def norm(s: str) -> str:
        return re.sub(r"t\d+_", "t_", s)
    assert norm(first) == norm(second)
    sg = _pipeline()[0]
    assert to_dot(render_stream_graph(sg)) == to_dot(render_stream_graph(sg))


# --------------------------------------------------------------------------- escaping

@pytest.mark.parametrize("name", AWKWARD)
def test_escape_label_keeps_the_quoted_string_closed(name: str) -> None:
    escaped = escape_label(name)
    assert "\n" not in escaped
    assert re.search(r'(?<!\\)(\\\\)*"', escaped) is None  # every quote is escaped
    assert not re.search(r"(?<!\\)(\\\\)*\\$", escaped)  # no lone backslash before the closing quote


def test_escape_label_handles_control_characters() -> None:
    assert escape_label("a\r\nb\rc\td\x00e") == "a\\nb\\nc d\ufffde"


@needs_dot
def test_awkward_names_reach_the_svg_verbatim() -> None:
    src = SourceTransformation(AWKWARD[0], SourceSpec(source=[0]), 1)
    prev = src
    for name in AWKWARD[1:]:
        prev = OneInputTransformation(name, prev, MapSpec(function=str), 1)
    rendered = render_stream_graph(build_stream_graph([prev], job_name='job "x" \\ <y>'))
    svg = _run_dot(to_dot(rendered))
    texts = _svg_texts(svg)
    for name in [f"Source: {AWKWARD[0]}", *AWKWARD[1:]]:
        for line in name.splitlines():
            assert line in texts, (line, texts)
    assert 'StreamGraph: job "x" \\ <y>' in texts


@needs_dot
def test_awkward_cluster_ids_and_labels_are_accepted() -> None:
    g = RenderedGraph(
        'title "q"',
        (RenderedNode('id "with" \\ quotes', ("A\\",), cluster='tm 1/"x"', tooltip='tip "t" <b>'),
         RenderedNode("b", ("B",), kind="sink", cluster='tm 1/"x"_slot'),
         RenderedNode("c", ("C",), cluster="tm_1__x_")),  # collides with the first once sanitised
        (RenderedEdge('id "with" \\ quotes', "b", 'HASH\n"side"'),),
        (RenderedCluster('tm 1/"x"', 'TaskManager "1"'), RenderedCluster('tm 1/"x"_slot', "Slot\\1", 'tm 1/"x"'),
         RenderedCluster("tm_1__x_", "other")),
    )
    texts = _svg_texts(_run_dot(to_dot(g)))
    for expected in ("A\\", "B", "C", '"side"', 'TaskManager "1"', "Slot\\1", "other"):
        assert expected in texts


@needs_dot
def test_every_graph_kind_is_accepted_by_dot() -> None:
    sg, jg, eg, _ = _graphs(parallelism=3)
    for rendered in (render_stream_graph(sg), render_job_graph(jg), render_execution_graph(eg, highlight={1})):
        texts = _svg_texts(_run_dot(to_dot(rendered)))
        for node in rendered.nodes:
            assert node.lines[0] in texts


def test_a_fill_colour_replaces_the_kinds_fill_and_the_node_is_filled() -> None:
    rendered = RenderedGraph("g", (RenderedNode("a", ("Map",), fill="#e53935"), RenderedNode("b", ("Sink",), kind="sink")),
                             ())
    dot = to_dot(rendered)
    line_a = next(line for line in dot.splitlines() if line.strip().startswith('"a"'))
    assert 'fillcolor="#e53935"' in line_a and 'style="filled"' in line_a
    line_b = next(line for line in dot.splitlines() if line.strip().startswith('"b"'))
    assert "#e53935" not in line_b
