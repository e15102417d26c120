"""Checkpoint statistics: what ``%flink checkpoints`` and the checkpoint widget show.

Flink's ``CheckpointStatsTracker`` keeps counts, the latest completed / failed / restored
checkpoint, and a bounded history of recent checkpoints (``web.checkpoints.history``,
default 10) with per-subtask acknowledgements. :class:`CheckpointStatsHistory` is that
tracker: the :class:`~streamkernel.runtime.checkpoint.coordinator.CheckpointCoordinator`
reports to it (from the JobMaster's thread), and anyone may take a
:meth:`~CheckpointStatsHistory.snapshot` from any thread: an immutable
:class:`CheckpointStatsSnapshot` whose :meth:`~CheckpointStatsSnapshot.rows` are the
lines of ``%flink checkpoints``.

Entries are frozen dataclasses, replaced (never mutated) on every report, so a snapshot
is a cheap copy of references and never sees a half-updated checkpoint.
"""

from __future__ import annotations

import enum
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping, Optional

from streamkernel.runtime.checkpoint.checkpoint_metrics import CheckpointMetrics

__all__ = [
    "CheckpointStatus",
    "SubtaskCheckpointStats",
    "CheckpointStats",
    "RestoredCheckpointStats",
    "CheckpointStatsSnapshot",
    "CheckpointStatsHistory",
    "DEFAULT_HISTORY_SIZE",
]

#: Flink's ``web.checkpoints.history`` default: how many recent checkpoints are remembered
DEFAULT_HISTORY_SIZE = 10

SubtaskKey = tuple[int, int]


class CheckpointStatus(enum.Enum):
    """The status of a checkpoint in the statistics (Flink's ``CheckpointStatsStatus``)."""

    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


@dataclass(frozen=True)
class SubtaskCheckpointStats:
    """One subtask's acknowledgement of a checkpoint (Flink's ``SubtaskStateStats``).

    ``duration_ms`` runs from the checkpoint's trigger to this acknowledgement;
    ``state_size`` is the size in bytes of what the subtask stored (None when unknown,
    e.g. a snapshot handed over in memory); ``unaligned``: the subtask took it unaligned,
    storing ``persisted_data`` bytes of in-flight records (Flink's "Persisted data");
    ``metrics``: the durations it measured (its sync and async parts, alignment, start delay).
    """

    vertex_id: int
    subtask_index: int
    ack_timestamp: int
    duration_ms: int
    state_size: Optional[int]
    unaligned: bool = False
    persisted_data: int = 0
    metrics: CheckpointMetrics = field(default_factory=CheckpointMetrics)


@dataclass(frozen=True)
class CheckpointStats:
    """The statistics of one checkpoint or savepoint (Flink's ``AbstractCheckpointStats``);
    ``metadata_size``: the bytes of its ``_metadata`` once completed."""

    checkpoint_id: int
    trigger_timestamp: int
    is_savepoint: bool
    num_subtasks: int
    status: CheckpointStatus = CheckpointStatus.IN_PROGRESS
    acknowledged: Mapping[SubtaskKey, SubtaskCheckpointStats] = field(default_factory=lambda: MappingProxyType({}))
    end_timestamp: Optional[int] = None
    failure_reason: Optional[str] = None
    external_path: Optional[str] = None
    metadata_size: int = 0

    @property
    def num_acknowledged(self) -> int:
        """How many subtasks have acknowledged."""
        return len(self.acknowledged)

    @property
    def state_size(self) -> int:
        """Bytes stored by the subtasks that acknowledged (unknown sizes count as 0)."""
        return sum(stats.state_size or 0 for stats in self.acknowledged.values())

    @property
    def unaligned(self) -> bool:
        """Whether a subtask took this checkpoint unaligned (Flink's "Unaligned" column)."""
        return any(stats.unaligned for stats in self.acknowledged.values())

    @property
    def persisted_data(self) -> int:
        """Bytes of in-flight records stored by the subtasks (Flink's "Persisted data")."""
        return sum(stats.persisted_data for stats in self.acknowledged.values())

    @property
    def duration_ms(self) -> Optional[int]:
        """End-to-end duration: trigger to completion or failure (None while in progress)."""
        return None if self.end_timestamp is None else self.end_timestamp - self.trigger_timestamp

    @property
    def latest_ack_timestamp(self) -> Optional[int]:
        """When the last acknowledgement arrived, or None."""
        return max((s.ack_timestamp for s in self.acknowledged.values()), default=None)

    def row(self) -> dict:
        """This checkpoint as one line of ``%flink checkpoints``."""
        return {
            "id": self.checkpoint_id,
            "status": self.status.value,
            "type": "savepoint" if self.is_savepoint else "checkpoint",
            "trigger_timestamp": self.trigger_timestamp,
            "duration_ms": self.duration_ms,
            "state_size": self.state_size,
            "unaligned": self.unaligned,
            "persisted_data": self.persisted_data,
            "acknowledged": f"{self.num_acknowledged}/{self.num_subtasks}",
            "path": self.external_path,
            "failure": self.failure_reason,
        }

    def subtask_rows(self) -> list[dict]:
        """One line per acknowledging subtask (``%flink checkpoints`` details)."""
        return [
            {"vertex_id": s.vertex_id, "subtask": s.subtask_index, "ack_timestamp": s.ack_timestamp,
             "duration_ms": s.duration_ms, "state_size": s.state_size, "unaligned": s.unaligned,
             "persisted_data": s.persisted_data}
            for _, s in sorted(self.acknowledged.items())
        ]


