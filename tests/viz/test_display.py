"""Display: dispatch, SVG through graphviz, the never-failing notebook bundle, GraphView."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import streamkernel.viz.display as display
from streamkernel.errors import StreamKernelError
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
from streamkernel.viz import GraphView, GraphvizNotFoundError, RenderedGraph, graph_mimebundle, render, save_svg, to_svg

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's `dot` program is not installed (apt-get install graphviz)")


@pytest.fixture(autouse=True)
def _fresh_dot_lookup():
    display.dot_available.cache_clear()
    yield
    display.dot_available.cache_clear()


def _graphs(parallelism: int = 2):
    src = SourceTransformation("numbers <1..n>", SourceSpec(source=[0]), 1)
    m = OneInputTransformation('Map "upper"', src, MapSpec(function=str), parallelism)
    keyed = PartitionTransformation(m, KeyGroupStreamPartitioner(key_selector=lambda x: x))
    r = OneInputTransformation("Reduce", keyed, ReduceSpec(function=max, key_selector=str), parallelism, state_key_selector=lambda x: x)
    s = SinkTransformation("out", r, SinkSpec(sink=print), parallelism)
    sg = build_stream_graph([s], job_name="display test")
    jg = JobGraph("display test", (
        JobVertex(src.id, sg.node(src.id).name, (src.id,), 1, 128, "default"),
        JobVertex(m.id, 'Map "upper"', (m.id,), parallelism, 128, "default"),
        JobVertex(r.id, "Reduce -> Sink: out", (r.id, s.id), parallelism, 128, "default"),
    ), tuple(JobEdge(e.source_id, e.target_id, e) for e in sg.edges if e.target_id != s.id), sg)
    vertices = tuple(ExecutionVertex(v.id, i, v.parallelism, v.name, SlotId(0, i))
                     for v in jg.vertices for i in range(v.parallelism))
    edges = tuple(ExecutionEdge((je.source_vertex_id, u), (je.target_vertex_id, d), je.partitioner.name)
                  for je in jg.edges
                  for u in range(jg.vertex(je.source_vertex_id).parallelism)
                  for d in range(jg.vertex(je.target_vertex_id).parallelism))
    eg = ExecutionGraph(jg, vertices, edges, 1, parallelism, True, parallelism)
    return sg, jg, eg, (src, m, r, s)


def _svg_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg.encode("utf-8"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


# --------------------------------------------------------------------------- render dispatch

def test_render_dispatches_on_the_graph_type() -> None:
    sg, jg, eg, _ = _graphs()
    assert render(sg).title.startswith("StreamGraph")
    assert render(jg).title.startswith("JobGraph")
    assert render(eg).title.startswith("ExecutionGraph")
    rendered = render(sg)
    assert render(rendered) is rendered
    with pytest.raises(TypeError, match="cannot draw a str"):
        render("not a graph")  # type: ignore[arg-type]


def test_render_passes_the_highlight_on() -> None:
    sg, jg, eg, (_, m, _, _) = _graphs()
    assert [n.name for n in render(sg, {m.id}).highlighted] == ['Map "upper"']
    assert len(render(jg, {m.id}).highlighted) == 1
    assert len(render(eg, {m.id}).highlighted) == 2  # both Map subtasks


# --------------------------------------------------------------------------- SVG

@needs_dot
def test_svg_holds_every_operator_name() -> None:
    sg, jg, eg, _ = _graphs()
    for graph in (sg, jg, eg):
        texts = _svg_texts(to_svg(graph))
        for node in render(graph).nodes:
            for line in node.lines:
                assert line in texts


@needs_dot
def test_save_svg_writes_a_file(tmp_path) -> None:
    sg, *_ = _graphs()
    path = tmp_path / "stream.svg"
    assert save_svg(sg, path) == str(path)
    assert "Sink: out" in _svg_texts(path.read_text(encoding="utf-8"))


@needs_dot
def test_svg_without_the_graphviz_package_runs_dot_directly(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz -> ImportError
    sg, *_ = _graphs()
    assert "Reduce" in _svg_texts(to_svg(sg))


def test_missing_dot_raises_with_install_instructions(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(display, "dot_available", lambda: False)
    sg, *_ = _graphs()
    with pytest.raises(GraphvizNotFoundError) as info:
        to_svg(sg)
    message = str(info.value)
    assert "apt-get install graphviz" in message
    assert "conda install -c conda-forge graphviz" in message
    assert isinstance(info.value, StreamKernelError)
    path = tmp_path / "never.svg"
    with pytest.raises(GraphvizNotFoundError):
        save_svg(sg, path)
    assert not path.exists()


def test_dot_available_looks_up_once(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(display.shutil, "which", lambda name: calls.append(name) or None)
    assert display.dot_available() is False
    assert display.dot_available() is False
    assert calls == ["dot"]


# --------------------------------------------------------------------------- the notebook bundle

@needs_dot
def test_bundle_with_dot_is_svg_plus_text() -> None:
    sg, *_ = _graphs()
    bundle = graph_mimebundle(sg)
    assert set(bundle) == {"text/plain", "image/svg+xml"}
    assert 'Map "upper"' in _svg_texts(bundle["image/svg+xml"])
    assert "Map \"upper\" --HASH--> Reduce" in bundle["text/plain"]


def test_bundle_without_dot_falls_back_to_text_and_dot_source(monkeypatch) -> None:
    monkeypatch.setattr(display, "dot_available", lambda: False)
    sg, jg, eg, _ = _graphs()
    for graph in (sg, jg, eg):
        bundle = graph_mimebundle(graph)
        assert set(bundle) == {"text/plain", "text/html"}
        page = bundle["text/html"]
        assert "<pre" in page and "<details>" in page and "digraph" in page
        assert "apt-get install graphviz" in page
        assert "numbers &lt;1..n&gt;" in page  # escaped for HTML, not raw markup
        assert "<1..n>" not in page
        assert "numbers <1..n>" in bundle["text/plain"]


def test_bundle_survives_a_failing_dot(monkeypatch, tmp_path) -> None:
    fake = tmp_path / "dot"
    fake.write_text("#!/bin/sh\necho 'dot: simulated crash' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    sg, *_ = _graphs()
    bundle = graph_mimebundle(sg)
    assert "image/svg+xml" not in bundle
    assert "text/html" in bundle and "failed" in bundle["text/html"]
    assert "Reduce --FORWARD--> Sink: out" in bundle["text/plain"]


def test_bundle_survives_a_graph_that_cannot_be_rendered() -> None:
    sg, jg, *_ = _graphs()
    broken = JobGraph("broken", jg.vertices, (JobEdge(jg.vertices[0].id, 999, sg.edges[0]),), sg)
    bundle = graph_mimebundle(broken)
    assert set(bundle) == {"text/plain"}
    assert "could not render" in bundle["text/plain"] and "broken" in bundle["text/plain"]


def test_graph_reprs_go_through_the_viz_layer(monkeypatch) -> None:
    monkeypatch.setattr(display, "dot_available", lambda: False)
    sg, jg, eg, _ = _graphs()
    assert "Source: numbers <1..n> --REBALANCE--> Map \"upper\"" in sg._repr_mimebundle_()["text/plain"]
    assert "Reduce\n" in jg._repr_mimebundle_()["text/plain"]
    assert "Slot 2" in eg._repr_mimebundle_()["text/plain"]


# --------------------------------------------------------------------------- GraphView

def test_graph_view_properties_and_title(monkeypatch) -> None:
    monkeypatch.setattr(display, "dot_available", lambda: False)
    sg, _, _, (_, m, _, _) = _graphs()
    view = GraphView(sg, highlight={m.id}, title="Cell 3 added: Map")
    assert isinstance(view.rendered, RenderedGraph)
    assert view.rendered.title == "Cell 3 added: Map"
    assert view.text.splitlines()[0] == "Cell 3 added: Map"
    assert 'label="Cell 3 added: Map\\l"' in view.dot  # \l: a left-aligned line
    assert '* Map "upper"' in view.text
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == view.text
    assert "Cell 3 added: Map" in bundle["text/html"]


@needs_dot
def test_graph_view_svg_and_save(tmp_path) -> None:
    sg, *_ = _graphs()
    view = GraphView(sg, title="my title")
    assert "my title" in _svg_texts(view.svg())
    view.save_svg(tmp_path / "v.svg")
    assert "my title" in _svg_texts((tmp_path / "v.svg").read_text(encoding="utf-8"))
    assert "image/svg+xml" in view._repr_mimebundle_()


# --------------------------------------------------------------------------- imports and builders

def test_import_viz_does_not_import_graphviz() -> None:
    code = "import sys, streamkernel.viz; print('graphviz' in sys.modules, 'IPython' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@needs_dot
def test_bundles_for_graphs_from_the_builders() -> None:
    from streamkernel.graph.execution_graph import build_execution_graph
    from streamkernel.graph.job_graph import build_job_graph

    sg, _, _, (_, _, r, _) = _graphs(parallelism=3)
    try:
        jg = build_job_graph(sg)
        eg = build_execution_graph(jg, taskmanagers=3, slots_per_taskmanager=1)
    except NotImplementedError:  # pragma: no cover - until the builders land
        pytest.skip("build_job_graph/build_execution_graph are not implemented yet")
    texts = _svg_texts(graph_mimebundle(jg)["image/svg+xml"])
    for node in sg.nodes:
        assert node.name in texts
    bundle = graph_mimebundle(eg, highlight={r.id})
    texts = _svg_texts(bundle["image/svg+xml"])
    for ev in eg.vertices:
        assert ev.name in texts
    assert {"TaskManager 1", "TaskManager 2", "TaskManager 3"} <= set(texts)
    starred = [line.strip() for line in bundle["text/plain"].splitlines() if line.lstrip().startswith("* ")]
    assert starred == [f"* Reduce -> Sink: out ({i}/3)" for i in (1, 2, 3)]
