"""Operator kinds -> operator classes: how a StreamNode's OperatorSpec becomes a runnable operator."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from streamkernel.errors import InvalidProgramError

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.graph.stream_graph import StreamNode
    from streamkernel.runtime.operators.base import StreamOperator

__all__ = ["OPERATOR_CLASSES", "create_operator"]

# kind -> "module:Class" under streamkernel.runtime.operators (imported on first use)
OPERATOR_CLASSES = {
    "source": "source:SourceOperator",
    "map": "simple:MapOperator",
    "flat_map": "simple:FlatMapOperator",
    "filter": "simple:FilterOperator",
    "process": "simple:ProcessOperator",
    "keyed_process": "keyed:KeyedProcessOperator",
    "reduce": "keyed:ReduceOperator",
    "aggregation": "keyed:ReduceOperator",
    "window": "window:WindowOperator",
    "count_window": "window:WindowOperator",
    "co_map": "co:CoMapOperator",
    "co_flat_map": "co:CoFlatMapOperator",
    "co_process": "co:CoProcessOperator",
    "keyed_co_process": "co:KeyedCoProcessOperator",
    "broadcast_process": "co:BroadcastProcessOperator",
    "keyed_broadcast_process": "co:KeyedBroadcastProcessOperator",
    "timestamps_watermarks": "timestamps:TimestampsAndWatermarksOperator",
    "async_wait": "async_wait:AsyncWaitOperator",
    "sink": "sink:SinkOperator",
}


def create_operator(node: "StreamNode") -> "StreamOperator":
    """A fresh operator instance for ``node`` (one per subtask)."""
    target = OPERATOR_CLASSES.get(node.operator.kind)
    if target is None:
        raise InvalidProgramError(f"operator {node.name!r}: unknown operator kind {node.operator.kind!r}")
    module_name, class_name = target.split(":")
    module = importlib.import_module(f"streamkernel.runtime.operators.{module_name}")
    return getattr(module, class_name)(node.operator)
