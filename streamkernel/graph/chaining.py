"""Operator chaining: which StreamGraph edges fuse two operators into one task.

Chained operators run in the same Task thread and call each other directly: no
serialization, no network buffer, no thread handover between them. An edge
``up -> down`` is chainable exactly when Flink's ``StreamingJobGraphGenerator.isChainable``
says so:

1. ``down`` has exactly one input edge (a union or a two-input operator reads through
   the network stack);
2. both operators are in the same slot sharing group;
3. ``down``'s chaining strategy is ALWAYS (HEAD, set by ``start_new_chain()``, and
   NEVER, set by ``disable_chaining()``, break the chain) and ``up``'s is not NEVER;
4. the edge's partitioner is FORWARD (never across ``key_by``, ``rebalance``,
   ``rescale``, ``shuffle``, ``broadcast``, ``partition_custom`` or ``global``);
5. both operators have the same parallelism;
6. chaining is enabled for the job (``env.disable_operator_chaining()`` turns it off).

A side-output edge is chainable under the same rules. :func:`chain_breaks` gives the
human reasons a chain breaks at an edge, which is how the notebook teaches them.
"""

from __future__ import annotations

from streamkernel.graph.partitioners import ForwardPartitioner
from streamkernel.graph.stream_graph import StreamEdge, StreamGraph
from streamkernel.graph.transformations import ChainingStrategy

__all__ = ["is_chainable", "chain_breaks"]


def chain_breaks(edge: StreamEdge, stream_graph: StreamGraph) -> list[str]:
    """Every reason why ``edge`` does not chain its two operators; empty when it chains.

    The reasons are short sentences meant for people, e.g. ``"partitioner is HASH, not
    FORWARD"`` or ``"parallelism 1 -> 4"``, in the order of the rules above.

    >>> [chain_breaks(e, graph) for e in graph.edges]            # doctest: +SKIP
    [[], ['partitioner is HASH, not FORWARD']]
    """
    up = stream_graph.node(edge.source_id)
    down = stream_graph.node(edge.target_id)
    reasons: list[str] = []
    inputs = len(stream_graph.in_edges(down.id))
    if inputs != 1:
        reasons.append(f"{down.name!r} has {inputs} inputs")
    if up.slot_sharing_group != down.slot_sharing_group:
        reasons.append(f"slot sharing group {up.slot_sharing_group!r} -> {down.slot_sharing_group!r}")
    if up.chaining_strategy is ChainingStrategy.NEVER:
        reasons.append(f"chaining disabled on {up.name!r}")
    if down.chaining_strategy is ChainingStrategy.NEVER:
        reasons.append(f"chaining disabled on {down.name!r}")
    elif down.chaining_strategy is ChainingStrategy.HEAD:
        reasons.append(f"{down.name!r} starts a new chain")
    if not isinstance(edge.partitioner, ForwardPartitioner):
        reasons.append(f"partitioner is {edge.partitioner.name}, not FORWARD")
    if up.parallelism != down.parallelism:
        reasons.append(f"parallelism {up.parallelism} -> {down.parallelism}")
    if not stream_graph.chaining_enabled:
        reasons.append("operator chaining disabled for the job")
    return reasons


def is_chainable(edge: StreamEdge, stream_graph: StreamGraph) -> bool:
    """True when ``edge`` fuses its two operators into one chain (one task per subtask)."""
    return not chain_breaks(edge, stream_graph)
