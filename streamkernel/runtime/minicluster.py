"""MiniCluster: a whole Flink cluster in this process: a JobManager and its TaskManagers.

``MiniCluster(taskmanagers=2, slots_per_taskmanager=2).start()`` creates the JobManager's
parts (a ResourceManager and a Dispatcher, which starts one JobMaster per job) and the
TaskManagers, which register their slots with the ResourceManager. ``stop()`` cancels the
running jobs, stops everything and leaves no thread behind.

A started cluster becomes the process's *current* cluster (unless ``start(make_current=
False)``): every StreamExecutionEnvironment of the process then submits to it, several
jobs at once while slots last (session mode). Without one, ``env.execute()`` starts a
transient cluster sized for the job and stops it afterwards, as PyFlink's local mode does.

Everything a notebook shows comes from :meth:`MiniCluster.snapshot`, a plain dict built
from published snapshots, safe to call from any thread while jobs run.

Where TaskManagers run is the cluster's *backend* (:mod:`.minicluster_taskmanagers`):
``local`` (threads in this process, the default), ``process`` (one child process per
TaskManager) or ``spark`` (TaskManagers in long-running Spark tasks). Without an explicit
``backend`` the configuration's ``streamkernel.backend`` (default: ``$STREAMKERNEL_BACKEND``,
else ``local``) decides, also for the transient cluster of ``env.execute()``.

Failure injection, to watch recovery: :meth:`MiniCluster.kill_taskmanager` (a TaskManager
dies; the ResourceManager notices), :meth:`MiniCluster.add_taskmanager`
(a replacement registers its slots, as YARN or Spark would relaunch one) and
:meth:`MiniCluster.fail_operator` (an operator's running subtasks raise).

Checkpoints and savepoints on request, and each job's checkpoint history:
:meth:`MiniCluster.trigger_checkpoint`, :meth:`~MiniCluster.trigger_savepoint`,
:meth:`~MiniCluster.stop_with_savepoint`, :meth:`~MiniCluster.checkpoint_history`
(:mod:`.minicluster_checkpoints`). A job restores a savepoint when it is submitted with
``execution.state-recovery.path`` set.

>>> with MiniCluster(taskmanagers=1, slots_per_taskmanager=2) as cluster:   # doctest: +SKIP
...     env.execute("word count")        # runs on `cluster`
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Union

from streamkernel.common.job_status import JobID, JobStatus
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.execution_graph import SlotId
from streamkernel.graph.stream_graph import StreamGraph
from streamkernel.runtime.clock import Clock, SystemClock
from streamkernel.runtime.deployment import ExecutionAttemptId
from streamkernel.runtime.jobmanager.dispatcher import Dispatcher
from streamkernel.runtime.jobmanager.failure_injection import injected_failure_message, subtasks_to_fail
from streamkernel.runtime.jobmanager.resource_manager import ResourceManager
from streamkernel.runtime.minicluster_checkpoints import MiniClusterCheckpoints
from streamkernel.runtime.minicluster_job_client import MiniClusterJobClient, watch_collect_buffers
from streamkernel.runtime.minicluster_taskmanagers import (
    BACKENDS,
    LOCAL_HEARTBEAT_DEFAULTS,
    create_taskmanagers,
    heartbeat_defaults,
    resolve_backend,
)
from streamkernel.runtime.taskmanager.gateway import TaskExecutorHeartbeat

__all__ = ["MiniCluster", "JobInfo", "SlotOccupancy", "TaskManagerInfo", "current_cluster", "set_current_cluster",
           "BACKENDS", "LOCAL_HEARTBEAT_DEFAULTS"]

_current_lock = threading.Lock()
_current: Optional["MiniCluster"] = None


def current_cluster() -> Optional["MiniCluster"]:
    """The running cluster this process's environments submit to, or None."""
    cluster = _current
    return cluster if cluster is not None and cluster.is_running else None


def set_current_cluster(cluster: Optional["MiniCluster"]) -> None:
    """Make ``cluster`` the process's current cluster (None: no current cluster)."""
    global _current
    with _current_lock:
        _current = cluster


