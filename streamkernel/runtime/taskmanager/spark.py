"""The ``spark`` backend: TaskManagers hosted in long-running Spark tasks, started through PySpark.

Flink on YARN or Kubernetes asks the cluster manager for containers and starts a
TaskManager in each; here Spark is the cluster manager. :class:`SparkTaskManagerLauncher`
runs one background Spark job per :meth:`~SparkTaskManagerLauncher.launch`::

    sc.setJobGroup("streamkernel-taskmanagers-<id>", "streamkernel TaskManagers ... (cluster <id>)",
                   interruptOnCancel=True)
    sc.parallelize(range(n), n).mapPartitionsWithIndex(host_taskmanager).collect()

from a daemon thread of the driver. Each of its n tasks is a plain (non-barrier) Spark
task hosting one TaskManager (:mod:`.spark_host`): it connects back to the JobManager,
registers its slots and runs subtasks until the JobManager tells it to stop, when the task
succeeds. The job shows in Spark's UI under that description for as long as the cluster runs.

Spark facts that shape it (FIELD-NOTES.md, measured here):

* Plain tasks restart one at a time: a killed host is relaunched by Spark (attempt + 1),
  and registers as a new TaskManager (``taskmanager-1.1``); the JobManager notices the lost
  one by its closed connection (or missed heartbeats) and recovers the job by its restart
  strategy.
* ``local[N]`` never retries a task, so a session we create uses ``local[N,F]``: N = the
  TaskManagers + one slot per core for the session's other Spark jobs (DataFrame sources
  and sinks, the user's queries) and TaskManagers added later; F = ``spark.task.maxFailures``
  if configured, else 8 (a host that fails F times ends the whole job, and all its
  TaskManagers with it: the job's restart strategy, not Spark, should bound recovery).
* A TaskManager holds its Spark task slot for as long as it runs: on a shared Spark
  application, the TaskManagers' slots are not available to other jobs.
* Spark waits silently when it lacks task slots: :meth:`launch` counts executors x cores /
  ``spark.task.cpus`` first and raises :class:`SparkTaskSlotsError` when they do not suffice.
* ``cancelJobGroup`` SIGKILLs the Python workers, so no ``finally`` runs in them: the
  JobManager stops TaskManagers through the protocol first; :meth:`stop` waits for the job
  to end and cancels the group only as the fallback.

**The cluster secret** reaches the tasks inside the task's pickled Python function (its
closure), as every PySpark closure travels: it is not in Spark's configuration, UI, event
log or environment variables, and Spark does not log closures. It is readable by whoever
can run code in, or read the memory or local files of, the application's executors — the
cluster's own users and administrators. On a shared cluster enable Spark's own
``spark.authenticate``, ``spark.network.crypto.enabled`` and ``spark.io.encryption.enabled``
so the task (and the secret in it) never crosses the network or a disk in clear.

**Python on the executors.** For local masters the tasks run this interpreter and get this
process's ``sys.path`` appended, so streamkernel and the notebook's own modules import. On a
cluster the executors' Python (``spark.pyspark.python`` / ``PYSPARK_PYTHON``) must have
streamkernel of the same version, and the modules the job's functions import, installed
(or shipped with ``spark.submit.pyFiles`` / ``sc.addPyFile``); the JobManager's RPC
listener must bind to an address the executors reach (:meth:`jobmanager_bind_host`).

A session the launcher created is stopped with the cluster; PySpark's gateway JVM stays for
the life of the Python process (as with any SparkSession), and the next session reuses it.
"""

from __future__ import annotations

import logging
import shutil
import os
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from streamkernel.common.options import BackendOptions, JobManagerOptions
from streamkernel.errors import IllegalConfigurationError
from streamkernel.runtime.rpc.transport import LOOPBACK
from streamkernel.runtime.taskmanager.spark_host import SparkHostInfo, host_base_dir, machine_identity
from streamkernel.runtime.taskmanager.spark_hosts import SparkHostRegistry, send_kill
from streamkernel.runtime.taskmanager.spark_storage import check_shared_checkpoint_storage
from streamkernel.runtime.taskmanager.spark_resources import (SparkTaskSlotsError, check_task_slots, executor_cores,
                                                              is_local_master, spark_task_slots)
from streamkernel.runtime.taskmanager.spark_session import (OwnedSession, SparkHostJobError, explain_job_failure,
                                                            obtain_session, python_exec_for, task_tries,
                                                            taskmanager_python)
