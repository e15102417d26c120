"""Which checkpoint each attempt of a job starts from, and the state every subtask gets from it.

Flink's JobMaster restores a job from one of two places:

* the **first attempt** (attempt 0) from ``execution.state-recovery.path`` (PyFlink 2.x;
  1.x ``execution.savepoint.path``) when it is set: a savepoint, or a retained checkpoint
  of another job. A missing or corrupt one fails the job at once, saying which file is bad:
  a job silently started from scratch instead would be worse;
* every **restart** (attempt > 0) from the latest completed checkpoint of this job in its
  checkpoint storage. Corrupt or torn checkpoints are skipped for the previous complete one
  (:attr:`RecoveryChoice.skipped` says which and why, for the user: only checkpoints the
  job completed count, not the folders of checkpoints aborted before their metadata was
  written, e.g. by a task of a killed TaskManager that wrote late). The checkpoint the first
  attempt started from is a candidate too (Flink adds it to its checkpoint store) while the
  job completed fewer checkpoints than it retains. Savepoints taken while the job ran are
  never used for failover (Flink 1.15+ keeps them out of the checkpoint store).

  A job a new leader **recovers** (high availability: the previous JobManager is gone) starts
  its first attempt as a restart: from the newest checkpoint the completed checkpoint store
  points to that loads (newer ones that do not load are skipped, saying why), else from the
  configured recovery path as a new job would.

  Only a job that never completed a checkpoint (and did not start from one) restarts from
  scratch, its sources reading from the beginning. Once a checkpoint completed, a restart
  that finds none of the candidates restorable raises :class:`CheckpointCorruptedError`
  naming every checkpoint tried and why it was refused: as Flink's ``"Could not read any
  of the ... checkpoints"``, this counts as a failure of the job, its restart strategy runs
  (and may run out, the job then FAILED). Starting from empty state instead would make the
  sinks write again what they had committed (duplicates in an exactly-once FileSink).

The state is then assigned to the subtasks of *this* job, at its parallelism (rescaling
keyed state by key group), with ``execution.state-recovery.ignore-unclaimed-state``
deciding whether state that no operator claims is an error
(:func:`~streamkernel.runtime.checkpoint.restore.assign_restored_state`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Mapping, Optional, Sequence

from streamkernel.errors import CheckpointCorruptedError, InvalidProgramError
from streamkernel.graph.job_graph import JobGraph
from streamkernel.runtime.checkpoint.metadata import CompletedCheckpoint
from streamkernel.runtime.checkpoint.restore import assign_restored_state, ignore_unclaimed_state, recovery_path
from streamkernel.runtime.checkpoint.storage import CheckpointStorage, SkippedCheckpoint, load_checkpoint
from streamkernel.runtime.highavailability.stores import CompletedCheckpointPointer

__all__ = ["RecoveryChoice", "StateRecovery"]

SubtaskKey = tuple[int, int]


@dataclass(frozen=True)
class RecoveryChoice:
    """The checkpoint an attempt starts from (None: from scratch), and the newer ones skipped."""

    checkpoint: Optional[CompletedCheckpoint]
    skipped: tuple[SkippedCheckpoint, ...] = ()

    def describe_skipped(self, skipped: SkippedCheckpoint) -> str:
        """What to tell the user about one skipped checkpoint."""
        instead = (f"the job recovers from {_kind(self.checkpoint)} {self.checkpoint.checkpoint_id} instead"
                   if self.checkpoint is not None else "no older checkpoint is valid: the job restarts from scratch")
        return f"checkpoint {skipped.checkpoint_id} skipped at recovery ({skipped.reason}); {instead}"


class StateRecovery:
    """Chooses and assigns the state of each job attempt (see the module docstring).

    ``storage`` is the job's checkpoint storage, ``configuration`` the job's configuration
    and ``job_graph`` its JobGraph (parallelism and operator uids of this job).
    """

    def __init__(self, storage: CheckpointStorage, configuration: Mapping[str, Any], job_graph: JobGraph,
                 recovered_from: Sequence[CompletedCheckpointPointer] = ()) -> None:
        self.storage = storage
        self.recovered_from = tuple(recovered_from)
        self.job_graph = job_graph
        self.initial_path = recovery_path(configuration)
        self.allow_non_restored_state = ignore_unclaimed_state(configuration)
        self._initial: Optional[CompletedCheckpoint] = None

    def choose(self, attempt: int, completed_ids: Collection[int] = ()) -> RecoveryChoice:
        """The checkpoint attempt ``attempt`` starts from; ``completed_ids`` are the checkpoints
        this job completed (only those are reported when skipped).

        Raises :class:`FileNotFoundError` or :class:`CheckpointCorruptedError` (naming the
        bad file) when the configured recovery path of the first attempt cannot be used, and
        :class:`CheckpointCorruptedError` naming every checkpoint tried when a restart of a
        job that completed a checkpoint finds none restorable.
        """
        if attempt == 0 and self.recovered_from:
            return self._recover()
        if attempt == 0:
            if self.initial_path is None:
                return RecoveryChoice(None)
            self._initial = self._load_initial(self.initial_path)
            return RecoveryChoice(self._initial)
        latest = self.storage.latest_completed()
        skipped = [s for s in self.storage.skipped_checkpoints if s.checkpoint_id in completed_ids]
        if latest is None:
            skipped += self._missing(completed_ids)
            if self._initial is not None and len(completed_ids) < self.storage.num_retained:
                try:
                    latest = load_checkpoint(self._initial)
                except (FileNotFoundError, CheckpointCorruptedError) as error:
                    skipped.append(SkippedCheckpoint(self._initial.checkpoint_id, self._initial.path, str(error)))
            if latest is None and skipped:
                raise CheckpointCorruptedError(self.storage.job_dir, _none_restorable(skipped))
        return RecoveryChoice(latest, tuple(skipped))

    def _recover(self) -> RecoveryChoice:
        """The newest checkpoint of the completed checkpoint store that loads (a recovered job)."""
        skipped: list[SkippedCheckpoint] = []
        for pointer in self.recovered_from:
            try:
                return RecoveryChoice(load_checkpoint(pointer.external_pointer), tuple(skipped))
            except (FileNotFoundError, CheckpointCorruptedError) as error:
                skipped.append(SkippedCheckpoint(pointer.checkpoint_id, pointer.external_pointer, str(error)))
        raise CheckpointCorruptedError(self.storage.job_dir, _none_restorable(skipped))

    def _missing(self, completed_ids: Collection[int]) -> list[SkippedCheckpoint]:
        """The retained checkpoints of this job whose folder is gone altogether."""
        present = set(self.storage.checkpoint_ids())
        retained = sorted(completed_ids, reverse=True)[:self.storage.num_retained]
        return [SkippedCheckpoint(cid, self.storage.checkpoint_dir(cid), "its directory is missing")
                for cid in retained if cid not in present]

    def assign(self, completed: CompletedCheckpoint) -> dict[SubtaskKey, dict[str, dict]]:
        """The restored state of every subtask of this job from ``completed``.

        Raises :class:`InvalidProgramError` (an operator's state has no matching uid, a
        parallelism above the max parallelism ...) saying which checkpoint was restored.
        """
        try:
            return assign_restored_state(completed, self.job_graph,
                                         allow_non_restored_state=self.allow_non_restored_state)
        except InvalidProgramError as error:
            raise InvalidProgramError(f"cannot restore {_kind(completed)} {completed.checkpoint_id} "
                                      f"({completed.path}): {error}") from error

    @staticmethod
    def _load_initial(path: str) -> CompletedCheckpoint:
        setting = "execution.state-recovery.path"
        try:
            return load_checkpoint(path)
        except FileNotFoundError as error:
            raise FileNotFoundError(f"{setting}: {error}; give the directory of a savepoint or retained "
                                    "checkpoint (the path `trigger_savepoint` returned)") from None
        except CheckpointCorruptedError as error:
            raise CheckpointCorruptedError(
                error.path, f"{error.reason}; the job cannot start from {setting} {path!r}: restore another "
                            "savepoint or checkpoint") from None


def _none_restorable(tried: list[SkippedCheckpoint]) -> str:
    reasons = "; ".join(f"checkpoint {s.checkpoint_id} ({s.path}): {s.reason}" for s in tried)
    return (f"none of the {len(tried)} completed checkpoint(s) of the job can be restored, and the job does not "
            f"restart from empty state (its sinks would write committed output again): {reasons}")


def _kind(completed: Optional[CompletedCheckpoint]) -> str:
    return "savepoint" if completed is not None and completed.is_savepoint else "checkpoint"
