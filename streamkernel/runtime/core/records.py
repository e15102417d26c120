"""What flows through a dataflow: batches of records, and the events between them.

The unit of transfer is a **batch**, never a single record (Python's cost is per call).
A batch is two parallel lists passed as two arguments, ``values`` and ``timestamps``:

* ``values``: the records, in order;
* ``timestamps``: their event-time timestamps (int ms, same length), or ``None`` when the
  records carry no timestamps (no watermark strategy assigned one). An operator that
  keeps records one-to-one (map) passes ``timestamps`` through untouched.

Batches travel in channels as a :class:`DataBuffer`; the events below travel in the same
channels, between buffers, so their order relative to records is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

from streamkernel.common.watermark_strategy import MAX_WATERMARK, MIN_WATERMARK

__all__ = [
    "DataBuffer",
    "Watermark",
    "WatermarkStatus",
    "CheckpointBarrier",
    "EndOfPartition",
    "END_OF_PARTITION",
    "MAX_WATERMARK",
    "MIN_WATERMARK",
    "LatencyMarker",
    "EventAnnouncement",
]


class DataBuffer(NamedTuple):
    """A network buffer: a batch of records (``timestamps`` None when records have none)."""

    values: list
    timestamps: Optional[list]


@dataclass(frozen=True)
class Watermark:
    """Event time has reached ``timestamp``: no record with a smaller timestamp follows."""

    timestamp: int


@dataclass(frozen=True)
class WatermarkStatus:
    """A channel became idle (no watermarks for now) or active again (with_idleness)."""

    idle: bool


@dataclass(frozen=True)
class CheckpointBarrier:
    """Separates the records of checkpoint ``checkpoint_id`` from those after it.

    ``synchronous``: the savepoint of a stop-with-savepoint (Flink's SUSPEND savepoint type):
    sources emit nothing after it and every task finishes once the savepoint completed;
    ``drain`` (Flink's TERMINATE): sources emitted MAX_WATERMARK before it and every operator
    ended its input before its snapshot.
    """

    checkpoint_id: int
    timestamp: int
    is_savepoint: bool = False
    synchronous: bool = False
    drain: bool = False


@dataclass(frozen=True)
class EventAnnouncement:
    """A priority notice that ``barrier`` was put into a channel (Flink's ``EventAnnouncement``).

    The input gate hands it to the task before the channel's queued buffers, so that an
    unaligned checkpoint can take the barrier out of the queue at once (the barrier
    overtakes the buffers in front of it, which become the checkpoint's in-flight data).
    """

    barrier: CheckpointBarrier


@dataclass(frozen=True)
class LatencyMarker:
    """Emitted by sources at ``marked_time`` (ms) to measure end-to-end latency at sinks."""

    marked_time: int
    source_vertex_id: int
    subtask_index: int


class EndOfPartition:
    """The producing subtask finished: nothing more comes on this channel."""

    _instance: Optional["EndOfPartition"] = None

    def __new__(cls) -> "EndOfPartition":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "END_OF_PARTITION"


END_OF_PARTITION = EndOfPartition()

