"""The execution plan as JSON: what ``env.get_execution_plan()`` returns.

The format is the one Flink's ``JSONGenerator`` writes and Flink's plan visualizer
reads: ``{"nodes": [...]}`` with one entry per node of the plan as PyFlink shows it (``id``,
``type``, ``pact``, ``contents``, ``parallelism``; see :mod:`streamkernel.graph.pyflink_plan`) and, except for sources, its ``predecessors``
with the ``ship_strategy`` (the partitioner: FORWARD, HASH, REBALANCE ...) of each input.
Nodes are ordered as Flink orders them: by id, sinks last (a topological order). The
text is pretty-printed the way Flink's Jackson ``toPrettyString()`` does (two-space
indent, ``"key" : value``, ``[ {`` ... ``} ]``), so it diffs cleanly against Flink's.
Like Flink's, every predecessor says ``"side" : "second"``.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from streamkernel.graph.pyflink_plan import pyflink_plan_nodes
from streamkernel.graph.stream_graph import StreamGraph

__all__ = ["execution_plan_json"]


def execution_plan_json(stream_graph: StreamGraph, default_parallelism: Optional[int] = None) -> str:
    """The StreamGraph as PyFlink's execution-plan JSON (paste it into Flink's plan visualizer).

    The nodes are those PyFlink shows (:func:`~streamkernel.graph.pyflink_plan.pyflink_plan_nodes`:
    its own Python operators added, consecutive Python operators merged); ``default_parallelism``
    is the environment's, which PyFlink gives the maps it adds for ``print()`` and side outputs.

    >>> print(execution_plan_json(graph))                      # doctest: +SKIP
    {
      "nodes" : [ {
        "id" : 1,
        "type" : "Source: Collection Source",
        "pact" : "Data Source",
        ...
    """
    nodes = []
    for node in pyflink_plan_nodes(stream_graph, default_parallelism):
        entry: dict[str, Any] = {
            "id": node.id,
            "type": node.name,
            "pact": node.pact,
            "contents": node.contents,
            "parallelism": node.parallelism,
        }
        if node.pact != "Data Source":
            entry["predecessors"] = [
                # Flink's JSONGenerator tests the size after adding, so it always says "second".
                {"id": i.source_id, "ship_strategy": i.ship_strategy, "side": "second"}
                for i in node.inputs
            ]
        nodes.append(entry)
    return _pretty({"nodes": nodes}, 0)


def _pretty(value: Any, nesting: int) -> str:
    """Jackson's DefaultPrettyPrinter: objects indent by nesting, arrays stay inline."""
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = "\n" + "  " * (nesting + 1)
        fields = ("," + inner).join(f"{json.dumps(str(k), ensure_ascii=False)} : {_pretty(v, nesting + 1)}"
                                    for k, v in value.items())
        return "{" + inner + fields + "\n" + "  " * nesting + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(_pretty(v, nesting) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)
