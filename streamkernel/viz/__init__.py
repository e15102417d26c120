"""streamkernel.viz: drawing the StreamGraph, JobGraph and ExecutionGraph.

The path of every picture is ``graph -> RenderedGraph -> DOT text -> SVG``: pure
renderers build the :class:`RenderedGraph` model (tested without any drawing tool),
:func:`to_dot` writes Graphviz's DOT language, :func:`to_text` a terminal description,
and :func:`to_svg` asks Graphviz's ``dot`` program for the picture — the only step that
needs Graphviz, and the only one importing the ``graphviz`` package (lazily).

>>> from streamkernel.viz import GraphView
>>> GraphView(stream_graph, highlight={new_operator_id})   # doctest: +SKIP
"""

from __future__ import annotations

from streamkernel.viz.display import (
    GraphView,
    GraphvizNotFoundError,
    dot_available,
    graph_mimebundle,
    render,
    save_svg,
    to_svg,
)
from streamkernel.viz.dot import to_dot
from streamkernel.viz.render_graphs import render_execution_graph, render_job_graph, render_stream_graph
from streamkernel.viz.rendered import RenderedCluster, RenderedEdge, RenderedGraph, RenderedNode
from streamkernel.viz.text import to_text

__all__ = [
    "RenderedGraph",
    "RenderedNode",
    "RenderedEdge",
    "RenderedCluster",
    "render_stream_graph",
    "render_job_graph",
    "render_execution_graph",
    "render",
    "to_dot",
    "to_text",
    "to_svg",
    "save_svg",
    "dot_available",
    "graph_mimebundle",
    "GraphView",
    "GraphvizNotFoundError",
]
