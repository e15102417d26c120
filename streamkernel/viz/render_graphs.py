"""Pure functions from the three plan graphs to the rendered model.

* :func:`render_stream_graph` — one box per operator (name, parallelism, non-default
  placement hints), arrows labelled with the partitioner.
* :func:`render_job_graph` — one box per job vertex: its chained operators one per line,
  then its parallelism. Chaining is what this picture teaches.
* :func:`render_execution_graph` — one box per subtask, framed by TaskManager and slot,
  with the slot summary in the title. Slot sharing is what this picture teaches.

``highlight`` is always a collection of StreamNode ids (the ids of the transformations the
DataStream API created), whichever graph is drawn: a job vertex is highlighted when it
chains a highlighted operator, a subtask when its job vertex is. The notebook uses this to
mark what the last cell added.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from streamkernel.graph.execution_graph import ExecutionGraph, ExecutionVertex
from streamkernel.graph.job_graph import JobGraph, JobVertex
from streamkernel.graph.stream_graph import StreamEdge, StreamGraph, StreamNode
from streamkernel.graph.transformations import DEFAULT_SLOT_SHARING_GROUP, ChainingStrategy
from streamkernel.viz.rendered import NodeKind, RenderedCluster, RenderedEdge, RenderedGraph, RenderedNode

__all__ = ["render_stream_graph", "render_job_graph", "render_execution_graph"]


# --------------------------------------------------------------------------- StreamGraph

def render_stream_graph(sg: StreamGraph, highlight: Collection[int] = frozenset()) -> RenderedGraph:
    """Draw the logical dataflow: one box per operator, one arrow per StreamGraph edge.

    Each box shows the operator name and ``parallelism N``, then only what differs from
    the defaults: ``uid``, slot sharing group, a configured max parallelism, and chaining
    hints (``disable_chaining`` / ``start_new_chain``). Arrows carry the partitioner's
    name, the side-output tag (dashed arrow) and the input number of two-input operators.

    >>> from streamkernel.graph.stream_graph import build_stream_graph
    >>> from streamkernel.graph.operator_specs import MapSpec, SourceSpec
    >>> from streamkernel.graph.transformations import SourceTransformation, OneInputTransformation
    >>> src = SourceTransformation("numbers", SourceSpec(source=[1, 2, 3]), 1)
    >>> m = OneInputTransformation("Map", src, MapSpec(function=str), 2)
    >>> g = render_stream_graph(build_stream_graph([m]), highlight={m.id})
    >>> [(n.name, n.highlighted) for n in g.nodes]
    [('Source: numbers', False), ('Map', True)]
    >>> g.edges[0].label
    'REBALANCE'
    """
    marked = frozenset(highlight)
    nodes = tuple(
        RenderedNode(id=_stream_node_id(n.id), lines=_stream_node_lines(n), kind=_stream_node_kind(n),
                     highlighted=n.id in marked, tooltip=_stream_node_tooltip(n))
        for n in sg.nodes
    )
    edges = tuple(_stream_edge(e, _stream_node_id(e.source_id), _stream_node_id(e.target_id)) for e in sg.edges)
    title = f"StreamGraph: {sg.job_name}"
    if not sg.chaining_enabled:
        title += "\noperator chaining disabled"
    return RenderedGraph(title=title, nodes=nodes, edges=edges)


def _stream_node_id(node_id: int) -> str:
    return f"n{node_id}"


def _stream_node_kind(n: StreamNode) -> NodeKind:
    if n.is_source:
        return "source"
    if n.is_sink:
        return "sink"
    return "operator"


def _stream_node_lines(n: StreamNode) -> tuple[str, ...]:
    lines = [n.name, f"parallelism {n.parallelism}"]
    if n.uid:
        lines.append(f"uid: {n.uid}")
    if n.slot_sharing_group != DEFAULT_SLOT_SHARING_GROUP:
        lines.append(f"slot sharing group: {n.slot_sharing_group}")
    if n.max_parallelism_configured:
        lines.append(f"max parallelism {n.max_parallelism}")
    if n.chaining_strategy is ChainingStrategy.NEVER:
        lines.append("chaining disabled")
    elif n.chaining_strategy is ChainingStrategy.HEAD and not n.is_source:
        lines.append("starts a new chain")
    return tuple(lines)


def _stream_node_tooltip(n: StreamNode) -> str:
    parts = [n.name, f"operator {n.id} ({n.operator.kind})", f"max parallelism {n.max_parallelism}"]
    if n.is_keyed:
        parts.append("keyed state")
    if n.description:
        parts.append(n.description)
    return "\n".join(parts)


def _stream_edge(e: StreamEdge, source: str, target: str) -> RenderedEdge:
    lines = [e.label]
    if e.output_tag is not None:
        lines.append(f"side output: {_tag_name(e.output_tag)}")
    if e.type_number:
        lines.append(f"input {e.type_number}")
    return RenderedEdge(source, target, "\n".join(lines), "dashed" if e.output_tag is not None else "solid")


def _tag_name(tag: Any) -> str:
    tag_id = getattr(tag, "tag_id", None)
    return str(tag_id if tag_id is not None else tag)


# --------------------------------------------------------------------------- JobGraph

def render_job_graph(jg: JobGraph, highlight: Collection[int] = frozenset()) -> RenderedGraph:
    """Draw the chained plan: one box per job vertex (one Task per subtask).

    A box lists the vertex's chained operators one per line, head first, then
    ``parallelism N`` (and the slot sharing group when not ``default``). Its kind is
    ``source`` when the chain starts at a source, ``chain`` when it fuses several
    operators, otherwise the kind of its single operator. Arrows are the edges that were
    *not* chained, labelled like StreamGraph edges.
    """
    marked = frozenset(highlight)
    nodes = []
    for v in jg.vertices:
        operators = _chained_operators(jg, v)
        names = [op.name for op in operators] if operators else v.name.split(" -> ")
        lines = [*names, f"parallelism {v.parallelism}"]
        if v.slot_sharing_group != DEFAULT_SLOT_SHARING_GROUP:
            lines.append(f"slot sharing group: {v.slot_sharing_group}")
        nodes.append(RenderedNode(
            id=_job_vertex_id(v.id), lines=tuple(lines), kind=_job_vertex_kind(operators, len(names)),
            highlighted=any(i in marked for i in v.operator_ids),
            tooltip=f"{v.name}\njob vertex {v.id}, max parallelism {v.max_parallelism}",
        ))
    edges = tuple(_stream_edge(e.stream_edge, _job_vertex_id(e.source_vertex_id), _job_vertex_id(e.target_vertex_id))
                  for e in jg.edges)
    return RenderedGraph(title=f"JobGraph: {jg.job_name}", nodes=tuple(nodes), edges=edges)


def _job_vertex_id(vertex_id: int) -> str:
    return f"v{vertex_id}"


def _chained_operators(jg: JobGraph, v: JobVertex) -> tuple[StreamNode, ...]:
    """The vertex's stream nodes; empty when the JobGraph's StreamGraph lacks them."""
    try:
        return jg.operators(v.id)
    except KeyError:
        return ()


def _job_vertex_kind(operators: tuple[StreamNode, ...], count: int) -> NodeKind:
    if operators and operators[0].is_source:
        return "source"
    if count > 1:
        return "chain"
    if operators and operators[0].is_sink:
        return "sink"
    return "operator"


# --------------------------------------------------------------------------- ExecutionGraph

def render_execution_graph(eg: ExecutionGraph, highlight: Collection[int] = frozenset()) -> RenderedGraph:
    """Draw the deployed job: one box per subtask, framed TaskManager > slot.

    Boxes are named as Flink names tasks (``Map -> Filter (2/4)``); frames are
    ``TaskManager 1`` containing ``Slot 1``, ``Slot 2`` ... (1-based, only slots in use);
    subtasks without a slot stand outside every frame. The title's second line is the
    slot summary: subtasks, slots needed against slots offered, slot sharing on/off.

    Arrows are channels, grouped per (upstream vertex, downstream vertex, partitioner).
    A group is drawn channel by channel when it is pointwise — no more channels than
    subtasks on its wider side (FORWARD, RESCALE, fan-out from or fan-in to a single
    subtask) — or small enough to stay readable (at most ``FULL_CHANNELS_LIMIT``
    channels: a 4 x 4 shuffle is drawn in full, as the teaching examples need; only its
    first arrow carries the label). Larger groups (HASH, REBALANCE, BROADCAST ... between
    wide operators) collapse into one bold arrow between the first subtasks, labelled e.g.
    ``HASH`` / ``all-to-all: 8 x 8 channels``; invisible arrows to the other downstream
    subtasks keep them laid out after their inputs.
    """
    jg = eg.job_graph
    marked = frozenset(highlight)
    marked_vertices = {v.id for v in jg.vertices if any(i in marked for i in v.operator_ids)}
    order = {v.id: i for i, v in enumerate(jg.vertices)}

    clusters: list[RenderedCluster] = []
    for slot in eg.used_slots:  # sorted: a TaskManager's slots follow its own frame
        tm_id = _taskmanager_cluster_id(slot.taskmanager_index)
        if all(c.id != tm_id for c in clusters):
            clusters.append(RenderedCluster(tm_id, f"TaskManager {slot.taskmanager_index + 1}"))
        clusters.append(RenderedCluster(_slot_cluster_id(slot.taskmanager_index, slot.slot_index),
                                        f"Slot {slot.slot_index + 1}", parent=tm_id))

    def placement(ev: ExecutionVertex) -> tuple:
        slot_key = (0, ev.slot.taskmanager_index, ev.slot.slot_index) if ev.slot is not None else (1, 0, 0)
        return (*slot_key, order.get(ev.job_vertex_id, len(order)), ev.job_vertex_id, ev.subtask_index)

    nodes = tuple(
        RenderedNode(
            id=_subtask_id(ev.job_vertex_id, ev.subtask_index), lines=(ev.name,), kind="subtask",
            highlighted=ev.job_vertex_id in marked_vertices,
            cluster=_slot_cluster_id(ev.slot.taskmanager_index, ev.slot.slot_index) if ev.slot else None,
            tooltip=f"{ev.name}\n{ev.slot if ev.slot is not None else 'not placed'}",
        )
        for ev in sorted(eg.vertices, key=placement)
    )
    return RenderedGraph(title=_execution_title(eg), nodes=nodes, edges=_channel_edges(eg), clusters=tuple(clusters))


def _taskmanager_cluster_id(tm: int) -> str:
    return f"tm{tm + 1}"


def _slot_cluster_id(tm: int, slot: int) -> str:
    return f"tm{tm + 1}_slot{slot + 1}"


def _subtask_id(vertex_id: int, subtask_index: int) -> str:
    return f"t{vertex_id}_{subtask_index}"


def _execution_title(eg: ExecutionGraph) -> str:
    def count(n: int, word: str) -> str:
        return f"{n} {word}" if n == 1 else f"{n} {word}s"

    summary = (f"{count(len(eg.vertices), 'subtask')}; {count(eg.slots_needed, 'slot')} needed, "
               f"{eg.total_slots} offered ({count(eg.taskmanagers, 'TaskManager')} x "
               f"{count(eg.slots_per_taskmanager, 'slot')}); slot sharing {'on' if eg.slot_sharing else 'off'}")
    if eg.slots_needed > eg.total_slots:
        summary += "; NOT ENOUGH SLOTS"
    return f"ExecutionGraph: {eg.job_graph.job_name}\n{summary}"


#: all-to-all channel groups up to this size are drawn arrow by arrow
FULL_CHANNELS_LIMIT = 16


def _channel_edges(eg: ExecutionGraph) -> tuple[RenderedEdge, ...]:
    """Subtask-to-subtask arrows, pointwise groups in full, all-to-all groups collapsed."""
    known = {(ev.job_vertex_id, ev.subtask_index) for ev in eg.vertices}
    groups: dict[tuple[int, int, str], list[tuple[int, int]]] = {}
    for ch in eg.edges:
        if ch.source not in known or ch.target not in known:
            continue  # a channel to a subtask the graph does not hold: nothing to draw
        key = (ch.source[0], ch.target[0], ch.partitioner_name)
        groups.setdefault(key, []).append((ch.source[1], ch.target[1]))
    edges: list[RenderedEdge] = []
    for (src_vertex, dst_vertex, name), pairs in groups.items():
        pairs = list(dict.fromkeys(pairs))
        sources = sorted({s for s, _ in pairs})
        targets = sorted({t for _, t in pairs})
        if len(pairs) <= max(len(sources), len(targets)):
            edges.extend(RenderedEdge(_subtask_id(src_vertex, s), _subtask_id(dst_vertex, t), name)
                         for s, t in pairs)
            continue
        if len(pairs) <= FULL_CHANNELS_LIMIT:
            edges.extend(RenderedEdge(_subtask_id(src_vertex, s), _subtask_id(dst_vertex, t), name if i == 0 else "")
                         for i, (s, t) in enumerate(pairs))
            continue
        if len(pairs) == len(sources) * len(targets):
            note = f"all-to-all: {len(sources)} x {len(targets)} channels"
        else:
            note = f"{len(pairs)} channels between {len(sources)} and {len(targets)} subtasks"
        first = _subtask_id(src_vertex, sources[0])
        edges.append(RenderedEdge(first, _subtask_id(dst_vertex, targets[0]), f"{name}\n{note}", "bold"))
        edges.extend(RenderedEdge(first, _subtask_id(dst_vertex, t), "", "invis") for t in targets[1:])
    return tuple(edges)