@dataclass(frozen=True)
class RestoredCheckpointStats:
    """The checkpoint or savepoint the job was restored from (Flink's ``RestoredCheckpointStats``)."""

    checkpoint_id: int
    restore_timestamp: int
    is_savepoint: bool
    external_path: Optional[str]


@dataclass(frozen=True)
class CheckpointStatsSnapshot:
    """An immutable view of the statistics at one moment (Flink's ``CheckpointStatsSnapshot``).

    ``history`` is newest first.
    """

    num_triggered: int
    num_in_progress: int
    num_completed: int
    num_failed: int
    history: tuple[CheckpointStats, ...]
    latest_completed: Optional[CheckpointStats]
    latest_failed: Optional[CheckpointStats]
    latest_savepoint: Optional[CheckpointStats]
    latest_restored: Optional[RestoredCheckpointStats]

    def rows(self) -> list[dict]:
        """The lines of ``%flink checkpoints``, newest first."""
        return [stats.row() for stats in self.history]

    def get(self, checkpoint_id: int) -> Optional[CheckpointStats]:
        """The statistics of ``checkpoint_id`` if it is still in the history."""
        return next((s for s in self.history if s.checkpoint_id == checkpoint_id), None)

    def counts(self) -> dict:
        """Triggered / in progress / completed / failed counts."""
        return {"triggered": self.num_triggered, "in_progress": self.num_in_progress,
                "completed": self.num_completed, "failed": self.num_failed}


