"""The settings of the operator behind a stream: name, uid, parallelism, chaining, slots.

PyFlink configures an operator *after* creating it, through the stream it returns
(``ds.map(f).name("parse").set_parallelism(4)``). :class:`OperatorSettings` implements
those calls once, for :class:`~streamkernel.datastream.data_stream.DataStream` and
:class:`~streamkernel.datastream.data_stream.DataStreamSink`, on the stream's
:class:`~streamkernel.graph.transformations.Transformation`.

Only an operator has these settings. A stream that comes from a partitioning
(``key_by``, ``rebalance`` ...), a union or a side output is not an operator, and setting
them there is an error, as in Flink, where such streams have no ``setParallelism``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, Union

from streamkernel.errors import InvalidArgumentTypeError, InvalidProgramError
from streamkernel.graph.keygroups import UPPER_BOUND_MAX_PARALLELISM
from streamkernel.graph.transformations import ChainingStrategy, SourceTransformation, Transformation

if TYPE_CHECKING:  # pragma: no cover - typing only
    from streamkernel.datastream.slot_sharing_group import SlotSharingGroup

__all__ = ["OperatorSettings"]

_Self = TypeVar("_Self", bound="OperatorSettings")

#: Flink's ExecutionConfig.PARALLELISM_DEFAULT: "the environment's parallelism".
_PARALLELISM_DEFAULT = -1


def _virtual_origin(t: Transformation) -> str:
    """How a user made a non-operator stream, for error messages."""
    name = type(t).__name__
    if name == "PartitionTransformation":
        return f"a partitioning ({t.name}), e.g. key_by(), rebalance() or broadcast()"
    if name == "UnionTransformation":
        return "union()"
    if name == "SideOutputTransformation":
        return f"get_side_output() ({t.name})"
    return t.name


class OperatorSettings:
    """Mixin: the per-operator settings of a stream whose ``_transformation`` is an operator."""

    _transformation: Transformation
    _env: Any
    #: True once force_non_parallel() was called (or the operator is non-parallel by nature).
    _non_parallel: bool = False

    def _operator(self, call: str) -> Transformation:
        """The transformation, which must be an operator for ``call`` to apply."""
        t = self._transformation
        if not t.is_physical:
            raise InvalidProgramError(
                f"{call} applies to an operator, but this stream comes from {_virtual_origin(t)}, which "
                f"is not an operator. Call {call.split('(')[0]}() on the operator that produces or consumes "
                f"the records instead, e.g. ds.map(f).{call.split('(')[0]}(...).")
        return t

    def get_name(self) -> str:
        """The name of this operator, as shown in graphs and logs."""
        return self._transformation.name

    def name(self: _Self, name: str) -> _Self:
        """Sets the name of this operator, as shown in graphs and logs."""
        t = self._operator("name()")
        if not isinstance(name, str) or not name:
            raise InvalidProgramError(f"name() needs a non-empty str, got {name!r}")
        t.name = name
        return self

    def uid(self: _Self, uid: str) -> _Self:
        """Sets a stable ID for this operator: its state is found by this ID in savepoints.

        The ID must be unique within the job.
        """
        t = self._operator("uid()")
        if not isinstance(uid, str) or not uid:
            raise InvalidProgramError(f"uid() needs a non-empty str, got {uid!r}")
        self._env._check_uid(uid, t)
        t.uid = uid
        return self

    def set_uid_hash(self: _Self, uid_hash: str) -> _Self:
        """Sets the operator's ID hash directly (a workaround to map old state to an operator)."""
        t = self._operator("set_uid_hash()")
        if not isinstance(uid_hash, str) or not uid_hash:
            raise InvalidProgramError(f"set_uid_hash() needs a non-empty str, got {uid_hash!r}")
        t.uid_hash = uid_hash
        return self

    def set_description(self: _Self, description: str) -> _Self:
        """Sets a longer description of this operator, shown in the plan and web UI."""
        t = self._operator("set_description()")
        if not isinstance(description, str):
            raise InvalidProgramError(f"set_description() needs a str, got {description!r}")
        t.description = description
        return self

    def set_parallelism(self: _Self, parallelism: int) -> _Self:
        """Sets how many parallel subtasks run this operator (at least 1; -1, Flink's
        ``PARALLELISM_DEFAULT``, gives it the environment's parallelism)."""
        t = self._operator("set_parallelism()")
        if not isinstance(parallelism, int) or isinstance(parallelism, bool):
            raise InvalidArgumentTypeError(
                f"set_parallelism({parallelism!r}) on operator {t.name!r}: the parallelism of an operator "
                f"must be an int between 1 and {UPPER_BOUND_MAX_PARALLELISM}, got {type(parallelism).__name__}")
        if not 1 <= parallelism <= UPPER_BOUND_MAX_PARALLELISM and parallelism != _PARALLELISM_DEFAULT:
            flink = ("The parallelism of an operator must be at least 1, or ExecutionConfig.PARALLELISM_DEFAULT "
                     "(use system default). " if parallelism < 1 else "")
            raise InvalidProgramError(
                f"{flink}set_parallelism({parallelism!r}) on operator {t.name!r}: the parallelism of an "
                f"operator must be an int between 1 and {UPPER_BOUND_MAX_PARALLELISM}")
        if self._non_parallel and parallelism != 1:
            raise InvalidProgramError(
                f"The parallelism of non parallel operator must be 1. set_parallelism({parallelism}) on "
                f"operator {t.name!r}: the operator is non-parallel (force_non_parallel() or window_all())")
        default = parallelism == _PARALLELISM_DEFAULT
        if default:
            parallelism = self._env.get_parallelism()
        if isinstance(t, SourceTransformation):
            limit = getattr(getattr(t.operator, "source", None), "max_parallelism", None)
            if limit is not None and parallelism > limit:
                flink = "The parallelism of non parallel operator must be 1. " if limit == 1 else ""
                raise InvalidProgramError(
                    f"{flink}set_parallelism({parallelism}) on source {t.name!r}: this source is read by at "
                    f"most {limit} subtask(s); use rebalance() and set the parallelism of the next operator")
        if t.max_parallelism is not None and parallelism > t.max_parallelism:
            raise InvalidProgramError(
                f"Vertex {t.name}'s parallelism ({parallelism}) is higher than the max parallelism "
                f"({t.max_parallelism}). Please lower the parallelism or increase the max parallelism. "
                f"set_parallelism({parallelism}) on operator {t.name!r}: the parallelism must not exceed "
                f"the operator's max parallelism {t.max_parallelism} (set_max_parallelism)")
        t.parallelism = parallelism
        t.parallelism_configured = not default
        return self

    def set_max_parallelism(self: _Self, max_parallelism: int) -> _Self:
        """Sets the most subtasks this operator may ever be rescaled to (its number of key groups)."""
        t = self._operator("set_max_parallelism()")
        is_int = isinstance(max_parallelism, int) and not isinstance(max_parallelism, bool)
        if not is_int or not 1 <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
            flink = ""
            if is_int:
                flink = ("The maximum parallelism must be greater than 0. " if max_parallelism < 1 else
                         f"Maximum parallelism must be between 1 and {UPPER_BOUND_MAX_PARALLELISM}. Found: "
                         f"{max_parallelism}. ")
            raise (InvalidProgramError if is_int else InvalidArgumentTypeError)(
                f"{flink}set_max_parallelism({max_parallelism!r}) on operator {t.name!r}: the max parallelism "
                f"must be an int between 1 and {UPPER_BOUND_MAX_PARALLELISM}")
        if max_parallelism < t.parallelism:
            raise InvalidProgramError(
                f"set_max_parallelism({max_parallelism}) on operator {t.name!r}: the max parallelism must "
                f"be at least the operator's parallelism {t.parallelism}")
        if self._non_parallel and max_parallelism != 1:
            raise InvalidProgramError(
                f"set_max_parallelism({max_parallelism}) on operator {t.name!r}: the operator is "
                f"non-parallel, its max parallelism must be 1")
        t.max_parallelism = max_parallelism
        return self

    def force_non_parallel(self: _Self) -> _Self:
        """Makes this operator run in exactly one subtask (parallelism and max parallelism 1)."""
        t = self._operator("force_non_parallel()")
        t.parallelism = 1
        t.max_parallelism = 1
        t.parallelism_configured = True
        self._non_parallel = True
        return self

    def set_buffer_timeout(self: _Self, timeout_millis: int) -> _Self:
        """Sets how long (ms) output may wait in a partly full buffer: 0 flushes every record,
        -1 uses the environment's default."""
        t = self._operator("set_buffer_timeout()")
        if not isinstance(timeout_millis, int) or isinstance(timeout_millis, bool) or timeout_millis < -1:
            raise (InvalidProgramError if isinstance(timeout_millis, int) else InvalidArgumentTypeError)(
                f"timeout must be >= -1: set_buffer_timeout({timeout_millis!r}) on operator {t.name!r} needs an "
                f"int >= -1 (ms; 0 flushes after every record, -1 uses the default)")
        t.buffer_timeout = None if timeout_millis == -1 else timeout_millis
        return self

    def start_new_chain(self: _Self) -> _Self:
        """Starts a new operator chain here: this operator does not chain to its predecessor."""
        self._operator("start_new_chain()").chaining_strategy = ChainingStrategy.HEAD
        return self

    def disable_chaining(self: _Self) -> _Self:
        """Never chains this operator, to its predecessor or its successors."""
        self._operator("disable_chaining()").chaining_strategy = ChainingStrategy.NEVER
        return self

    def slot_sharing_group(self: _Self, slot_sharing_group: Union[str, "SlotSharingGroup"]) -> _Self:
        """Puts this operator in a slot sharing group (a name, or a SlotSharingGroup).

        Operators in the same group may share a task slot; an operator without a group
        inherits its inputs' group when they agree, else ``"default"``.
        """
        t = self._operator("slot_sharing_group()")
        name = slot_sharing_group
        if not isinstance(slot_sharing_group, str) and hasattr(slot_sharing_group, "get_name"):
            name = slot_sharing_group.get_name()
        if not isinstance(name, str) or not name:
            raise InvalidProgramError(
                f"slot_sharing_group() needs a non-empty group name or a SlotSharingGroup, got "
                f"{slot_sharing_group!r}")
        t.slot_sharing_group = name
        return self
