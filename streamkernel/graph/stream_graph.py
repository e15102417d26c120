"""The StreamGraph: the logical dataflow, one node per operator, one edge per connection.

Built from an environment's transformations by :func:`build_stream_graph`, a pure
function, as Flink's ``StreamGraphGenerator`` does: physical transformations become
:class:`StreamNode` s; partition, union and side-output transformations are virtual and
become properties of the :class:`StreamEdge` s instead. An edge without an explicit
partitioner is FORWARD when both sides have the same parallelism and REBALANCE
otherwise.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Optional, Sequence

from streamkernel.errors import InvalidProgramError
from streamkernel.graph.keygroups import default_max_parallelism
from streamkernel.graph.operator_specs import OperatorSpec
from streamkernel.graph.partitioners import (
    CustomPartitionerWrapper,
    ForwardPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    StreamPartitioner,
)
from streamkernel.graph.transformations import (
    DEFAULT_SLOT_SHARING_GROUP,
    ChainingStrategy,
    PartitionTransformation,
    SideOutputTransformation,
    SinkTransformation,
    SourceTransformation,
    Transformation,
    TwoInputTransformation,
    UnionTransformation,
)

__all__ = ["StreamNode", "StreamEdge", "StreamGraph", "build_stream_graph"]


@dataclass(frozen=True, eq=False)
class StreamNode:
    """One operator of the dataflow, with everything the later graphs need to place it."""

    id: int
    name: str
    operator: OperatorSpec
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    chaining_strategy: ChainingStrategy
    uid: Optional[str] = None
    description: Optional[str] = None
    buffer_timeout: Optional[int] = None
    max_parallelism_configured: bool = False
    #: set_parallelism was called on the operator (else it took the environment's at creation)
    parallelism_configured: bool = False
    state_key_selectors: tuple[Any, ...] = ()
    output_type: Any = None
    #: key_by's ``key_type`` of a keyed one-input operator (None: pickled keys), for BATCH's key order
    state_key_type: Any = None
    generated_id: str = ""

    @property
    def operator_id(self) -> str:
        """The name the operator's state goes by in checkpoints: its uid, else ``node-<generated id>``.

        The generated id (Flink's StreamGraphHasherV2) hashes the operator's position in the
        program and its inputs' ids, so the same program built twice, in this kernel or in
        another process, maps its state to the same operators without uids. Set ``uid()``
        on stateful operators anyway, as Flink advises: a changed program keeps its state.
        """
        return self.uid or f"node-{self.generated_id or self.id}"

    @property
    def is_source(self) -> bool:
        """True when this operator reads from outside the dataflow."""
        return self.operator.is_source

    @property
    def is_sink(self) -> bool:
        """True when this operator writes outside the dataflow."""
        return self.operator.is_sink

    @property
    def is_keyed(self) -> bool:
        """True when this operator keeps keyed state (it reads a key_by stream)."""
        return any(k is not None for k in self.state_key_selectors)


@dataclass(frozen=True, eq=False)
class StreamEdge:
    """A connection from ``source_id`` to ``target_id`` through ``partitioner``.

    ``type_number`` is 1 or 2 for the inputs of a two-input operator (connect) and 0
    otherwise; ``output_tag`` is set when the edge carries a side output; ``implicit`` when
    the program named no partitioning (FORWARD or REBALANCE chosen by the parallelisms).
    """

    source_id: int
    target_id: int
    partitioner: StreamPartitioner
    type_number: int = 0
    output_tag: Any = None
    implicit: bool = False

    @property
    def label(self) -> str:
        """The partitioner's name, as Flink labels edges (FORWARD, HASH, ...)."""
        return self.partitioner.name


@dataclass(frozen=True, eq=False)
class StreamGraph:
    """The logical plan of a job: nodes in topological order, edges between them.

    ``configuration`` is a snapshot of the environment's settings (checkpointing, state
    backend, restart strategy, buffer timeout ...) as configuration keys.
    """

    job_name: str
    nodes: tuple[StreamNode, ...]
    edges: tuple[StreamEdge, ...]
    chaining_enabled: bool = True
    configuration: Mapping[str, Any] = field(default_factory=dict)

    def node(self, node_id: int) -> StreamNode:
        """The node with this id."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(f"no stream node with id {node_id}")

    def in_edges(self, node_id: int) -> tuple[StreamEdge, ...]:
        """Edges that end at ``node_id``, in input order."""
        return tuple(e for e in self.edges if e.target_id == node_id)

    def out_edges(self, node_id: int) -> tuple[StreamEdge, ...]:
        """Edges that start at ``node_id``."""
        return tuple(e for e in self.edges if e.source_id == node_id)

    @property
    def sources(self) -> tuple[StreamNode, ...]:
        """The nodes that read from outside the dataflow."""
        return tuple(n for n in self.nodes if n.is_source)

    @property
    def sinks(self) -> tuple[StreamNode, ...]:
        """The nodes that write outside the dataflow."""
        return tuple(n for n in self.nodes if n.is_sink)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        # Lazy on purpose: graph/ must not import viz/ at module level (layering).
        from streamkernel.viz.display import graph_mimebundle

        return graph_mimebundle(self)

    def __repr__(self) -> str:
        return f"StreamGraph({self.job_name!r}, {len(self.nodes)} nodes, {len(self.edges)} edges)"


@dataclass(frozen=True)
class _Upstream:
    """A physical node reached through zero or more virtual transformations."""

    node_id: int
    partitioner: Optional[StreamPartitioner]
    output_tag: Any


def build_stream_graph(
    transformations: Iterable[Transformation],
    *,
    job_name: str = "Flink Streaming Job",
    default_max_parallelism_setting: Optional[int] = None,
    chaining_enabled: bool = True,
    configuration: Optional[Mapping[str, Any]] = None,
) -> StreamGraph:
    """Turn transformations (and everything they read from) into a StreamGraph.

    ``default_max_parallelism_setting`` is the environment's max parallelism (None: Flink's
    default, derived from each operator's parallelism).
    """
    ordered = _topological(transformations)
    physical = {t.id: t for t in ordered if t.is_physical}
    groups: dict[int, str] = {}
    nodes: list[StreamNode] = []
    edges: list[StreamEdge] = []
    generated: dict[int, str] = {}
    for t in ordered:
        if not t.is_physical:
            continue
        upstream_by_input = [_resolve(i) for i in t.inputs]
        generated[t.id] = _generated_id(len(nodes), t.operator.kind,  # type: ignore[attr-defined]
                                        [generated[u.node_id] for ups in upstream_by_input for u in ups])
        groups[t.id] = _slot_sharing_group(t, [u.node_id for ups in upstream_by_input for u in ups], groups)
        max_par, configured = _max_parallelism(t, default_max_parallelism_setting)
        nodes.append(StreamNode(
            id=t.id, name=_node_name(t), operator=t.operator, parallelism=t.parallelism,  # type: ignore[attr-defined]
            max_parallelism=max_par, slot_sharing_group=groups[t.id],
            chaining_strategy=t.chaining_strategy, uid=t.uid, description=t.description,
            buffer_timeout=t.buffer_timeout, max_parallelism_configured=configured,
            parallelism_configured=t.parallelism_configured,
            state_key_selectors=_state_keys(t), output_type=t.output_type, generated_id=generated[t.id],
            state_key_type=getattr(t, "state_key_type", None),
        ))
        two_input = isinstance(t, TwoInputTransformation)
        for input_index, ups in enumerate(upstream_by_input):
            for up in ups:
                edges.append(_edge(physical[up.node_id], t, up, max_par,
                                   type_number=input_index + 1 if two_input else 0))
    return StreamGraph(job_name=job_name, nodes=tuple(nodes), edges=tuple(edges),
                       chaining_enabled=chaining_enabled, configuration=dict(configuration or {}))


def _generated_id(position: int, kind: str, input_ids: list[str]) -> str:
    """A node's id from its position among the program's operators, its kind and its inputs' ids."""
    text = "|".join([str(position), kind, *input_ids])
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _topological(transformations: Iterable[Transformation]) -> list[Transformation]:
    """All transformations reachable from the given ones, inputs before consumers, by id."""
    seen: dict[int, Transformation] = {}
    stack = list(transformations)
    while stack:
        t = stack.pop()
        if t.id not in seen:
            seen[t.id] = t
            stack.extend(t.inputs)
    # ids grow with creation and an input always exists before its consumer.
    return [seen[i] for i in sorted(seen)]


def _resolve(t: Transformation) -> list[_Upstream]:
    """The physical nodes behind ``t``, with the partitioner/side output on the way."""
    if t.is_physical:
        return [_Upstream(t.id, None, None)]
    result: list[_Upstream] = []
    for inner in t.inputs:
        for up in _resolve(inner):
            if isinstance(t, PartitionTransformation):
                up = replace(up, partitioner=t.partitioner)
            elif isinstance(t, SideOutputTransformation):
                up = replace(up, output_tag=t.output_tag)
            elif not isinstance(t, UnionTransformation):  # pragma: no cover - defensive
                raise InvalidProgramError(f"unknown virtual transformation {t!r}")
            result.append(up)
    return result


def _edge(up: Transformation, down: Transformation, via: _Upstream, down_max_par: int,
          type_number: int) -> StreamEdge:
    partitioner = via.partitioner
    if partitioner is None:
        partitioner = ForwardPartitioner() if up.parallelism == down.parallelism else RebalancePartitioner()
    elif isinstance(partitioner, ForwardPartitioner) and up.parallelism != down.parallelism:
        raise InvalidProgramError(
            f"Forward partitioning does not allow change of parallelism. Upstream operation: "
            f"{up.name!r} parallelism {up.parallelism}, downstream operation: {down.name!r} "
            f"parallelism {down.parallelism}. Use another partitioning strategy, such as "
            f"rebalance(), rescale(), shuffle() or broadcast().")
    elif isinstance(partitioner, KeyGroupStreamPartitioner):
        partitioner = replace(partitioner, max_parallelism=down_max_par)
    elif isinstance(partitioner, CustomPartitionerWrapper):
        pass
    return StreamEdge(up.id, down.id, partitioner, type_number=type_number, output_tag=via.output_tag,
                      implicit=via.partitioner is None)


def _slot_sharing_group(t: Transformation, input_node_ids: Sequence[int], groups: Mapping[int, str]) -> str:
    """Flink's rule: the explicit group; else the inputs' group if they all agree; else default."""
    if t.slot_sharing_group is not None:
        return t.slot_sharing_group
    input_groups = {groups[i] for i in input_node_ids}
    if len(input_groups) == 1:
        return input_groups.pop()
    return DEFAULT_SLOT_SHARING_GROUP


def _max_parallelism(t: Transformation, env_setting: Optional[int]) -> tuple[int, bool]:
    if t.max_parallelism is not None:
        return t.max_parallelism, True
    if env_setting is not None and env_setting > 0:
        return env_setting, True
    return default_max_parallelism(t.parallelism), False


def _node_name(t: Transformation) -> str:
    """Flink prefixes source and sink operator names: ``Source: ...``, ``Sink: ...``."""
    if isinstance(t, SourceTransformation):
        return f"Source: {t.name}"
    if isinstance(t, SinkTransformation):
        return f"Sink: {t.name}"
    return t.name


def _state_keys(t: Transformation) -> tuple[Any, ...]:
    if isinstance(t, TwoInputTransformation):
        return (t.state_key_selector1, t.state_key_selector2)
    return (getattr(t, "state_key_selector", None),)
