"""The checkpoint side of a JobMaster: the thin driver around the pure CheckpointCoordinator.

Flink's JobMaster owns a ``CheckpointCoordinator``; here the coordinator is a pure state
machine (:mod:`streamkernel.runtime.checkpoint.coordinator`) and :class:`JobCheckpointing`
carries out what it decides. Everything runs in the JobMaster's thread (its event loop
calls :meth:`tick` at :meth:`next_wakeup_ms`, so periodic checkpoints need no thread of
their own)::

    job attempt RUNNING (every subtask runs)  -> coordinator.start(plan)
    a subtask FINISHED                        -> coordinator.tasks_finished
    failover, cancel, end of the job          -> coordinator.stop (pending ones are aborted)

    TriggerCheckpoint        -> TaskExecutor.trigger_checkpoint for every source subtask
    acknowledge / decline    <- tasks, through their TaskExecutor and the JobMaster's queue
    CompleteCheckpoint       -> storage.finalize (metadata, retention), or write_savepoint,
                                then coordinator.finalized (or finalize_failed)
    NotifyCheckpointComplete -> TaskExecutor.notify_checkpoint_complete for every subtask
    AbortCheckpoint          -> storage.discard; a waiting request learns why; the tasks of a
                                stop-with-savepoint are told (notify_checkpoint_aborted) and go on
    DiscardState             -> storage.discard_state (a late acknowledgement)
    FailJob                  -> the JobMaster fails the job (its restart strategy decides)

Checkpoints and savepoints asked for by a person (``MiniCluster.checkpoints.trigger_checkpoint``,
``trigger_savepoint``, ``stop_with_savepoint``, the JobClient's) are :class:`CheckpointRequest` s:
a future that completes with the path of the completed checkpoint or savepoint, or
exceptionally with :class:`~streamkernel.errors.CheckpointFailedError` saying why not.

Writing the metadata happens in the JobMaster's thread, never in a task's: it is one small
JSON file (plus moving the state files for a savepoint). When the job ends, its checkpoints
are kept or deleted as ``execution.checkpointing.externalized-checkpoint-retention`` says.
Checkpoints are not taken in BATCH execution mode (Flink does not either).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

from streamkernel.runtime.core.engine_log import CONCERNS_USER
from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.job_status import JobStatus
from streamkernel.common.options import ExecutionOptions
from streamkernel.datastream.checkpoint_config import CheckpointConfig
from streamkernel.errors import CheckpointFailedError, IllegalConfigurationError
from streamkernel.graph.job_graph import JobGraph
from streamkernel.runtime.checkpoint.actions import (
    AbortCheckpoint,
    CheckpointAction,
    CompleteCheckpoint,
    DiscardState,
    FailJob,
    NotifyCheckpointComplete,
    TriggerCheckpoint,
    TriggerRejected,
)
from streamkernel.runtime.checkpoint.checkpoint_metrics import CheckpointMetrics
from streamkernel.runtime.checkpoint.coordinator import CheckpointCoordinator
from streamkernel.runtime.checkpoint.history import CheckpointStatsSnapshot
from streamkernel.runtime.checkpoint.metadata import CompletedCheckpoint, JobCheckpointInfo
from streamkernel.runtime.checkpoint.settings import CheckpointCoordinatorConfiguration, CheckpointPlan
from streamkernel.runtime.checkpoint.storage import CheckpointStorage, resolve_savepoint_dir
from streamkernel.runtime.jobmaster.checkpoint_services import JobCheckpointServices
from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState

__all__ = ["CheckpointRequest", "JobCheckpointing", "TaskLocator"]

_LOG = logging.getLogger(__name__)

SubtaskKey = tuple[int, int]
#: ``locate(subtask) -> (TaskExecutorGateway, attempt id)`` of its current, deployed attempt, or None.
TaskLocator = Callable[[SubtaskKey], Optional[tuple[Any, ExecutionAttemptId]]]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class CheckpointRequest:
    """A checkpoint or savepoint a person asked for; ``future`` gets its path.

    ``stop``: stop-with-savepoint: the savepoint is synchronous (the sources stop at its
    barrier, every task finishes once it completed), ``future`` completes when the job has
    ended; ``drain``: the sources emit MAX_WATERMARK first and operators end their input.
    """

    is_savepoint: bool
    target_dir: Optional[str] = None
    stop: bool = False
    drain: bool = False
    future: CompletableFuture = field(default_factory=CompletableFuture)

    @property
    def kind(self) -> str:
        """``"savepoint"`` or ``"checkpoint"``."""
        return "savepoint" if self.is_savepoint else "checkpoint"


class JobCheckpointing:
    """Drives the CheckpointCoordinator of one job (see the module docstring).

    ``locate`` finds a subtask's TaskExecutor and current attempt; ``fail_job(error)`` and
    ``stop_job(request, path)`` ask the JobMaster to fail the job, or to end it after a
    stop-with-savepoint: both must only enqueue (they are called while actions are carried out).
    ``services`` (high availability): the job's checkpoint id counter and completed checkpoint
    store (:mod:`.checkpoint_services`): ids come from the counter, a checkpoint is complete once
    the store holds it, and the checkpoints outlive a SUSPENDED job; the end of a job then leaves
    the clean-up to :meth:`cleanup` (the Dispatcher calls it once the job's result is recorded).
    """

    def __init__(self, job_id: str, job_graph: JobGraph, configuration: Mapping[str, str], *,
                 locate: TaskLocator, fail_job: Callable[[BaseException], None],
                 stop_job: Callable[[CheckpointRequest, str], None],
                 services: Optional[JobCheckpointServices] = None) -> None:
        self.configuration = configuration
        self.storage = CheckpointStorage.from_configuration(job_id, configuration)
        self.services = services
        first_id = self.storage.max_checkpoint_id() + 1
        if services is not None:
            first_id = max(first_id, services.next_id())
        self.coordinator = CheckpointCoordinator(CheckpointCoordinatorConfiguration.from_configuration(configuration),
                                                 first_checkpoint_id=first_id,
                                                 id_source=services.take_id if services is not None else None)
        self.plan = CheckpointPlan.from_job_graph(job_graph)
        self.job_info = JobCheckpointInfo.from_job_graph(job_graph)
        self.retention = CheckpointConfig().apply_configuration(configuration).get_externalized_checkpoint_retention()
        self.batch_mode = ExecutionOptions.RUNTIME_MODE.get(configuration) == "BATCH"
        self._locate = locate
        self._fail_job = fail_job
        self._stop_job = stop_job
        self._requests: dict[int, CheckpointRequest] = {}
        self._started_attempt: Optional[int] = None
        self._finished: set[SubtaskKey] = set()
        #: the ids of the checkpoints (not savepoints) this job completed
        self.completed_ids: set[int] = set()

    # ------------------------------------------------------------------ reading
    def stats(self) -> CheckpointStatsSnapshot:
        """The checkpoint statistics now (immutable; for JobDetails)."""
        return self.coordinator.history.snapshot()

    def next_wakeup_ms(self) -> Optional[int]:
        """When :meth:`tick` has something to do (wall-clock ms), or None."""
        return self.coordinator.next_wakeup_ms()

    # ------------------------------------------------------------------ events
    def tick(self, now_ms: int) -> None:
        """Time passed: expire checkpoints that timed out, trigger a periodic one when due."""
        self._carry_out(self.coordinator.tick(now_ms))

    def on_job_progress(self, status: JobStatus, attempt: int, states: Mapping[SubtaskKey, ExecutionState],
                        now_ms: int) -> None:
        """The job's status or its subtasks' states may have changed: start, narrow or stop
        the coordinator (checkpoints run while every subtask of the attempt runs)."""
        coordinator = self.coordinator
        if coordinator.is_running:
            if status is not JobStatus.RUNNING or attempt != self._started_attempt:
                self._carry_out(coordinator.stop(now_ms, f"the job is {status.name} (attempt {attempt})"))
            else:
                finished = {k for k, s in states.items() if s is ExecutionState.FINISHED} - self._finished
                if finished:
                    self._finished |= finished
                    self._carry_out(coordinator.tasks_finished(sorted(finished), now_ms))
        if (not coordinator.is_running and not self.batch_mode and status is JobStatus.RUNNING
                and attempt != self._started_attempt and states
                and all(s is ExecutionState.RUNNING for s in states.values())):
            self._started_attempt = attempt
            self._finished = set()
            self._carry_out(coordinator.start(now_ms, self.plan))

    def request(self, request: CheckpointRequest, now_ms: int) -> None:
        """A person asked for a checkpoint or savepoint: trigger it now (or say why not)."""
        if self.batch_mode:
            request.future.complete_exceptionally(CheckpointFailedError(
                f"cannot take a {request.kind}: the job runs in BATCH execution mode, which takes no checkpoints"))
            return
        try:
            target = resolve_savepoint_dir(self.configuration, request.target_dir) if request.is_savepoint else None
        except IllegalConfigurationError as error:  # a file in the way, an unknown scheme: this savepoint fails
            request.future.complete_exceptionally(CheckpointFailedError(f"{request.kind} failed: {error}"))
            return
        actions = self.coordinator.trigger(now_ms, request.is_savepoint, target, synchronous=request.stop,
                                           drain=request.drain)
        for action in actions:
            if isinstance(action, TriggerRejected):
                request.future.complete_exceptionally(CheckpointFailedError(action.reason))
            elif isinstance(action, TriggerCheckpoint):
                self._requests[action.checkpoint_id] = request
        self._carry_out(a for a in actions if not isinstance(a, TriggerRejected))

    def acknowledge(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, handle: Any, current: bool,
                    now_ms: int, metrics: Optional[CheckpointMetrics] = None) -> None:
        """A subtask stored its state (having measured ``metrics``); ``current`` False: an attempt
        that no longer runs (its state is deleted, it never counts)."""
        if not current:
            self.storage.discard_state(handle)
            return
        key = (attempt_id.vertex_id, attempt_id.subtask_index)
        self._carry_out(self.coordinator.acknowledge(checkpoint_id, key, handle, now_ms, metrics))

    def decline(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, reason: str, current: bool,
                now_ms: int) -> None:
        """A subtask could not take the checkpoint (stale attempts are ignored)."""
        if current:
            key = (attempt_id.vertex_id, attempt_id.subtask_index)
            self._carry_out(self.coordinator.decline(checkpoint_id, key, reason, now_ms))

    def restored(self, completed: CompletedCheckpoint, now_ms: int) -> None:
        """The job (re)starts from ``completed``: statistics, and ids continue after it."""
        if self.services is not None:
            try:
                self.services.restored(completed.checkpoint_id)
            except Exception as error:  # noqa: BLE001 - no longer leading: the job is being suspended
                _LOG.warning("could not move the checkpoint id counter of job %s past %d: %s", self.storage.job_id,
                             completed.checkpoint_id, error)
        self._carry_out(self.coordinator.restored(completed.checkpoint_id, now_ms, completed.is_savepoint,
                                                  completed.path))

    def job_terminated(self, status: JobStatus, now_ms: int) -> None:
        """The job ended: stop, fail what is still waiting, apply the retention of checkpoints."""
        self._carry_out(self.coordinator.stop(now_ms, f"the job is {status.name}"))
        for checkpoint_id, request in sorted(self._requests.items()):
            request.future.complete_exceptionally(CheckpointFailedError(
                f"{request.kind} {checkpoint_id} did not complete: the job is {status.name}"))
        self._requests.clear()
        if self.services is None:
            self.cleanup(status)

    def cleanup(self, status: JobStatus) -> None:
        """Apply the retention of checkpoints for a job that ended ``status`` (and, with high
        availability, remove its counter and pointers when it is globally terminal). A SUSPENDED
        job of a highly available cluster keeps everything: the next leader recovers it."""
        if self.services is not None:
            if not status.is_globally_terminal_state():
                return
            self.services.shutdown(status.name)
        try:
            self.storage.on_job_end(status, self.retention)
        except OSError as error:  # the directory is unusable (CheckpointStorageError says why): one line
            _LOG.warning("could not clean up the checkpoints of job %s: %s", self.storage.job_id, error,
                         extra=CONCERNS_USER)
        except Exception:  # noqa: BLE001 - a directory we cannot clean must not break the job's end
            _LOG.exception("could not clean up the checkpoints of job %s", self.storage.job_id, extra=CONCERNS_USER)

    # ------------------------------------------------------------------ actions
    def _carry_out(self, actions: Iterable[CheckpointAction]) -> None:
        pending = deque(actions)
        while pending:
            action = pending.popleft()
            if isinstance(action, TriggerCheckpoint):
                stop = (action.synchronous, action.drain) if action.synchronous else ()  # stop-with-savepoint
                for key in action.targets:
                    self._call_task(key, "trigger_checkpoint", action.checkpoint_id, action.timestamp,
                                    action.is_savepoint, *stop)
            elif isinstance(action, CompleteCheckpoint):
                pending.extend(self._complete(action))
            elif isinstance(action, NotifyCheckpointComplete):
                for key in action.targets:
                    self._call_task(key, "notify_checkpoint_complete", action.checkpoint_id)
            elif isinstance(action, AbortCheckpoint):
                self.storage.discard(action.checkpoint_id)
                request = self._requests.pop(action.checkpoint_id, None)
                kind = "savepoint" if action.is_savepoint else "checkpoint"
                _LOG.info("%s %d of job %s aborted: %s", kind, action.checkpoint_id, self.job_info.job_name,
                          action.reason)
                if request is not None:
                    request.future.complete_exceptionally(CheckpointFailedError(
                        f"{kind} {action.checkpoint_id} failed: {action.reason}"))
                if action.synchronous:  # the tasks waiting at its barrier go on
                    for key in action.targets:
                        self._call_task(key, "notify_checkpoint_aborted", action.checkpoint_id)
            elif isinstance(action, DiscardState):
                self.storage.discard_state(action.handle)
            elif isinstance(action, FailJob):
                self._fail_job(CheckpointFailedError(action.reason))

    def _complete(self, action: CompleteCheckpoint) -> list[CheckpointAction]:
        """Every subtask acknowledged: write the metadata (the checkpoint is complete only then)."""
        checkpoint_id = action.checkpoint_id
        try:
            if action.is_savepoint:
                completed = self.storage.write_savepoint(action.target_dir, checkpoint_id, action.handles,
                                                         self.job_info, timestamp=action.timestamp,
                                                         conf=self.configuration)
            else:
                completed = self.storage.finalize(checkpoint_id, action.handles, self.job_info,
                                                  timestamp=action.timestamp, apply_retention=self.services is None)
        except Exception as error:  # noqa: BLE001 - disk full, unpicklable state ...: the checkpoint fails
            _LOG.warning("could not complete checkpoint %d of job %s: %s", checkpoint_id, self.job_info.job_name,
                         error, extra=CONCERNS_USER)
            return self.coordinator.finalize_failed(checkpoint_id, f"{type(error).__name__}: {error}", _now_ms())
        if not action.is_savepoint and self.services is not None:
            try:  # complete only once the next leader would find it (Flink's CompletedCheckpointStore)
                self.services.add(completed)
            except Exception as error:  # noqa: BLE001 - ZooKeeper gone, leadership lost
                _LOG.warning("checkpoint %d of job %s could not be added to the completed checkpoint store: %s",
                             checkpoint_id, self.job_info.job_name, error)
                return self.coordinator.finalize_failed(
                    checkpoint_id, f"it could not be added to the completed checkpoint store ({error})", _now_ms())
            self.storage.apply_retention()  # only now: ZooKeeper points past the checkpoints it deletes
        if not action.is_savepoint:
            self.completed_ids.add(checkpoint_id)
        actions = self.coordinator.finalized(checkpoint_id, _now_ms(), completed.path, completed.metadata_size)
        request = self._requests.pop(checkpoint_id, None)
        if request is not None:
            if request.stop:
                self._stop_job(request, completed.path)
            else:
                request.future.complete(completed.path)
        return actions

    def _call_task(self, key: SubtaskKey, method: str, *args: Any) -> None:
        """Send a checkpoint message to a subtask's TaskExecutor; a TaskManager that is gone is
        left to the failover its loss causes (the checkpoint then aborts, uncounted)."""
        located = self._locate(key)
        if located is None:
            return
        gateway, attempt_id = located
        try:
            getattr(gateway, method)(attempt_id, *args)
        except Exception as error:  # noqa: BLE001
            _LOG.debug("%s of %s failed: %s", method, attempt_id, error)

    def __repr__(self) -> str:
        return f"JobCheckpointing({self.coordinator!r}, {self.storage!r})"
