"""MiniCluster: a whole Flink cluster in this process: a JobManager and its TaskManagers.

``MiniCluster(taskmanagers=2, slots_per_taskmanager=2).start()`` creates the JobManager's
parts (a ResourceManager and a Dispatcher, which starts one JobMaster per job) and the
TaskManagers, which register their slots with the ResourceManager. ``stop()`` cancels the
running jobs, stops everything and leaves no thread behind.

A started cluster becomes the process's *current* cluster (unless ``start(make_current=
False)``): every StreamExecutionEnvironment of the process then submits to it, several
jobs at once while slots last (session mode). Without one, ``env.execute()`` starts a
transient cluster sized for the job and stops it afterwards, as PyFlink's local mode does.

What a notebook shows comes from ``cluster.inspection`` (:mod:`.inspection`):
``snapshot()``, a plain dict built from published snapshots, safe to call from any thread
while jobs run, ``taskmanagers``, ``describe_taskmanager`` and ``peek``.

Where TaskManagers run is the cluster's *backend* (:mod:`.taskmanagers`):
``local`` (threads in this process, the default), ``process`` (one child process per
TaskManager) or ``spark`` (TaskManagers in long-running Spark tasks). Without an explicit
``backend`` the configuration's ``streamkernel.backend`` (default: ``$STREAMKERNEL_BACKEND``,
else ``local``) decides, also for the transient cluster of ``env.execute()``.

Failure injection, to watch recovery, is ``cluster.failures`` (:mod:`.failures`):
``kill_taskmanager`` (a TaskManager dies; the ResourceManager notices), ``add_taskmanager``
(a replacement registers its slots, as YARN or Spark would relaunch one) and
``fail_operator`` (an operator's running subtasks raise).

Checkpoints and savepoints on request, and each job's checkpoint history, are
``cluster.checkpoints`` (:mod:`.checkpoints`): ``trigger_checkpoint``,
``trigger_savepoint``, ``stop_with_savepoint``, ``checkpoint_stats``,
``checkpoint_history``. A job restores a savepoint when it is submitted with
``execution.state-recovery.path`` set.

Each of the three is a small object built from exactly the components it uses (the
Dispatcher, the ResourceManager, the TaskManagers' backend); the MiniCluster itself keeps
the lifecycle and the jobs.

>>> with MiniCluster(taskmanagers=1, slots_per_taskmanager=2) as cluster:   # doctest: +SKIP
...     env.execute("word count")        # runs on `cluster`
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Union

from streamkernel.common.job_status import JobID, JobStatus
from streamkernel.common.options import CoreOptions, MiniClusterOptions, TaskManagerOptions
from streamkernel.common.options.rest import check_rest_options
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.job_graph import JobGraph
from streamkernel.graph.stream_graph import StreamGraph
from streamkernel.runtime.core.clock import Clock, SystemClock
from streamkernel.runtime.core.engine_log import CONCERNS_USER, EngineLog, install_engine_log
from streamkernel.runtime.dispatcher.dispatcher import Dispatcher
from streamkernel.runtime.minicluster.checkpoints import ClusterCheckpoints
from streamkernel.runtime.minicluster.cluster_log import cluster_log_file
from streamkernel.runtime.minicluster.exit import cluster_started, cluster_stopped
from streamkernel.runtime.minicluster.failures import FailureInjection
from streamkernel.runtime.minicluster.inspection import ClusterInspection, SlotOccupancy, TaskManagerInfo
from streamkernel.runtime.minicluster.high_availability import ClusterHighAvailability, is_highly_available
from streamkernel.runtime.minicluster.job_client import MiniClusterJobClient, watch_collect_buffers
from streamkernel.runtime.minicluster.limits import check_cluster_size, configured_count
from streamkernel.runtime.minicluster.metric_reporting import start_cluster_metrics
from streamkernel.runtime.minicluster.taskmanagers import (
    BACKENDS,
    LOCAL_HEARTBEAT_DEFAULTS,
    LocalTaskManagers,
    create_taskmanagers,
    heartbeat_defaults,
    resolve_backend,
)
from streamkernel.runtime.metrics.registry import MetricRegistry
from streamkernel.runtime.metrics.reporter_setup import reporter_setups
from streamkernel.runtime.resourcemanager.resource_manager import ResourceManager
from streamkernel.runtime.rest.context import RestContext
from streamkernel.runtime.rest.accepted_requests import store_next_to
from streamkernel.runtime.rest.cluster_secret import remove_secret_file, write_secret_file
from streamkernel.runtime.rest.job_signature import MAX_SKEW_MS, ReplayGuard
from streamkernel.runtime.rest.endpoint import RestServerEndpoint
from streamkernel.runtime.rpc.transport import new_cluster_secret

__all__ = ["MiniCluster", "JobInfo", "SlotOccupancy", "TaskManagerInfo", "current_cluster", "set_current_cluster",
           "BACKENDS", "LOCAL_HEARTBEAT_DEFAULTS"]

_LOG = logging.getLogger(__name__)
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


class MiniCluster:
    """A JobManager (Dispatcher + ResourceManager + a JobMaster per job) and its TaskManagers.

    ``taskmanagers`` and ``slots_per_taskmanager`` default to the configuration's
    ``minicluster.number-of-taskmanagers`` and ``taskmanager.numberOfTaskSlots``, else 1;
    counts above what the backend can host raise ClusterSizeError at once, before anything
    starts (:mod:`.limits`: the limits and the keys that raise them).
    ``backend`` is where TaskManagers run (:data:`BACKENDS`; None: the configuration's
    ``streamkernel.backend``, else ``$STREAMKERNEL_BACKEND``, else ``local``).
    ``configuration`` holds Flink keys for the cluster (``slot.request.timeout``,
    ``heartbeat.interval`` ...); a job's own keys override them for that job. ``clock`` is
    the processing-time clock of every task (a ManualClock makes processing time
    deterministic in tests; local backend only). ``task_factory`` and ``shuffle`` replace
    what runs a deployed subtask and the channel registry (for tests; local backend only).
    ``spark_session`` / ``spark_master`` choose the Spark application of the ``spark`` backend.
    ``rest``: whether the JobManager serves Flink's REST API (and Web UI) on ``rest.bind-address``
    / ``rest.port`` (:mod:`streamkernel.runtime.rest`); ``cluster.rest_url`` tells where.
    Metric reporters (``metrics.reporter.<name>.*``, e.g. Flink's Prometheus reporter) run while the
    cluster runs (:mod:`.metric_reporting`); ``cluster.metric_registry`` has them.
    """

    def __init__(self, taskmanagers: Optional[int] = None, slots_per_taskmanager: Optional[int] = None,
                 backend: Optional[str] = None, configuration: Optional[Mapping[str, Any]] = None,
                 clock: Optional[Clock] = None, *, task_factory: Optional[Callable[..., Any]] = None,
                 shuffle: Any = None, spark_session: Any = None, spark_master: Optional[str] = None,
                 rest: bool = True) -> None:
        conf = {k: str(v) for k, v in dict(configuration or {}).items()}
        check_rest_options(conf)  # a bad rest.* value fails here, before anything starts
        reporter_setups(conf)  # so does a bad metrics.reporter.* one
        self._high_availability = is_highly_available(conf)  # a bad high-availability.* value too
        explicit_local = task_factory is not None or shuffle is not None or clock is not None
        self.backend = resolve_backend(backend or ("local" if explicit_local else None), conf)
        # Sizes are checked against what the backend can host before anything starts (limits.py).
        tm_option, slots_option = MiniClusterOptions.NUM_TASK_MANAGERS, TaskManagerOptions.NUM_TASK_SLOTS
        tm_from = "taskmanagers" if taskmanagers is not None else f"configuration key {tm_option.key()}"
        slots_from = ("slots_per_taskmanager" if slots_per_taskmanager is not None
                      else f"configuration key {slots_option.key()}")
        self.number_of_taskmanagers, self.slots_per_taskmanager = check_cluster_size(
            self.backend,
            taskmanagers if taskmanagers is not None else configured_count(tm_option, conf),
            slots_per_taskmanager if slots_per_taskmanager is not None else configured_count(slots_option, conf),
            conf, taskmanagers_from=tm_from, slots_from=slots_from,
            spark_master=spark_master, spark_session=spark_session)
        conf[slots_option.key()] = str(self.slots_per_taskmanager)
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
        self._backend: Any = None  # the TaskManagers (taskmanagers.py)
        self._working_dir: Optional[str] = None
        self.shuffle: Any = None
        self._inspection = ClusterInspection(self.backend, None, None, None, lambda: self._running)
        self._checkpoints: Optional[ClusterCheckpoints] = None
        self._failures: Optional[FailureInjection] = None
        self._serve_rest = bool(rest)
        self._rest: Optional[RestServerEndpoint] = None
        self._secret_file: Optional[Path] = None  # the secret for clients of this user (cluster_secret.py)
        self._ha: Optional[ClusterHighAvailability] = None
        self._metrics: Optional[MetricRegistry] = None
        self._engine_log: Optional[EngineLog] = None
        self._log_file: Optional[Path] = None

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
        # first: every record of the cluster goes to its log file, none to the program's logger (cluster_log.py)
        try:
            self._engine_log = install_engine_log(cluster_log_file(self.configuration))
            self._log_file = self._engine_log.path
        except (OSError, RuntimeError) as error:  # a read-only home, no home at all: the logs go where they went
            self._log_file = None
            _LOG.warning("the cluster cannot write its log file (%s): the engine logs to the program's logger; "
                         "set env.log.dir or log.file to a writable place", error, extra=CONCERNS_USER)
        _LOG.info("Starting MiniCluster: backend %s, %d TaskManagers x %d slots", self.backend,
                  self.number_of_taskmanagers, self.slots_per_taskmanager)
        try:
            self._start_components()
        except BaseException:
            self._close_engine_log()
            raise

    def _start_components(self) -> None:
        if self._high_availability:  # first: an unreachable quorum fails before anything starts
            self._ha = ClusterHighAvailability(self.configuration)
        resource_manager = ResourceManager({**heartbeat_defaults(self.backend), **self.configuration})
        self._working_dir = tempfile.mkdtemp(prefix="streamkernel-", dir=CoreOptions.TMP_DIRS.get(self.configuration))
        self.shuffle = None
        if self.backend == "local":
            self.shuffle = self._shuffle_given if self._shuffle_given is not None else _local_shuffle()
        self._resource_manager = resource_manager
        self._dispatcher = Dispatcher(self._resource_manager, self.configuration, ha_services=self.ha_services)
        try:
            self._backend = self._create_taskmanager_backend()
            # the JobManager's reporters first: on one machine it takes the first port of a range
            self._metrics = start_cluster_metrics(self.configuration, self._dispatcher, self._resource_manager,
                                                  self._backend)
            if isinstance(self._backend, LocalTaskManagers) and self._log_file is not None:
                self._backend.log_file = str(self._log_file)  # threads of this process: its log is theirs
            self._backend.start(self._resource_manager, self.number_of_taskmanagers, self.slots_per_taskmanager)
        except BaseException:
            self._abort_start(with_taskmanagers=False)
            raise
        self._resource_manager.start_heartbeats()
        self._inspection = ClusterInspection(self.backend, self._dispatcher, self._resource_manager, self._backend,
                                             lambda: self._running)
        self._checkpoints = ClusterCheckpoints(self._dispatcher)
        self._failures = FailureInjection(self._dispatcher, self._resource_manager, self._backend,
                                          self.slots_per_taskmanager, self._lifecycle, lambda: self._running)
        if self._serve_rest:
            try:
                # the TaskManagers' secret (a new one on the local backend) signs REST job submissions;
                # with high availability, the cluster's (every JobManager's) from the storage directory
                secret = (self._ha.secret if self._ha is not None else None) or getattr(self._backend, "secret", None) \
                    or new_cluster_secret()
                # with high availability, every JobManager of the cluster refuses a submission one of them
                # accepted (a standalone JobManager makes a new secret at each start: old signatures fail)
                replay_guard = ReplayGuard(store_next_to(self._ha.secret_directory if self._ha else None, MAX_SKEW_MS))
                context = RestContext(self._dispatcher, self._resource_manager, self.configuration,
                                      shutdown_cluster=self._shut_down_cluster, cluster_secret=secret,
                                      replay_guard=replay_guard, log_file=str(self._log_file) if self._log_file else None)
                self._rest = RestServerEndpoint(context).start()
                self._secret_file = _publish_secret(self._rest, secret)
            except BaseException:
                self._abort_start(with_taskmanagers=True)
                raise
        self._running = True
        cluster_started(self)  # stopped at interpreter exit unless stopped before
        if self._ha is not None:  # last: a grant finds every component running
            self._ha.join(self._dispatcher, self._rest, self._backend)

    def _abort_start(self, with_taskmanagers: bool) -> None:
        """Undo a start that failed half way (the TaskManagers too, once they were started)."""
        assert self._dispatcher is not None and self._resource_manager is not None
        self._close_metrics()
        self._dispatcher.shutdown(1.0)
        self._resource_manager.stop()
        if with_taskmanagers:
            self._backend.shutdown(1.0)
        if self._working_dir is not None:
            shutil.rmtree(self._working_dir, ignore_errors=True)
        self._close_ha()

    def _close_metrics(self) -> None:
        metrics, self._metrics = self._metrics, None
        if metrics is not None:
            metrics.close()

    def _close_engine_log(self) -> None:
        engine_log, self._engine_log = self._engine_log, None
        if engine_log is not None:
            engine_log.close()

    def _close_ha(self, cleanup_data: bool = False) -> None:
        ha, self._ha = self._ha, None
        if ha is not None:
            ha.close(cleanup_data)

    def _shut_down_cluster(self) -> None:
        """``DELETE /cluster``: the cluster is shut down for good (with high availability its
        persisted jobs are deleted too, as Flink's cluster shutdown cleans the HA data)."""
        self.stop(cleanup_ha_data=True)

    def _create_taskmanager_backend(self) -> Any:
        """The TaskManagers object of this cluster's backend (not started yet); a subclass may
        supply another (the standalone session cluster: TaskManagers that register by themselves)."""
        assert self._working_dir is not None
        return create_taskmanagers(self.backend, self.configuration, shuffle=self.shuffle, clock=self.clock,
                                   working_dir=self._working_dir, task_factory=self._task_factory, **self._spark)

    def stop(self, timeout: float = 10.0, cleanup_ha_data: bool = False) -> None:
        """Cancel running jobs, stop the TaskManagers and the JobManager; no thread or process is left.

        With high availability the jobs are suspended instead (another JobManager of the cluster, or
        this one started again, recovers them), unless ``cleanup_ha_data`` (the cluster is shut down
        for good: ``DELETE /cluster``) deletes the cluster's persisted jobs and pointers.

        Waits up to ``timeout`` seconds for jobs and tasks to end (TaskManagers in other
        processes are asked to shut down, then killed), then removes the cluster's working
        directory (its TaskManagers' too). Stopping a stopped cluster does nothing; a stopped
        cluster may be started again. A cluster still running when the interpreter exits is
        stopped then (:mod:`.exit`).
        """
        global _current
        with self._lifecycle:
            if not self._running:
                return
            self._running = False
            assert self._dispatcher is not None and self._resource_manager is not None
            if self._ha is not None:  # jobs are suspended, not cancelled: the next leader recovers them
                self._dispatcher.revoke_leadership()
                self._close_ha(cleanup_data=cleanup_ha_data)
            if self._rest is not None:  # first: no request sees a half-stopped cluster
                self._rest.stop()
                self._rest = None
                remove_secret_file(self._secret_file)
                self._secret_file = None
            self._close_metrics()  # its port free before the components go
            self._dispatcher.shutdown(timeout)
            self._resource_manager.stop()  # no heartbeats: TaskManagers leaving now are not "lost"
            try:
                self._backend.shutdown(timeout)
            finally:
                if self._working_dir is not None:
                    shutil.rmtree(self._working_dir, ignore_errors=True)
                _LOG.info("MiniCluster stopped")
                self._close_engine_log()
                cluster_stopped(self)  # only now: an exit-time stop() waits for this one (the lock)
        with _current_lock:
            if _current is self:
                _current = None

    @property
    def is_running(self) -> bool:
        """True between start() and stop()."""
        return self._running

    @property
    def log_file(self) -> Optional[Path]:
        """The file the cluster's JobManager and TaskManager threads log to (its last one once stopped;
        None before the first start): ``log.file`` if configured, else one per cluster in ``env.log.dir``
        or ``$STREAMKERNEL_HOME/log`` (:mod:`.cluster_log`). Engine records reach the program's own
        logger only when they concern the program, at WARNING and above
        (:mod:`streamkernel.runtime.core.engine_log`)."""
        return self._log_file

    def jobmanager_log(self) -> str:
        """The text of :attr:`log_file` (as ``GET /jobmanager/log``); InvalidProgramError before the first start."""
        if self._log_file is None:
            raise InvalidProgramError("MiniCluster.jobmanager_log: the cluster was never started; call start() first")
        try:
            return self._log_file.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""  # nothing logged yet

    @property
    def ha_services(self) -> Any:
        """The high-availability services while a cluster with ``high-availability.type: zookeeper``
        runs (None otherwise)."""
        return self._ha.services if self._ha is not None else None

    @property
    def is_leading(self) -> bool:
        """Whether this cluster's JobManager leads (always, without high availability)."""
        return self._running and self._dispatcher is not None and self._dispatcher.is_leading

    @property
    def leadership(self) -> Any:
        """The JobManager's :class:`~.leadership.ClusterLeadership` (high availability only), else None."""
        return self._ha.leadership if self._ha is not None else None

    @property
    def metric_registry(self) -> Optional[MetricRegistry]:
        """The metric reporters of this cluster's process while it runs (None otherwise): e.g.
        ``cluster.metric_registry.reporter("prom").url``, the Prometheus reporter's ``/metrics``."""
        return self._metrics

    @property
    def rest_url(self) -> Optional[str]:
        """``http://HOST:PORT`` of the REST API and Web UI while the cluster serves them, else None."""
        rest = self._rest
        return rest.rest_url if rest is not None else None

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

    @property
    def inspection(self) -> ClusterInspection:
        """Views of the cluster: ``snapshot()``, ``taskmanagers``, ``describe_taskmanager``, ``peek``
        (:mod:`.inspection`); usable before start (an empty, not running cluster)."""
        return self._inspection

    @property
    def checkpoints(self) -> ClusterCheckpoints:
        """Checkpoints and savepoints on request and the jobs' checkpoint history
        (:mod:`.checkpoints`; raises if the cluster was never started)."""
        if self._checkpoints is None:  # never started, or its first start failed
            raise InvalidProgramError("MiniCluster.checkpoints: the cluster was never started; call start() first")
        return self._checkpoints

    @property
    def failures(self) -> FailureInjection:
        """Failure injection: ``kill_taskmanager``, ``add_taskmanager``, ``fail_operator``
        (:mod:`.failures`; raises if the cluster was never started)."""
        if self._failures is None:  # never started, or its first start failed
            raise InvalidProgramError("MiniCluster.failures: the cluster was never started; call start() first")
        return self._failures

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
    def submit(self, stream_graph: StreamGraph, *, job_graph: Optional[JobGraph] = None) -> MiniClusterJobClient:
        """Submit a job; returns its JobClient at once (the job runs in the background).

        ``job_graph``: the job's JobGraph if the caller already built it from ``stream_graph``
        (it is then not built again).
        """
        if not self._running:
            raise InvalidProgramError(
                f"cannot submit job {stream_graph.job_name!r}: the MiniCluster is not running; call start() first")
        job_id = self.dispatcher.submit_job(stream_graph, job_graph=job_graph)
        watch_collect_buffers(self.dispatcher, job_id)
        return MiniClusterJobClient(self.dispatcher, job_id)

    def jobs(self) -> list[JobInfo]:
        """Every job of this cluster (running and ended), in submission order."""
        if self._dispatcher is None:
            return []
        now = time.time_ns() // 1_000_000
        return [JobInfo(JobID.from_hex_string(d.job_id), d.job_name, d.status, d.start_time, d.duration_at(now),
                        d.end_time) for d in self._dispatcher.list_jobs()]

    def get_job(self, job_id: Union[JobID, str]) -> MiniClusterJobClient:
        """The JobClient of a job of this cluster (KeyError naming it when unknown)."""
        if self._dispatcher is None:
            raise KeyError(f"no job {job_id}: the cluster was never started")
        job = job_id if isinstance(job_id, JobID) else JobID.from_hex_string(str(job_id))
        self._dispatcher.request_job_details(job)  # raises UnknownJobError (a KeyError)
        return MiniClusterJobClient(self._dispatcher, job)

    def __repr__(self) -> str:
        state = "running" if self._running else "stopped"
        running_jobs = sum(1 for j in self.jobs() if not j.status.is_globally_terminal_state())
        return (f"MiniCluster({state}, backend={self.backend!r}, {self.number_of_taskmanagers} TaskManagers x "
                f"{self.slots_per_taskmanager} slots, {running_jobs} running jobs)")


def _local_shuffle() -> Any:
    from streamkernel.runtime.network.shuffle import LocalShuffleEnvironment  # lazy: the network stack

    return LocalShuffleEnvironment()


def _publish_secret(rest: RestServerEndpoint, secret: bytes) -> Optional[Path]:
    """Write the cluster's secret where a client of this user finds it from the REST address
    (``streamkernel run -m HOST:PORT``); a failure only disables such submissions (logged)."""
    assert rest.port is not None
    try:
        return write_secret_file(rest.address, rest.port, secret)
    except OSError as error:
        _LOG.warning("could not write the cluster's secret for REST job submission (%s); clients need "
                     "--secret-file or $STREAMKERNEL_CLUSTER_SECRET", error, extra=CONCERNS_USER)
        return None
