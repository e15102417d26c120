"""Operator kinds -> operator classes: how a StreamNode's OperatorSpec becomes a runnable operator."""

from __future__ import annotations

import copy
import importlib
from typing import TYPE_CHECKING, Any, Optional

from streamkernel.datastream.function_base import Function
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.transformations import OperatorSpec

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.graph.stream_graph import StreamNode
    from streamkernel.runtime.operators.base import StreamOperator

__all__ = ["OPERATOR_CLASSES", "create_operator", "subtask_copy"]

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
    "sink": "streamkernel.runtime.sinks.operator:SinkOperator",
}


def create_operator(node: "StreamNode") -> "StreamOperator":
    """A fresh operator instance for ``node`` (one per subtask)."""
    target = OPERATOR_CLASSES.get(node.operator.kind)
    if target is None:
        raise InvalidProgramError(f"operator {node.name!r}: unknown operator kind {node.operator.kind!r}")
    module_name, class_name = target.split(":")
    module = importlib.import_module(module_name if "." in module_name else f"streamkernel.runtime.operators.{module_name}")
    spec = node.operator
    memo: dict[int, Any] = {}
    spec = OperatorSpec(spec.kind, subtask_copy(spec.function, memo),
                        {k: subtask_copy(v, memo) for k, v in spec.params.items()})
    return getattr(module, class_name)(spec)


def subtask_copy(obj: Any, memo: Optional[dict[int, Any]] = None) -> Any:
    """A fresh copy of a user Function (and the Functions it holds) for one subtask.

    Flink gives every subtask its own deserialized copy of the user function, so what
    ``open()`` assigns (``self.count = ctx.get_state(...)``) belongs to that subtask. Here
    Function objects are copied shallowly, recursively through the Functions they hold
    (wrappers, window functions); other objects they reference (a list the user collects
    into, a lambda) stay shared, which only the in-process ``local`` backend allows.
    """
    if not isinstance(obj, Function):
        return obj
    memo = {} if memo is None else memo
    done = memo.get(id(obj))
    if done is not None:
        return done
    fresh = copy.copy(obj)
    memo[id(obj)] = fresh
    attributes = getattr(fresh, "__dict__", None)
    if attributes:
        for name, value in list(attributes.items()):
            if isinstance(value, Function):
                attributes[name] = subtask_copy(value, memo)
    return fresh
