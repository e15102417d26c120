"""Key group ownership: a keyed operator subtask handles only the keys of its own key groups.

The sender of a ``key_by`` edge routes a record by the key group of its key; the keyed
operator that receives it computes the key again and makes it current on its keyed state
backend. A key selector that is not deterministic (``lambda x: random.random()``, or a key
whose hash differs between processes) returns another key on the receiving side: the record
and its state then land in a subtask that does not own the key's key group, and are lost or
duplicated when a checkpoint is restored or rescaled. Flink checks this where the current
key is set (``InternalKeyContextImpl.setCurrentKeyGroupIndex``) and fails the task; so does
:class:`KeyGroupCheck`, with Flink's message plus the operator, subtask and key.

Cost: the keys already found owned are kept in a set (bounded by clearing when full). A
batch is checked with one C-level ``set.issuperset`` call; only keys not seen before have
their key group computed. Operators whose state dict already holds the checked keys (the
running reduce) check only the keys they see for the first time (:meth:`KeyGroupCheck.check_key`).
A subtask that owns every key group (parallelism 1) gets no check at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Collection, Optional

from streamkernel.errors import StreamKernelError
from streamkernel.graph.keygroups import assign_to_key_group

if TYPE_CHECKING:
    from streamkernel.runtime.operators.base import StreamOperator

__all__ = ["KeyGroupCheck", "KeyGroupOwnershipError", "OWNED_KEYS_LIMIT"]

#: keys remembered as owned per operator subtask before the set is cleared
OWNED_KEYS_LIMIT = 1 << 18
#: internal switch for bench/bench_keygroup_check.py only (read when an operator opens)
_ENABLED = True


class KeyGroupOwnershipError(StreamKernelError, ValueError):
    """A keyed operator got a key of a key group it does not own (non-deterministic key selector)."""


class KeyGroupCheck:
    """Checks that keys belong to the key groups of one keyed operator subtask.

    >>> check = KeyGroupCheck("counts", "counts (1/2)#0", 128, range(0, 64))
    >>> check.check([k for k in range(100) if assign_to_key_group(k, 128) < 64])
    >>> check.check_new_key(next(k for k in range(100) if assign_to_key_group(k, 128) >= 64))
    ... # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    KeyGroupOwnershipError: Key group 94 is not in KeyGroupRange{startKeyGroup=0, endKeyGroup=63}. ...
    """

    __slots__ = ("operator_name", "subtask", "max_parallelism", "key_group_range", "key_type", "_owned")

    def __init__(self, operator_name: str, subtask: str, max_parallelism: int, key_group_range: range,
                 key_type: Any = None) -> None:
        self.operator_name = operator_name
        self.subtask = subtask
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        self.key_type = key_type  # key_by's key_type: how keys hash to key groups
        self._owned: set = set()

    @classmethod
    def for_operator(cls, operator: "StreamOperator") -> Optional["KeyGroupCheck"]:
        """The check for ``operator``'s keyed backend; None when there is nothing to check
        (not keyed, or the subtask owns every key group)."""
        context = operator.context
        backend = context.keyed_backend if context is not None else None
        if backend is None or not _ENABLED:
            return None
        key_groups, max_parallelism = backend.key_group_range, backend.max_parallelism
        if key_groups.start <= 0 and key_groups.stop >= max_parallelism:
            return None
        return cls(context.node.name, context.task_info.task_name_with_subtasks, max_parallelism, key_groups,
                   getattr(backend, "key_type", None))

    def check(self, keys: Collection[Any]) -> None:
        """Raise :class:`KeyGroupOwnershipError` if a key of ``keys`` (a batch's keys: a list,
        or a dict's keys) belongs to a key group outside this subtask's range."""
        owned = self._owned
        try:
            if owned.issuperset(keys):  # the common case: every key seen before
                return
            new = set(keys).difference(owned)
        except TypeError:  # an unhashable key: checked, not remembered
            for key in keys:
                self._verify(key)
            return
        for key in new:
            self._verify(key)
        if len(owned) + len(new) > OWNED_KEYS_LIMIT:
            owned.clear()
        owned.update(new)

    def check_key(self, key: Any) -> None:
        """:meth:`check` for one key (for per-record loops that are slow anyway)."""
        try:
            if key in self._owned:
                return
        except TypeError:  # unhashable
            self._verify(key)
            return
        self.check((key,))

    def check_new_key(self, key: Any) -> None:
        """Check ``key`` without remembering it: for callers whose own state already tells
        the keys checked before (the running reduce checks a key when it enters its dict)."""
        self._verify(key)

    def _verify(self, key: Any) -> None:
        group = assign_to_key_group(key, self.max_parallelism, self.key_type)
        if group not in self.key_group_range:
            raise KeyGroupOwnershipError(self.message(key, group))

    def message(self, key: Any, group: int) -> str:
        """Flink's message for ``key`` of key group ``group``, with the operator, subtask and key."""
        from streamkernel.runtime.operators.contexts import describe_record

        start, end = self.key_group_range.start, self.key_group_range.stop - 1
        return (
            f"Key group {group} is not in KeyGroupRange{{startKeyGroup={start}, endKeyGroup={end}}}. "
            f"Unless you're directly using low level state access APIs, this is most likely caused by "
            f"non-deterministic shuffle key (hashCode and equals implementation). "
            f"Operator {self.operator_name!r} (subtask {self.subtask}) got key {describe_record(key)}: "
            f"its key selector must return the same key for a record on every call and in every process.")
