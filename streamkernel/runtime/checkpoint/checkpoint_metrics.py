"""What a subtask measured of its part in one checkpoint (Flink's ``CheckpointMetrics``).

Sent with its acknowledgement, kept in the checkpoint statistics per subtask
(:class:`~.history.SubtaskCheckpointStats`) and shown by the REST API's checkpoint details:
``checkpoint.sync`` / ``checkpoint.async`` (taking the snapshot in the task's thread, then storing
it), ``alignment.duration`` (from the task's first barrier of the checkpoint to its snapshot:
0 for a source task or an unaligned checkpoint) and ``start_delay`` (from the checkpoint's
trigger to its first barrier at the task). -1: not measured.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CheckpointMetrics"]


@dataclass(frozen=True)
class CheckpointMetrics:
    """A subtask's durations in one checkpoint, in milliseconds (-1: not measured).

    >>> CheckpointMetrics(sync_ms=3, async_ms=12, alignment_ms=0, start_delay_ms=5).async_ms
    12
    """

    sync_ms: int = -1
    async_ms: int = -1
    alignment_ms: int = -1
    start_delay_ms: int = -1