from streamkernel.runtime.taskmanager.spark_stop import (
    active_jobs_of_group,
    cancel_and_wait,
    wait_for_python_workers,
    wait_until_gone,
)
from streamkernel.runtime.taskmanager.worker import WORKING_DIR_KEY, switch_interval_seconds

__all__ = ["SparkTaskManagerLauncher", "SparkTaskSlotsError", "SparkHostJobError"]

_LOG = logging.getLogger(__name__)

#: How long launch() waits for a cluster's executors to register enough cores.
EXECUTOR_WAIT_KEY = BackendOptions.SPARK_EXECUTOR_WAIT.key()


@dataclass
class _Launch:
    """One background Spark job: the TaskManagers of one launch() call."""

    ids: tuple[str, ...]
    started: float
    thread: Optional[threading.Thread] = None
    finished: set = field(default_factory=set)  # launched-as ids whose TaskManager ended normally
    first_host_seconds: Optional[float] = None
    results: Optional[list] = None
    error: Optional[BaseException] = None


def _task_function(spec: dict, driver_paths: Optional[list[str]]) -> Callable[[int, Any], list]:
    # A nested function is pickled by value (its code travels with the task), so a worker
    # can fix sys.path before anything of streamkernel is imported; it references nothing
    # but its closure: ``spec`` and ``driver_paths`` are plain data.
    def host_taskmanager(partition: int, _records: Any) -> list:
        import sys as worker_sys

        for path in driver_paths or ():
            if path not in worker_sys.path:
                worker_sys.path.append(path)
        from streamkernel.runtime.taskmanager.spark_host import run_host

        return run_host(partition, spec)

    return host_taskmanager


