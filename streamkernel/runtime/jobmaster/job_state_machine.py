"""The JobMaster's decisions, as a pure state machine: events in, actions out.

One :class:`JobStateMachine` per job tracks the job's status (Flink's JobStatus) and the
state of every subtask's current attempt (Flink's Execution / ExecutionState). Each event
method (``start``, ``slots_allocated``, ``task_state_changed``, ``cancel`` ...) updates
the state and returns the *actions* the driver must carry out (request slots, deploy or
cancel a task, release resources, schedule a restart, report the end). It never blocks,
never starts a thread, never calls a TaskManager: :class:`~.jobmaster.JobMaster` is the thin
driver that does, which is why every rule below is tested without threads.

The rules (Flink's, restarting all tasks of the job on a failure: Flink's "full" failover)::

    CREATED   --start-->            request slots
    CREATED   --slots allocated-->  deploy every subtask (consumers first)
    CREATED   --every subtask reached RUNNING--> RUNNING
    CREATED/RUNNING --every subtask FINISHED--> FINISHED       (release, report)
    CREATED/RUNNING --a subtask FAILED (or a slot request failed, a TaskManager was lost,
                      a subtask was CANCELED nobody asked for)--> ask the RestartStrategy
                      at once (the failure's time is what it counts with), then cancel the
                      others and release the channels:
                      restart -> RESTARTING
                      give up -> FAILING
    RESTARTING --all subtasks terminal--> wait what is left of the backoff (counted from the
                      failure), then RUNNING: redeploy every subtask as attempt + 1 on fresh
                      channels (into the same slots, or new ones if a TaskManager was lost)
    FAILING   --all subtasks terminal--> FAILED                (release, report)
    CREATED/RUNNING --a global failure (too many failed checkpoints)--> as a failed subtask
    CREATED/RUNNING --the state to start from cannot be restored--> FAILING, no restart
                      (a corrupt savepoint or a program that does not fit it stays so)
    RUNNING (a restart) --no completed checkpoint can be restored--> ask the RestartStrategy,
                      as a failed subtask (never a restart from empty state)
    any non-terminal --cancel--> CANCELLING: cancel every subtask, then release the channels
    CANCELLING --all subtasks terminal--> CANCELED             (release, report)
    any non-terminal --suspend (the JobManager lost its leadership)--> SUSPENDED at once: every
                      deployed subtask is told to cancel, nobody waits for them (release, report).
                      SUSPENDED is terminal for this JobManager only: the next leader recovers it.

Only the failure that starts a failover is shown to the strategy: failures while the job
is RESTARTING, FAILING or CANCELLING belong to the same failover (Flink 1.19+ merges them
too). Each such root failure is kept in the job's exception history.

Deviations from Flink: the job becomes RUNNING when every subtask has reached RUNNING (as
the issue asks), not as soon as scheduling starts; a job waiting for slots stays CREATED.
After a restart it is RUNNING again as soon as the new attempt is being scheduled, as in
Flink. A job that will restart is RESTARTING while its old tasks are being cancelled
(Flink's adaptive scheduler does the same), so FAILING always means "this job will fail".
"""

from __future__ import annotations

from collections import deque
from typing import Any, Mapping, Optional, Sequence

from streamkernel.common.job_status import JobStatus
from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState
from streamkernel.runtime.jobmaster.job_actions import (
    Action,
    CancelTask,
    DeployTask,
    Execution,
    JobTerminated,
    ReleaseChannels,
    ReleaseResources,
    ReleaseSlots,
    RequestSlots,
    ScheduleRestart,
)
from streamkernel.runtime.jobmaster.job_status import (
    ExceptionHistoryEntry,
    JobDetails,
    JobResult,
    SubtaskDetails,
    VertexDetails,
)
from streamkernel.runtime.jobmaster.restart import RestartStrategy
from streamkernel.runtime.jobmaster.scheduler import SubtaskKey
from streamkernel.runtime.taskmanager.gateway import AllocatedSlot

