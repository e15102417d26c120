"""The in-flight data of an unaligned checkpoint (Flink's channel state, ``ChannelStateWriter``).

A task that took an unaligned checkpoint stores, beside its operators' state, the records
that were in flight towards it when it snapshotted: the buffers its barriers overtook and
those that came in on a channel before that channel's barrier. They are stored as the
*receiver's* input state, in the head operator's entry of the task snapshot::

    {"channel_state": {"unaligned": True, "persisted_data": <bytes>,
                       "buffers": [(input index, values, timestamps), ...]}}

On restore the task feeds them to its head operator before any new record. The
checkpoint statistics read ``unaligned`` and ``persisted_data`` (Flink's "Unaligned" and
"Persisted data") from the acknowledged state handles (:func:`channel_state_stats`).
"""

from __future__ import annotations

import pickle
from typing import Any, Mapping, Optional

from streamkernel.runtime.core.records import DataBuffer

__all__ = ["make_channel_state", "channel_state_of_buffers", "channel_state_stats", "has_channel_state",
           "snapshot_channel_stats"]


def make_channel_state(in_flight: list[tuple[int, DataBuffer]]) -> dict:
    """The ``channel_state`` entry of a task snapshot for ``in_flight`` ``(input index, buffer)`` pairs."""
    return channel_state_of_buffers(
        [(input_index, list(buffer.values), None if buffer.timestamps is None else list(buffer.timestamps))
         for input_index, buffer in in_flight])


def channel_state_of_buffers(buffers: list[tuple[int, list, Optional[list]]]) -> dict:
    """The ``channel_state`` entry for ``(input index, values, timestamps)`` buffers (empty ones dropped)."""
    buffers = [buffer for buffer in buffers if buffer[1]]
    size = len(pickle.dumps(buffers, protocol=pickle.HIGHEST_PROTOCOL)) if buffers else 0
    return {"unaligned": True, "persisted_data": size, "buffers": buffers}


def has_channel_state(state: Optional[Mapping[str, Any]]) -> bool:
    """Whether one operator's entry of a task snapshot holds in-flight records."""
    channel_state = state.get("channel_state") if state else None
    return bool(channel_state and channel_state.get("buffers"))


def snapshot_channel_stats(snapshot: Mapping[str, Any]) -> tuple[bool, int]:
    """``(unaligned, persisted bytes)`` of a task snapshot (a dict of operator entries)."""
    unaligned, size = False, 0
    for entry in snapshot.values():
        channel_state = entry.get("channel_state") if isinstance(entry, Mapping) else None
        if channel_state:
            unaligned = unaligned or bool(channel_state.get("unaligned"))
            size += int(channel_state.get("persisted_data") or 0)
    return unaligned, size


def channel_state_stats(state_handle: Any) -> tuple[bool, int]:
    """``(unaligned, persisted bytes)`` of what a subtask acknowledged: a state handle that
    carries them (files) or the snapshot itself (kept in the JobManager's memory)."""
    if isinstance(state_handle, Mapping):
        return snapshot_channel_stats(state_handle)
    return bool(getattr(state_handle, "unaligned", False)), int(getattr(state_handle, "persisted_data", 0) or 0)

