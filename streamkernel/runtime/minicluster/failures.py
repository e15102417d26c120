"""Failure injection on a MiniCluster: kill a TaskManager, add one, make an operator fail.

:class:`FailureInjection` is ``MiniCluster.failures``: it breaks things on purpose, to
watch recovery (``%flink kill-taskmanager``, ``%flink fail``, the cockpit's Kill
TaskManager button): a TaskManager dies as its process would (the backend kills it), a
replacement registers its slots as YARN or Spark would relaunch one, and an operator's
running subtasks raise an :class:`~streamkernel.testing.InjectedFailure` in their own
threads. Which subtasks an operator name means is resolved by
:mod:`.jobmaster.failure_injection` (pure) from the job's published status snapshot (its
JobGraph and where each subtask runs); this class delivers the failure.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Union

from streamkernel.common.job_status import JobID
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.core.deployment import ExecutionAttemptId
from streamkernel.runtime.dispatcher.dispatcher import Dispatcher
from streamkernel.runtime.jobmaster.failure_injection import injected_failure_message, subtasks_to_fail
from streamkernel.runtime.minicluster.taskmanagers import positive_count
from streamkernel.runtime.resourcemanager.resource_manager import ResourceManager

__all__ = ["FailureInjection"]


class FailureInjection:
    """Failure injection into one running cluster (``MiniCluster.failures``).

    ``dispatcher`` gives the jobs' status snapshots, ``resource_manager`` the registered
    slots (a TaskManager's index), ``taskmanagers`` the backend that kills, adds and reaches
    TaskManagers (:mod:`.taskmanagers`), ``slots_per_taskmanager`` the default size of an
    added one. ``lifecycle`` is the cluster's start/stop lock (a TaskManager is not killed
    or added while the cluster stops) and ``is_running`` tells whether it runs.
    """

    def __init__(self, dispatcher: Dispatcher, resource_manager: ResourceManager, taskmanagers: Any,
                 slots_per_taskmanager: int, lifecycle: threading.Lock, is_running: Callable[[], bool]) -> None:
        self._dispatcher = dispatcher
        self._resource_manager = resource_manager
        self._backend = taskmanagers
        self._slots_per_taskmanager = slots_per_taskmanager
        self._lifecycle = lifecycle
        self._is_running = is_running

    def _taskmanager(self, index_or_id: Union[int, str]) -> str:
        """The id of a live TaskManager given its index, id or ``TM<n>`` name."""
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
        with self._lifecycle:
            taskmanager_id = self._taskmanager(index_or_id)
            self._backend.kill(taskmanager_id)
        return taskmanager_id

    def add_taskmanager(self, slots: Optional[int] = None) -> str:
        """Start one more TaskManager (``slots`` slots, the cluster's default if None) of the
        cluster's backend; it registers its slots with the ResourceManager, where waiting
        jobs find them. Returns its id."""
        with self._lifecycle:
            if not self._is_running():
                raise InvalidProgramError("MiniCluster.add_taskmanager: the cluster is not running; call start() first")
            count = self._slots_per_taskmanager if slots is None else positive_count("slots", slots)
            return self._backend.add(count)

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

        details = self._dispatcher.request_job_details(
            job_id if isinstance(job_id, JobID) else JobID.from_hex_string(str(job_id)))
        targets = subtasks_to_fail(details.require_job_graph(), details, operator_name_or_uid, subtask)
        live = set(self._backend.live_ids())
        failed = []
        for target in targets:
            if target.taskmanager_id not in live:
                continue
            attempt = ExecutionAttemptId(details.job_id, target.vertex_id, target.subtask_index, target.attempt_number)
            error = InjectedFailure(injected_failure_message(operator_name_or_uid, target))
            if self._backend.inject_failure(target.taskmanager_id, attempt, error):
                failed.append(target.name)
        return failed