__all__ = ["TaskCanceledUnexpectedlyError", "JobStateMachine"]

_DEPLOYED = (ExecutionState.DEPLOYING, ExecutionState.INITIALIZING, ExecutionState.RUNNING)


class TaskCanceledUnexpectedlyError(RuntimeError):
    """A subtask reported CANCELED although nobody cancelled it: the job fails."""


class JobStateMachine:
    """The status of one job and of its subtasks; every method is an event, returning actions.

    ``vertices`` are the job vertices in topological order (anything with ``id``, ``name``
    and ``parallelism``, e.g. :class:`~streamkernel.graph.job_graph.JobVertex`);
    ``slots_needed`` is what the job asks the ResourceManager for. The exception history
    keeps the last ``exception_history_size`` failures (Flink's ``web.exception-history-size``).
    """

    def __init__(self, job_id: str, job_name: str, vertices: Sequence[Any], slots_needed: int,
                 restart_strategy: RestartStrategy, now_ms: int, exception_history_size: int = 16) -> None:
        self.job_id = job_id
        self.job_name = job_name
        self.slots_needed = slots_needed
        self.restart_strategy = restart_strategy
        self.status = JobStatus.CREATED
        self.status_timestamps: dict[str, int] = {JobStatus.CREATED.name: now_ms}
        self.start_time = now_ms
        self.end_time: Optional[int] = None
        self.failure_cause: Optional[BaseException] = None
        self.failing_task: Optional[str] = None
        self.attempt = 0
        #: The latest failures that started a failover, oldest first (Flink's exception history).
        self.exception_history: deque[ExceptionHistoryEntry] = deque(maxlen=max(1, exception_history_size))
        self._failed_at_ms = 0  # the root failure of the pending restart, and its backoff
        self._backoff_ms = 0
        self._restart_scheduled = False
        self._vertices = tuple((v.id, v.name, v.parallelism) for v in vertices)
        self.executions: dict[SubtaskKey, Execution] = {}
        for vid, name, parallelism in self._vertices:
            for i in range(parallelism):
                execution = Execution((vid, i), f"{name} ({i + 1}/{parallelism})")
                execution.state_timestamps[ExecutionState.CREATED.value] = now_ms
                self.executions[(vid, i)] = execution
        # Consumers first: a producer's first buffers then find the reader's gate ready.
        self._deploy_order = [(vid, i) for vid, _, p in reversed(self._vertices) for i in range(p)]
        self.placement: dict[SubtaskKey, AllocatedSlot] = {}
        self.awaiting_slots = False

    # ------------------------------------------------------------------------ queries
    @property
    def is_terminal(self) -> bool:
        """True once the job is FINISHED, CANCELED, FAILED or SUSPENDED."""
        return self.status.is_terminal_state()

    def attempt_id(self, key: SubtaskKey) -> ExecutionAttemptId:
        """The id of the current attempt of subtask ``key``."""
        return ExecutionAttemptId(self.job_id, key[0], key[1], self.executions[key].attempt_number)

    # ------------------------------------------------------------------------- events
    def start(self, now_ms: int) -> list[Action]:
        """The JobMaster started: ask for the slots."""
        if self.status is not JobStatus.CREATED or self.awaiting_slots or self.placement:
            return []
        self.awaiting_slots = True
        return [RequestSlots(self.slots_needed)]

    def slots_allocated(self, placement: Mapping[SubtaskKey, AllocatedSlot], now_ms: int) -> list[Action]:
        """The slots arrived, with every subtask placed: deploy them all."""
        if not self.awaiting_slots:
            # Late answer (the job was cancelled meanwhile): give the slots back.
            return [ReleaseSlots()] if self.is_terminal else []
        self.awaiting_slots = False
        missing = [k for k in self.executions if k not in placement]
        if missing:
            raise ValueError(f"job {self.job_name!r}: no slot for subtasks {missing}")
        self.placement = dict(placement)
        return self._deploy(now_ms)

    def slot_request_failed(self, error: BaseException, now_ms: int) -> list[Action]:
        """No slots within the timeout (or the cluster stopped): the job fails."""
        if not self.awaiting_slots:
            return []
        self.awaiting_slots = False
        return self._fail(error, None, now_ms)

    def task_state_changed(self, attempt_id: ExecutionAttemptId, state: ExecutionState,
                           error: Optional[BaseException] = None, now_ms: int = 0,
                           metrics: Optional[Mapping[str, Any]] = None) -> list[Action]:
        """A subtask attempt reported a new state (a failed deployment reports FAILED)."""
        execution = self.executions.get((attempt_id.vertex_id, attempt_id.subtask_index))
        if (execution is None or execution.attempt_number != attempt_id.attempt_number
                or execution.state.is_terminal or execution.state is state):
            return []  # unknown, stale (an earlier attempt) or repeated
        if metrics is not None:
            execution.metrics = metrics
        if execution.cancel_requested and not state.is_terminal:
            return []  # stays CANCELING until the task ends
        execution.set_state(state, now_ms)
        if state is ExecutionState.FAILED:
            execution.failure = error
            if self.status in (JobStatus.CREATED, JobStatus.RUNNING):
                return self._fail(error or RuntimeError(f"{execution.name} failed"), execution.name, now_ms,
                                  execution.slot.taskmanager_id if execution.slot else None)
        elif state is ExecutionState.CANCELED and not execution.cancel_requested:
            if self.status in (JobStatus.CREATED, JobStatus.RUNNING):
                cause = error or TaskCanceledUnexpectedlyError(
                    f"{execution.name} was cancelled, but neither the job nor a failure asked for it")
                execution.failure = cause
                return self._fail(cause, execution.name, now_ms,
                                  execution.slot.taskmanager_id if execution.slot else None)
        return self._progress(now_ms)

    def cancel(self, now_ms: int) -> list[Action]:
        """Cancel the job: every subtask is cancelled, then the job is CANCELED."""
        if self.is_terminal or self.status is JobStatus.CANCELLING:
            return []
        self.awaiting_slots = False
        self._set_status(JobStatus.CANCELLING, now_ms)
        return self._cancel_all(now_ms) + self._progress(now_ms)

    def suspend(self, now_ms: int) -> list[Action]:
        """This JobManager no longer leads (Flink's ``JobMaster.suspend``): tell every deployed
        subtask to cancel and end SUSPENDED at once, without waiting for them: another JobManager
        recovers the job, and a task of this one must not be waited for (its TaskManager may
        already serve the new leader)."""
        if self.is_terminal:
            return []
        self.awaiting_slots = False
        actions = self._cancel_all(now_ms)
        self._set_status(JobStatus.SUSPENDED, now_ms)
        self.end_time = now_ms
        result = JobResult(self.job_id, self.job_name, JobStatus.SUSPENDED, now_ms - self.start_time, {}, None, None,
                           self.attempt, tuple(self.exception_history))
        return actions + [ReleaseResources(), JobTerminated(result)]

    def taskmanager_lost(self, taskmanager_id: str, cause: BaseException, now_ms: int) -> list[Action]:
        """A TaskManager is gone: its subtasks failed (they will never report again)."""
        lost = [e for e in self.executions.values()
                if e.slot is not None and e.slot.taskmanager_id == taskmanager_id and not e.state.is_terminal]
        if any(slot.taskmanager_id == taskmanager_id for slot in self.placement.values()):
            self.placement = {}  # the slots are gone: a restart asks for new ones
        for execution in lost:
            execution.set_state(ExecutionState.FAILED, now_ms)
            execution.failure = cause
        if lost and self.status in (JobStatus.CREATED, JobStatus.RUNNING):
            return self._fail(cause, lost[0].name, now_ms, taskmanager_id)
        return self._progress(now_ms)

    def fail_globally(self, cause: BaseException, now_ms: int) -> list[Action]:
        """A failure of the whole job, not of one subtask (Flink's global failure, e.g. more
        consecutive checkpoint failures than tolerated): the restart strategy decides."""
        if self.status not in (JobStatus.CREATED, JobStatus.RUNNING):
            return []
        return self._fail(cause, None, now_ms)

    def restore_failed(self, cause: BaseException, now_ms: int, restartable: bool = False) -> list[Action]:
        """The checkpoint or savepoint the attempt must start from cannot be restored (before
        any of its subtasks was deployed). The first attempt (a savepoint or checkpoint given
        to start from, ``restartable`` False) fails the job at once; a restart's (none of the
        job's completed checkpoints is restorable, ``restartable`` True) is a failure like any
        other: the restart strategy decides, as in Flink."""
        if self.is_terminal or self.status in (JobStatus.FAILING, JobStatus.CANCELLING):
            return []
        self.awaiting_slots = False
        self.failure_cause = cause
        self.failing_task = None
        restart = False
        if restartable:
            self.restart_strategy.notify_failure(cause, now_ms)
            restart = self.restart_strategy.can_restart()
            self._failed_at_ms = now_ms
            self._backoff_ms = max(0, int(self.restart_strategy.get_backoff_time_ms())) if restart else 0
        self.exception_history.append(ExceptionHistoryEntry.of(cause, now_ms, None, None, self.attempt, restart))
        self._set_status(JobStatus.RESTARTING if restart else JobStatus.FAILING, now_ms)
        for execution in self.executions.values():
            if not execution.state.is_terminal:
                execution.cancel_requested = True
                execution.set_state(ExecutionState.CANCELED, now_ms)  # never deployed
        return self._progress(now_ms)

    def report_warning(self, error: BaseException, now_ms: int) -> None:
        """Keep ``error`` in the exception history although the job goes on (e.g. a corrupt
        checkpoint that recovery skipped for an older one): ``restarted`` is True."""
        self.exception_history.append(ExceptionHistoryEntry.of(error, now_ms, None, None, self.attempt, True))

    def restart_due(self, now_ms: int) -> list[Action]:
        """The restart backoff elapsed: redeploy every subtask as a new attempt."""
        if self.status is not JobStatus.RESTARTING or not self._restart_scheduled:
            return []
        self._restart_scheduled = False
        self.attempt += 1
        for execution in self.executions.values():
            execution.state = ExecutionState.CREATED
            execution.attempt_number = self.attempt
            execution.failure = None
            execution.reached_running = False
            execution.cancel_requested = False
            execution.slot = None
            execution.metrics = None
            execution.state_timestamps = {ExecutionState.CREATED.value: now_ms}
        self._set_status(JobStatus.RUNNING, now_ms)
        actions: list[Action] = [ReleaseChannels()]
        if self.placement:
            return actions + self._deploy(now_ms)
        self.awaiting_slots = True
        return actions + [ReleaseSlots(), RequestSlots(self.slots_needed)]

    # ------------------------------------------------------------------------ helpers
    def _set_status(self, status: JobStatus, now_ms: int) -> None:
        self.status = status
        self.status_timestamps[status.name] = now_ms
        if status.is_globally_terminal_state():
            self.end_time = now_ms

    def _deploy(self, now_ms: int) -> list[Action]:
        actions: list[Action] = []
        for key in self._deploy_order:
            execution = self.executions[key]
            execution.slot = self.placement[key]
            execution.set_state(ExecutionState.DEPLOYING, now_ms)
            actions.append(DeployTask(key, execution.attempt_number, execution.slot))
        return actions

    def _fail(self, cause: BaseException, failing_task: Optional[str], now_ms: int,
              taskmanager_id: Optional[str] = None) -> list[Action]:
        """The root failure of a failover: ask the strategy now, then cancel every subtask."""
        self.failure_cause = cause
        self.failing_task = failing_task
        strategy = self.restart_strategy
        strategy.notify_failure(cause, now_ms)
        restart = strategy.can_restart()
        self._failed_at_ms = now_ms
        self._backoff_ms = max(0, int(strategy.get_backoff_time_ms())) if restart else 0
        self.exception_history.append(ExceptionHistoryEntry.of(cause, now_ms, failing_task, taskmanager_id,
                                                               self.attempt, restart))
        self._set_status(JobStatus.RESTARTING if restart else JobStatus.FAILING, now_ms)
        return self._cancel_all(now_ms) + self._progress(now_ms)

    def _cancel_all(self, now_ms: int) -> list[Action]:
        actions: list[Action] = []
        for key, execution in self.executions.items():
            if execution.state.is_terminal:
                continue
            execution.cancel_requested = True
            if execution.state in _DEPLOYED and execution.slot is not None:
                execution.set_state(ExecutionState.CANCELING, now_ms)
                actions.append(CancelTask(self.attempt_id(key), execution.slot))
            elif execution.state is not ExecutionState.CANCELING:
                execution.set_state(ExecutionState.CANCELED, now_ms)  # never deployed
        if actions:
            # After the cancel requests: wakes tasks blocked on a channel whose peer is gone
            # or never came (they see the cancellation and end CANCELED).
            actions.append(ReleaseChannels())
        return actions

    def _progress(self, now_ms: int) -> list[Action]:
        """Status changes that follow from the subtasks' states."""
        executions = self.executions.values()
        if self.status in (JobStatus.CREATED, JobStatus.RUNNING):
            if self.status is JobStatus.CREATED and all(e.reached_running for e in executions):
                self._set_status(JobStatus.RUNNING, now_ms)
            if all(e.state is ExecutionState.FINISHED for e in executions):
                return self._terminate(JobStatus.FINISHED, now_ms)
            return []
        if not all(e.state.is_terminal for e in executions):
            return []
        if self.status is JobStatus.CANCELLING:
            return self._terminate(JobStatus.CANCELED, now_ms)
        if self.status is JobStatus.FAILING:
            return self._terminate(JobStatus.FAILED, now_ms)
        if self.status is JobStatus.RESTARTING and not self._restart_scheduled:
            self._restart_scheduled = True
            # What is left of the backoff: it counts from the failure (if the wall clock
            # went back meanwhile, wait the whole backoff, never longer).
            elapsed = max(0, now_ms - self._failed_at_ms)
            return [ScheduleRestart(max(0, self._backoff_ms - elapsed))]
        return []

    def _terminate(self, status: JobStatus, now_ms: int) -> list[Action]:
        if self.status is JobStatus.CREATED and status is JobStatus.FINISHED:
            self._set_status(JobStatus.RUNNING, now_ms)
        self._set_status(status, now_ms)
        cause = self.failure_cause if status is JobStatus.FAILED else None
        result = JobResult(self.job_id, self.job_name, status, now_ms - self.start_time, {}, cause,
                           self.failing_task if status is JobStatus.FAILED else None, self.attempt,
                           tuple(self.exception_history))
        return [ReleaseResources(), JobTerminated(result)]

    # ----------------------------------------------------------------------- snapshot
    def details(self, now_ms: int) -> JobDetails:
        """An immutable snapshot of the job's status, for publishing."""
        vertices = []
        for vid, name, parallelism in self._vertices:
            subtasks = []
            for i in range(parallelism):
                e = self.executions[(vid, i)]
                subtasks.append(SubtaskDetails(
                    vid, i, e.name, e.state, e.attempt_number, e.slot.slot_id if e.slot else None,
                    e.slot.taskmanager_id if e.slot else None,
                    None if e.failure is None else f"{type(e.failure).__name__}: {e.failure}",
                    dict(e.state_timestamps), e.metrics))
            vertices.append(VertexDetails(vid, name, parallelism, tuple(subtasks)))
        end = self.end_time
        return JobDetails(self.job_id, self.job_name, self.status, self.start_time, end,
                          (end if end is not None else now_ms) - self.start_time, tuple(vertices),
                          dict(self.status_timestamps), self.failure_cause, self.failing_task, self.attempt,
                          self.slots_needed, self.attempt, tuple(self.exception_history),
                          self.restart_strategy.describe())
