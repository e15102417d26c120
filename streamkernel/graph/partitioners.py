"""Stream partitioners: how the records of one operator reach the subtasks of the next.

A partitioner sits on every edge of the StreamGraph. Its ``name`` is what Flink prints
(``FORWARD``, ``HASH``, ``REBALANCE``, ...): the edge label in every drawn graph and the
``ship_strategy`` of the execution-plan JSON. Only a FORWARD edge can be chained
(operator chaining never crosses a shuffle); FORWARD and RESCALE are *pointwise*: each
upstream subtask talks to a fixed subset of downstream subtasks, not to all of them.

Partitioners here are plan data: immutable, comparable, and free of runtime state. The
runtime asks them which channel(s) a batch of records goes to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Optional

__all__ = [
    "StreamPartitioner",
    "ForwardPartitioner",
    "RebalancePartitioner",
    "RescalePartitioner",
    "ShufflePartitioner",
    "BroadcastPartitioner",
    "GlobalPartitioner",
    "KeyGroupStreamPartitioner",
    "CustomPartitionerWrapper",
]


@dataclass(frozen=True)
class StreamPartitioner:
    """Base of all partitioners: a named strategy that distributes records over channels."""

    name: ClassVar[str] = "?"
    is_pointwise: ClassVar[bool] = False
    is_broadcast: ClassVar[bool] = False

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ForwardPartitioner(StreamPartitioner):
    """Subtask *i* sends to subtask *i* of the next operator; needs equal parallelism."""

    name: ClassVar[str] = "FORWARD"
    is_pointwise: ClassVar[bool] = True


@dataclass(frozen=True)
class RebalancePartitioner(StreamPartitioner):
    """Round-robin over all downstream subtasks (Flink's default when parallelism changes)."""

    name: ClassVar[str] = "REBALANCE"


@dataclass(frozen=True)
class RescalePartitioner(StreamPartitioner):
    """Round-robin over a local subset of downstream subtasks (pointwise)."""

    name: ClassVar[str] = "RESCALE"
    is_pointwise: ClassVar[bool] = True


@dataclass(frozen=True)
class ShufflePartitioner(StreamPartitioner):
    """Uniformly random downstream subtask per record."""

    name: ClassVar[str] = "SHUFFLE"


@dataclass(frozen=True)
class BroadcastPartitioner(StreamPartitioner):
    """Every record to every downstream subtask."""

    name: ClassVar[str] = "BROADCAST"
    is_broadcast: ClassVar[bool] = True


@dataclass(frozen=True)
class GlobalPartitioner(StreamPartitioner):
    """Every record to downstream subtask 0."""

    name: ClassVar[str] = "GLOBAL"


@dataclass(frozen=True)
class KeyGroupStreamPartitioner(StreamPartitioner):
    """``key_by``: key -> key group (deterministic hash) -> the subtask owning that group.

    ``max_parallelism`` (the number of key groups) is the downstream operator's max
    parallelism; the StreamGraph builder fills it in. ``key_type`` is key_by's: PyFlink hashes
    a typed key as Java hashes it, an untyped one by its pickle (``keygroups``).
    """

    key_selector: Callable[[Any], Any] = None  # type: ignore[assignment]
    max_parallelism: Optional[int] = None
    key_type: Any = None
    name: ClassVar[str] = "HASH"


@dataclass(frozen=True)
class CustomPartitionerWrapper(StreamPartitioner):
    """``partition_custom``: the user's Partitioner picks the channel from the selected key."""

    partitioner: Any = None
    key_selector: Callable[[Any], Any] = None  # type: ignore[assignment]
    name: ClassVar[str] = "CUSTOM"