class SparkTaskManagerLauncher:
    """Starts TaskManagers as long-running Spark tasks (a TaskManagerLauncher, see :mod:`.launcher`).

    ``configuration`` is the cluster's (its ``spark.*`` keys configure a session we
    create); ``spark_session`` an existing SparkSession to use as is (never stopped here);
    ``master`` the master of the session to create (default ``local[N + cores, 8]``). ``worker_entry``
    replaces :func:`~streamkernel.runtime.taskmanager.worker.run_taskmanager` in the tasks
    (tests); it is pickled with the task.

    >>> launcher = SparkTaskManagerLauncher({}, master="local[4,8]")          # doctest: +SKIP
    >>> launcher.launch(["taskmanager-1"], 2, jobmanager_address, secret, {})  # doctest: +SKIP
    """

    backend = "spark"

    def __init__(self, configuration: Mapping[str, str], spark_session: Any = None, master: Optional[str] = None,
                 *, worker_entry: Optional[Callable[..., None]] = None) -> None:
        if master is not None and (not isinstance(master, str) or not master.strip()):
            raise IllegalConfigurationError(f"SparkTaskManagerLauncher: master must be a Spark master URL such as "
                                            f"'local[2,4]' or 'spark://host:7077', got {master!r}")
        self._configuration = {str(k): str(v) for k, v in dict(configuration or {}).items()}
        self._given_session = spark_session
        self._master = master.strip() if master else None
        self._worker_entry = worker_entry
        self._executor_wait_s = BackendOptions.SPARK_EXECUTOR_WAIT.get(self._configuration).to_milliseconds() / 1000.0
        self._cluster = uuid.uuid4().hex[:8]
        self._group = f"streamkernel-taskmanagers-{self._cluster}"
        self._launch_lock = threading.Lock()  # serializes launch() and stop()
        self._session_lock = threading.Lock()  # one session is obtained at a time
        # _lock guards everything below; never held while waiting on Spark or a thread.
        self._lock = threading.Lock()
        self._session: Optional[OwnedSession] = None
        self._spark_facts: dict[str, Any] = {}
        self._launches: list[_Launch] = []
        self._host_dirs: dict[str, str] = {}  # launched id -> its host's own directory (hosts off the driver's machine)
        self._hosts = SparkHostRegistry(self._cluster, self._host_reported, self._host_finished)
        self._stopping = False
        self._failure: Optional[SparkHostJobError] = None

    # ------------------------------------------------------------------ facts
    @property
    def job_group(self) -> str:
        """The Spark job group of this cluster's TaskManager jobs (``sc.cancelJobGroup`` ends them)."""
        return self._group

    @property
    def spark_session(self) -> Any:
        """The SparkSession the TaskManagers run on (None before the first launch, unless given)."""
        return self._session.session if self._session is not None else self._given_session

    @property
    def session_startup_seconds(self) -> Optional[float]:
        """How long creating our SparkSession took (None when it was given or not created yet)."""
        return self._session.startup_seconds if self._session is not None else None

    @property
    def last_job_failure(self) -> Optional[SparkHostJobError]:
        """Why the last background job failed (its TaskManagers are gone), or None."""
        return self._failure

    def failure(self, taskmanager_id: str) -> Optional[str]:
        """Why the host of ``taskmanager_id`` ended abnormally, None while it runs (or ended normally).

        A killed or crashed host is relaunched by Spark under a new id (attempt + 1) unless
        its tries are used up; then the whole job failed, and that is the answer.
        """
        host = self._hosts.get(taskmanager_id)
        launched_as = host.info.launched_as if host is not None else taskmanager_id
        with self._lock:
            launch = next((entry for entry in self._launches if launched_as in entry.ids), None)
        if launch is not None and launch.error is not None:
            return str(launch.error)
        return host.why_ended() if host is not None else None

    def first_host_seconds(self) -> Optional[float]:
        """Seconds from the first launch() to the first TaskManager host reporting (None before)."""
        return self._launches[0].first_host_seconds if self._launches else None

    def jobmanager_bind_host(self) -> str:
        """The address the JobManager's RPC listener should bind to so the TaskManagers reach it.

        ``jobmanager.bind-host`` if configured; loopback for local masters (the executors are
        this machine); otherwise the driver's reachable address, Spark's ``spark.driver.host``.
        May start the SparkSession (a cluster master's driver host is known only then).
        """
        configured = (JobManagerOptions.BIND_HOST.get(self._configuration) or "").strip()
        if configured:
            return configured
        if self._given_session is None and self._session is None:
            wanted = self._master or BackendOptions.SPARK_MASTER.get(self._configuration)
            if (wanted is None and not _spark_context_running()) or (wanted is not None and is_local_master(wanted)):
                return LOOPBACK
        context = self._acquire_session(1).spark_context
        if is_local_master(str(context.master)):
            return LOOPBACK
        return str(context.getConf().get("spark.driver.host", None) or LOOPBACK)

    # ----------------------------------------------------------------- launch
    def launch(self, ids: Sequence[str], slots: int, jobmanager_address: tuple[str, int], secret: bytes,
               configuration: Mapping[str, str]) -> None:
        """Start one TaskManager per id as the tasks of one background Spark job; returns at once.

        Raises :class:`SparkTaskSlotsError` when Spark lacks free task slots for them (after
        waiting up to ``taskmanager.spark.executor-registration-timeout``, 30 s, for a
        cluster's executors to register), IllegalConfigurationError for a reused id, and for a local checkpoint
        directory when the executors run on more than one host (:mod:`.spark_storage`).
        """
        ids = [str(i) for i in ids]
        if not ids:
            return
        switch_interval_seconds(configuration)  # a bad value fails here, not in every Spark task
        with self._launch_lock:
            with self._lock:
                known = {i for launch in self._launches for i in launch.ids}
                self._stopping = False
            reused = sorted(set(ids) & known | {i for i in ids if ids.count(i) > 1})
            if reused:
                raise IllegalConfigurationError(f"SparkTaskManagerLauncher: TaskManager ids {reused} were already "
                                                f"launched; every launch needs new ids")
            context = self._acquire_session(len(ids)).spark_context
            self._check_settings(context)
            self._check_slots(context, len(ids))
            check_shared_checkpoint_storage(context, configuration)
            launcher_address = self._hosts.listen(jobmanager_address[0], secret)
            local = is_local_master(str(context.master))
            task_configuration = dict(configuration)
            if not local:  # the cluster's directory is on the driver's machine; hosts elsewhere make their own
                task_configuration.pop(WORKING_DIR_KEY, None)
            if not str(task_configuration.get(WORKING_DIR_KEY) or "").strip():
                for launched_as in ids:  # where each host will make its own (spark_host.host_working_dir)
                    self._host_dirs[launched_as] = host_base_dir(self._cluster, launched_as, task_configuration)
            spec = {"ids": ids, "slots": int(slots), "jobmanager_address": tuple(jobmanager_address),
                    "secret": bytes(secret), "configuration": task_configuration,
                    "launcher_address": launcher_address, "cluster": self._cluster,
                    "worker_entry": self._worker_entry}
            driver_paths = [os.getcwd() if p == "" else p for p in sys.path] if local else None
            launch = _Launch(tuple(ids), time.monotonic())
            launch.thread = threading.Thread(
                target=self._run_job, args=(launch, context, _task_function(spec, driver_paths),
                                            taskmanager_python(context)),
                name=f"streamkernel-spark-taskmanagers-{ids[0]}", daemon=True)
            with self._lock:
                self._launches.append(launch)
            launch.thread.start()

    def _acquire_session(self, taskmanagers: int) -> OwnedSession:
        with self._session_lock:
            with self._lock:
                if self._session is not None:
                    return self._session
            if self._given_session is not None:
                session = OwnedSession(self._given_session, owned=False, startup_seconds=None)
            else:
                session = obtain_session(self._configuration, self._master, taskmanagers)
            context = session.spark_context
            facts = {"spark_master": str(context.master), "spark_app_id": context.applicationId,
                     "spark_ui": context.uiWebUrl}
            with self._lock:
                self._session, self._spark_facts = session, facts
            return session

    def _check_settings(self, context: Any) -> None:
        """Refuse Spark settings that would kill healthy TaskManager hosts; warn about wasteful ones."""
        conf = context.getConf()
        idle = float(conf.get("spark.python.worker.idleTimeoutSeconds", "0") or 0)
        if idle > 0 and str(conf.get("spark.python.worker.killOnIdleTimeout", "false")).lower() == "true":
            raise IllegalConfigurationError(
                f"spark backend: this SparkSession kills Python workers idle for {idle:g} s "
                f"(spark.python.worker.killOnIdleTimeout), and a TaskManager's Spark task sends Spark nothing for as "
                f"long as it runs: every TaskManager would be killed. Turn that setting off for this session.")
        if str(conf.get("spark.speculation", "false")).lower() == "true":
            _LOG.warning("spark backend: spark.speculation is on; Spark may start a speculative copy of a long-running "
                         "TaskManager task, which registers as one more TaskManager")

    def _check_slots(self, context: Any, needed: int) -> None:
        conf = context.getConf()
        if str(conf.get("spark.dynamicAllocation.enabled", "false")).lower() == "true":
            _LOG.info("spark backend: dynamic allocation is on; Spark will request executors for %d TaskManagers",
                      needed)
            return
        task_cpus = int(conf.get("spark.task.cpus", "1"))
        deadline = time.monotonic() + self._executor_wait_s
        while True:
            try:
                slots = spark_task_slots(str(context.master), executor_cores(context), task_cpus,
                                         self._busy_task_slots(context))
            except Exception as exc:  # py4j internals of another Spark version: launch unchecked
                _LOG.warning("spark backend: could not count Spark's task slots (%s); launching unchecked", exc)
                return
            if slots.free >= needed or is_local_master(slots.master) or time.monotonic() > deadline:
                break
            time.sleep(0.25)  # a cluster's executors register after the session started
        check_task_slots(needed, slots)

    def _busy_task_slots(self, context: Any) -> int:
        """Task slots taken: running tasks of other jobs + our TaskManagers not yet ended."""
        tracker = context.statusTracker()
        own_stages: set[int] = set()
        for job_id in tracker.getJobIdsForGroup(self._group):
            info = tracker.getJobInfo(job_id)
            if info is not None:
                own_stages.update(info.stageIds)
        others = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None and stage_id not in own_stages:
                others += int(info.numActiveTasks)
        with self._lock:
            own = sum(len(entry.ids) - len(entry.finished) for entry in self._launches
                      if entry.thread and entry.thread.is_alive())
        return others + own

    def _run_job(self, launch: _Launch, context: Any, task: Callable[[int, Any], list], python: str) -> None:
        description = f"streamkernel TaskManagers {', '.join(launch.ids)} (cluster {self._cluster})"
        try:
            context.setJobGroup(self._group, description, interruptOnCancel=True)
            rdd = context.parallelize(range(len(launch.ids)), len(launch.ids)).mapPartitionsWithIndex(task)
            with python_exec_for(context, python):
                rdd._jrdd  # noqa: B018 - the Java RDD is built now, with the TaskManagers' Python
            launch.results = rdd.collect()
        except BaseException as exc:
            if self._stopping:
                _LOG.debug("spark backend: TaskManager job of %s ended by stop(): %s", launch.ids, type(exc).__name__)
                return
            error = explain_job_failure(exc, list(launch.ids), python, str(context.master), task_tries(context))
            launch.error = self._failure = error
            _LOG.error("spark backend: %s", error)

    # ------------------------------------------------------- host reports
    def _host_reported(self, info: SparkHostInfo) -> None:
        with self._lock:
            for launch in self._launches:
                if info.launched_as in launch.ids and launch.first_host_seconds is None:
                    launch.first_host_seconds = time.monotonic() - launch.started

    def _host_finished(self, info: SparkHostInfo) -> None:
        with self._lock:
            for launch in self._launches:
                if info.launched_as in launch.ids:
                    launch.finished.add(info.launched_as)

    # ------------------------------------------------------------- kill, stop
    def kill(self, taskmanager_id: str) -> bool:
        """SIGKILL the Python worker hosting ``taskmanager_id``, as if it died; Spark relaunches its task.

        On the driver's machine the launcher sends the signal itself; on another machine the
        host is told to SIGKILL itself. False for an unknown or ended TaskManager.
        """
        return self._hosts.kill(taskmanager_id)

    def stop(self, timeout: float = 10.0) -> None:
        """End every TaskManager job: wait up to ``timeout`` s for the TaskManagers (asked to stop
        through the protocol) to end their tasks, then cancel the job group and kill what is left.

        Closes the launcher's listener, and stops the SparkSession if the launcher created it.
        Idempotent; the launcher may launch again afterwards.
        """
        with self._launch_lock:
            with self._lock:
                self._stopping = True
                launches, session = list(self._launches), self._session
            if session is None:
                self._hosts.close()
                return
            deadline = time.monotonic() + max(0.0, timeout)
            for launch in launches:
                if launch.thread is not None:
                    launch.thread.join(max(0.0, deadline - time.monotonic()))
            if any(entry.thread is not None and entry.thread.is_alive() for entry in launches):
                _LOG.warning("spark backend: TaskManager tasks still run %.1f s after stop was requested: cancelling "
                             "Spark job group %s", timeout, self._group)
                threads = [entry.thread for entry in launches if entry.thread]
                cancel_and_wait(session.spark_context, self._group, threads,
                                lambda: self._hosts.in_states("running"), send_kill)
            wait_until_gone(self._hosts.in_states("killed", "lost", "running", "failed"),
                            max(2.0, deadline - time.monotonic()))
            # Spark's status store (UI, statusTracker) learns of the job's end a moment later
            settle = time.monotonic() + 5.0
            while active_jobs_of_group(session.spark_context, self._group) and time.monotonic() < settle:
                time.sleep(0.02)
            self._remove_local_host_dirs()
            self._hosts.close()
            if session.owned:
                proc = getattr(getattr(session.spark_context, "_gateway", None), "proc", None)
                session.session.stop()
                wait_for_python_workers(getattr(proc, "pid", None), 10.0)  # Spark signals them, we wait
            with self._lock:
                self._session, self._launches = None, []

    def _remove_local_host_dirs(self) -> None:
        """Remove the directories of the hosts that ran on this machine: one that Spark's cancel
        SIGKILLed could not remove its own (hosts elsewhere clean up at their next attempt)."""
        here = machine_identity()
        for host in self._hosts.hosts():
            directory = self._host_dirs.get(host.info.launched_as)
            if directory is not None and host.info.machine == here:
                shutil.rmtree(directory, ignore_errors=True)
        self._host_dirs.clear()

    # --------------------------------------------------------------- describe
    def describe(self, taskmanager_id: str) -> dict[str, Any]:
        """Where a TaskManager runs: backend, host, pid, its Spark task (partition, attempt) and state."""
        host = self._hosts.get(taskmanager_id)
        with self._lock:
            facts = dict(self._spark_facts)
            pending = next((entry for entry in self._launches if taskmanager_id in entry.ids), None)
        described: dict[str, Any] = {"backend": self.backend, **facts, "spark_job_group": self._group}
        if host is not None:
            info = host.info
            described.update(host=info.host, pid=info.pid, state=host.state, launched_as=info.launched_as,
                             spark_partition=info.partition, spark_attempt=info.attempt,
                             spark_task_attempt_id=info.task_attempt_id)
            return described
        if pending is not None:
            described.update(state="launching", launched_as=taskmanager_id,
                             spark_partition=pending.ids.index(taskmanager_id))
            return described
        return {}

    def __repr__(self) -> str:
        master = self._spark_facts.get("spark_master", self._master or "local[N,F]")
        return f"SparkTaskManagerLauncher(master={master!r}, group={self._group!r}, hosts={len(self._hosts)})"


def _spark_context_running() -> bool:
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None
