"""Looking at a MiniCluster while it runs: where TaskManagers run, what is in each slot, snapshots, peeking.

:class:`ClusterInspection` is ``MiniCluster.inspection``, what the notebook's views read:
:meth:`~ClusterInspection.taskmanagers` (slots and the subtasks in them),
:meth:`~ClusterInspection.snapshot` (the whole cluster as plain data: TaskManagers,
slots, jobs, live per-subtask metrics; safe from any thread, it never stops a task),
:meth:`~ClusterInspection.describe_taskmanager` (backend, host, pid) and
:meth:`~ClusterInspection.peek` (the records an operator emits right now,
:mod:`.peek`). Jobs are read from their published status snapshots (``JobDetails``, with
the job's JobGraph), never from a JobMaster.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Union

from streamkernel.common.job_status import JobID
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.execution_graph import SlotId
from streamkernel.runtime.core.deployment import ExecutionAttemptId
from streamkernel.runtime.dispatcher.dispatcher import Dispatcher
from streamkernel.runtime.jobmaster.failure_injection import operator_nodes, unknown_operator
from streamkernel.runtime.resourcemanager.resource_manager import ResourceManager
from streamkernel.runtime.taskmanager.gateway import TaskExecutorHeartbeat

__all__ = ["ClusterInspection", "SlotOccupancy", "TaskManagerInfo"]


@dataclass(frozen=True)
class SlotOccupancy:
    """One task slot: which job holds it and which subtasks run in it."""

    slot_id: SlotId
    job_id: Optional[str] = None
    job_name: Optional[str] = None
    tasks: tuple[str, ...] = ()


@dataclass(frozen=True)
class TaskManagerInfo:
    """One TaskManager of the cluster and its slots."""

    taskmanager_id: str
    index: int
    slots: tuple[SlotOccupancy, ...]

    @property
    def number_of_slots(self) -> int:
        """How many slots it offers."""
        return len(self.slots)


class ClusterInspection:
    """Views of one cluster (``MiniCluster.inspection``).

    ``backend`` is the name of the cluster's backend; ``dispatcher`` gives the jobs' status
    snapshots, ``resource_manager`` the slots and the TaskManagers' heartbeats,
    ``taskmanagers`` the backend's object that describes and reaches TaskManagers
    (:mod:`.taskmanagers`); all three are None for a cluster never started.
    ``is_running`` tells whether the cluster runs (a stopped one is not asked for heartbeats).
    """

    def __init__(self, backend: str, dispatcher: Optional[Dispatcher], resource_manager: Optional[ResourceManager],
                 taskmanagers: Any, is_running: Callable[[], bool]) -> None:
        self.backend = backend
        self._dispatcher = dispatcher
        self._resource_manager = resource_manager
        self._backend = taskmanagers
        self._is_running = is_running

    def describe_taskmanager(self, taskmanager_id: str) -> dict:
        """Where a TaskManager runs: ``backend``, ``host``, ``pid`` where known (for the cockpit)."""
        return self._backend.describe(taskmanager_id) if self._backend is not None else {}

    def peek(self, job_id: Union[JobID, str], operator: str, limit: int = 20,
             seconds: float = 1.0) -> list[tuple[str, Any, Optional[int]]]:
        """The records an operator of a running job emits, for a look (``%flink peek``).

        Every running subtask of the operator (its uid, name, or a chain's name) keeps the
        last ``limit`` records it emits within ``seconds`` (all subtasks at once); returns
        (subtask name, record, timestamp) rows, subtask by subtask. The job is not slowed
        down outside that moment. Raises ValueError (FailureInjectionError) naming the job's
        operators when none matches, or when a name is ambiguous; ValueError for a ``limit``
        below 1 or ``seconds`` not > 0.
        """
        from concurrent.futures import ThreadPoolExecutor

        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"peek: limit must be an int >= 1, got {limit!r}")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
            raise ValueError(f"peek: seconds must be a number > 0, got {seconds!r}")
        if self._dispatcher is None:
            raise InvalidProgramError("MiniCluster.inspection.peek: the cluster was never started; call start() first")
        details = self._dispatcher.request_job_details(
            job_id if isinstance(job_id, JobID) else JobID.from_hex_string(str(job_id)))
        job_graph = details.require_job_graph()
        targets = operator_nodes(job_graph, operator)
        if not targets:
            raise unknown_operator(job_graph, f"job {details.job_name!r}", operator)
        vertex_id, node_id = targets[0]
        vertex = next(v for v in details.vertices if v.vertex_id == vertex_id)
        running = [s for s in vertex.subtasks if s.state.name == "RUNNING" and s.taskmanager_id is not None]
        if not running:
            raise ValueError(f"no subtask of operator {operator!r} of job {details.job_name!r} is running "
                             f"(the job is {details.status.name})")

        def one(sub: Any) -> list:
            attempt = ExecutionAttemptId(details.job_id, vertex_id, sub.subtask_index, sub.attempt_number)
            return [(sub.name, record, ts) for record, ts in
                    self._backend.peek(sub.taskmanager_id, attempt, node_id, limit, seconds)]

        with ThreadPoolExecutor(max_workers=len(running), thread_name_prefix="streamkernel-peek") as pool:
            return [row for rows in pool.map(one, running) for row in rows]

    def _heartbeats(self) -> dict[str, TaskExecutorHeartbeat]:
        if self._resource_manager is None or not self._is_running():
            return {}
        beats = {}
        for taskmanager_id in self._resource_manager.taskmanager_ids:
            try:
                beats[taskmanager_id] = self._resource_manager.task_executor_gateway(taskmanager_id).heartbeat()
            except Exception:  # noqa: BLE001 - a TaskManager stopping right now: skip it
                continue
        return beats

    @property
    def taskmanagers(self) -> tuple[TaskManagerInfo, ...]:
        """Every TaskManager with its slots: the job holding each and the subtasks in it."""
        if self._resource_manager is None or not self._is_running():
            return ()
        return self._taskmanager_infos(self._heartbeats())

    def _taskmanager_infos(self, beats: Mapping[str, TaskExecutorHeartbeat]) -> tuple[TaskManagerInfo, ...]:
        assert self._resource_manager is not None
        by_tm: dict[str, list[SlotOccupancy]] = {}
        indexes: dict[str, int] = {}
        for slot in self._resource_manager.slots():
            beat = beats.get(slot.taskmanager_id)
            tasks: tuple[str, ...] = ()
            if beat is not None and slot.slot_id.slot_index < beat.slot_report.number_of_slots:
                tasks = beat.slot_report.slots[slot.slot_id.slot_index].tasks
            by_tm.setdefault(slot.taskmanager_id, []).append(SlotOccupancy(slot.slot_id, slot.job_id, slot.job_name,
                                                                           tasks))
            indexes[slot.taskmanager_id] = slot.slot_id.taskmanager_index
        return tuple(TaskManagerInfo(tm, indexes[tm], tuple(slots)) for tm, slots in by_tm.items())

    def snapshot(self) -> dict:
        """The cluster's state as plain data: TaskManagers and slots, jobs, per-task metrics.

        Safe from any thread while jobs run (it reads published snapshots and the tasks'
        counters; it never stops a task). Running subtasks carry live metrics
        (:meth:`TaskMetrics.snapshot`), ended ones their final metrics.
        """
        now = time.time_ns() // 1_000_000
        if self._resource_manager is None or self._dispatcher is None:
            return {"running": False, "backend": self.backend, "time": now, "taskmanagers": [],
                    "slots": {"total": 0, "free": 0}, "pending_slot_requests": {}, "jobs": []}
        running = self._is_running()
        beats = self._heartbeats()
        live: dict[ExecutionAttemptId, dict] = {t.attempt_id: dict(t.metrics) for b in beats.values() for t in b.tasks}
        infos = self._taskmanager_infos(beats) if running else ()
        ages = self._resource_manager.heartbeat_ages_ms() if running else {}
        slots = [s for info in infos for s in info.slots]
        jobs = []
        for details in self._dispatcher.list_jobs():
            job = details.to_dict()
            for vertex in job["vertices"]:
                for sub in vertex["subtasks"]:
                    attempt = ExecutionAttemptId(details.job_id, vertex["id"], sub["subtask"], sub["attempt"])
                    if attempt in live:
                        sub["metrics"] = live[attempt]
            jobs.append(job)
        return {
            "running": running, "backend": self.backend, "time": now,
            "taskmanagers": [{"id": i.taskmanager_id, "index": i.index, "placement": self.describe_taskmanager(i.taskmanager_id),
                              "heartbeat_age_ms": ages.get(i.taskmanager_id),
                              "memory": _memory_of(beats.get(i.taskmanager_id)),
                              "slots": [{"slot": str(s.slot_id), "index": s.slot_id.slot_index, "job_id": s.job_id,
                                         "job_name": s.job_name, "tasks": list(s.tasks)} for s in i.slots]}
                             for i in infos],
            "slots": {"total": len(slots), "free": sum(1 for s in slots if s.job_id is None)},
            "pending_slot_requests": self._resource_manager.pending_requests() if running else {},
            "jobs": jobs,
        }


def _memory_of(heartbeat: Optional[TaskExecutorHeartbeat]) -> Optional[dict]:
    """The TaskManager's memory as its last heartbeat reported it (configured parts, the RSS, per slot what
    uses its managed memory: ``slots``, and its network buffers: ``metrics``), or None."""
    memory = getattr(heartbeat, "memory", None) if heartbeat is not None else None
    if not memory:
        return None
    return {**memory, "slots": dict(getattr(heartbeat, "slot_memory", None) or {}),
            "metrics": dict(getattr(heartbeat, "metrics", None) or {})}
