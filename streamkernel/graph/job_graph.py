"""The JobGraph: the StreamGraph with chainable operators fused into job vertices.

A :class:`JobVertex` is what one Task thread runs: a chain of operators that call each
other directly. Operators are chained by exactly the rules in :mod:`.chaining`. Edges
between job vertices keep the StreamGraph edge (and so the partitioner) they came from.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from streamkernel.errors import InvalidProgramError
from streamkernel.graph.chaining import is_chainable
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
    #: the name PyFlink's task of this chain has (merged Python operators, its own operators)
    pyflink_name: str = ""
    #: ``(node id, use case, fraction of the slot)`` of each managed memory use of the chain's
    #: operators (:mod:`.managed_memory`): a BATCH sorter's ``OPERATOR`` share, RocksDB's ``STATE_BACKEND``
    managed_memory_fractions: tuple[tuple[int, str, float], ...] = ()

    def managed_memory_fraction(self, node_id: int, use_case: str) -> float:
        """The fraction of its slot's managed memory operator ``node_id`` has for ``use_case``
        (``"OPERATOR"``, ``"STATE_BACKEND"``); 0.0 when it declared none."""
        return next((f for n, u, f in self.managed_memory_fractions if n == node_id and u == use_case), 0.0)

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


def build_job_graph(stream_graph: StreamGraph, configuration: Optional[Mapping[str, Any]] = None) -> JobGraph:
    """Chain the StreamGraph's operators into job vertices (see :mod:`.chaining`).

    A chain starts at every node without a chainable input edge (sources, and nodes
    behind a shuffle, a parallelism change, a union ...) and takes in every node its
    chainable out-edges reach; a chain may fork into several chained successors. Every
    edge that does not chain becomes a :class:`JobEdge`. Vertices come in topological
    order, each named as Flink names chains: ``"Source: Collection Source -> Map"``, and
    ``"Map -> (Filter, Sink: Print to Std. Out)"`` where the chain forks.
    """
    order = _topological_node_ids(stream_graph)
    chainable = {id(e): is_chainable(e, stream_graph) for e in stream_graph.edges}
    head_of: dict[int, int] = {}
    for node_id in order:
        in_edges = stream_graph.in_edges(node_id)
        # A chainable edge implies it is the node's only input (rule 1 of chaining).
        if len(in_edges) == 1 and chainable[id(in_edges[0])]:
            head_of[node_id] = head_of[in_edges[0].source_id]
        else:
            head_of[node_id] = node_id
    from streamkernel.graph.pyflink_plan import pyflink_chain_names

    pyflink_names = pyflink_chain_names(stream_graph, head_of)
    fractions = _managed_memory_fractions(stream_graph, head_of,
                                          stream_graph.configuration if configuration is None else configuration)
    vertices = []
    for head_id in (n for n in order if head_of[n] == n):
        head = stream_graph.node(head_id)
        vertices.append(JobVertex(
            id=head_id,
            name=_chained_name(head_id, stream_graph, chainable),
            operator_ids=tuple(n for n in order if head_of[n] == head_id),
            parallelism=head.parallelism,
            max_parallelism=head.max_parallelism,
            slot_sharing_group=head.slot_sharing_group,
            pyflink_name=pyflink_names.get(head_id, ""),
            managed_memory_fractions=tuple((n, use_case.value, f) for n in order if head_of[n] == head_id
                                           for use_case, f in fractions.get(n, {}).items()),
        ))
    edges = tuple(JobEdge(head_of[e.source_id], head_of[e.target_id], e)
                  for e in stream_graph.edges if not chainable[id(e)])
    return JobGraph(job_name=stream_graph.job_name, vertices=tuple(vertices), edges=edges,
                    stream_graph=stream_graph)


def _managed_memory_fractions(stream_graph: StreamGraph, head_of: Mapping[int, int],
                              configuration: Mapping[str, Any]) -> dict[int, dict[Any, float]]:
    """Each operator's managed memory fractions, its slot sharing group being that of its chain's head."""
    from streamkernel.graph.managed_memory import managed_memory_fractions

    groups: dict[str, list[StreamNode]] = {}
    for node in stream_graph.nodes:
        groups.setdefault(stream_graph.node(head_of[node.id]).slot_sharing_group, []).append(node)
    return managed_memory_fractions(groups, configuration)


def _chained_name(node_id: int, stream_graph: StreamGraph, chainable: Mapping[int, bool]) -> str:
    """Flink's ``createChainedName``: ``A -> B`` for one chained output, ``A -> (B, C)`` for more."""
    name = stream_graph.node(node_id).name
    chained = [e.target_id for e in stream_graph.out_edges(node_id) if chainable[id(e)]]
    if len(chained) == 1:
        return f"{name} -> {_chained_name(chained[0], stream_graph, chainable)}"
    if len(chained) > 1:
        return f"{name} -> ({', '.join(_chained_name(t, stream_graph, chainable) for t in chained)})"
    return name


def _topological_node_ids(stream_graph: StreamGraph,
                          key: Optional[Callable[[StreamNode], Any]] = None) -> list[int]:
    """Node ids, every node after all its inputs; among ready nodes the smallest ``key`` first.

    ``key`` defaults to the node's position in ``stream_graph.nodes``, so a graph built
    by :func:`~streamkernel.graph.stream_graph.build_stream_graph` keeps its order.
    """
    position = {n.id: i for i, n in enumerate(stream_graph.nodes)}
    sort_key = key or (lambda n: position[n.id])
    missing = sorted({i for e in stream_graph.edges for i in (e.source_id, e.target_id)} - set(position))
    if missing:
        raise InvalidProgramError(f"stream graph {stream_graph.job_name!r} has edges to unknown node ids {missing}")
    pending = {n.id: len(stream_graph.in_edges(n.id)) for n in stream_graph.nodes}
    ready = [(sort_key(n), position[n.id], n.id) for n in stream_graph.nodes if pending[n.id] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        node_id = heapq.heappop(ready)[2]
        order.append(node_id)
        for e in stream_graph.out_edges(node_id):
            pending[e.target_id] -= 1
            if pending[e.target_id] == 0:
                target = stream_graph.node(e.target_id)
                heapq.heappush(ready, (sort_key(target), position[target.id], target.id))
    if len(order) != len(stream_graph.nodes):
        placed = set(order)
        cyclic = [n.name for n in stream_graph.nodes if n.id not in placed]
        raise InvalidProgramError(
            f"stream graph {stream_graph.job_name!r} has a cycle through {cyclic}; "
            f"iterations are not supported, build the dataflow as a DAG")
    return order
