"""What a JobMaster publishes about its job: status snapshots while it runs, a result at the end.

A :class:`JobDetails` is an immutable picture (job status, every subtask's state and
slot, timestamps, failure cause) that the JobMaster replaces after each event it handles.
Readers (the client, ``MiniCluster.snapshot()``, notebook widgets) take the current one
from any thread without locks and without touching the job. A :class:`JobResult` is what
remains of a job once it reached a globally terminal state (Flink's JobResult).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from streamkernel.common.job_status import JobStatus
from streamkernel.graph.execution_graph import SlotId
from streamkernel.runtime.deployment import ExecutionState

__all__ = ["SubtaskDetails", "VertexDetails", "JobDetails", "JobResult"]


@dataclass(frozen=True)
class SubtaskDetails:
    """One subtask (its current attempt): state, placement, failure and final metrics."""

    vertex_id: int
    subtask_index: int
    name: str
    state: ExecutionState
    attempt_number: int = 0
    slot: Optional[SlotId] = None
    taskmanager_id: Optional[str] = None
    failure: Optional[str] = None
    state_timestamps: Mapping[str, int] = field(default_factory=dict)
    metrics: Optional[Mapping[str, Any]] = None

    def to_dict(self) -> dict:
        """Plain data (str/int/dict/list/None) for widgets and JSON."""
        return {
            "vertex_id": self.vertex_id, "subtask": self.subtask_index, "name": self.name,
            "state": self.state.value, "attempt": self.attempt_number,
            "slot": str(self.slot) if self.slot is not None else None, "taskmanager": self.taskmanager_id,
            "failure": self.failure, "timestamps": dict(self.state_timestamps),
            "metrics": dict(self.metrics) if self.metrics is not None else None,
        }


@dataclass(frozen=True)
class VertexDetails:
    """One job vertex (an operator chain) with its subtasks."""

    vertex_id: int
    name: str
    parallelism: int
    subtasks: tuple[SubtaskDetails, ...]

    @property
    def state_counts(self) -> dict[str, int]:
        """How many subtasks are in each ExecutionState, e.g. ``{"RUNNING": 3, "FINISHED": 1}``."""
        counts: dict[str, int] = {}
        for s in self.subtasks:
            counts[s.state.value] = counts.get(s.state.value, 0) + 1
        return counts

    def to_dict(self) -> dict:
        """Plain data for widgets and JSON."""
        return {"id": self.vertex_id, "name": self.name, "parallelism": self.parallelism,
                "states": self.state_counts, "subtasks": [s.to_dict() for s in self.subtasks]}


@dataclass(frozen=True)
class JobDetails:
    """A published status snapshot of one job (Flink's JobDetails / the web UI's job view).

    Times are wall-clock milliseconds since the epoch; ``end_time`` is None while the job
    is not terminal, and ``duration_ms`` runs from the submission to now (or to the end).
    """

    job_id: str
    job_name: str
    status: JobStatus
    start_time: int
    end_time: Optional[int]
    duration_ms: int
    vertices: tuple[VertexDetails, ...]
    status_timestamps: Mapping[str, int] = field(default_factory=dict)
    failure_cause: Optional[BaseException] = None
    failing_task: Optional[str] = None
    attempt: int = 0
    slots_needed: int = 0

    @property
    def subtasks(self) -> tuple[SubtaskDetails, ...]:
        """Every subtask of every vertex."""
        return tuple(s for v in self.vertices for s in v.subtasks)

    def to_dict(self) -> dict:
        """Plain data for widgets and JSON (the failure cause as text)."""
        return {
            "job_id": self.job_id, "name": self.job_name, "status": self.status.name,
            "start_time": self.start_time, "end_time": self.end_time, "duration_ms": self.duration_ms,
            "timestamps": dict(self.status_timestamps), "attempt": self.attempt,
            "slots_needed": self.slots_needed,
            "failure": _describe(self.failure_cause), "failing_task": self.failing_task,
            "vertices": [v.to_dict() for v in self.vertices],
        }


@dataclass(frozen=True)
class JobResult:
    """What remains of a job in a globally terminal state: status, runtime, accumulators, cause."""

    job_id: str
    job_name: str
    status: JobStatus
    net_runtime_ms: int
    accumulators: Mapping[str, Any] = field(default_factory=dict)
    failure_cause: Optional[BaseException] = None
    failing_task: Optional[str] = None

    @property
    def is_success(self) -> bool:
        """True when the job FINISHED."""
        return self.status is JobStatus.FINISHED


def _describe(error: Optional[BaseException]) -> Optional[str]:
    return None if error is None else f"{type(error).__name__}: {error}"
