"""The JobMaster: runs one job, from its JobGraph to a terminal state (Flink's JobMaster).

Each submitted job gets its own JobMaster. It builds the JobGraph and ExecutionGraph,
asks the ResourceManager for the slots the job needs, deploys a
:class:`~streamkernel.runtime.core.deployment.TaskDeploymentDescriptor` per subtask to the
TaskManager owning its slot, follows the subtasks' state changes, and ends the job:
FINISHED, FAILED (a subtask failed: the others are cancelled) or CANCELED. When the job's
restart strategy allows it, a failure (a subtask fails, its TaskManager is lost) restarts
the job instead: every subtask is cancelled, and after the strategy's backoff every subtask
is deployed again as attempt + 1, on fresh channels. The state each attempt starts from
comes from one place, :meth:`JobMaster.restored_state_for`: the configured savepoint for the
first attempt, the latest completed checkpoint for a restart (:mod:`.state_recovery`).
Deploying an attempt's subtasks, cancelling them and releasing what they used on the
TaskManagers is the :class:`~.execution_deployer.ExecutionDeployer`'s job.

Checkpoints: the JobMaster drives the job's CheckpointCoordinator (:mod:`.checkpointing`):
periodic checkpoints when ``execution.checkpointing.interval`` is set, and checkpoints and
savepoints on request (:meth:`JobMaster.trigger_checkpoint`, :meth:`~JobMaster.trigger_savepoint`,
:meth:`~JobMaster.stop_with_savepoint`); their statistics are part of the published JobDetails.

Every decision is made by :class:`~.job_state_machine.JobStateMachine` (pure). This class
is the thin driver around it, Flink's "main thread" of a JobMaster: one thread takes
events from a queue (task state updates from TaskManagers, checkpoint acknowledgements,
cancel, lost TaskManagers, checkpoint requests), wakes up for its timers (the restart
backoff, the next periodic checkpoint), feeds the state machines and carries out the
actions they return. Gateway calls that arrive from other threads only enqueue, so they
never block a task.
After every event the driver publishes an immutable :class:`~.job_status.JobDetails`.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections import deque
from typing import Any, Callable, Mapping, Optional

from streamkernel.common.completable_future import CompletableFuture
from streamkernel.common.job_status import JobStatus
from streamkernel.common.options import WebOptions
from streamkernel.errors import CheckpointFailedError
from streamkernel.graph.execution_graph import build_execution_graph
from streamkernel.graph.job_graph import JobGraph, build_job_graph
from streamkernel.graph.stream_graph import StreamGraph
from streamkernel.runtime.checkpoint.checkpoint_metrics import CheckpointMetrics
from streamkernel.runtime.checkpoint.storage import CheckpointStorage, resolve_checkpoint_dir, resolve_savepoint_dir
from streamkernel.runtime.highavailability.stores import CheckpointRecoveryFactory
from streamkernel.runtime.jobmaster.checkpoint_services import JobCheckpointServices
from streamkernel.runtime.core.deployment import ExecutionAttemptId, ExecutionState
from streamkernel.runtime.core.engine_log import CONCERNS_USER
from streamkernel.runtime.jobmaster.checkpointing import CheckpointRequest, JobCheckpointing
from streamkernel.runtime.jobmaster.execution_deployer import (
    DEFAULT_SLOT_REQUEST_TIMEOUT_MS,
    ExecutionDeployer,
    slot_request_timeout_ms,
)
from streamkernel.runtime.jobmaster.job_log import log_job_status, log_task_failed
from streamkernel.runtime.jobmaster.job_actions import (
    Action,
    CancelTask,
    DeployTask,
    JobTerminated,
    ReleaseChannels,
    ReleaseResources,
    ReleaseSlots,
    RequestSlots,
    ScheduleRestart,
)
from streamkernel.runtime.jobmaster.job_details_publisher import JobDetailsPublisher
from streamkernel.runtime.jobmaster.job_events import (
    CancelRequested,
    CheckpointAcknowledged,
    CheckpointDeclined,
    CheckpointRequested,
    GlobalFailure,
    JobEvent,
    SuspendRequested,
    TaskManagerLost,
    TaskStateChanged,
)
from streamkernel.runtime.jobmaster.job_state_machine import JobStateMachine
from streamkernel.runtime.jobmaster.job_status import JobDetails, JobResult
from streamkernel.runtime.jobmaster.restart import RestartStrategy, create_restart_strategy
from streamkernel.runtime.jobmaster.scheduler import SubtaskKey, assign_slots
from streamkernel.runtime.jobmaster.state_recovery import StateRecovery
from streamkernel.runtime.resourcemanager.gateway import ResourceManagerGateway
from streamkernel.runtime.resourcemanager.resource_manager import SlotRequestCancelledError
from streamkernel.runtime.taskmanager.gateway import TaskExecutionState

__all__ = ["JobMaster", "slot_request_timeout_ms", "DEFAULT_SLOT_REQUEST_TIMEOUT_MS"]

_LOG = logging.getLogger(__name__)

def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class JobMaster:
    """Runs one job (a JobMasterGateway): deploys it into slots and drives it to a terminal state.

    ``configuration`` is the cluster's configuration with the job's own keys on top.
    ``result_future`` completes with a :class:`~.job_status.JobResult` when the job is
    FINISHED, FAILED or CANCELED (it never completes exceptionally). Raises
    IllegalConfigurationError for invalid checkpoint settings. ``job_graph`` is the job's
    JobGraph if the submitter already built it from ``stream_graph`` (it is not built again).
    ``checkpoint_recovery`` (high availability) makes the job's checkpoint id counter and completed
    checkpoint store (:mod:`.checkpoint_services`); ``recovered``: a new leader recovers the job,
    whose first attempt then starts from the store's latest checkpoint (:mod:`.state_recovery`).
    """

    def __init__(self, job_id: str, stream_graph: StreamGraph, resource_manager: ResourceManagerGateway, *,
                 configuration: Optional[Mapping[str, Any]] = None,
                 restart_strategy: Optional[RestartStrategy] = None,
                 on_terminated: Optional[Callable[["JobMaster", JobResult], None]] = None,
                 job_graph: Optional[JobGraph] = None,
                 checkpoint_recovery: Optional[CheckpointRecoveryFactory] = None,
                 recovered: bool = False) -> None:
        self._job_id = job_id
        self.configuration = {k: str(v) for k, v in (configuration or stream_graph.configuration).items()}
        # Resolved once, here: every TaskManager writes where this JobMaster reads. Both
        # directories are checked at submission (scheme known and installed, not a file).
        self.configuration["execution.checkpointing.dir"] = resolve_checkpoint_dir(self.configuration)
        resolve_savepoint_dir(self.configuration)
        # Built once per submission: by the client when it sized a transient cluster, else here.
        self.job_graph = build_job_graph(stream_graph, self.configuration) if job_graph is None else job_graph
        # The graph is placed on one logical TaskManager with exactly the slots it needs;
        # assign_slots maps those logical slots onto the real ones the ResourceManager gives.
        self.execution_graph = build_execution_graph(self.job_graph, 1, None, slot_sharing=True)
        self.job_name = stream_graph.job_name
        self._resource_manager = resource_manager
        self._machine = JobStateMachine(job_id, self.job_name, self.job_graph.vertices,
                                        self.execution_graph.slots_needed,
                                        restart_strategy or create_restart_strategy(self.configuration), _now_ms(),
                                        WebOptions.EXCEPTION_HISTORY_SIZE.get(self.configuration))
        services = None
        if checkpoint_recovery is not None:
            num_retained = CheckpointStorage.from_configuration(job_id, self.configuration).num_retained
            services = JobCheckpointServices.create(checkpoint_recovery, job_id, num_retained)
        self._checkpointing = JobCheckpointing(job_id, self.job_graph, self.configuration, locate=self._locate,
                                               fail_job=lambda error: self._events.put(GlobalFailure(error)),
                                               stop_job=self._stop_after_savepoint, services=services)
        recovered_from = services.latest() if services is not None and recovered else ()
        self._deployer = ExecutionDeployer(
            job_id, self.job_name, self.job_graph, self.configuration, resource_manager,
            recovery=StateRecovery(self._checkpointing.storage, self.configuration, self.job_graph, recovered_from),
            checkpointing=self._checkpointing, report=lambda update: self._events.put(TaskStateChanged(update)),
            report_warning=self._machine.report_warning, now_ms=_now_ms)
        self._published = JobDetailsPublisher(self.job_name, self._details_now())
        self._events: "queue.SimpleQueue[JobEvent]" = queue.SimpleQueue()
        # Guards _closed: checkpoint requests are queued only while the event loop still runs.
        self._requests_lock = threading.Lock()
        self._closed = False
        self._restart_at: Optional[float] = None
        self._logged_status = self._machine.status  # the job status the log last told (job_log.py)
        self._on_terminated = on_terminated
        self.result_future: CompletableFuture[JobResult] = CompletableFuture()
        self._thread = threading.Thread(target=self._run, name=f"JobMaster {self.job_name!r} {job_id[:8]}",
                                        daemon=True)

    # ------------------------------------------------------------- JobMasterGateway
    @property
    def job_id(self) -> str:
        """The job's id (32 hex digits)."""
        return self._job_id

    def update_task_execution_state(self, update: TaskExecutionState) -> None:
        """A subtask changed state (from its thread): queued for the JobMaster's thread."""
        self._events.put(TaskStateChanged(update))

    def acknowledge_checkpoint(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, state_handle: Any,
                               checkpoint_metrics: Optional[CheckpointMetrics] = None) -> None:
        """A subtask stored its checkpoint state (from its thread): queued for the JobMaster's thread."""
        self._events.put(CheckpointAcknowledged(attempt_id, checkpoint_id, state_handle, checkpoint_metrics))

    def decline_checkpoint(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, reason: str) -> None:
        """A subtask could not take a checkpoint (from its thread): queued."""
        self._events.put(CheckpointDeclined(attempt_id, checkpoint_id, reason))

    def disconnect_taskmanager(self, taskmanager_id: str, cause: BaseException) -> None:
        """A TaskManager is gone: its subtasks are lost (the job fails, or restarts)."""
        self._events.put(TaskManagerLost(taskmanager_id, cause))

    def cancel(self) -> None:
        """Cancel the job (returns at once; ``result_future`` tells when it is CANCELED)."""
        if self.result_future.done():
            return
        self._events.put(CancelRequested())
        self._resource_manager.cancel_slot_request(self._job_id)  # wakes a pending slot wait

    def suspend(self) -> None:
        """This JobManager no longer leads: end the job SUSPENDED at once (its tasks are told to
        cancel; its checkpoints and HA data stay for the next leader). Returns at once."""
        if self.result_future.done():
            return
        self._events.put(SuspendRequested())
        self._resource_manager.cancel_slot_request(self._job_id)  # wakes a pending slot wait

    def cleanup_checkpoints(self, status: JobStatus) -> None:
        """Apply the job's checkpoint retention and remove its HA checkpoint data (a job of a highly
        available cluster, once its result is recorded: see the Dispatcher)."""
        self._checkpointing.cleanup(status)

    def request_job_details(self) -> JobDetails:
        """The latest published status snapshot (safe from any thread)."""
        return self._published.details

    # ------------------------------------------------------- checkpoints on request
    def trigger_checkpoint(self) -> CompletableFuture[str]:
        """Take a checkpoint now (whatever the interval); the future gets its directory, or
        fails with CheckpointFailedError saying why (e.g. the job is not running)."""
        return self._request(CheckpointRequest(is_savepoint=False))

    def trigger_savepoint(self, target_dir: Optional[str] = None) -> CompletableFuture[str]:
        """Take a savepoint into ``target_dir`` (default: ``execution.checkpointing.savepoint-dir``,
        else ``./savepoints``); the future gets the savepoint's directory."""
        return self._request(CheckpointRequest(is_savepoint=True, target_dir=target_dir))

    def stop_with_savepoint(self, target_dir: Optional[str] = None, drain: bool = False) -> CompletableFuture[str]:
        """Stop the job with a synchronous savepoint (Flink's stop-with-savepoint); the future
        gets the savepoint's directory once the job has ended FINISHED.

        Each source stops reading at the savepoint's barrier; each task, once it took its
        snapshot, waits for the savepoint to complete (two-phase-commit sinks commit it), then
        finishes without ending its input: windows and timers stay in the savepoint, and no
        record read after the barrier reaches a sink. ``drain`` (Flink's ``--drain``): the
        sources emit MAX_WATERMARK before the barrier (event-time windows and timers fire) and
        every operator ends its input before its snapshot. If the savepoint fails, the job
        keeps running (after a drain, which cannot be undone, it fails over instead) and the
        future fails saying why.
        """
        return self._request(CheckpointRequest(is_savepoint=True, target_dir=target_dir, stop=True, drain=drain))

    def _request(self, request: CheckpointRequest) -> CompletableFuture[str]:
        with self._requests_lock:
            if not self._closed:
                self._events.put(CheckpointRequested(request))
                return request.future
        status = self._published.details.status.name
        request.future.complete_exceptionally(CheckpointFailedError(
            f"cannot take a {request.kind} of job {self.job_name!r}: the job is {status}"))
        return request.future

    def _stop_after_savepoint(self, request: CheckpointRequest, path: str) -> None:
        """The savepoint of a stop-with-savepoint completed: its tasks finish (they were told
        with the completion notification); answer once the job has ended."""
        self.result_future.add_done_callback(lambda _: request.future.complete(path))

    def add_status_listener(self, listener: Callable[[JobDetails], None]) -> None:
        """Call ``listener(details)`` now and after every change of the job's status (from the
        JobMaster's thread: quick, never blocking; it may see the same status twice)."""
        self._published.add_listener(listener)

    def _details_now(self) -> JobDetails:
        """What the JobMaster publishes: the state machine's picture, the checkpoint
        statistics and the (immutable) JobGraph that readers resolve operators against."""
        return dataclasses.replace(self._machine.details(_now_ms()), checkpoints=self._checkpointing.stats(),
                                   job_graph=self.job_graph)

    def _publish(self) -> None:
        self._published.publish(self._details_now())

    # --------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start the JobMaster's thread: request slots, deploy, run."""
        self._thread.start()

    def join(self, timeout: Optional[float] = None) -> None:
        """Wait for the JobMaster's thread to end (it ends with the job)."""
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def is_alive(self) -> bool:
        """True while the job is not terminal (the thread runs)."""
        return self._thread.is_alive()

    # ------------------------------------------------------------------------ driver
    def _run(self) -> None:
        try:
            self._handle(self._machine.start(_now_ms()))
            while not self._machine.is_terminal:
                try:
                    event = self._events.get(timeout=self._timeout())
                except queue.Empty:
                    event = None
                if event is not None:
                    self._dispatch(event)
                self._fire_timers()
        except BaseException as exc:  # noqa: BLE001 - a driver bug must still end the job
            _LOG.exception("JobMaster of %r crashed", self.job_name)
            self.result_future.complete(JobResult(self._job_id, self.job_name, JobStatus.FAILED,
                                                  0, {}, exc, None))
            self._deployer.release_resources()
        finally:
            self._close_requests()

    def _timeout(self) -> Optional[float]:
        """How long the event loop may wait: until the restart backoff or the next checkpoint timer."""
        deadlines = []
        if self._restart_at is not None:
            deadlines.append(self._restart_at - time.monotonic())
        wakeup = self._checkpointing.next_wakeup_ms()
        if wakeup is not None:
            deadlines.append((wakeup - _now_ms()) / 1000)
        return max(0.001, min(deadlines)) if deadlines else None

    def _fire_timers(self) -> None:
        if self._machine.is_terminal:
            return
        if self._restart_at is not None and time.monotonic() >= self._restart_at:
            self._restart_at = None
            self._handle(self._machine.restart_due(_now_ms()))
        wakeup = self._checkpointing.next_wakeup_ms()
        if wakeup is not None and _now_ms() >= wakeup:
            self._checkpointing.tick(_now_ms())
            self._publish()

    def _close_requests(self) -> None:
        """The event loop ended: checkpoint requests still queued fail (the job is over)."""
        with self._requests_lock:
            self._closed = True
        status = self._published.details.status.name
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return
            if isinstance(event, CheckpointRequested):
                event.request.future.complete_exceptionally(CheckpointFailedError(
                    f"cannot take a {event.request.kind} of job {self.job_name!r}: the job is {status}"))
            elif isinstance(event, CheckpointAcknowledged):
                self._checkpointing.storage.discard_state(event.state_handle)

    def _dispatch(self, event: JobEvent) -> None:
        now = _now_ms()
        machine = self._machine
        if isinstance(event, TaskStateChanged):
            update = event.update
            if update.state is ExecutionState.FAILED:
                self._log_task_failure(update)
            self._handle(machine.task_state_changed(update.attempt_id, update.state, update.error, now,
                                                    update.metrics))
        elif isinstance(event, (CheckpointAcknowledged, CheckpointDeclined)):
            attempt_id = event.attempt_id
            execution = machine.executions.get((attempt_id.vertex_id, attempt_id.subtask_index))
            current = execution is not None and execution.attempt_number == attempt_id.attempt_number
            if isinstance(event, CheckpointAcknowledged):
                self._checkpointing.acknowledge(attempt_id, event.checkpoint_id, event.state_handle, current, now,
                                                event.checkpoint_metrics)
            else:
                self._checkpointing.decline(attempt_id, event.checkpoint_id, event.reason, current, now)
            self._publish()
        elif isinstance(event, CheckpointRequested):
            self._checkpointing.request(event.request, now)
            self._publish()
        elif isinstance(event, GlobalFailure):
            self._handle(machine.fail_globally(event.error, now))
        elif isinstance(event, CancelRequested):
            self._handle(machine.cancel(now))
        elif isinstance(event, SuspendRequested):
            self._handle(machine.suspend(now))
        elif isinstance(event, TaskManagerLost):
            self._handle(machine.taskmanager_lost(event.taskmanager_id, event.cause, now))

    def _log_task_failure(self, update: TaskExecutionState) -> None:
        """A current attempt's failure goes to the log, and to the user's logger (job_log.py)."""
        attempt_id = update.attempt_id
        execution = self._machine.executions.get((attempt_id.vertex_id, attempt_id.subtask_index))
        if execution is not None and execution.attempt_number == attempt_id.attempt_number \
                and not execution.state.is_terminal and not execution.cancel_requested:
            log_task_failed(self.job_name, execution.name, execution.attempt_number, execution.state, update.error)

    def _log_status(self) -> None:
        status = self._machine.status
        if status is not self._logged_status:
            log_job_status(self.job_name, self._job_id, self._logged_status, status, self._machine.failure_cause)
            self._logged_status = status

    def _locate(self, key: SubtaskKey) -> Optional[tuple[Any, ExecutionAttemptId]]:
        """The TaskExecutor and attempt id of a deployed subtask (for checkpoint messages)."""
        execution = self._machine.executions.get(key)
        if execution is None or execution.slot is None or execution.state.is_terminal:
            return None
        try:
            gateway = self._resource_manager.task_executor_gateway(execution.slot.taskmanager_id)
        except Exception:  # noqa: BLE001 - the TaskManager is gone: its loss is being handled
            return None
        return gateway, self._machine.attempt_id(key)

    def _handle(self, actions: list[Action]) -> None:
        """Carry out actions (they may produce more), then publish the new status."""
        pending = deque(actions)
        while pending:
            action = pending.popleft()
            if isinstance(action, RequestSlots):
                pending.extend(self._request_slots(action.count))
            elif isinstance(action, DeployTask):
                if action.attempt_number != self._deployer.prepared_attempt:
                    try:
                        self._deployer.prepare_attempt(action.attempt_number)
                    except Exception as error:  # noqa: BLE001 - a corrupt savepoint, state without uid ...
                        _LOG.error("job %r cannot restore its state: %s", self.job_name, error, extra=CONCERNS_USER)
                        pending = deque(a for a in pending if not isinstance(a, DeployTask))
                        pending.extend(self._machine.restore_failed(error, _now_ms(),
                                                                    restartable=action.attempt_number > 0))
                        continue
                self._deployer.deploy(action, self)
            elif isinstance(action, CancelTask):
                self._deployer.cancel(action)
            elif isinstance(action, ReleaseChannels):
                self._deployer.release_channels()
            elif isinstance(action, ReleaseSlots):
                self._resource_manager.release_slots(self._job_id)
            elif isinstance(action, ReleaseResources):
                self._deployer.release_resources()
            elif isinstance(action, ScheduleRestart):
                # No sleeping: the event loop waits for this deadline or the next event.
                self._restart_at = time.monotonic() + action.delay_ms / 1000
                _LOG.info("job %r restarts in %d ms (%s)", self.job_name, action.delay_ms,
                          self._machine.restart_strategy.describe())
            elif isinstance(action, JobTerminated):
                self._checkpointing.job_terminated(action.result.status, _now_ms())
                self._publish()
                self._log_status()  # before the result: whoever waits for it sees the log line first
                if self._on_terminated is not None:
                    try:
                        self._on_terminated(self, action.result)
                    except Exception:  # noqa: BLE001
                        _LOG.exception("on_terminated callback of job %r failed", self.job_name)
                self.result_future.complete(action.result)
        machine = self._machine
        self._checkpointing.on_job_progress(machine.status, machine.attempt,
                                            {k: e.state for k, e in machine.executions.items()}, _now_ms())
        self._publish()
        self._log_status()

    def _request_slots(self, count: int) -> list[Action]:
        """Blocks this thread until the slots come (``cancel`` interrupts the wait)."""
        try:
            slots = self._deployer.request_slots(count, self)
        except SlotRequestCancelledError:
            return []  # the queued cancel event follows and ends the job
        except Exception as error:  # noqa: BLE001 - NotEnoughSlotsError, or the cluster stops
            return self._machine.slot_request_failed(error, _now_ms())
        placement = assign_slots(self.execution_graph, slots)
        self._deployer.set_placement(placement)
        return self._machine.slots_allocated(placement, _now_ms())

    def restored_state_for(self, attempt: int) -> Optional[Mapping[SubtaskKey, Mapping[str, Any]]]:
        """The state attempt ``attempt`` of the job starts from: subtask -> its restored state
        (None: from scratch). Called once per attempt, before its subtasks are deployed, in
        the JobMaster's thread; raises when the state cannot be restored (the job fails).
        The rules: :meth:`.ExecutionDeployer.restored_state_for`.
        """
        return self._deployer.restored_state_for(attempt)

    def __repr__(self) -> str:
        return f"JobMaster({self.job_name!r}, {self._job_id}, {self._published.details.status.name})"
