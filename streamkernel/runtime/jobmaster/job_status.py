"""What a JobMaster publishes about its job: status snapshots while it runs, a result at the end.

A :class:`JobDetails` is an immutable picture (job status, every subtask's state and
slot, timestamps, failure cause, checkpoint statistics, and the job's JobGraph, itself
immutable after submission) that the JobMaster replaces after each event it handles.
Every reader (the client, ``MiniCluster.inspection``, failure injection, the cockpit, the
``%flink`` magics) takes the current one (``Dispatcher.request_job_details``) from any
thread without locks and without touching the JobMaster. A :class:`JobResult` is what
remains of a job once it reached a globally terminal state (Flink's JobResult).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Optional

from streamkernel.common.job_status import JobStatus
from streamkernel.graph.execution_graph import SlotId
from streamkernel.runtime.checkpoint.history import CheckpointStatsSnapshot
from streamkernel.runtime.core.deployment import ExecutionState

if TYPE_CHECKING:
    from streamkernel.graph.job_graph import JobGraph

__all__ = ["ExceptionHistoryEntry", "SubtaskDetails", "VertexDetails", "JobDetails", "JobResult"]


@dataclass(frozen=True)
class ExceptionHistoryEntry:
    """One failure that started a failover of a job (Flink's exception history entry).

    ``timestamp`` is when the JobMaster learnt of it (ms since the epoch); ``task_name`` the
    subtask that failed (``"Map (2/4)"``, None when no subtask did, e.g. no slots);
    ``taskmanager_id`` where it ran; ``attempt`` the job attempt that failed (0 first);
    ``restarted`` whether the restart strategy restarted the job after it.
    """

    timestamp: int
    exception_name: str
    message: str
    stacktrace: str
    task_name: Optional[str] = None
    taskmanager_id: Optional[str] = None
    attempt: int = 0
    restarted: bool = False

    @classmethod
    def of(cls, error: BaseException, timestamp: int, task_name: Optional[str], taskmanager_id: Optional[str],
           attempt: int, restarted: bool) -> "ExceptionHistoryEntry":
        """The entry for ``error`` (its text and stack trace are copied now)."""
        stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        return cls(timestamp, type(error).__name__, str(error), stack, task_name, taskmanager_id, attempt, restarted)

    @property
    def exception(self) -> str:
        """``"Type: message"``."""
        return f"{self.exception_name}: {self.message}"

    def to_dict(self) -> dict:
        """Plain data for widgets and JSON."""
        return {"timestamp": self.timestamp, "exception": self.exception, "task": self.task_name,
                "taskmanager": self.taskmanager_id, "attempt": self.attempt, "restarted": self.restarted,
                "stacktrace": self.stacktrace}


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
    is not terminal, and ``duration_ms`` runs from the submission to the end, or to the moment the
    snapshot was published while the job runs: a reader shows :meth:`duration_at` its own now
    (Flink's job duration: the time since the start of a running job).
    ``num_restarts`` is Flink's ``numRestarts`` (restarts so far; the current attempt's
    number), ``exception_history`` every failure that started a failover, oldest first,
    and ``restart_strategy`` the description of the job's restart strategy. ``checkpoints``
    are the job's checkpoint statistics (counts, recent history with per-subtask
    acknowledgements, latest completed / failed / restored), Flink's checkpoint stats.
    ``job_graph`` is the job's JobGraph (its ``stream_graph`` the program's StreamGraph),
    fixed at submission: what readers resolve operator names against (None only in a
    snapshot built outside a JobMaster).
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
    num_restarts: int = 0
    exception_history: tuple[ExceptionHistoryEntry, ...] = ()
    restart_strategy: str = ""
    checkpoints: Optional[CheckpointStatsSnapshot] = None
    job_graph: Optional["JobGraph"] = field(default=None, compare=False, repr=False)

    def duration_at(self, now_ms: int) -> int:
        """The job's duration seen at ``now_ms``: start to end once it ended, else start to ``now_ms``."""
        return (self.end_time if self.end_time is not None else now_ms) - self.start_time

    def require_job_graph(self) -> "JobGraph":
        """The job's JobGraph; LookupError naming the job when this snapshot carries none."""
        if self.job_graph is None:
            raise LookupError(f"the status snapshot of job {self.job_name!r} ({self.job_id}) carries no JobGraph")
        return self.job_graph

    def checkpoint_rows(self) -> list[dict]:
        """The checkpoint history as rows, newest first: id, status, type, trigger time,
        duration, size, acknowledged/total, path, failure, and ``subtasks``: one row per
        acknowledging subtask (vertex, subtask, ack time, duration, size)."""
        if self.checkpoints is None:
            return []
        return [dict(stats.row(), subtasks=stats.subtask_rows()) for stats in self.checkpoints.history]

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
            "num_restarts": self.num_restarts, "restart_strategy": self.restart_strategy,
            "exception_history": [e.to_dict() for e in self.exception_history],
            "vertices": [v.to_dict() for v in self.vertices],
            "checkpoints": _checkpoints_dict(self),
        }


@dataclass(frozen=True)
class JobResult:
    """What remains of a job in a globally terminal state: status, runtime, accumulators, cause,
    and how often it restarted (``num_restarts``) after which failures (``exception_history``)."""

    job_id: str
    job_name: str
    status: JobStatus
    net_runtime_ms: int
    accumulators: Mapping[str, Any] = field(default_factory=dict)
    failure_cause: Optional[BaseException] = None
    failing_task: Optional[str] = None
    num_restarts: int = 0
    exception_history: tuple[ExceptionHistoryEntry, ...] = ()

    @property
    def is_success(self) -> bool:
        """True when the job FINISHED."""
        return self.status is JobStatus.FINISHED


def _checkpoints_dict(details: JobDetails) -> Optional[dict]:
    stats = details.checkpoints
    if stats is None:
        return None
    restored = stats.latest_restored
    return {"counts": stats.counts(), "history": details.checkpoint_rows(),
            "latest_restored": None if restored is None else {
                "id": restored.checkpoint_id, "timestamp": restored.restore_timestamp,
                "type": "savepoint" if restored.is_savepoint else "checkpoint", "path": restored.external_path}}


def _describe(error: Optional[BaseException]) -> Optional[str]:
    return None if error is None else f"{type(error).__name__}: {error}"
