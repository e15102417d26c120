"""A job's checkpoint services of a highly available cluster: its checkpoint id counter and its
completed checkpoint store (Flink's ``CheckpointIDCounter`` and ``CompletedCheckpointStore``, made by
the cluster's ``CheckpointRecoveryFactory``).

Without high availability a job needs neither: its checkpoint storage directory is the truth (the
ids continue after the highest ``chk-N`` in it, a restart restores the latest complete one). With
it, the leader that runs the job hands out ids from the counter in ZooKeeper (no id is ever used
twice, whoever leads) and a checkpoint is complete only once its pointer is in the store: what the
next leader recovers the job from.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Optional

from streamkernel.runtime.highavailability.stores import (
    CheckpointIDCounter,
    CheckpointRecoveryFactory,
    CompletedCheckpointPointer,
    CompletedCheckpointStore,
)

__all__ = ["JobCheckpointServices"]

_LOG = logging.getLogger(__name__)


@dataclass
class JobCheckpointServices:
    """The counter and the store of one job (see the module)."""

    job_id: str
    counter: CheckpointIDCounter
    store: CompletedCheckpointStore

    @classmethod
    def create(cls, factory: CheckpointRecoveryFactory, job_id: str, max_retained: int) -> "JobCheckpointServices":
        """The services of ``job_id`` (they hold what earlier leaders wrote)."""
        return cls(job_id, factory.create_checkpoint_id_counter(job_id),
                   factory.create_completed_checkpoint_store(job_id, max_retained))

    def next_id(self) -> int:
        """The id the counter hands out next (a read)."""
        return self.counter.get()

    def take_id(self) -> int:
        """A new checkpoint id (raises when this process may not write: it no longer leads)."""
        return self.counter.get_and_increment()

    def restored(self, checkpoint_id: int) -> None:
        """The job starts from ``checkpoint_id`` (a savepoint, say): ids continue after it."""
        if self.counter.get() <= checkpoint_id:
            self.counter.set_count(checkpoint_id + 1)

    def add(self, completed: Any) -> list[CompletedCheckpointPointer]:
        """Record a completed checkpoint (raises when it could not be recorded: it then is not complete)."""
        return self.store.add_checkpoint_and_subsume_oldest_one(completed)

    def latest(self) -> list[CompletedCheckpointPointer]:
        """The retained checkpoints, newest first."""
        return list(reversed(self.store.get_all_checkpoints()))

    def shutdown(self, job_status: str) -> Optional[BaseException]:
        """The job is over for this JobManager: a globally terminal ``job_status`` removes the counter and
        the pointers; returns the error if they could not be removed (logged)."""
        try:
            self.counter.shutdown(job_status)
            self.store.shutdown(job_status)
        except Exception as error:  # noqa: BLE001 - ZooKeeper gone or leadership lost: the next leader cleans up
            _LOG.warning("could not shut down the checkpoint services of job %s: %s", self.job_id, error)
            return error
        return None
