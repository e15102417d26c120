"""Transformations: what each DataStream API call records, before any graph exists.

Every API call (``from_collection``, ``map``, ``key_by``, ``union``, ``print`` ...) adds
one :class:`Transformation` to its environment. Physical transformations become
operators (nodes of the StreamGraph); virtual ones (partitioning, union, side output)
only shape the edges between them, exactly as in Flink's ``StreamGraphGenerator``.

Transformations are the one mutable part of the plan, on purpose: PyFlink's API names and
configures an operator *after* creating it (``ds.map(f).name("m").set_parallelism(2)``).
Everything built from them — the StreamGraph, JobGraph and ExecutionGraph — is immutable.

Parallelism follows Flink: an operator takes the environment's parallelism at the moment
it is created, unless set explicitly later; non-parallel sources (``from_collection``)
have parallelism 1.
"""

from __future__ import annotations

import enum
import itertools
from typing import Any, Optional, Sequence

from streamkernel.graph.operator_specs import OperatorSpec
from streamkernel.graph.partitioners import StreamPartitioner

__all__ = [
    "ChainingStrategy",
    "Transformation",
    "SourceTransformation",
    "OneInputTransformation",
    "TwoInputTransformation",
    "SinkTransformation",
    "PartitionTransformation",
    "UnionTransformation",
    "SideOutputTransformation",
    "DEFAULT_SLOT_SHARING_GROUP",
]

DEFAULT_SLOT_SHARING_GROUP = "default"


class ChainingStrategy(enum.Enum):
    """Whether an operator may be chained to its predecessor (Flink's ChainingStrategy)."""

    ALWAYS = "ALWAYS"  # chains to its predecessor and successors when the rules allow
    HEAD = "HEAD"  # starts a new chain; successors may chain to it (start_new_chain, sources)
    NEVER = "NEVER"  # chains to nothing, neither side (disable_chaining)


_ids = itertools.count(1)


class Transformation:
    """One API call's record: a named step with inputs, parallelism and placement hints.

    Attributes are set by the DataStream API (``name``, ``uid``, ``set_parallelism``,
    ``slot_sharing_group``, ``disable_chaining`` ...) and read by the StreamGraph builder.
    """

    #: True for transformations that become StreamGraph nodes.
    is_physical: bool = True

    def __init__(
        self,
        name: str,
        inputs: Sequence["Transformation"],
        parallelism: int,
        *,
        parallelism_configured: bool = False,
        output_type: Any = None,
    ) -> None:
        self.id: int = next(_ids)
        self.name: str = name
        self.inputs: tuple[Transformation, ...] = tuple(inputs)
        self.parallelism: int = parallelism
        self.parallelism_configured: bool = parallelism_configured
        self.max_parallelism: Optional[int] = None
        self.uid: Optional[str] = None
        self.uid_hash: Optional[str] = None
        self.description: Optional[str] = None
        self.slot_sharing_group: Optional[str] = None
        self.chaining_strategy: ChainingStrategy = ChainingStrategy.ALWAYS
        self.buffer_timeout: Optional[int] = None
        self.output_type: Any = output_type

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id}, name={self.name!r}, parallelism={self.parallelism})"


class SourceTransformation(Transformation):
    """A source operator; ``operator`` is a SourceSpec (its ``source``: the Source or SourceFunction)."""

    def __init__(self, name: str, operator: OperatorSpec, parallelism: int, *, bounded: bool = True,
                 parallelism_configured: bool = False, output_type: Any = None) -> None:
        super().__init__(name, (), parallelism, parallelism_configured=parallelism_configured,
                         output_type=output_type)
        self.operator = operator
        self.bounded = bounded
        self.chaining_strategy = ChainingStrategy.HEAD


class OneInputTransformation(Transformation):
    """An operator with one input; ``state_key_selector`` is set on keyed streams."""

    def __init__(self, name: str, input: Transformation, operator: OperatorSpec, parallelism: int, *,
                 state_key_selector: Any = None, output_type: Any = None, state_key_type: Any = None) -> None:
        super().__init__(name, (input,), parallelism, output_type=output_type)
        self.operator = operator
        self.state_key_selector = state_key_selector
        #: key_by's ``key_type`` (None: the key is pickled); BATCH execution sorts by the key so serialized
        self.state_key_type = state_key_type


class TwoInputTransformation(Transformation):
    """An operator with two inputs (connect): input 1 and input 2 keep their identity."""

    def __init__(self, name: str, input1: Transformation, input2: Transformation, operator: OperatorSpec,
                 parallelism: int, *, state_key_selector1: Any = None, state_key_selector2: Any = None,
                 output_type: Any = None, state_key_type: Any = None) -> None:
        super().__init__(name, (input1, input2), parallelism, output_type=output_type)
        self.operator = operator
        self.state_key_selector1 = state_key_selector1
        self.state_key_selector2 = state_key_selector2
        self.state_key_type = state_key_type  # key_by's key_type (the serialized key BATCH sorts by)


class SinkTransformation(Transformation):
    """A sink operator; ``operator`` is a SinkSpec (its ``sink``: the Sink or SinkFunction)."""

    def __init__(self, name: str, input: Transformation, operator: OperatorSpec, parallelism: int) -> None:
        super().__init__(name, (input,), parallelism)
        self.operator = operator


class PartitionTransformation(Transformation):
    """Virtual: the records of ``input`` reach the next operator through ``partitioner``."""

    is_physical = False

    def __init__(self, input: Transformation, partitioner: StreamPartitioner) -> None:
        super().__init__(f"Partition({partitioner.name})", (input,), input.parallelism)
        self.partitioner = partitioner


class UnionTransformation(Transformation):
    """Virtual: the next operator reads all ``inputs`` as one input."""

    is_physical = False

    def __init__(self, inputs: Sequence[Transformation]) -> None:
        super().__init__("Union", inputs, inputs[0].parallelism)


class SideOutputTransformation(Transformation):
    """Virtual: the records ``input`` emitted to ``output_tag`` instead of its main output."""

    is_physical = False

    def __init__(self, input: Transformation, output_tag: Any) -> None:
        super().__init__(f"SideOutput({getattr(output_tag, 'tag_id', output_tag)})", (input,),
                         input.parallelism, output_type=getattr(output_tag, "type_info", None))
        self.output_tag = output_tag
