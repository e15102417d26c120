"""Redistributing an unaligned checkpoint's in-flight records to another parallelism.

Flink's ``SubtaskStateMapper`` for input channel state (``StreamPartitioner.
getDownstreamSubtaskStateMapper``, applied by ``StateAssignmentOperation``). The records
were stored at the *receiver* (:mod:`.channel_state`: ``(input index, values, timestamps)``
per buffer, in channel order), after the sender's partitioner had routed them; restoring
the receiving operator at another parallelism sends each to the new subtask that input's
partitioner would pick now:

* ``HASH`` (key_by; Flink's ``RANGE`` mapping, then filtered by key group): each record
  goes to the new subtask owning its key's key group (the edge's key selector, key type
  and max parallelism, exactly as :class:`~streamkernel.runtime.network.record_writer.RecordWriter`
  routes it and as keyed state moves), so it meets its key's restored state;
* ``REBALANCE``, ``SHUFFLE``, ``RESCALE``, ``FORWARD`` (``ROUND_ROBIN``): old subtask *j*'s
  records, all of them, go to new subtask ``j % new parallelism``; scaling up leaves the
  new subtasks past the old parallelism without any. (Flink maps its pointwise edges,
  FORWARD and RESCALE, the same way for input state; FORWARD edges rescale with both ends.)
* ``GLOBAL`` (``FIRST``): everything to new subtask 0 (only old subtask 0 received any);
* ``BROADCAST``: every old subtask holds its own copy of the same records; new subtask *i*
  takes old subtask ``i % old parallelism``'s, the subtask whose broadcast state it
  inherits (:func:`~streamkernel.runtime.state.operator_state.redistribute_operator_state`),
  so each new subtask gets each record once and never N times (Flink's broadcast mapping
  discards the extra copies; Flink itself keeps broadcast edges aligned);
* ``CUSTOM`` (``partition_custom``) is **refused**: Flink never stores in-flight data on such
  an edge (``CustomPartitionerWrapper`` disables unaligned checkpoints for it), and a user
  Partitioner need not route the same record to the same channel twice.

Order: records keep their old channel's order; with ``HASH`` all records of one key were
at one old subtask, so each key's records stay in checkpoint order. Each record keeps its
timestamp and its input index (two-input operators). An input index reached by edges of
different mappings (a union of a broadcast and a keyed stream) is refused.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence

from streamkernel.errors import InvalidProgramError
from streamkernel.graph.keygroups import assign_key_to_operator, default_max_parallelism
from streamkernel.graph.partitioners import (
    BroadcastPartitioner,
    ForwardPartitioner,
    GlobalPartitioner,
    KeyGroupStreamPartitioner,
    RebalancePartitioner,
    RescalePartitioner,
    ShufflePartitioner,
    StreamPartitioner,
)
from streamkernel.runtime.checkpoint.channel_state import channel_state_of_buffers
from streamkernel.runtime.core.keys import key_function

__all__ = ["RANGE", "ROUND_ROBIN", "FIRST", "BROADCAST", "UNSUPPORTED", "subtask_state_mapper",
           "redistribute_channel_state"]

RANGE = "RANGE"
"""Flink's mapping of a HASH input: by key group (each record to the owner of its key)."""
ROUND_ROBIN = "ROUND_ROBIN"
"""Old subtask *j*'s records to new subtask ``j % new parallelism``."""
FIRST = "FIRST"
"""Everything to new subtask 0 (GLOBAL)."""
BROADCAST = "BROADCAST"
"""New subtask *i* takes old subtask ``i % old parallelism``'s copy."""
UNSUPPORTED = "UNSUPPORTED"
"""In-flight records of this input cannot move to another parallelism."""

_ROUND_ROBIN_KINDS = (RebalancePartitioner, ShufflePartitioner, RescalePartitioner, ForwardPartitioner)

#: one old subtask's buffers: (input index, values, timestamps or None)
Buffers = Sequence[tuple[int, list, Optional[list]]]


def subtask_state_mapper(partitioner: StreamPartitioner) -> str:
    """How the in-flight records of an input partitioned by ``partitioner`` are redistributed."""
    if isinstance(partitioner, KeyGroupStreamPartitioner):
        return RANGE
    if isinstance(partitioner, _ROUND_ROBIN_KINDS):
        return ROUND_ROBIN
    if isinstance(partitioner, GlobalPartitioner):
        return FIRST
    if isinstance(partitioner, BroadcastPartitioner):
        return BROADCAST
    return UNSUPPORTED


