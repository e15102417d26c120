"""The rendered model: a graph as it will be drawn, before any drawing tool is involved.

Every drawing of a StreamGraph, JobGraph or ExecutionGraph goes through this model:
``graph -> RenderedGraph -> DOT text / terminal text -> SVG``. It holds only what a
picture shows — boxes with lines of text, labelled arrows, nested frames — so tests assert
on it directly, and the DOT and text renderers stay small and free of graph knowledge.

The model is immutable and checked on construction: node ids are unique, every edge and
node refers to known nodes and clusters, and clusters nest without cycles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

__all__ = [
    "NodeKind",
    "EdgeStyle",
    "NODE_KINDS",
    "EDGE_STYLES",
    "RenderedNode",
    "RenderedEdge",
    "RenderedCluster",
    "RenderedGraph",
]

#: What a box stands for; decides its shape and colour.
NodeKind = Literal["source", "operator", "sink", "chain", "subtask"]
#: How an arrow is drawn. ``invis`` arrows only steer the layout and are never shown.
EdgeStyle = Literal["solid", "dashed", "dotted", "bold", "invis"]

NODE_KINDS: frozenset[str] = frozenset({"source", "operator", "sink", "chain", "subtask"})
EDGE_STYLES: frozenset[str] = frozenset({"solid", "dashed", "dotted", "bold", "invis"})


@dataclass(frozen=True)
class RenderedNode:
    """One box of a drawing: an operator, a chain of operators (job vertex) or a subtask.

    ``lines`` is the text shown in the box, the first line being its name (e.g.
    ``("Map", "parallelism 2")``). ``highlighted`` marks the part of the dataflow a
    person should look at (the operators a notebook cell just added). ``cluster`` is the
    id of the :class:`RenderedCluster` the box sits in (a task slot), if any; ``tooltip``
    is extra detail shown on hover; ``fill`` a colour (``#rrggbb``) that replaces the kind's
    own, for a live state such as backpressure.
    """

    id: str
    lines: tuple[str, ...]
    kind: NodeKind = "operator"
    highlighted: bool = False
    cluster: Optional[str] = None
    tooltip: Optional[str] = None
    fill: Optional[str] = None

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("RenderedNode.id must be a non-empty string")
        if isinstance(self.lines, str) or not self.lines:
            raise ValueError(f"RenderedNode {self.id!r}: lines must be a non-empty tuple of strings")
        object.__setattr__(self, "lines", tuple(str(line) for line in self.lines))
        if self.kind not in NODE_KINDS:
            raise ValueError(f"RenderedNode {self.id!r}: kind {self.kind!r} is not one of {sorted(NODE_KINDS)}")

    @property
    def name(self) -> str:
        """The first line: the operator, chain or subtask name."""
        return self.lines[0]

    @property
    def label(self) -> str:
        """All lines joined by newlines, as a drawing shows them."""
        return "\n".join(self.lines)


@dataclass(frozen=True)
class RenderedEdge:
    """One arrow of a drawing, from node ``source`` to node ``target`` (node ids).

    ``label`` names how records cross it: the partitioner (``FORWARD``, ``HASH``,
    ``REBALANCE`` ...), plus a side-output tag or an aggregation note where relevant.
    """

    source: str
    target: str
    label: str = ""
    style: EdgeStyle = "solid"

    def __post_init__(self) -> None:
        if self.style not in EDGE_STYLES:
            raise ValueError(f"RenderedEdge {self.source!r}->{self.target!r}: style {self.style!r} "
                             f"is not one of {sorted(EDGE_STYLES)}")

    @property
    def visible(self) -> bool:
        """False for layout-only arrows (style ``invis``)."""
        return self.style != "invis"


@dataclass(frozen=True)
class RenderedCluster:
    """A labelled frame around nodes: a TaskManager, or a task slot inside one.

    ``parent`` is the id of the enclosing cluster (``'TaskManager 1' > 'Slot 1'``), or
    None for a top-level frame.
    """

    id: str
    label: str
    parent: Optional[str] = None


@dataclass(frozen=True)
class RenderedGraph:
    """A whole drawing: a title, boxes, arrows and frames, in drawing order.

    ``title`` may span several lines (the ExecutionGraph puts its slot summary on the
    second). Build one with :func:`streamkernel.viz.render`, turn it into DOT with
    :func:`streamkernel.viz.to_dot` or into terminal text with :func:`streamkernel.viz.to_text`.

    >>> g = RenderedGraph("demo", (RenderedNode("a", ("Map",)), RenderedNode("b", ("Sink: print",), "sink")),
    ...                   (RenderedEdge("a", "b", "FORWARD"),))
    >>> g.node("b").name
    'Sink: print'
    """

    title: str
    nodes: tuple[RenderedNode, ...]
    edges: tuple[RenderedEdge, ...] = ()
    clusters: tuple[RenderedCluster, ...] = ()

    def __post_init__(self) -> None:
        for attr in ("nodes", "edges", "clusters"):
            object.__setattr__(self, attr, tuple(getattr(self, attr)))
        node_ids = [n.id for n in self.nodes]
        if len(set(node_ids)) != len(node_ids):
            dup = sorted({i for i in node_ids if node_ids.count(i) > 1})
            raise ValueError(f"RenderedGraph {self.title!r}: duplicate node ids {dup}")
        cluster_ids = [c.id for c in self.clusters]
        if len(set(cluster_ids)) != len(cluster_ids):
            raise ValueError(f"RenderedGraph {self.title!r}: duplicate cluster ids in {cluster_ids}")
        known_nodes, known_clusters = set(node_ids), set(cluster_ids)
        for e in self.edges:
            for end in (e.source, e.target):
                if end not in known_nodes:
                    raise ValueError(f"RenderedGraph {self.title!r}: edge {e.source!r}->{e.target!r} "
                                     f"refers to unknown node {end!r}")
        for n in self.nodes:
            if n.cluster is not None and n.cluster not in known_clusters:
                raise ValueError(f"RenderedGraph {self.title!r}: node {n.id!r} is in unknown cluster {n.cluster!r}")
        parents = {c.id: c.parent for c in self.clusters}
        for c in self.clusters:
            if c.parent is not None and c.parent not in known_clusters:
                raise ValueError(f"RenderedGraph {self.title!r}: cluster {c.id!r} has unknown parent {c.parent!r}")
            seen, cur = {c.id}, c.parent
            while cur is not None:
                if cur in seen:
                    raise ValueError(f"RenderedGraph {self.title!r}: clusters nest in a cycle through {c.id!r}")
                seen.add(cur)
                cur = parents[cur]

    def node(self, node_id: str) -> RenderedNode:
        """The node with this id."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(f"no rendered node with id {node_id!r}")

    def node_named(self, name: str) -> RenderedNode:
        """The node whose first line is ``name`` (the first one, if several share it)."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no rendered node named {name!r}")

    def cluster(self, cluster_id: str) -> RenderedCluster:
        """The cluster with this id."""
        for c in self.clusters:
            if c.id == cluster_id:
                return c
        raise KeyError(f"no rendered cluster with id {cluster_id!r}")

    def child_clusters(self, parent: Optional[str]) -> tuple[RenderedCluster, ...]:
        """Clusters directly inside ``parent`` (None: the top-level ones), in order."""
        return tuple(c for c in self.clusters if c.parent == parent)

    def nodes_in(self, cluster_id: Optional[str]) -> tuple[RenderedNode, ...]:
        """Nodes placed directly in ``cluster_id`` (None: outside every cluster), in order."""
        return tuple(n for n in self.nodes if n.cluster == cluster_id)

    @property
    def highlighted(self) -> tuple[RenderedNode, ...]:
        """The highlighted nodes, in order."""
        return tuple(n for n in self.nodes if n.highlighted)

    def edges_between(self, source: str, target: str) -> tuple[RenderedEdge, ...]:
        """The edges from node ``source`` to node ``target``."""
        return tuple(e for e in self.edges if e.source == source and e.target == target)
