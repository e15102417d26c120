"""Writer of a CollectSink: batches go into the sink's CollectBuffer, which the program reads.

``put_batch`` blocks while the buffer is full: a reader that falls behind backpressures
the job. The job's driver unblocks writers of a failed or cancelled job with
``buffer.fail(exc)`` (or ``discard()`` when the reader went away). A sink subtask that
finishes tells the buffer, which closes after the last of them.

Delivery guarantee:

* **without checkpointing** each batch is put into the buffer at once: the reader sees
  records as soon as they are written; a restarted job replays its sources from the
  beginning, so after a failure the reader may see records twice (at-least-once);
* **with checkpointing** (``execution.checkpointing.interval``) the writer is a two-phase
  commit sink (:mod:`streamkernel.runtime.sinks.transactions`): records are staged, the
  checkpoint's snapshot holds them as a pending transaction, and they reach the buffer
  when that checkpoint completes (``commit``), or at the end of the input. A restarted
  subtask delivers the pending transactions of the checkpoint it restores; the buffer
  drops a transaction it already has, so the reader sees every record exactly once.
  The records are therefore visible one checkpoint interval later and are written into
  the checkpoint (they must be picklable).

Restored at another parallelism, new subtask ``j % parallelism`` delivers the pending
transactions of old subtask ``j``.
"""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.runtime.sinks.base import BatchSinkWriter, checkpointing_enabled
from streamkernel.runtime.sinks.transactions import SinkTransactions, Transaction

__all__ = ["CollectSinkWriter"]


class CollectSinkWriter(BatchSinkWriter):
    """Puts each batch (a copy: the buffer keeps it) into the collect buffer, at once or on commit."""

    _restored: tuple = ()

    def restore(self, state: Any) -> None:
        """Remember the restored checkpoint's pending transactions (delivered in ``open``)."""
        self._restored = tuple(Transaction.from_state(t) for t in state.get("pending", ()))

    def restore_rescaled(self, states: list) -> None:
        """Take over the pending transactions of the old subtasks this subtask recovers."""
        self._restored = tuple(Transaction.from_state(t) for _, state in sorted(self.owned_states(states).items())
                               for t in state.get("pending", ()))

    def open(self) -> None:
        """Find the live buffer, tell it how many subtasks write, deliver restored transactions."""
        self._buffer = self.sink.buffer
        self._buffer.expect_writers(self.parallelism)
        #: two-phase commit (checkpointing on) or immediate delivery
        self.transactions: Optional[SinkTransactions] = (
            SinkTransactions() if checkpointing_enabled(self.context.configuration) else None)
        self._deliver(self._restored)
        self._restored = ()

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Hand the batch over (blocks while the buffer is full), or stage it until the checkpoint."""
        if self.transactions is not None:
            self.transactions.stage(values)
        else:
            self._buffer.put_batch(list(values))

    def prepare_commit(self, checkpoint_id: int) -> Optional[dict]:
        """``{"pending": [transactions]}`` with checkpointing; None without (nothing to restore)."""
        if self.transactions is None:
            return None
        return {"pending": self.transactions.pre_commit(checkpoint_id)}

    def commit(self, checkpoint_id: int) -> None:
        """Deliver the transactions of checkpoints up to ``checkpoint_id``."""
        if self.transactions is not None:
            self._deliver(self.transactions.committable(checkpoint_id))

    def finish(self) -> None:
        """End of input: deliver what is left; the buffer closes after the last subtask."""
        if self.transactions is not None:
            self._deliver(self.transactions.end_of_input())
        self._buffer.writer_finished(self.subtask_index)

    def _deliver(self, transactions: Any) -> None:
        for transaction in transactions:
            self._buffer.put_transaction(transaction.transaction_id, transaction.records)