def redistribute_channel_state(old: Sequence[Optional[Mapping[str, Any]]], new_parallelism: int,
                               inputs: Mapping[int, Sequence[StreamPartitioner]], *,
                               describe: Callable[[str], str] = lambda why: why) -> list[Optional[dict]]:
    """The ``channel_state`` of each of ``new_parallelism`` subtasks from the old subtasks' (module docstring).

    ``old[j]`` is old subtask *j*'s ``channel_state`` entry (or None); ``inputs`` maps each
    input index to the partitioners of the edges reaching it in the new job. ``describe``
    turns the reason a restore is refused into the full message (naming the checkpoint and
    the operator); the error is an :class:`InvalidProgramError`. A new subtask that gets no
    record gets None.
    """
    if new_parallelism < 1:
        raise InvalidProgramError(f"redistribute_channel_state: new_parallelism must be positive, got {new_parallelism}")
    old_buffers: list[Buffers] = [list((state or {}).get("buffers") or ()) for state in old]
    used = sorted({input_index for buffers in old_buffers for input_index, _, _ in buffers})
    routes = {input_index: _route(input_index, inputs.get(input_index, ()), len(old), new_parallelism, describe)
              for input_index in used}
    new: list[list[tuple[int, list, Optional[list]]]] = [[] for _ in range(new_parallelism)]
    for old_index, buffers in enumerate(old_buffers):
        for input_index, values, timestamps in buffers:
            for target, part_values, part_timestamps in routes[input_index](old_index, values, timestamps):
                new[target].append((input_index, part_values, part_timestamps))
    return [channel_state_of_buffers(buffers) if buffers else None for buffers in new]


#: one old subtask's buffer -> its pieces ``(new subtask, values, timestamps)``
_Route = Callable[[int, list, Optional[list]], list[tuple[int, list, Optional[list]]]]


def _route(input_index: int, partitioners: Sequence[StreamPartitioner], old_parallelism: int,
           new_parallelism: int, describe: Callable[[str], str]) -> _Route:
    """How one old subtask's buffer of ``input_index`` is cut up among the new subtasks."""
    if not partitioners:
        raise InvalidProgramError(describe(
            f"it holds in-flight records of input {input_index}, which no network edge reaches in the new job "
            "(is the operator now chained to its upstream?)"))
    names = "/".join(sorted({p.name for p in partitioners}))
    mappers = {subtask_state_mapper(p) for p in partitioners}
    if UNSUPPORTED in mappers:
        raise InvalidProgramError(describe(
            f"in-flight records of input {input_index} came through a {names} edge, whose records cannot be "
            "redistributed to another parallelism (Flink keeps CUSTOM-partitioned edges aligned)"))
    hashes: list[KeyGroupStreamPartitioner] = []
    for p in partitioners:  # one key_by after a union: an edge per unioned stream, equal partitioners
        if isinstance(p, KeyGroupStreamPartitioner) and not any(p is h or p == h for h in hashes):
            hashes.append(p)
    if len(mappers) > 1 or len(hashes) > 1:
        raise InvalidProgramError(describe(
            f"in-flight records of input {input_index} came through edges partitioned differently ({names}), "
            "so where each record belongs at the new parallelism is not known"))
    mapper = mappers.pop()
    if mapper == RANGE:
        return _by_key(hashes[0], new_parallelism, describe)
    if mapper == BROADCAST:
        return lambda old_index, values, timestamps: [
            (new_index, list(values), _copy(timestamps))
            for new_index in range(new_parallelism) if new_index % old_parallelism == old_index]
    if mapper == FIRST:
        return lambda old_index, values, timestamps: [(0, list(values), _copy(timestamps))]
    return lambda old_index, values, timestamps: [(old_index % new_parallelism, list(values), _copy(timestamps))]


def _by_key(partitioner: KeyGroupStreamPartitioner, new_parallelism: int, describe: Callable[[str], str]) -> _Route:
    """RANGE: each record to the new subtask owning its key group, in order within the buffer."""
    key_fn = key_function(partitioner.key_selector)
    max_parallelism = partitioner.max_parallelism or default_max_parallelism(new_parallelism)
    key_type = partitioner.key_type

    def by_key(old_index: int, values: list, timestamps: Optional[list]) -> list[tuple[int, list, Optional[list]]]:
        parts: dict[int, tuple[list, Optional[list]]] = {}
        for position, value in enumerate(values):
            try:
                target = assign_key_to_operator(key_fn(value), max_parallelism, new_parallelism, key_type)
            except Exception as exc:  # noqa: BLE001 - the user's key selector
                raise InvalidProgramError(describe(
                    f"the key selector of its HASH input raised {type(exc).__name__}: {exc} on the in-flight "
                    f"record {value!r:.200}")) from exc
            part = parts.get(target)
            if part is None:
                part = parts[target] = ([], None if timestamps is None else [])
            part[0].append(value)
            if part[1] is not None:
                part[1].append(timestamps[position])  # type: ignore[index]
        return [(target, part_values, part_timestamps) for target, (part_values, part_timestamps) in parts.items()]
    return by_key


def _copy(timestamps: Optional[list]) -> Optional[list]:
    return None if timestamps is None else list(timestamps)
