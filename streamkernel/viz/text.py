"""A terminal description of the rendered model: the fallback when no ``dot`` is installed.

Readable top to bottom: the title, then every node with its lines (clusters as indented
sections, ``TaskManager 1`` > ``Slot 1`` > subtasks), then every visible edge as
``A --HASH--> B``. Highlighted nodes are marked with ``*``.
"""

from __future__ import annotations

from collections import Counter

from streamkernel.viz.rendered import RenderedCluster, RenderedGraph, RenderedNode

__all__ = ["to_text"]

_INDENT = "  "


def to_text(rendered: RenderedGraph) -> str:
    """A plain-text rendering of ``rendered``, one fact per line.

    >>> from streamkernel.viz.rendered import RenderedGraph, RenderedNode, RenderedEdge
    >>> g = RenderedGraph("StreamGraph: demo", (RenderedNode("a", ("Map", "parallelism 2"), highlighted=True),
    ...                   RenderedNode("b", ("Sink: print", "parallelism 2"), "sink")),
    ...                   (RenderedEdge("a", "b", "FORWARD"),))
    >>> print(to_text(g))
    StreamGraph: demo
    (* = highlighted)
    <BLANKLINE>
    Nodes:
    * Map
        parallelism 2
      Sink: print
        parallelism 2
    <BLANKLINE>
    Edges:
      Map --FORWARD--> Sink: print
    """
    out = list(rendered.title.splitlines()) or [""]
    if rendered.highlighted:
        out.append("(* = highlighted)")
    out.append("")
    for cluster in rendered.child_clusters(None):
        _cluster_section(rendered, cluster, out, depth=0)
    loose = rendered.nodes_in(None)
    if loose:
        out.append("Outside any cluster:" if rendered.clusters else "Nodes:")
        for node in loose:
            _node_block(node, out, depth=0)
    edges = [e for e in rendered.edges if e.visible]
    if edges:
        out.append("")
        out.append("Edges:")
        names = _display_names(rendered)
        for e in edges:
            label = ", ".join(line for line in e.label.splitlines() if line)
            arrow = f"--{label}-->" if label else "-->"
            out.append(f"{_INDENT}{names[e.source]} {arrow} {names[e.target]}")
    return "\n".join(out).rstrip("\n")


def _cluster_section(rendered: RenderedGraph, cluster: RenderedCluster, out: list[str], depth: int) -> None:
    out.append(_INDENT * depth + " / ".join(cluster.label.splitlines()))
    for child in rendered.child_clusters(cluster.id):
        _cluster_section(rendered, child, out, depth + 1)
    for node in rendered.nodes_in(cluster.id):
        _node_block(node, out, depth + 1)


def _node_block(node: RenderedNode, out: list[str], depth: int) -> None:
    """The node's lines; a line break inside one line continues at the same indent."""
    pad = _INDENT * depth
    first, *rest = node.label.splitlines() or [""]
    out.append(f"{pad}{'* ' if node.highlighted else _INDENT}{first}")
    out.extend(f"{pad}{_INDENT * 2}{line}" for line in rest)


def _display_names(rendered: RenderedGraph) -> dict[str, str]:
    """Node id -> its name on one line, with the id added where names repeat."""
    counts = Counter(_one_line(n.name) for n in rendered.nodes)
    return {n.id: _one_line(n.name) if counts[_one_line(n.name)] == 1 else f"{_one_line(n.name)} [{n.id}]"
            for n in rendered.nodes}


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())
