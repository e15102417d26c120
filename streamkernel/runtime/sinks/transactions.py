"""Transactions of an in-memory two-phase-commit sink (the collect and pandas sinks).

Flink's ``TwoPhaseCommitSinkFunction`` / ``TwoPhaseCommittingSink`` in its smallest form:

* records written between two checkpoints are **staged** (:meth:`SinkTransactions.stage`);
* at checkpoint *n* (``snapshot_state``) the staged records become the **pending**
  transaction of *n* (:meth:`SinkTransactions.pre_commit`); every pending transaction goes
  into the snapshot, records included, so a restarted job still has them;
* when checkpoint *n* completes, the transactions up to *n* are **committed**: handed to
  the consumer (:meth:`SinkTransactions.committable`);
* after a failure the job restores the last completed checkpoint: its pending transactions
  are committed (their checkpoint completed, the notification may have been lost) and
  whatever was staged after it is gone with the failed writer (the sources replay it).

A transaction may thus be committed twice (before the failure and again on restore): its
``transaction_id`` (the writer's random token and the checkpoint id) lets the consumer
ignore the second time. The bookkeeping here is pure; the writers do the delivery.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Iterable

__all__ = ["Transaction", "SinkTransactions"]


@dataclass(frozen=True)
class Transaction:
    """The records a sink subtask wrote before checkpoint ``checkpoint_id`` (since the previous one)."""

    transaction_id: str
    checkpoint_id: int
    records: list

    def to_state(self) -> tuple[str, int, list]:
        """Plain data for a checkpoint."""
        return (self.transaction_id, self.checkpoint_id, self.records)

    @staticmethod
    def from_state(state: Any) -> "Transaction":
        """The transaction a ``to_state`` result describes."""
        transaction_id, checkpoint_id, records = state
        return Transaction(str(transaction_id), int(checkpoint_id), list(records))


class SinkTransactions:
    """The staged records and the pending transactions of one sink subtask (module docstring)."""

    def __init__(self) -> None:
        self.token = uuid.uuid4().hex[:12]  # tells this writer's transactions from any other's
        self.staged: list = []
        self.pending: list[Transaction] = []  # pre-committed, in checkpoint order

    def stage(self, values: Iterable[Any]) -> None:
        """Keep records until the next checkpoint."""
        self.staged.extend(values)

    def pre_commit(self, checkpoint_id: int) -> list[tuple[str, int, list]]:
        """Checkpoint ``checkpoint_id``: the staged records become its transaction; every
        pending transaction, as plain data for the snapshot."""
        if self.staged:
            self.pending.append(Transaction(f"{self.token}-{checkpoint_id}", checkpoint_id, self.staged))
            self.staged = []
        return [transaction.to_state() for transaction in self.pending]

    def committable(self, checkpoint_id: int) -> list[Transaction]:
        """Checkpoint ``checkpoint_id`` completed: remove and return the transactions up to it."""
        done = [t for t in self.pending if t.checkpoint_id <= checkpoint_id]
        self.pending = [t for t in self.pending if t.checkpoint_id > checkpoint_id]
        return done

    def end_of_input(self) -> list[Transaction]:
        """The bounded input ended: every pending transaction and the staged rest, to commit now."""
        done = self.pending
        if self.staged:
            done = done + [Transaction(f"{self.token}-final", -1, self.staged)]
        self.pending, self.staged = [], []
        return done
