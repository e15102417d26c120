"""The plan as PyFlink shows it: the StreamGraph with PyFlink's hidden Python operators, chained.

A PyFlink program's ``env.get_execution_plan()`` does not show its DataStream calls one to
one. PyFlink adds Python operators of its own, and merges consecutive Python operators into
one before it builds the plan (Flink's ``PythonOperatorChainingOptimizer``):

- ``key_by`` runs the key selector in a Python operator named ``_stream_key_by_map_operator``
  (at the parallelism of its input) that feeds the HASH partitioning;
- ``print()`` of a stream without a declared type, or of a ``Types.ROW`` stream, first maps each
  record to its text in a ``Map`` (at the environment's parallelism);
- ``get_side_output(tag)`` maps the side output through an identity ``Map`` typed with the tag's type;
- ``assign_timestamps_and_watermarks`` with a TimestampAssigner runs it in an ``Extract-Timestamp``
  Python operator before Flink's ``Timestamps/Watermarks`` and a ``Remove-Timestamp`` map after;
- ``sum``/``min``/``max``... are PyFlink ``Reduce`` operators; a window operator is named after its
  assigner's class (``TumblingEventTimeWindows``);
- a non-keyed Python one-input operator (map, filter, flat_map, process and the maps above)
  merges into its Python input operator when the edge between them is FORWARD, both have the
  same parallelism, max parallelism and slot sharing group, the input feeds nothing else and
  chaining is allowed (neither ``disable_chaining`` nor ``start_new_chain`` on the second).
  The merged node is named ``"<first>, <second>"`` and gets a new id, larger than the others.

:func:`pyflink_plan_nodes` returns these nodes; ``plan_json`` writes them as Flink's JSON.
Ids are not PyFlink's (its are Java transformation ids, counted over the process, including ids
its Java side takes for transformations it never shows).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional

from streamkernel.graph.job_graph import _topological_node_ids
from streamkernel.graph.operator_specs import SinkSpec, TimestampsWatermarksSpec, WindowSpec
from streamkernel.graph.stream_graph import StreamGraph, StreamNode

__all__ = ["PlanNode", "PlanInput", "pyflink_plan_nodes"]

KEY_BY_OPERATOR_NAME = "_stream_key_by_map_operator"
# operators PyFlink runs in Python and may chain a following Python operator to
_PYTHON_KINDS = frozenset({"map", "flat_map", "filter", "process", "keyed_process", "reduce", "window",
                           "count_window", "co_map", "co_flat_map", "co_process", "keyed_co_process"})
# the non-keyed one-input ones (ExternalPythonProcessOperator), which may be chained to their input
_CHAINABLE_DOWN_KINDS = frozenset({"map", "flat_map", "filter", "process"})


@dataclass(frozen=True)
class PlanInput:
    """An input of a plan node: the node it comes from and how records are shipped."""

    source_id: int
    ship_strategy: str
    side_output: bool = False


@dataclass
class PlanNode:
    """One node of the plan as PyFlink shows it."""

    id: int
    name: str
    description: Optional[str]
    parallelism: int
    pact: str
    inputs: list[PlanInput] = field(default_factory=list)
    max_parallelism: int = -1
    slot_sharing_group: str = "default"
    chaining_strategy: str = "ALWAYS"
    python: bool = False      # a PyFlink Python operator (may be chained to)
    chainable_down: bool = False  # a non-keyed Python one-input operator (may be chained)
    is_sink: bool = False
    members: tuple[int, ...] = ()  # the StreamGraph nodes merged into this node
    vertex_of: int = 0        # the StreamGraph node whose job vertex (chain) runs this node
    order_key: float = 0.0    # the order PyFlink creates the node in (its place among ids)

    @property
    def contents(self) -> str:
        """The plan's ``contents``: the description, else the name (Flink's JSONGenerator)."""
        return self.description or self.name


def pyflink_plan_nodes(stream_graph: StreamGraph, default_parallelism: Optional[int] = None) -> list[PlanNode]:
    """The plan nodes of ``stream_graph`` as PyFlink shows them, in Flink's order (by id, sinks last,
    every node after its inputs)."""
    nodes: dict[int, PlanNode] = {}
    fresh = _Ids(max((n.id for n in stream_graph.nodes), default=0))
    if default_parallelism is None:
        default_parallelism = int(stream_graph.configuration.get("parallelism.default", 0) or 0) or None
    key_ops: dict[tuple[int, int], int] = {}
    side_maps: dict[tuple[int, str], int] = {}
    removes: dict[int, int] = {}  # Timestamps/Watermarks node -> the Remove-Timestamp after it
    for node_id in _topological_node_ids(stream_graph, key=lambda n: (n.is_sink, n.id)):
        node = stream_graph.node(node_id)
        plan_node = _plan_node(node)
        nodes[node.id] = plan_node
        extract = _assigns_timestamps_in_python(node)
        for edge in stream_graph.in_edges(node.id):
            source_id = removes.get(edge.source_id, edge.source_id)
            upstream = stream_graph.node(edge.source_id)
            if extract:  # the TimestampAssigner runs in Python before Flink's watermark operator
                source_id = _add_hidden(nodes, fresh, "Extract-Timestamp", node.parallelism, upstream,
                                        PlanInput(source_id, edge.partitioner.name), node.id, node.id - 0.5)
                same = nodes[source_id].parallelism == node.parallelism  # print().set_parallelism(1): not
                plan_node.inputs.append(PlanInput(source_id, "FORWARD" if same else "REBALANCE"))
                continue
            if edge.output_tag is not None:  # get_side_output(tag): an identity Map typed with the tag
                tag = getattr(edge.output_tag, "tag_id", str(edge.output_tag))
                if (source_id, tag) not in side_maps:
                    side_maps[(source_id, tag)] = _add_hidden(
                        nodes, fresh, "Map", _creation_parallelism(node, default_parallelism), upstream,
                        PlanInput(source_id, "FORWARD", side_output=True),
                        edge.source_id if edge.partitioner.name == "FORWARD" else node.id, node.id - 0.5)
                source_id = side_maps[(source_id, tag)]
            if edge.partitioner.name == "HASH":  # key_by: one key-by operator per keyed stream
                selector = getattr(edge.partitioner, "key_selector", edge.partitioner)
                if (source_id, id(selector)) not in key_ops:
                    key_ops[(source_id, id(selector))] = _add_hidden(
                        nodes, fresh, KEY_BY_OPERATOR_NAME, nodes[source_id].parallelism, upstream,
                        PlanInput(source_id, "FORWARD"), nodes[source_id].vertex_of, node.id - 0.5)
                source_id = key_ops[(source_id, id(selector))]
            if node.is_sink and _prints_text_of_python_objects(node):
                to_text = _creation_parallelism(node, default_parallelism)
                strategy = edge.partitioner.name
                if edge.implicit:  # chosen between upstream and the sink: now between upstream and the map
                    strategy = "FORWARD" if nodes[source_id].parallelism == to_text else "REBALANCE"
                source_id = _add_hidden(nodes, fresh, "Map", to_text, upstream,
                                        PlanInput(source_id, strategy), node.id, node.id - 0.5)
                same = nodes[source_id].parallelism == node.parallelism  # print().set_parallelism(1): not
                plan_node.inputs.append(PlanInput(source_id, "FORWARD" if same else "REBALANCE"))
                continue
            plan_node.inputs.append(PlanInput(source_id, edge.partitioner.name))
        if extract:  # and a Java map drops the extracted timestamp again
            removes[node.id] = _add_hidden(nodes, fresh, "Remove-Timestamp", node.parallelism, node,
                                           PlanInput(node.id, "FORWARD"), node.id, node.id + 0.5)
            nodes[removes[node.id]].python = nodes[removes[node.id]].chainable_down = False
    nodes = _numbered_in_creation_order(nodes, fresh)
    if str(stream_graph.configuration.get("python.operator-chaining.enabled", "true")).lower() != "false":
        _chain_python_operators(nodes, fresh)
    return _ordered(nodes)


class _Ids:
    """New node ids, after every id of the StreamGraph."""

    def __init__(self, last: int) -> None:
        self.last = last

    def next(self) -> int:
        self.last += 1
        return self.last


def _plan_node(node: StreamNode) -> PlanNode:
    kind, name = node.operator.kind, node.name
    if kind == "aggregation" and name == "Keyed Aggregation":  # PyFlink's sum/min/max... are reduce()
        name, kind = "Reduce", "reduce"
    elif isinstance(node.operator, WindowSpec) and name.startswith("Window("):  # PyFlink: the assigner's class
        name = type(node.operator.window_assigner).__name__
    return PlanNode(
        id=node.id, name=name, description=node.description, parallelism=node.parallelism,
        pact="Data Source" if node.is_source else "Data Sink" if node.is_sink else "Operator",
        max_parallelism=node.max_parallelism, slot_sharing_group=node.slot_sharing_group,
        chaining_strategy=node.chaining_strategy.name, python=kind in _PYTHON_KINDS,
        chainable_down=kind in _CHAINABLE_DOWN_KINDS and not any(node.state_key_selectors), is_sink=node.is_sink,
        members=(node.id,), vertex_of=node.id, order_key=float(node.id))


def _creation_parallelism(node: StreamNode, default_parallelism: Optional[int]) -> int:
    """The parallelism of a Map PyFlink inserts in front of ``node`` (``print()``'s map to text,
    ``get_side_output``'s identity map): the environment's when the map was created, which is
    ``node``'s own unless ``set_parallelism`` changed ``node`` afterwards."""
    if not node.parallelism_configured or default_parallelism is None:
        return node.parallelism
    return default_parallelism


def _add_hidden(nodes: dict[int, PlanNode], fresh: _Ids, name: str, parallelism: int, upstream: StreamNode,
                plan_input: PlanInput, vertex_of: int, order_key: float) -> int:
    """Adds one of PyFlink's own Python operators, run in the chain of StreamGraph node ``vertex_of``; its id."""
    node_id = fresh.next()
    nodes[node_id] = PlanNode(id=node_id, name=name, description=None, parallelism=parallelism, pact="Operator",
                              inputs=[plan_input], max_parallelism=upstream.max_parallelism,
                              slot_sharing_group=upstream.slot_sharing_group, python=True, chainable_down=True,
                              vertex_of=vertex_of, order_key=order_key)
    return node_id


def _assigns_timestamps_in_python(node: StreamNode) -> bool:
    """True for ``assign_timestamps_and_watermarks`` with a TimestampAssigner (PyFlink runs it in
    an ``Extract-Timestamp`` Python operator and removes the timestamp in ``Remove-Timestamp``)."""
    strategy = node.operator.watermark_strategy if isinstance(node.operator, TimestampsWatermarksSpec) else None
    return getattr(strategy, "_timestamp_assigner", None) is not None


def _prints_text_of_python_objects(sink: StreamNode) -> bool:
    """True for ``print()`` of a stream PyFlink maps to text in Python first: records without a
    declared type (pickled) and Rows (PyFlink's ``DataStream._align_output_type``)."""
    from streamkernel.common.typeinfo import PickledBytesTypeInfo, RowTypeInfo
    from streamkernel.datastream.connectors.print_sink import PrintSink

    if not isinstance(sink.operator, SinkSpec) or not isinstance(sink.operator.sink, PrintSink):
        return False
    input_type = sink.operator.input_type
    return input_type is None or isinstance(input_type, (PickledBytesTypeInfo, RowTypeInfo))


def _chain_python_operators(nodes: dict[int, PlanNode], fresh: _Ids) -> None:
    """Merges each chainable Python operator into its Python input, as PyFlink does."""
    changed = True
    while changed:
        changed = False
        outputs: dict[int, int] = {}
        for n in nodes.values():
            for i in n.inputs:
                outputs[i.source_id] = outputs.get(i.source_id, 0) + 1
        for down in sorted(nodes.values(), key=lambda n: n.id):
            if not down.chainable_down or len(down.inputs) != 1:
                continue
            link = down.inputs[0]
            up = nodes[link.source_id]
            if (not up.python or link.ship_strategy != "FORWARD" or link.side_output
                    or outputs.get(up.id) != 1 or up.parallelism != down.parallelism
                    or up.max_parallelism != down.max_parallelism
                    or up.slot_sharing_group != down.slot_sharing_group
                    or up.chaining_strategy == "NEVER" or down.chaining_strategy != "ALWAYS"):
                continue
            merged = replace(up, id=fresh.next(), name=f"{up.name}, {down.name}",
                             description=_merged_description(up.description, down.description),
                             inputs=list(up.inputs),
                             chainable_down=up.chainable_down, members=up.members + down.members,
                             order_key=min(up.order_key, down.order_key))
            del nodes[up.id], nodes[down.id]
            nodes[merged.id] = merged
            for n in nodes.values():
                n.inputs = [replace(i, source_id=merged.id) if i.source_id == down.id else i for i in n.inputs]
            changed = True
            break


def _merged_description(up: Optional[str], down: Optional[str]) -> Optional[str]:
    """The description of a merged operator, as PythonOperatorChainingOptimizer joins them."""
    if up is not None and down is not None:
        return f"{up}, {down}"
    return up if up is not None else down


def _numbered_in_creation_order(nodes: dict[int, PlanNode], fresh: _Ids) -> dict[int, PlanNode]:
    """The nodes with ids in the order PyFlink creates them (its own operators where its API calls
    make them), from the smallest StreamGraph id on; merged nodes get ids after these."""
    ordered = sorted(nodes.values(), key=lambda n: n.order_key)  # stable: ties keep creation order
    first = min(nodes, default=1)
    new_id = {n.id: first + rank for rank, n in enumerate(ordered)}
    renumbered = {}
    for n in ordered:
        n.id = new_id[n.id]
        n.inputs = [replace(i, source_id=new_id[i.source_id]) for i in n.inputs]
        renumbered[n.id] = n
    fresh.last = max(renumbered, default=0)
    return renumbered


def _ordered(nodes: dict[int, PlanNode]) -> list[PlanNode]:
    """Every node after its inputs; among ready nodes by (is sink, id)."""
    import heapq

    pending = {n.id: len(n.inputs) for n in nodes.values()}
    consumers: dict[int, list[int]] = {}
    for n in nodes.values():
        for i in n.inputs:
            consumers.setdefault(i.source_id, []).append(n.id)
    ready = [(n.is_sink, n.id) for n in nodes.values() if not n.inputs]
    heapq.heapify(ready)
    order: list[PlanNode] = []
    while ready:
        node = nodes[heapq.heappop(ready)[1]]
        order.append(node)
        for target in consumers.get(node.id, []):
            pending[target] -= 1
            if pending[target] == 0:
                heapq.heappush(ready, (nodes[target].is_sink, target))
    return order


def pyflink_chain_names(stream_graph: StreamGraph, head_of: dict[int, int]) -> dict[int, str]:
    """The name PyFlink's task of each chain has, by chain head id: Flink's chain name
    (``A -> B``, ``A -> (B, C)``) over the plan's nodes, where merged Python operators are one
    operator (``Map, Filter``) and PyFlink's own operators are chained where they run.

    ``head_of`` maps every StreamGraph node to the head of its chain (its job vertex)."""
    nodes = {n.id: n for n in pyflink_plan_nodes(stream_graph)}
    vertex = {n.id: head_of.get(n.vertex_of, n.vertex_of) for n in nodes.values()}
    children: dict[int, list[PlanNode]] = {}
    chained_input: set[int] = set()
    for n in nodes.values():  # as in Flink, only an operator with one input is chained to it
        if len(n.inputs) == 1 and vertex.get(n.inputs[0].source_id) == vertex[n.id]:
            children.setdefault(n.inputs[0].source_id, []).append(n)
            chained_input.add(n.id)

    def name(n: PlanNode) -> str:
        chained = sorted(children.get(n.id, []), key=lambda c: c.order_key)
        if len(chained) == 1:
            return f"{n.name} -> {name(chained[0])}"
        if chained:
            return f"{n.name} -> ({', '.join(name(c) for c in chained)})"
        return n.name

    names: dict[int, str] = {}
    for head_id in set(head_of.values()):
        roots = [n for n in nodes.values() if vertex[n.id] == head_id and n.id not in chained_input]
        root = next((n for n in roots if head_id in n.members), roots[0] if roots else None)
        if root is not None:
            names[head_id] = name(root)
    return names


def describe(nodes: list[PlanNode]) -> list[tuple[Any, ...]]:
    """A compact view for debugging: (id, name, parallelism, [(input, ship strategy)])."""
    return [(n.id, n.name, n.parallelism, [(i.source_id, i.ship_strategy) for i in n.inputs]) for n in nodes]
