"""Showing graphs: SVG through graphviz when it is installed, text when it is not.

Everything here is optional sugar over the pure model: :func:`render` picks the renderer
for a StreamGraph, JobGraph or ExecutionGraph, :func:`to_svg` asks graphviz's ``dot``
binary for a picture, and :func:`graph_mimebundle` is what Jupyter calls to display a
graph. The ``graphviz`` Python package is imported only when an SVG is actually made, so
``import streamkernel.viz`` stays cheap; when the ``dot`` binary is missing or fails, the
notebook shows the text rendering and the DOT source instead of raising.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import os
import shutil
import subprocess
from collections.abc import Collection
from typing import Any, Optional, Union

from streamkernel.errors import StreamKernelError
from streamkernel.graph.execution_graph import ExecutionGraph
from streamkernel.graph.job_graph import JobGraph
from streamkernel.graph.stream_graph import StreamGraph
from streamkernel.viz.dot import to_dot
from streamkernel.viz.render_graphs import render_execution_graph, render_job_graph, render_stream_graph
from streamkernel.viz.rendered import RenderedGraph
from streamkernel.viz.text import to_text

__all__ = [
    "AnyGraph",
    "GraphvizNotFoundError",
    "INSTALL_HINT",
    "GraphView",
    "dot_available",
    "render",
    "to_svg",
    "save_svg",
    "graph_mimebundle",
]

#: What :func:`render` and the display functions accept.
AnyGraph = Union[StreamGraph, JobGraph, ExecutionGraph, RenderedGraph]

INSTALL_HINT = ("install Graphviz's `dot` program: `apt-get install graphviz` (Debian/Ubuntu), "
                "`conda install -c conda-forge graphviz`, or `brew install graphviz` (macOS)")


class GraphvizNotFoundError(StreamKernelError, RuntimeError):
    """Graphviz's ``dot`` program is not installed, so no SVG can be drawn.

    The text rendering (:func:`streamkernel.viz.to_text`) and the DOT source
    (:func:`streamkernel.viz.to_dot`) work without it.
    """


@functools.lru_cache(maxsize=1)
def dot_available() -> bool:
    """True when Graphviz's ``dot`` program is on the PATH (looked up once, then cached;
    ``dot_available.cache_clear()`` looks again)."""
    return shutil.which("dot") is not None


def render(graph: AnyGraph, highlight: Collection[int] = frozenset()) -> RenderedGraph:
    """The rendered model of any plan graph; a RenderedGraph is returned as it is.

    ``highlight`` holds StreamNode ids (see :mod:`streamkernel.viz.render_graphs`).
    """
    if isinstance(graph, RenderedGraph):
        return graph
    if isinstance(graph, StreamGraph):
        return render_stream_graph(graph, highlight)
    if isinstance(graph, JobGraph):
        return render_job_graph(graph, highlight)
    if isinstance(graph, ExecutionGraph):
        return render_execution_graph(graph, highlight)
    raise TypeError(f"cannot draw a {type(graph).__name__}: expected a StreamGraph, JobGraph, "
                    f"ExecutionGraph or RenderedGraph (e.g. env.get_stream_graph())")


def to_svg(graph: AnyGraph, highlight: Collection[int] = frozenset()) -> str:
    """The graph drawn as SVG text by Graphviz's ``dot`` (left to right).

    Raises GraphvizNotFoundError, saying how to install it, when ``dot`` is missing.
    Uses the ``graphviz`` Python package when installed, else runs ``dot`` directly.
    """
    if not dot_available():
        raise GraphvizNotFoundError(f"cannot draw the graph as SVG: Graphviz's `dot` program was not found "
                                    f"on the PATH; {INSTALL_HINT}. Without it, use to_text() or to_dot().")
    source = to_dot(render(graph, highlight))
    try:
        import graphviz  # lazy: heavy-ish, and optional
    except ImportError:
        done = subprocess.run(["dot", "-Tsvg"], input=source.encode("utf-8"), capture_output=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"dot -Tsvg failed: {done.stderr.decode('utf-8', 'replace').strip()}") from None
        return done.stdout.decode("utf-8")
    return graphviz.Source(source).pipe(format="svg", encoding="utf-8")


def save_svg(graph: AnyGraph, path: Union[str, os.PathLike], highlight: Collection[int] = frozenset()) -> str:
    """Write the graph as an SVG file at ``path`` and return the path written.

    Raises GraphvizNotFoundError (with install instructions) when ``dot`` is missing.
    """
    svg = to_svg(graph, highlight)
    with open(path, "w", encoding="utf-8") as f:
        f.write(svg)
    return os.fspath(path)


def graph_mimebundle(graph: AnyGraph, highlight: Collection[int] = frozenset()) -> dict[str, str]:
    """What Jupyter displays for a graph: never raises.

    Always ``text/plain`` (the text rendering). With a working ``dot``, also
    ``image/svg+xml``; otherwise ``text/html``: the text rendering in a ``<pre>``, the
    DOT source in a ``<details>`` element and a note on installing Graphviz.
    """
    try:
        rendered = render(graph, highlight)
        text = to_text(rendered)
    except Exception as exc:  # a display must not fail; say why it is plain
        return {"text/plain": f"{graph!r}\n(could not render the graph: {type(exc).__name__}: {exc})"}
    bundle = {"text/plain": text}
    problem = f"Graphviz's `dot` program was not found; {INSTALL_HINT}."
    if dot_available():
        try:
            bundle["image/svg+xml"] = to_svg(rendered)
            return bundle
        except Exception as exc:  # dot crashed or was removed: fall back to text
            problem = f"Graphviz's `dot` failed ({type(exc).__name__}: {exc})."
    bundle["text/html"] = _html_fallback(text, to_dot(rendered), problem)
    return bundle


def _html_fallback(text: str, dot_source: str, problem: str) -> str:
    return (f'<div class="streamkernel-graph">'
            f'<pre style="line-height:1.3">{html.escape(text)}</pre>'
            f'<details><summary>DOT source</summary><pre>{html.escape(dot_source)}</pre></details>'
            f'<p style="font-size:smaller">{html.escape(problem)}</p></div>')


class GraphView:
    """A graph ready to be shown in a notebook: the rendered model with its DOT and text.

    ``GraphView(env.get_stream_graph(), highlight={map_op.id})`` displays as SVG (or text
    when Graphviz is missing); ``title`` replaces the rendered title.
    """

    def __init__(self, graph: AnyGraph, highlight: Collection[int] = frozenset(),
                 title: Optional[str] = None) -> None:
        self.graph = graph
        self.highlight: frozenset[int] = frozenset(highlight)
        self.title = title

    @functools.cached_property
    def rendered(self) -> RenderedGraph:
        """The rendered model (computed once)."""
        rendered = render(self.graph, self.highlight)
        return rendered if self.title is None else dataclasses.replace(rendered, title=self.title)

    @property
    def dot(self) -> str:
        """The DOT source."""
        return to_dot(self.rendered)

    @property
    def text(self) -> str:
        """The terminal text rendering."""
        return to_text(self.rendered)

    def svg(self) -> str:
        """The SVG drawing (needs Graphviz's ``dot``)."""
        return to_svg(self.rendered)

    def save_svg(self, path: Union[str, os.PathLike]) -> str:
        """Write the SVG drawing to ``path``; returns the path."""
        return save_svg(self.rendered, path)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        try:
            rendered = self.rendered
        except Exception:  # let graph_mimebundle produce its plain fallback
            return graph_mimebundle(self.graph, self.highlight)
        return graph_mimebundle(rendered)

    def __repr__(self) -> str:
        return f"GraphView({self.graph!r})"