@dataclass(frozen=True)
class JobInfo:
    """One line of ``MiniCluster.jobs()``: id, name, status, start time (ms since epoch), duration."""

    job_id: JobID
    name: str
    status: JobStatus
    start_time: int
    duration_ms: int
    end_time: Optional[int] = None


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


def _positive(name: str, value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidProgramError(f"MiniCluster: {name} must be an int >= 1, got {value!r}")
    return value


class MiniCluster(MiniClusterCheckpoints):
    """A JobManager (Dispatcher + ResourceManager + a JobMaster per job) and its TaskManagers.

    ``taskmanagers`` and ``slots_per_taskmanager`` default to the configuration's
    ``minicluster.number-of-taskmanagers`` and ``taskmanager.numberOfTaskSlots``, else 1.
    ``backend`` is where TaskManagers run (:data:`BACKENDS`; None: the configuration's
    ``streamkernel.backend``, else ``$STREAMKERNEL_BACKEND``, else ``local``).
    ``configuration`` holds Flink keys for the cluster (``slot.request.timeout``,
    ``heartbeat.interval`` ...); a job's own keys override them for that job. ``clock`` is
    the processing-time clock of every task (a ManualClock makes processing time
    deterministic in tests; local backend only). ``task_factory`` and ``shuffle`` replace
    what runs a deployed subtask and the channel registry (for tests; local backend only).
    ``spark_session`` / ``spark_master`` choose the Spark application of the ``spark`` backend.
    """

    def __init__(self, taskmanagers: Optional[int] = None, slots_per_taskmanager: Optional[int] = None,
                 backend: Optional[str] = None, configuration: Optional[Mapping[str, Any]] = None,
                 clock: Optional[Clock] = None, *, task_factory: Optional[Callable[..., Any]] = None,
                 shuffle: Any = None, spark_session: Any = None, spark_master: Optional[str] = None) -> None:
        conf = {k: str(v) for k, v in dict(configuration or {}).items()}
        explicit_local = task_factory is not None or shuffle is not None or clock is not None
        self.backend = resolve_backend(backend or ("local" if explicit_local else None), conf)
        self.number_of_taskmanagers = _positive(
            "taskmanagers", taskmanagers if taskmanagers is not None else conf.get("minicluster.number-of-taskmanagers", 1))
        self.slots_per_taskmanager = _positive(
            "slots_per_taskmanager",
            slots_per_taskmanager if slots_per_taskmanager is not None else conf.get("taskmanager.numberOfTaskSlots", 1))
        conf["taskmanager.numberOfTaskSlots"] = str(self.slots_per_taskmanager)
        self.configuration = conf
        self.clock = clock or SystemClock()
        self._task_factory = task_factory
        self._shuffle_given = shuffle
        self._spark = {"spark_session": spark_session, "spark_master": spark_master}
        # Guards start/stop; the components guard themselves.
        self._lifecycle = threading.Lock()
        self._running = False
        self._resource_manager: Optional[ResourceManager] = None
        self._dispatcher: Optional[Dispatcher] = None
        self._backend: Any = None  # the TaskManagers (minicluster_taskmanagers)
        self._working_dir: Optional[str] = None
        self.shuffle: Any = None

    # ------------------------------------------------------------------ lifecycle
    def start(self, make_current: bool = True) -> "MiniCluster":
        """Start the ResourceManager, the Dispatcher and the TaskManagers; returns self.

        With ``make_current`` (the default) the cluster becomes the process's current
        cluster: every environment's ``execute()`` submits to it. Starting a running
        cluster does nothing. With the ``process`` and ``spark`` backends it returns once
        every TaskManager registered, and raises TaskManagerStartError (with the reason:
        exit code, stderr) when one could not start.
        """
        with self._lifecycle:
            if not self._running:
                self._start_locked()
        if make_current:
            set_current_cluster(self)
        return self

    def _start_locked(self) -> None:
        resource_manager = ResourceManager({**heartbeat_defaults(self.backend), **self.configuration})
        self._working_dir = tempfile.mkdtemp(prefix="streamkernel-", dir=self.configuration.get("io.tmp.dirs"))
        self.shuffle = None
        if self.backend == "local":
            self.shuffle = self._shuffle_given if self._shuffle_given is not None else _local_shuffle()
        self._resource_manager = resource_manager
        self._dispatcher = Dispatcher(self._resource_manager, self.configuration)
        try:
            self._backend = create_taskmanagers(
                self.backend, self.configuration, shuffle=self.shuffle, clock=self.clock,
                working_dir=self._working_dir, task_factory=self._task_factory, **self._spark)
            self._backend.start(self._resource_manager, self.number_of_taskmanagers, self.slots_per_taskmanager)
        except BaseException:
            self._dispatcher.shutdown(1.0)
            self._resource_manager.stop()
            shutil.rmtree(self._working_dir, ignore_errors=True)
            raise
        self._resource_manager.start_heartbeats()
        self._running = True

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel running jobs, stop the TaskManagers and the JobManager; no thread or process is left.

        Waits up to ``timeout`` seconds for jobs and tasks to end (TaskManagers in other
        processes are asked to shut down, then killed). Stopping a stopped cluster does
        nothing; a stopped cluster may be started again.
        """
        global _current
        with self._lifecycle:
            if not self._running:
                return
            self._running = False
            assert self._dispatcher is not None and self._resource_manager is not None
            self._dispatcher.shutdown(timeout)
            self._resource_manager.stop()  # no heartbeats: TaskManagers leaving now are not "lost"
            try:
                self._backend.shutdown(timeout)
            finally:
                if self._working_dir is not None:
                    shutil.rmtree(self._working_dir, ignore_errors=True)
        with _current_lock:
            if _current is self:
                _current = None

    @property
    def is_running(self) -> bool:
        """True between start() and stop()."""
        return self._running

    def __enter__(self) -> "MiniCluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ----------------------------------------------------------------- components
    @property
    def dispatcher(self) -> Dispatcher:
        """The Dispatcher (raises if the cluster is not running)."""
        self._check_running("dispatcher")
        assert self._dispatcher is not None
        return self._dispatcher

    @property
    def resource_manager(self) -> ResourceManager:
        """The ResourceManager (raises if the cluster is not running)."""
        self._check_running("resource_manager")
        assert self._resource_manager is not None
        return self._resource_manager

    @property
    def taskmanager_backend(self) -> Any:
        """The object managing this cluster's TaskManagers (LocalTaskManagers or RemoteTaskManagers)."""
        self._check_running("taskmanager_backend")
        return self._backend

    def _check_running(self, what: str) -> None:
        if not self._running and self._dispatcher is None:
            raise InvalidProgramError(f"MiniCluster.{what}: the cluster was never started; call start() first")

    @property
    def total_slots(self) -> int:
        """Slots of all TaskManagers (the registered ones while running: killed and added
        TaskManagers count; the configured ones otherwise)."""
        if self._running and self._resource_manager is not None:
            return len(self._resource_manager.slots())
        return self.number_of_taskmanagers * self.slots_per_taskmanager

    # ----------------------------------------------------------------------- jobs
    def submit(self, stream_graph: StreamGraph) -> MiniClusterJobClient:
        """Submit a job; returns its JobClient at once (the job runs in the background)."""
        if not self._running:
            raise InvalidProgramError(
                f"cannot submit job {stream_graph.job_name!r}: the MiniCluster is not running; call start() first")
        job_id = self.dispatcher.submit_job(stream_graph)
        watch_collect_buffers(self.dispatcher, job_id, stream_graph)
        return MiniClusterJobClient(self.dispatcher, job_id)

    def jobs(self) -> list[JobInfo]:
        """Every job of this cluster (running and ended), in submission order."""
        if self._dispatcher is None:
            return []
        return [JobInfo(JobID.from_hex_string(d.job_id), d.job_name, d.status, d.start_time, d.duration_ms,
                        d.end_time) for d in self._dispatcher.list_jobs()]

    def get_job(self, job_id: Union[JobID, str]) -> MiniClusterJobClient:
        """The JobClient of a job of this cluster (KeyError naming it when unknown)."""
        if self._dispatcher is None:
            raise KeyError(f"no job {job_id}: the cluster was never started")
        job = job_id if isinstance(job_id, JobID) else JobID.from_hex_string(str(job_id))
        self._dispatcher.job_master(job)  # raises UnknownJobError (a KeyError)
        return MiniClusterJobClient(self._dispatcher, job)

    # ---------------------------------------------------------- failure injection
    def _taskmanager(self, index_or_id: Union[int, str]) -> str:
        """The id of a live TaskManager given its index, id or ``TM<n>`` name."""
        assert self._resource_manager is not None
        indexes = {s.taskmanager_id: s.slot_id.taskmanager_index for s in self._resource_manager.slots()}
        live = [(tm, indexes.get(tm)) for tm in self._backend.live_ids()]
        for tm, index in live:
            if index_or_id in (tm, index) or (
                    isinstance(index_or_id, str) and index is not None
                    and index_or_id.strip().upper() == f"TM{index + 1}"):
                return tm
        known = ", ".join(f"{tm} (index {index}, TM{(index or 0) + 1})" for tm, index in live)
        raise KeyError(f"no live TaskManager {index_or_id!r} in this cluster; live ones: {known or 'none'}")

    def kill_taskmanager(self, index_or_id: Union[int, str]) -> str:
        """Kill a TaskManager as if its process died; returns its id.

        ``index_or_id`` is its index (``TaskManagerInfo.index``, from 0), its id
        (``"taskmanager-2"``) or its name in graphs (``"TM2"``). ``local``: its tasks stop
        without reporting and it answers nothing any more; after ``heartbeat.timeout`` the
        ResourceManager unregisters it. ``process``: its process is SIGKILLed; the closed
        connection unregisters it at once and a new TaskManager process replaces it
        (``streamkernel.taskmanager.replace-lost``). Either way the JobMasters of its jobs
        fail the subtasks it ran and restart their jobs by their restart strategies on the
        slots that remain, or wait (``slot.request.timeout``) for new ones:
        :meth:`add_taskmanager` starts one.
        """
        self._check_running("kill_taskmanager")
        with self._lifecycle:
            taskmanager_id = self._taskmanager(index_or_id)
            self._backend.kill(taskmanager_id)
        return taskmanager_id

    def add_taskmanager(self, slots: Optional[int] = None) -> str:
        """Start one more TaskManager (``slots`` slots, the cluster's default if None) of the
        cluster's backend; it registers its slots with the ResourceManager, where waiting
        jobs find them. Returns its id."""
        with self._lifecycle:
            if not self._running or self._resource_manager is None:
                raise InvalidProgramError("MiniCluster.add_taskmanager: the cluster is not running; call start() first")
            count = self.slots_per_taskmanager if slots is None else _positive("slots", slots)
            return self._backend.add(count)

    def describe_taskmanager(self, taskmanager_id: str) -> dict:
        """Where a TaskManager runs: ``backend``, ``host``, ``pid`` where known (for the cockpit)."""
        return self._backend.describe(taskmanager_id) if self._backend is not None else {}

    def fail_operator(self, job_id: Union[JobID, str], operator_name_or_uid: str,
                      subtask: Optional[int] = None) -> list[str]:
        """Make the running subtask(s) of an operator fail, as if its code had raised.

        Each chosen subtask raises an :class:`~streamkernel.testing.InjectedFailure` (its
        message says it was injected, where and by whom) in its own thread between two
        batches; the job then fails or restarts by its restart strategy like after any
        failure. ``operator_name_or_uid`` is an operator's uid, name or chain name;
        ``subtask`` (from 0) picks one subtask, None all live ones. Returns the names of
        the subtasks that got the failure. Raises FailureInjectionError (a ValueError)
        naming the job's operators when none matches or none of them runs.
        """
        from streamkernel.testing import InjectedFailure  # lazy: the test kit imports the runtime

        master = self.dispatcher.job_master(job_id if isinstance(job_id, JobID) else JobID.from_hex_string(str(job_id)))
        targets = subtasks_to_fail(master.job_graph, master.request_job_details(), operator_name_or_uid, subtask)
        live = set(self._backend.live_ids())
        failed = []
        for target in targets:
            if target.taskmanager_id not in live:
                continue
            attempt = ExecutionAttemptId(master.job_id, target.vertex_id, target.subtask_index, target.attempt_number)
            error = InjectedFailure(injected_failure_message(operator_name_or_uid, target))
            if self._backend.inject_failure(target.taskmanager_id, attempt, error):
                failed.append(target.name)
        return failed

    def peek(self, job_id: Union[JobID, str], operator: str, limit: int = 20,
             seconds: float = 1.0) -> list[tuple[str, Any, Optional[int]]]:
        """The records an operator of a running job emits, for a look (``%flink peek``).

        Every running subtask of the operator (its uid, name, or a chain's name) keeps the
        last ``limit`` records it emits within ``seconds`` (all subtasks at once); returns
        (subtask name, record, timestamp) rows, subtask by subtask. The job is not slowed
        down outside that moment. Raises ValueError naming the job's operators when none matches.
        """
        from concurrent.futures import ThreadPoolExecutor

        from streamkernel.runtime.peek import operator_node_ids

        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"peek: limit must be an int >= 1, got {limit!r}")
        master = self.dispatcher.job_master(job_id if isinstance(job_id, JobID) else JobID.from_hex_string(str(job_id)))
        targets = operator_node_ids(master.job_graph, operator)
        if not targets:
            names = sorted({n.uid or n.name for v in master.job_graph.vertices for n in master.job_graph.operators(v.id)})
            raise ValueError(f"job {master.job_name!r} has no operator {operator!r} (by uid or name); its operators "
                             f"are: {', '.join(repr(n) for n in names)}")
        vertex_id, node_id = targets[0]
        details = master.request_job_details()
        vertex = next(v for v in details.vertices if v.vertex_id == vertex_id)
        running = [s for s in vertex.subtasks if s.state.name == "RUNNING" and s.taskmanager_id is not None]
        if not running:
            raise ValueError(f"no subtask of operator {operator!r} of job {master.job_name!r} is running "
                             f"(the job is {details.status.name})")

        def one(sub: Any) -> list:
            attempt = ExecutionAttemptId(master.job_id, vertex_id, sub.subtask_index, sub.attempt_number)
            return [(sub.name, record, ts) for record, ts in
                    self._backend.peek(sub.taskmanager_id, attempt, node_id, limit, seconds)]

        with ThreadPoolExecutor(max_workers=len(running), thread_name_prefix="streamkernel-peek") as pool:
            return [row for rows in pool.map(one, running) for row in rows]

    # ------------------------------------------------------------------ snapshots
    def _heartbeats(self) -> dict[str, TaskExecutorHeartbeat]:
        if self._resource_manager is None or not self._running:
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
        if self._resource_manager is None or not self._running:
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
        beats = self._heartbeats()
        live: dict[ExecutionAttemptId, dict] = {t.attempt_id: dict(t.metrics) for b in beats.values() for t in b.tasks}
        infos = self._taskmanager_infos(beats) if self._running else ()
        ages = self._resource_manager.heartbeat_ages_ms() if self._running else {}
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
            "running": self._running, "backend": self.backend, "time": now,
            "taskmanagers": [{"id": i.taskmanager_id, "index": i.index, "placement": self.describe_taskmanager(i.taskmanager_id),
                              "heartbeat_age_ms": ages.get(i.taskmanager_id),
                              "slots": [{"slot": str(s.slot_id), "index": s.slot_id.slot_index, "job_id": s.job_id,
                                         "job_name": s.job_name, "tasks": list(s.tasks)} for s in i.slots]}
                             for i in infos],
            "slots": {"total": len(slots), "free": sum(1 for s in slots if s.job_id is None)},
            "pending_slot_requests": self._resource_manager.pending_requests() if self._running else {},
            "jobs": jobs,
        }

    def __repr__(self) -> str:
        state = "running" if self._running else "stopped"
        running_jobs = sum(1 for j in self.jobs() if not j.status.is_globally_terminal_state())
        return (f"MiniCluster({state}, backend={self.backend!r}, {self.number_of_taskmanagers} TaskManagers x "
                f"{self.slots_per_taskmanager} slots, {running_jobs} running jobs)")


def _local_shuffle() -> Any:
    from streamkernel.runtime.network.shuffle import LocalShuffleEnvironment  # lazy: the network stack

    return LocalShuffleEnvironment()
