"""Operator specs -> operator classes: how a StreamNode's OperatorSpec becomes a runnable operator."""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any, Optional

from streamkernel.datastream.function_base import Function
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.core.registry import lookup, resolve

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.graph.stream_graph import StreamNode
    from streamkernel.runtime.operators.base import StreamOperator

__all__ = ["OPERATOR_CLASSES", "create_operator", "subtask_copy"]

_OPS = "streamkernel.runtime.operators"

#: spec class (streamkernel.graph.operator_specs) -> "module:Class" of its operator (imported on first use)
OPERATOR_CLASSES = {
    "SourceSpec": f"{_OPS}.source:SourceOperator",
    "MapSpec": f"{_OPS}.simple:MapOperator",
    "FlatMapSpec": f"{_OPS}.simple:FlatMapOperator",
    "FilterSpec": f"{_OPS}.simple:FilterOperator",
    "ProcessSpec": f"{_OPS}.simple:ProcessOperator",
    "KeyedProcessSpec": f"{_OPS}.keyed:KeyedProcessOperator",
    "ReduceSpec": f"{_OPS}.keyed:ReduceOperator",
    "AggregationSpec": f"{_OPS}.keyed:ReduceOperator",
    "WindowSpec": f"{_OPS}.window:WindowOperator",
    "CoMapSpec": f"{_OPS}.co:CoMapOperator",
    "CoFlatMapSpec": f"{_OPS}.co:CoFlatMapOperator",
    "CoProcessSpec": f"{_OPS}.co:CoProcessOperator",
    "KeyedCoProcessSpec": f"{_OPS}.co:KeyedCoProcessOperator",
    "BroadcastProcessSpec": f"{_OPS}.co:BroadcastProcessOperator",
    "KeyedBroadcastProcessSpec": f"{_OPS}.co:KeyedBroadcastProcessOperator",
    "TimestampsWatermarksSpec": f"{_OPS}.timestamps:TimestampsAndWatermarksOperator",
    "AsyncWaitSpec": f"{_OPS}.async_wait:AsyncWaitOperator",
    "SinkSpec": "streamkernel.runtime.sinks.operator:SinkOperator",
}


def create_operator(node: "StreamNode") -> "StreamOperator":
    """A fresh operator instance for ``node`` (one per subtask): its spec with every Function
    field copied for the subtask (one memo, so Functions shared between fields stay shared)."""
    spec = node.operator
    target = lookup(OPERATOR_CLASSES, spec, "streamkernel.graph.operator_specs")
    if target is None:
        raise InvalidProgramError(f"operator {node.name!r}: unknown operator kind {spec.kind!r}")
    operator_class = resolve(target)
    memo: dict[int, Any] = {}
    spec = dataclasses.replace(spec, **{f.name: subtask_copy(getattr(spec, f.name), memo)
                                        for f in dataclasses.fields(spec)})
    return operator_class(spec)


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
