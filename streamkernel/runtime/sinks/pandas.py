"""Writer of a PandasSink: records kept in memory per subtask, a DataFrame after the job.

Each sink subtask owns one part of the sink's store. A fresh start begins an empty part;
a restart from a checkpoint cuts the part back to the records it held at that checkpoint
(the sources replay the rest), so the frame holds every record exactly once.

With checkpointing (``execution.checkpointing.interval``) the writer is a two-phase commit
sink (:mod:`streamkernel.runtime.sinks.transactions`): records are staged and reach the
part only when the checkpoint that covers them completes (or at the end of the input).
A checkpoint's state is ``{"records": n, "pending": [transactions]}``: the committed
records of the part then, and the transactions waiting for that checkpoint; a restored
subtask cuts its part back to ``n`` and commits the pending transactions again, so a
transaction committed both before the failure and after it is counted once. Without
checkpointing ``pending`` is empty and records are visible at once.

Restored at another parallelism, new subtask ``j % parallelism`` recovers old subtask
``j``'s part: its own, or another one whose records it moves into its own part (so that
every record stays described by some subtask's next checkpoint).
"""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.runtime.sinks.base import BatchSinkWriter, checkpointing_enabled
from streamkernel.runtime.sinks.transactions import SinkTransactions, Transaction

__all__ = ["PandasSinkWriter"]


def _pending_records(state: Any) -> list:
    return [record for t in state.get("pending", ()) for record in Transaction.from_state(t).records]


class PandasSinkWriter(BatchSinkWriter):
    """Appends each batch to this subtask's part of the PandasSink's store (at once, or on commit)."""

    _restored: Optional[dict] = None  # old subtask index -> its checkpoint state

    def restore(self, state: Any) -> None:
        """Remember this subtask's state at the restored checkpoint (applied in ``open``)."""
        self._restored = {self.subtask_index: state}

    def restore_rescaled(self, states: list) -> None:
        """Remember the states of the old subtasks this subtask recovers."""
        self._restored = self.owned_states(states)

    def open(self) -> None:
        """Start this subtask's part (or cut it back to the restored checkpoint and commit its pending transactions)."""
        store = self.sink.store
        #: two-phase commit (checkpointing on) or immediate delivery
        self.transactions: Optional[SinkTransactions] = (
            SinkTransactions() if checkpointing_enabled(self.context.configuration) else None)
        restored = self._restored or {}
        own = restored.get(self.subtask_index)
        if own is not None:
            self._part = store.resume(self.subtask_index, int(own["records"]))
            self._part.extend(_pending_records(own))
        else:
            self._part = store.start(self.subtask_index)
        for old_index, state in sorted(restored.items()):
            if old_index != self.subtask_index:  # an old subtask that no longer exists
                self._part.extend(store.remove(old_index)[:int(state["records"])])
                self._part.extend(_pending_records(state))

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Keep the records (or stage them until the checkpoint)."""
        if self.transactions is not None:
            self.transactions.stage(values)
        else:
            self._part.extend(values)

    def prepare_commit(self, checkpoint_id: int) -> dict:
        """``{"records": n, "pending": [...]}``: the committed records and the waiting transactions."""
        pending = self.transactions.pre_commit(checkpoint_id) if self.transactions is not None else []
        return {"records": len(self._part), "pending": pending}

    def commit(self, checkpoint_id: int) -> None:
        """Append the transactions of checkpoints up to ``checkpoint_id`` to the part."""
        if self.transactions is not None:
            for transaction in self.transactions.committable(checkpoint_id):
                self._part.extend(transaction.records)

    def finish(self) -> None:
        """End of input: commit what is left."""
        if self.transactions is not None:
            for transaction in self.transactions.end_of_input():
                self._part.extend(transaction.records)
