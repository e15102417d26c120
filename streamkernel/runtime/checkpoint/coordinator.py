"""The CheckpointCoordinator's decisions, as a pure state machine: events in, actions out.

Flink's ``CheckpointCoordinator`` lives in the JobMaster: it triggers checkpoints at the
sources, collects the acknowledgements of every subtask, completes a checkpoint when all
have acknowledged, aborts it when one declines or it times out, and fails the job when
too many checkpoints fail in a row. Here it is pure: no threads, no I/O, time passed in.
Each event method returns the actions the driver (the JobMaster) carries out::

    start(now, plan)                    the job is RUNNING: periodic checkpoints begin
    tick(now)                           time passed: expire timed-out checkpoints, trigger one when due
    trigger(now, is_savepoint, dir)     a person asked for a checkpoint or savepoint (``synchronous``:
                                        stop-with-savepoint, ``drain``: with MAX_WATERMARK first)
    acknowledge(id, subtask, handle, now) / decline(id, subtask, reason, now)
    finalized(id, now, path) / finalize_failed(id, reason, now)   the driver wrote (or failed to write) the metadata
    tasks_finished(subtasks, now)       bounded subtasks ended
    stop(now, reason)                   the job stopped running (failover, cancel, end)

    -> TriggerCheckpoint   tell the source subtasks to take checkpoint ``id`` (barriers follow)
    -> CompleteCheckpoint  every subtask acknowledged: write the metadata (storage.finalize /
                           storage.write_savepoint), then call ``finalized`` (or ``finalize_failed``)
    -> NotifyCheckpointComplete  tell the subtasks (two-phase-commit sinks commit now)
    -> AbortCheckpoint     the checkpoint failed: discard its files, tell the subtasks
    -> DiscardState        a late acknowledgement of an aborted checkpoint: delete its file
    -> TriggerRejected     a requested checkpoint could not even start (the job is not running)
    -> FailJob             more consecutive checkpoint failures than tolerated

The rules (Flink's):

* Periodic checkpoints start one interval after ``start`` and then every interval, but
  never sooner than ``min pause`` after the last *completed* checkpoint, and never while
  ``max concurrent`` checkpoints are pending (a due checkpoint then waits; a min pause
  above zero implies at most one concurrent checkpoint, as in Flink).
* Savepoints and checkpoints asked for by hand are *forced*: they ignore the interval, the
  min pause and the concurrency limit.
* A checkpoint is aborted by the first decline or by its timeout. Expired and declined
  checkpoints (and failed metadata writes) count as failures; the job fails when the
  number of *consecutive* failures exceeds the tolerable number (0: the first failure);
  a completed checkpoint resets the count. Savepoint failures, checkpoints subsumed by a
  newer one, declines caused by a newer barrier overtaking an older one, and checkpoints
  aborted because the job stopped or a task finished are not counted.
* A stop-with-savepoint's savepoint is *synchronous* (Flink's SUSPEND/TERMINATE savepoint
  types): its tasks stop at its barrier and wait for its outcome. While it is pending, and
  after it completed, nothing else is triggered (Flink stops the checkpoint scheduler); when
  it fails the job goes on (its tasks are told with :class:`AbortCheckpoint`) and so do
  periodic checkpoints.
* When a checkpoint (not a savepoint) completes, older pending checkpoints (not
  savepoints) are subsumed. Pending savepoints count towards the concurrency limit.
* Acknowledgements and declines of checkpoints that are no longer pending are ignored
  (an acknowledgement of an aborted one yields :class:`DiscardState`).

Deviation from Flink: checkpoints are taken only while every subtask of the plan runs
(Flink before FLIP-147). Once a subtask has finished, pending checkpoints that still wait
for it are aborted and no new ones are triggered, so a bounded job's last moments are not
checkpointed; sinks commit what remains when their input ends. Flink's first periodic
checkpoint is delayed randomly within the interval; here by exactly one interval.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from streamkernel.runtime.checkpoint.actions import (
    AbortCheckpoint,
    CheckpointAction,
    CompleteCheckpoint,
    DiscardState,
    FailJob,
    NotifyCheckpointComplete,
    SubtaskKey,
    TriggerCheckpoint,
    TriggerRejected,
)
from streamkernel.runtime.checkpoint.channel_state import channel_state_stats
from streamkernel.runtime.checkpoint.checkpoint_metrics import CheckpointMetrics
from streamkernel.runtime.checkpoint.history import CheckpointStatsHistory
from streamkernel.runtime.checkpoint.settings import CheckpointCoordinatorConfiguration, CheckpointPlan

__all__ = [
    "SubtaskKey",
    "CheckpointCoordinatorConfiguration",
    "CheckpointPlan",
    "PendingCheckpoint",
    "TriggerCheckpoint",
    "CompleteCheckpoint",
    "NotifyCheckpointComplete",
    "AbortCheckpoint",
    "DiscardState",
    "TriggerRejected",
    "FailJob",
    "CheckpointAction",
    "CheckpointCoordinator",
]

_REMEMBERED_ABORTS = 1024  # aborted ids remembered to discard late acknowledgements


@dataclass
class PendingCheckpoint:
    """A triggered checkpoint waiting for acknowledgements (Flink's ``PendingCheckpoint``).

    ``finalizing`` is True once every subtask acknowledged and the driver writes the metadata.
    """

    checkpoint_id: int
    timestamp: int
    is_savepoint: bool
    target_dir: Optional[str]
    forced: bool
    epoch: int
    not_yet_acknowledged: set[SubtaskKey]
    acknowledged: dict[SubtaskKey, Any] = field(default_factory=dict)
    finalizing: bool = False
    #: the savepoint of a stop-with-savepoint (``drain``: with MAX_WATERMARK first)
    synchronous: bool = False
    drain: bool = False

    def is_fully_acknowledged(self) -> bool:
        """Every expected subtask has acknowledged."""
        return not self.not_yet_acknowledged


class CheckpointIdUnavailable(Exception):
    """The id source could not hand out an id (the checkpoint does not start)."""


class CheckpointCoordinator:
    """Coordinates the checkpoints of one job (see the module docstring for the rules).

    ``first_checkpoint_id`` lets ids continue after a restore (Flink restarts the counter
    at the restored checkpoint's id + 1), so no id is ever reused in the job's directory.
    ``history`` receives the statistics (a new one sized by the configuration by default).
    ``id_source`` hands out the ids instead (Flink's ``CheckpointIDCounter.getAndIncrement``: with
    high availability, a counter in ZooKeeper that no two leaders share); when it raises, the
    checkpoint does not start (a person's request is rejected with the reason, a periodic one
    is skipped until the next interval).

    >>> coordinator = CheckpointCoordinator(CheckpointCoordinatorConfiguration(interval_ms=1000))
    >>> coordinator.start(0, CheckpointPlan(((1, 0),), ((1, 0), (2, 0))))
    []
    >>> [(a.checkpoint_id, a.targets, a.synchronous) for a in coordinator.tick(1000)]
    [(1, ((1, 0),), False)]
    """

    def __init__(self, config: CheckpointCoordinatorConfiguration, *, first_checkpoint_id: int = 1,
                 history: Optional[CheckpointStatsHistory] = None,
                 id_source: Optional[Callable[[], int]] = None) -> None:
        if first_checkpoint_id < 1:
            raise ValueError(f"CheckpointCoordinator: first_checkpoint_id must be >= 1, got {first_checkpoint_id}")
        self.config = config
        self.history = history if history is not None else CheckpointStatsHistory(config.history_size)
        self._next_id = first_checkpoint_id
        self._id_source = id_source
        self._pending: dict[int, PendingCheckpoint] = {}
        self._plan: Optional[CheckpointPlan] = None
        self._running = False
        self._epoch = 0
        self._finished: set[SubtaskKey] = set()
        self._next_periodic: Optional[int] = None
        self._last_completion: Optional[int] = None
        self._latest_completed_id = 0
        self._consecutive_failures = 0
        self._aborted: deque[int] = deque(maxlen=_REMEMBERED_ABORTS)
        #: the stop-with-savepoint pending or completed in this epoch (nothing else triggers then)
        self._stopping: Optional[int] = None

    # ------------------------------------------------------------------ reading
    @property
    def pending(self) -> Mapping[int, PendingCheckpoint]:
        """The pending checkpoints by id (read-only view; do not modify the entries)."""
        return dict(self._pending)

    @property
    def is_running(self) -> bool:
        """Whether the job is running (between ``start`` and ``stop``)."""
        return self._running

    @property
    def latest_completed_id(self) -> int:
        """The id of the latest completed checkpoint or savepoint (0: none yet)."""
        return self._latest_completed_id

    @property
    def consecutive_failures(self) -> int:
        """Checkpoint failures since the last completed checkpoint (counted ones only)."""
        return self._consecutive_failures

    @property
    def next_checkpoint_id(self) -> int:
        """The id the next triggered checkpoint will get."""
        return self._next_id

    def next_wakeup_ms(self) -> Optional[int]:
        """When ``tick`` has something to do next (a periodic trigger or a timeout), or None."""
        times = [p.timestamp + self.config.timeout_ms for p in self._pending.values() if not p.finalizing]
        due = self._periodic_due()
        if due is not None and self._num_pending() < self.config.effective_max_concurrent:
            times.append(due)
        return min(times, default=None)

    # ------------------------------------------------------------------ lifecycle events
    def start(self, now_ms: int, plan: CheckpointPlan) -> list[CheckpointAction]:
        """The job (attempt) is RUNNING with these subtasks: periodic checkpoints begin."""
        self._running = True
        self._epoch += 1
        self._plan = plan
        self._finished = set()
        self._stopping = None
        self._next_periodic = now_ms + self.config.interval_ms if self.config.is_periodic else None
        return []

    def stop(self, now_ms: int, reason: str = "the job stopped running") -> list[CheckpointAction]:
        """The job stopped running (failover, cancel, suspension or end): abort what is pending.

        Checkpoints whose metadata is being written (all acknowledged) are left to finish.
        These aborts are not checkpoint failures.
        """
        self._running = False
        self._next_periodic = None
        actions: list[CheckpointAction] = []
        for pending in sorted(self._pending.values(), key=lambda p: p.checkpoint_id):
            if not pending.finalizing:
                actions += self._abort(pending, f"checkpoint coordinator stopped: {reason}", now_ms, counted=False)
        return actions

    def tasks_finished(self, subtasks: Iterable[SubtaskKey], now_ms: int) -> list[CheckpointAction]:
        """Bounded subtasks finished: pending checkpoints still waiting for them are aborted
        (not counted as failures) and no new checkpoint is triggered (module docstring)."""
        finished = set(subtasks)
        self._finished |= finished
        actions: list[CheckpointAction] = []
        for pending in sorted(self._pending.values(), key=lambda p: p.checkpoint_id):
            missing = sorted(pending.not_yet_acknowledged & finished)
            if missing and not pending.finalizing:
                actions += self._abort(pending, f"subtask {_name(missing[0])} finished before acknowledging "
                                                "(checkpoints stop once a task has finished)", now_ms, counted=False)
        return actions

    # ------------------------------------------------------------------ triggering
    def tick(self, now_ms: int) -> list[CheckpointAction]:
        """Time passed: abort expired checkpoints, then trigger a periodic one if it is due."""
        actions = self._expire(now_ms)
        due = self._periodic_due()
        if due is None or now_ms < due:
            return actions
        if self._not_running_reason() is not None:
            self._next_periodic = now_ms + self.config.interval_ms  # skipped (Flink: not all tasks running)
            return actions
        if self._num_pending() >= self.config.effective_max_concurrent:
            return actions  # stays due: triggers as soon as a pending one ends
        self._next_periodic = now_ms + self.config.interval_ms
        try:
            return actions + self._start_checkpoint(now_ms, is_savepoint=False, target_dir=None, forced=False)
        except CheckpointIdUnavailable:
            return actions  # skipped; the next interval tries again

    def trigger(self, now_ms: int, is_savepoint: bool = False, target_dir: Optional[str] = None,
                synchronous: bool = False, drain: bool = False) -> list[CheckpointAction]:
        """A checkpoint or savepoint asked for by a person (``%flink checkpoint``/``savepoint``):
        triggered now, whatever the interval, min pause and concurrency limit say.
        ``synchronous`` (a savepoint only): stop-with-savepoint, ``drain`` with MAX_WATERMARK first."""
        reason = self._not_running_reason()
        if reason is not None:
            kind = "savepoint" if is_savepoint else "checkpoint"
            return [TriggerRejected(f"cannot take a {kind}: {reason}", is_savepoint, target_dir)]
        synchronous = synchronous and is_savepoint
        try:
            actions = self._start_checkpoint(now_ms, is_savepoint=is_savepoint, target_dir=target_dir, forced=True,
                                             synchronous=synchronous, drain=drain and synchronous)
        except CheckpointIdUnavailable as error:
            kind = "savepoint" if is_savepoint else "checkpoint"
            return [TriggerRejected(f"cannot take a {kind}: {error}", is_savepoint, target_dir)]
        if synchronous:
            self._stopping = self._next_id - 1
        return actions

    def _start_checkpoint(self, now_ms: int, is_savepoint: bool, target_dir: Optional[str],
                          forced: bool, synchronous: bool = False, drain: bool = False) -> list[CheckpointAction]:
        assert self._plan is not None
        checkpoint_id = self._allocate_id()
        wait_for = set(self._plan.tasks_to_wait_for)
        self._pending[checkpoint_id] = PendingCheckpoint(checkpoint_id, now_ms, is_savepoint, target_dir, forced,
                                                         self._epoch, wait_for, synchronous=synchronous, drain=drain)
        self.history.report_pending(checkpoint_id, now_ms, is_savepoint, len(wait_for))
        return [TriggerCheckpoint(checkpoint_id, now_ms, is_savepoint, tuple(self._plan.tasks_to_trigger), target_dir,
                                  synchronous, drain)]

    def _allocate_id(self) -> int:
        if self._id_source is None:
            checkpoint_id = self._next_id
        else:
            try:
                checkpoint_id = int(self._id_source())
            except Exception as error:  # noqa: BLE001 - the counter's store: ZooKeeper gone, leadership lost
                raise CheckpointIdUnavailable(f"no checkpoint id could be taken ({type(error).__name__}: "
                                              f"{error})") from error
        self._next_id = max(self._next_id, checkpoint_id) + 1
        return checkpoint_id

    def _periodic_due(self) -> Optional[int]:
        if not self._running or self._next_periodic is None or self._stopping is not None:
            return None
        if self._last_completion is None:
            return self._next_periodic
        return max(self._next_periodic, self._last_completion + self.config.min_pause_ms)

    def _not_running_reason(self) -> Optional[str]:
        if not self._running or self._plan is None:
            return "the job is not running"
        if self._stopping is not None:
            return f"the job is stopping with savepoint {self._stopping}"
        if self._finished:
            return (f"not all tasks are running (subtask {_name(min(self._finished))} finished); "
                    "checkpoints stop once a task has finished")
        return None

    def _num_pending(self) -> int:
        return len(self._pending)

    def _expire(self, now_ms: int) -> list[CheckpointAction]:
        actions: list[CheckpointAction] = []
        for pending in sorted(self._pending.values(), key=lambda p: p.checkpoint_id):
            if not pending.finalizing and now_ms >= pending.timestamp + self.config.timeout_ms:
                actions += self._abort(pending, f"checkpoint expired before completing (timeout "
                                                f"{self.config.timeout_ms} ms, {len(pending.not_yet_acknowledged)} "
                                                "subtasks had not acknowledged)", now_ms, counted=True)
        return actions

    # ------------------------------------------------------------------ acknowledgements
    def acknowledge(self, checkpoint_id: int, subtask: SubtaskKey, state_handle: Any, now_ms: int,
                    metrics: Optional[CheckpointMetrics] = None) -> list[CheckpointAction]:
        """``subtask`` stored its state for ``checkpoint_id`` (having measured ``metrics``); when it
        is the last one the checkpoint is complete and :class:`CompleteCheckpoint` asks for its metadata."""
        subtask = (subtask[0], subtask[1])
        pending = self._pending.get(checkpoint_id)
        if pending is None:
            if checkpoint_id in self._aborted and state_handle is not None:
                return [DiscardState(checkpoint_id, subtask, state_handle)]
            return []  # late, duplicate or unknown: ignored, as Flink does
        if subtask not in pending.not_yet_acknowledged:
            return []  # a duplicate, or a subtask this checkpoint does not wait for
        pending.not_yet_acknowledged.discard(subtask)
        pending.acknowledged[subtask] = state_handle
        size = getattr(state_handle, "size", None)
        unaligned, persisted = channel_state_stats(state_handle)
        self.history.report_acknowledged(checkpoint_id, subtask, now_ms, size if isinstance(size, int) else None,
                                         unaligned=unaligned, persisted_data=persisted, metrics=metrics)
        if not pending.is_fully_acknowledged():
            return []
        pending.finalizing = True
        return [CompleteCheckpoint(checkpoint_id, pending.timestamp, pending.is_savepoint, dict(pending.acknowledged),
                                   pending.target_dir)]

    def decline(self, checkpoint_id: int, subtask: SubtaskKey, reason: str, now_ms: int) -> list[CheckpointAction]:
        """``subtask`` could not take ``checkpoint_id``: the checkpoint is aborted.

        A decline while a newer checkpoint is pending is the newer barrier overtaking the
        older one (Flink's CHECKPOINT_DECLINED_SUBSUMED) and does not count as a failure.
        """
        pending = self._pending.get(checkpoint_id)
        if pending is None or pending.finalizing:
            return []
        subsumed = any(other > checkpoint_id for other in self._pending)
        return self._abort(pending, f"declined by subtask {_name(subtask)}: {reason}", now_ms, counted=not subsumed)

    # ------------------------------------------------------------------ completion
    def finalized(self, checkpoint_id: int, now_ms: int, external_path: Optional[str] = None,
                  metadata_size: int = 0) -> list[CheckpointAction]:
        """The driver wrote the metadata of ``checkpoint_id`` (``metadata_size`` bytes): it is complete.

        Resets the failure count, subsumes older pending checkpoints, and (if the job
        attempt that took it still runs) notifies the subtasks.
        """
        pending = self._pending.get(checkpoint_id)
        if pending is None or not pending.finalizing:
            return []
        del self._pending[checkpoint_id]
        self.history.report_completed(checkpoint_id, now_ms, external_path, metadata_size)
        self._latest_completed_id = max(self._latest_completed_id, checkpoint_id)
        self._last_completion = now_ms
        self._consecutive_failures = 0
        actions: list[CheckpointAction] = []
        for older in sorted(self._pending.values(), key=lambda p: p.checkpoint_id):
            if pending.is_savepoint:
                break  # a savepoint subsumes nothing (Flink keeps it out of the checkpoint store)
            if older.checkpoint_id < checkpoint_id and not older.is_savepoint and not older.finalizing:
                actions += self._abort(older, f"subsumed by the completed checkpoint {checkpoint_id}", now_ms,
                                       counted=False)
        if self._running and pending.epoch == self._epoch and self._plan is not None:
            actions.append(NotifyCheckpointComplete(checkpoint_id, tuple(self._plan.tasks_to_wait_for)))
        return actions

    def finalize_failed(self, checkpoint_id: int, reason: str, now_ms: int) -> list[CheckpointAction]:
        """Writing the metadata of ``checkpoint_id`` failed (disk full ...): the checkpoint fails."""
        pending = self._pending.get(checkpoint_id)
        if pending is None:
            return []
        return self._abort(pending, f"could not write the checkpoint metadata: {reason}", now_ms, counted=True)

    def restored(self, checkpoint_id: int, now_ms: int, is_savepoint: bool = False,
                 external_path: Optional[str] = None) -> list[CheckpointAction]:
        """The job (re)starts from this checkpoint or savepoint: recorded in the statistics;
        later ids continue after it."""
        self._next_id = max(self._next_id, checkpoint_id + 1)
        self.history.report_restored(checkpoint_id, now_ms, is_savepoint, external_path)
        return []

    # ------------------------------------------------------------------ failures
    def _abort(self, pending: PendingCheckpoint, reason: str, now_ms: int, counted: bool) -> list[CheckpointAction]:
        del self._pending[pending.checkpoint_id]
        self._aborted.append(pending.checkpoint_id)
        self.history.report_failed(pending.checkpoint_id, now_ms, reason)
        targets = tuple(self._plan.tasks_to_wait_for) if self._plan is not None else ()
        actions: list[CheckpointAction] = [AbortCheckpoint(pending.checkpoint_id, reason, pending.is_savepoint,
                                                           targets, pending.synchronous)]
        if pending.synchronous and self._stopping == pending.checkpoint_id:
            self._stopping = None  # the stop failed: the job goes on, and so do periodic checkpoints
        # Flink's CheckpointFailureManager: savepoints and checkpoints older than the latest
        # completed one never count.
        if counted and not pending.is_savepoint and pending.checkpoint_id > self._latest_completed_id:
            self._consecutive_failures += 1
            if self._consecutive_failures > self.config.tolerable_failures:
                self._consecutive_failures = 0
                actions.append(FailJob(
                    f"exceeded checkpoint tolerable failure threshold ({self.config.tolerable_failures} "
                    f"tolerated): checkpoint {pending.checkpoint_id} failed: {reason}; set "
                    "execution.checkpointing.tolerable-failed-checkpoints to tolerate more"))
        return actions

    def __repr__(self) -> str:
        state = "running" if self._running else "stopped"
        return (f"CheckpointCoordinator({state}, next id {self._next_id}, pending {sorted(self._pending)}, "
                f"latest completed {self._latest_completed_id})")


def _name(subtask: Sequence[int]) -> str:
    return f"{subtask[1]} of vertex {subtask[0]}"