class CheckpointStatsHistory:
    """Counts, latest checkpoints and a bounded history of recent checkpoints.

    Written by one thread (the coordinator's driver), read by any (widgets, magics) through
    :meth:`snapshot`. Reports about a checkpoint that has already left the history are
    still counted but otherwise ignored.
    """

    def __init__(self, max_size: int = DEFAULT_HISTORY_SIZE) -> None:
        if max_size < 1:
            raise ValueError(f"CheckpointStatsHistory: max_size must be at least 1, got {max_size}")
        self.max_size = max_size
        # _lock guards every attribute below: reports replace entries, snapshot copies them
        self._lock = threading.Lock()
        self._entries: OrderedDict[int, CheckpointStats] = OrderedDict()
        self._counts = {"triggered": 0, "in_progress": 0, "completed": 0, "failed": 0}
        self._latest_completed: Optional[CheckpointStats] = None
        self._latest_failed: Optional[CheckpointStats] = None
        self._latest_savepoint: Optional[CheckpointStats] = None
        self._latest_restored: Optional[RestoredCheckpointStats] = None

    # ------------------------------------------------------------------ reports
    def report_pending(self, checkpoint_id: int, trigger_timestamp: int, is_savepoint: bool,
                       num_subtasks: int) -> None:
        """A checkpoint was triggered and waits for ``num_subtasks`` acknowledgements."""
        stats = CheckpointStats(checkpoint_id, trigger_timestamp, is_savepoint, num_subtasks)
        with self._lock:
            self._counts["triggered"] += 1
            self._counts["in_progress"] += 1
            self._entries[checkpoint_id] = stats
            while len(self._entries) > self.max_size:
                self._entries.popitem(last=False)

    def report_acknowledged(self, checkpoint_id: int, subtask: SubtaskKey, ack_timestamp: int,
                            state_size: Optional[int], *, unaligned: bool = False, persisted_data: int = 0,
                            metrics: Optional[CheckpointMetrics] = None) -> None:
        """``subtask`` acknowledged ``checkpoint_id`` having stored ``state_size`` bytes (of which
        ``persisted_data`` in-flight records, when it took the checkpoint ``unaligned``), with the
        durations it measured (``metrics``)."""
        with self._lock:
            stats = self._entries.get(checkpoint_id)
            if stats is None or stats.status is not CheckpointStatus.IN_PROGRESS:
                return
            acknowledged = dict(stats.acknowledged)
            acknowledged[subtask] = SubtaskCheckpointStats(
                subtask[0], subtask[1], ack_timestamp, ack_timestamp - stats.trigger_timestamp, state_size,
                unaligned, persisted_data, metrics or CheckpointMetrics())
            self._entries[checkpoint_id] = replace(stats, acknowledged=MappingProxyType(acknowledged))

    def report_completed(self, checkpoint_id: int, end_timestamp: int, external_path: Optional[str] = None,
                         metadata_size: int = 0) -> None:
        """The checkpoint completed (its metadata, of ``metadata_size`` bytes, is written)."""
        self._finish(checkpoint_id, CheckpointStatus.COMPLETED, end_timestamp, None, external_path, metadata_size)

    def report_failed(self, checkpoint_id: int, end_timestamp: int, reason: str) -> None:
        """The checkpoint was aborted (timeout, decline, subsumed, job stopped ...)."""
        self._finish(checkpoint_id, CheckpointStatus.FAILED, end_timestamp, reason, None)

    def report_restored(self, checkpoint_id: int, restore_timestamp: int, is_savepoint: bool,
                        external_path: Optional[str]) -> None:
        """The job (re)started from this checkpoint or savepoint."""
        with self._lock:
            self._latest_restored = RestoredCheckpointStats(checkpoint_id, restore_timestamp, is_savepoint,
                                                            external_path)

    def _finish(self, checkpoint_id: int, status: CheckpointStatus, end_timestamp: int,
                reason: Optional[str], external_path: Optional[str], metadata_size: int = 0) -> None:
        with self._lock:
            stats = self._entries.get(checkpoint_id)
            if stats is not None and stats.status is not CheckpointStatus.IN_PROGRESS:
                return  # already finished: a second report changes nothing
            self._counts["in_progress"] = max(0, self._counts["in_progress"] - 1)
            self._counts["completed" if status is CheckpointStatus.COMPLETED else "failed"] += 1
            if stats is None:
                return
            stats = replace(stats, status=status, end_timestamp=end_timestamp, failure_reason=reason,
                            external_path=external_path, metadata_size=metadata_size)
            self._entries[checkpoint_id] = stats
            if status is CheckpointStatus.COMPLETED:
                self._latest_completed = stats
                if stats.is_savepoint:
                    self._latest_savepoint = stats
            else:
                self._latest_failed = stats

    # ------------------------------------------------------------------ reading
    def get(self, checkpoint_id: int) -> Optional[CheckpointStats]:
        """The statistics of ``checkpoint_id`` if it is still in the history."""
        with self._lock:
            return self._entries.get(checkpoint_id)

    def snapshot(self) -> CheckpointStatsSnapshot:
        """An immutable copy of everything, safe to read from any thread."""
        with self._lock:
            return CheckpointStatsSnapshot(
                num_triggered=self._counts["triggered"],
                num_in_progress=self._counts["in_progress"],
                num_completed=self._counts["completed"],
                num_failed=self._counts["failed"],
                history=tuple(reversed(self._entries.values())),
                latest_completed=self._latest_completed,
                latest_failed=self._latest_failed,
                latest_savepoint=self._latest_savepoint,
                latest_restored=self._latest_restored,
            )

    def __repr__(self) -> str:
        with self._lock:
            counts = dict(self._counts)
        return f"CheckpointStatsHistory({counts}, max_size={self.max_size})"
