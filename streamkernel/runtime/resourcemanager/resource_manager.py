"""The ResourceManager: the registry of every task slot in the cluster (Flink's ResourceManager).

TaskManagers register with it and report their slots; JobMasters ask it for slots
(:meth:`ResourceManager.request_slots`) and give them back when their job ends. A request
waits until enough slots are free at the same time (all or nothing, so two jobs never
deadlock holding half of what each needs) and fails after ``slot.request.timeout`` with a
:class:`~streamkernel.errors.NotEnoughSlotsError` that names what the job needs and what
the cluster has. As in a standalone Flink cluster, it cannot start TaskManagers itself: it
distributes the slots of those that registered.

It also runs the heartbeats: every ``heartbeat.interval`` it asks each TaskManager for a
heartbeat; one that is stopped, or silent for ``heartbeat.timeout``, is unregistered and
the jobs with slots on it are told (``disconnect_taskmanager``): their JobMasters fail the
subtasks it ran and restart the job by its restart strategy. A TaskManager registering
later (a replacement) simply adds its slots; jobs waiting for slots are woken.

Free requests are served greedily (any request that fits is served), not first-come
first-served: a small job may overtake a large one that waits.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional

from streamkernel.common.options import HeartbeatManagerOptions
from streamkernel.errors import IllegalConfigurationError, NotEnoughSlotsError, StreamKernelError
from streamkernel.graph.execution_graph import SlotId
from streamkernel.runtime.resourcemanager.gateway import TaskManagerSnapshot
from streamkernel.runtime.taskmanager.gateway import (
    AllocatedSlot,
    SlotReport,
    TaskExecutorGateway,
    TaskExecutorHeartbeat,
    TaskExecutorRegistration,
    TaskExecutorStoppedError,
    TaskManagerLostError,
)

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.jobmaster.gateway import JobMasterGateway

__all__ = ["ResourceManager", "SlotInfo", "SlotRequestCancelledError", "ResourceManagerStoppedError",
           "TaskManagerLostError"]

_LOG = logging.getLogger(__name__)


class SlotRequestCancelledError(StreamKernelError):
    """A pending slot request was aborted because its job was cancelled."""


class ResourceManagerStoppedError(StreamKernelError):
    """The cluster is stopping: no slots will be handed out any more."""


@dataclass(frozen=True)
class SlotInfo:
    """One slot of the cluster as the ResourceManager sees it: free, or allocated to a job."""

    slot_id: SlotId
    taskmanager_id: str
    job_id: Optional[str] = None
    job_name: Optional[str] = None

    @property
    def is_free(self) -> bool:
        """True when no job holds the slot."""
        return self.job_id is None


@dataclass
class _Registered:
    gateway: TaskExecutorGateway
    index: int
    number_of_slots: int
    last_heartbeat: float
    last_payload: Optional[TaskExecutorHeartbeat] = None
    registered_at: int = 0  # ms since the epoch


class ResourceManager:
    """The slot registry of a cluster (a ResourceManagerGateway).

    ``configuration`` may set ``heartbeat.interval`` (default 10 s) and
    ``heartbeat.timeout`` (default 50 s), Flink's keys and defaults (the MiniCluster's
    local backend passes much shorter ones, see ``LOCAL_HEARTBEAT_DEFAULTS`` there).
    """

    def __init__(self, configuration: Optional[Mapping[str, Any]] = None) -> None:
        conf = dict(configuration or {})
        self.heartbeat_interval_ms = HeartbeatManagerOptions.HEARTBEAT_INTERVAL.get(conf).to_milliseconds()
        self.heartbeat_timeout_ms = HeartbeatManagerOptions.HEARTBEAT_TIMEOUT.get(conf).to_milliseconds()
        if self.heartbeat_interval_ms < 1 or self.heartbeat_timeout_ms < self.heartbeat_interval_ms:
            raise IllegalConfigurationError(
                f"heartbeat.interval must be at least 1 ms and heartbeat.timeout at least as long, got "
                f"{self.heartbeat_interval_ms} ms and {self.heartbeat_timeout_ms} ms")
        # The condition guards every dict and set below; waiters in request_slots are woken
        # whenever slots are freed, TaskManagers come or go, a request is cancelled or we stop.
        self._cond = threading.Condition()
        self._taskmanagers: dict[str, _Registered] = {}
        self._allocations: dict[tuple[str, int], tuple[str, str]] = {}  # (tm id, slot) -> (job id, job name)
        self._job_masters: dict[str, JobMasterGateway] = {}
        self._pending: dict[str, int] = {}
        self._cancelled: set[str] = set()
        self._next_index = 0
        self._used_indexes: set[int] = set()
        self._running = True
        self._stop_heartbeats = threading.Event()
        self._heartbeat_thread: Optional[threading.Thread] = None

    # ---------------------------------------------------------- TaskManager registry
    def register_task_executor(self, gateway: TaskExecutorGateway,
                               slot_report: SlotReport) -> TaskExecutorRegistration:
        """A TaskManager joins with its slots; it gets a TaskManager index (``TM<index + 1>`` in tables).

        ``taskmanager-<n>`` gets index n - 1 unless that index was taken already, so the
        tables number TaskManagers as their ids do whatever order they register in (the
        ``process`` and ``spark`` backends start them at once); any other id gets the next index.
        """
        with self._cond:
            if not self._running:
                raise ResourceManagerStoppedError("the ResourceManager is stopped; cannot register a TaskManager")
            taskmanager_id = gateway.taskmanager_id
            if taskmanager_id in self._taskmanagers:
                raise ValueError(f"TaskManager {taskmanager_id!r} is already registered")
            index = _index_named_by(taskmanager_id)
            if index is None or index in self._used_indexes:
                index = self._next_index
            self._used_indexes.add(index)
            self._next_index = max(self._next_index, index + 1)
            self._taskmanagers[taskmanager_id] = _Registered(gateway, index, slot_report.number_of_slots,
                                                             time.monotonic(), None, time.time_ns() // 1_000_000)
            self._cond.notify_all()
        return TaskExecutorRegistration(index)

    def unregister_task_executor(self, taskmanager_id: str, cause: Optional[BaseException] = None) -> None:
        """A TaskManager leaves: its slots vanish and the jobs using them are told."""
        with self._cond:
            if self._taskmanagers.pop(taskmanager_id, None) is None:
                return
            lost = {job for (tm, _), (job, _) in self._allocations.items() if tm == taskmanager_id}
            for key in [k for k in self._allocations if k[0] == taskmanager_id]:
                del self._allocations[key]
            masters = [self._job_masters[j] for j in sorted(lost) if j in self._job_masters]
            self._cond.notify_all()
        error = cause or TaskManagerLostError(f"TaskManager {taskmanager_id!r} left the cluster")
        for master in masters:
            master.disconnect_taskmanager(taskmanager_id, error)

    def task_executor_gateway(self, taskmanager_id: str) -> TaskExecutorGateway:
        """The gateway of a registered TaskManager (KeyError naming it when unknown)."""
        with self._cond:
            registered = self._taskmanagers.get(taskmanager_id)
        if registered is None:
            raise KeyError(f"no TaskManager {taskmanager_id!r} is registered")
        return registered.gateway

    @property
    def taskmanager_ids(self) -> tuple[str, ...]:
        """Registered TaskManagers, in registration order."""
        with self._cond:
            return tuple(sorted(self._taskmanagers, key=lambda t: self._taskmanagers[t].index))

    def heartbeat_ages_ms(self) -> dict[str, int]:
        """Milliseconds since each registered TaskManager last answered a heartbeat (or registered)."""
        now = time.monotonic()
        with self._cond:
            return {tm: int((now - r.last_heartbeat) * 1000) for tm, r in self._taskmanagers.items()}

    def taskmanager_snapshots(self) -> tuple[TaskManagerSnapshot, ...]:
        """Every registered TaskManager as last seen: slots, which job holds each, the age and
        payload of its last heartbeat (live task metrics), in index order. Never calls a TaskManager."""
        now = time.monotonic()
        with self._cond:
            return tuple(
                TaskManagerSnapshot(tm, r.index, r.number_of_slots, r.registered_at,
                                    int((now - r.last_heartbeat) * 1000),
                                    tuple((self._allocations.get((tm, s)) or (None, None))[0]
                                          for s in range(r.number_of_slots)),
                                    r.last_payload)
                for tm, r in sorted(self._taskmanagers.items(), key=lambda item: item[1].index))

    # ------------------------------------------------------------------------ slots
    def slots(self) -> tuple[SlotInfo, ...]:
        """Every slot of the cluster, ordered TaskManager by TaskManager."""
        with self._cond:
            return self._slots_locked()

    def _slots_locked(self) -> tuple[SlotInfo, ...]:
        result = []
        for tm_id, r in sorted(self._taskmanagers.items(), key=lambda item: item[1].index):
            for s in range(r.number_of_slots):
                job = self._allocations.get((tm_id, s))
                result.append(SlotInfo(SlotId(r.index, s), tm_id, *(job or (None, None))))
        return tuple(result)

    def pending_requests(self) -> dict[str, int]:
        """Jobs waiting for slots: job id -> slots asked for."""
        with self._cond:
            return dict(self._pending)

    def request_slots(self, job_id: str, count: int, timeout_ms: int, *, job_name: str = "",
                      job_master: Optional[JobMasterGateway] = None) -> tuple[AllocatedSlot, ...]:
        """Allocate ``count`` slots to the job once that many are free; wait up to ``timeout_ms``.

        Slots are taken TaskManager by TaskManager (the first one's slots first, as Flink
        fills slots by default). Raises NotEnoughSlotsError after the timeout,
        SlotRequestCancelledError if the job is cancelled meanwhile, and
        ResourceManagerStoppedError if the cluster stops.
        """
        if count < 1:
            raise ValueError(f"job {job_name!r} asked for {count} slots; a job needs at least 1")
        deadline = time.monotonic() + timeout_ms / 1000
        with self._cond:
            if job_master is not None:
                self._job_masters[job_id] = job_master
            self._pending[job_id] = count
            try:
                while True:
                    if job_id in self._cancelled:
                        raise SlotRequestCancelledError(f"the slot request of job {job_name!r} was cancelled")
                    if not self._running:
                        raise ResourceManagerStoppedError(
                            f"the cluster stopped while job {job_name!r} waited for {count} slots")
                    free = [s for s in self._slots_locked() if s.is_free]
                    if len(free) >= count:
                        allocation = uuid.uuid4().hex
                        taken = free[:count]
                        for s in taken:
                            self._allocations[(s.taskmanager_id, s.slot_id.slot_index)] = (job_id, job_name)
                        return tuple(AllocatedSlot(s.slot_id, s.taskmanager_id, job_id, allocation) for s in taken)
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise NotEnoughSlotsError(self._shortfall_locked(job_id, job_name, count, timeout_ms))
                    self._cond.wait(remaining)
            finally:
                self._pending.pop(job_id, None)

    def _shortfall_locked(self, job_id: str, job_name: str, count: int, timeout_ms: int) -> str:
        slots = self._slots_locked()
        free = sum(1 for s in slots if s.is_free)
        holders: dict[str, int] = {}
        for s in slots:
            if s.job_name is not None or s.job_id is not None:
                label = repr(s.job_name) if s.job_name else s.job_id or "?"
                holders[label] = holders.get(label, 0) + 1
        held = "; ".join(f"job {name} holds {n}" for name, n in holders.items())
        shape = ", ".join(f"{tm} x {r.number_of_slots}" for tm, r in self._taskmanagers.items()) or "no TaskManagers"
        return (f"job {job_name!r} ({job_id}) could not get its task slots within {timeout_ms} ms "
                f"(slot.request.timeout): it needs {count}, the cluster has {free} free of {len(slots)} total "
                f"({shape}{'; ' + held if held else ''}). Wait for or cancel the other jobs, start the cluster "
                f"with more TaskManagers or slots (taskmanager.numberOfTaskSlots), or lower the job's parallelism.")

    def cancel_slot_request(self, job_id: str) -> None:
        """Make the job's pending (or next) slot request raise SlotRequestCancelledError."""
        with self._cond:
            self._cancelled.add(job_id)
            self._cond.notify_all()

    def release_slots(self, job_id: str) -> None:
        """Free every slot of the job (idempotent); waiting requests are woken."""
        with self._cond:
            for key in [k for k, (job, _) in self._allocations.items() if job == job_id]:
                del self._allocations[key]
            self._cancelled.discard(job_id)
            self._job_masters.pop(job_id, None)
            self._cond.notify_all()

    # ------------------------------------------------------------------- heartbeats
    def start_heartbeats(self) -> None:
        """Start the heartbeat thread (every ``heartbeat.interval``)."""
        if self._heartbeat_thread is None:
            self._heartbeat_thread = threading.Thread(target=self._heartbeat_loop, name="ResourceManager heartbeats",
                                                      daemon=True)
            self._heartbeat_thread.start()

    def _heartbeat_loop(self) -> None:
        while not self._stop_heartbeats.wait(self.heartbeat_interval_ms / 1000):
            self.heartbeat_round()

    def heartbeat_round(self) -> None:
        """Ask every TaskManager for a heartbeat; unregister the stopped and the silent ones."""
        with self._cond:
            registered = list(self._taskmanagers.items())
        now = time.monotonic()
        for taskmanager_id, r in registered:
            try:
                r.last_payload = r.gateway.heartbeat()
                r.last_heartbeat = now
            except Exception as error:  # noqa: BLE001 - any failure to answer counts as silence
                silent_ms = (now - r.last_heartbeat) * 1000
                if isinstance(error, TaskExecutorStoppedError):
                    lost = TaskManagerLostError(f"TaskManager {taskmanager_id!r} is lost (it stopped: {error})")
                elif silent_ms > self.heartbeat_timeout_ms:
                    lost = TaskManagerLostError(
                        f"Heartbeat of TaskManager {taskmanager_id!r} timed out: no answer for {silent_ms:.0f} ms "
                        f"(heartbeat.timeout {self.heartbeat_timeout_ms} ms; last error: {error})")
                else:
                    continue
                _LOG.warning("%s", lost)
                self.unregister_task_executor(taskmanager_id, lost)

    def stop(self) -> None:
        """Stop handing out slots (waiting requests fail) and stop the heartbeats."""
        with self._cond:
            self._running = False
            self._cond.notify_all()
        self._stop_heartbeats.set()
        if self._heartbeat_thread is not None and self._heartbeat_thread is not threading.current_thread():
            self._heartbeat_thread.join()

    def __repr__(self) -> str:
        slots = self.slots()
        return (f"ResourceManager({len(self._taskmanagers)} TaskManagers, "
                f"{sum(1 for s in slots if s.is_free)} of {len(slots)} slots free)")


def _index_named_by(taskmanager_id: str) -> Optional[int]:
    """n - 1 for an id ``taskmanager-<n>`` (n >= 1), else None.

        >>> _index_named_by("taskmanager-2"), _index_named_by("taskmanager-1.1"), _index_named_by("tm")
        (1, None, None)
    """
    prefix, _, number = taskmanager_id.rpartition("-")
    return int(number) - 1 if prefix == "taskmanager" and number.isdigit() and int(number) >= 1 else None
