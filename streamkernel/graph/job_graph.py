"""The JobGraph: the StreamGraph with chainable operators fused into job vertices.

A :class:`JobVertex` is what one Task thread runs: a chain of operators that call each
other directly. Operators are chained by exactly the rules in :mod:`.chaining`. Edges
between job vertices keep the StreamGraph edge (and so the partitioner) they came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamkernel.graph.partitioners import StreamPartitioner
from streamkernel.graph.stream_graph import StreamEdge, StreamGraph, StreamNode

__all__ = ["JobVertex", "JobEdge", "JobGraph", "build_job_graph"]


@dataclass(frozen=True, eq=False)
class JobVertex:
    """A chain of operators run by one task per subtask.

    ``id`` is the id of the chain's head node; ``operator_ids`` lists the chained nodes,
    head first, in topological order (a chain may fork: one head, several chained tails).
    ``name`` is Flink's chain name, e.g. ``"Source: Collection Source -> Map -> Filter"``.
    """

    id: int
    name: str
    operator_ids: tuple[int, ...]
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str

    @property
    def head_id(self) -> int:
        """The id of the first operator of the chain."""
        return self.operator_ids[0]


@dataclass(frozen=True, eq=False)
class JobEdge:
    """A non-chained StreamGraph edge, now between two job vertices."""

    source_vertex_id: int
    target_vertex_id: int
    stream_edge: StreamEdge

    @property
    def partitioner(self) -> StreamPartitioner:
        """The partitioner records cross this edge with."""
        return self.stream_edge.partitioner


@dataclass(frozen=True, eq=False)
class JobGraph:
    """The chained plan of a job; ``stream_graph`` is kept for operator details."""

    job_name: str
    vertices: tuple[JobVertex, ...]
    edges: tuple[JobEdge, ...]
    stream_graph: StreamGraph

    def vertex(self, vertex_id: int) -> JobVertex:
        """The job vertex with this id."""
        for v in self.vertices:
            if v.id == vertex_id:
                return v
        raise KeyError(f"no job vertex with id {vertex_id}")

    def vertex_of_operator(self, node_id: int) -> JobVertex:
        """The job vertex whose chain contains stream node ``node_id``."""
        for v in self.vertices:
            if node_id in v.operator_ids:
                return v
        raise KeyError(f"no job vertex contains stream node {node_id}")

    def operators(self, vertex_id: int) -> tuple[StreamNode, ...]:
        """The stream nodes chained in vertex ``vertex_id``, head first."""
        return tuple(self.stream_graph.node(i) for i in self.vertex(vertex_id).operator_ids)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        from streamkernel.viz.display import graph_mimebundle  # lazy: layering

        return graph_mimebundle(self)

    def __repr__(self) -> str:
        return f"JobGraph({self.job_name!r}, {len(self.vertices)} vertices, {len(self.edges)} edges)"


def build_job_graph(stream_graph: StreamGraph) -> JobGraph:
    """Chain the StreamGraph's operators into job vertices (see :mod:`.chaining`)."""
    raise NotImplementedError("being written")
