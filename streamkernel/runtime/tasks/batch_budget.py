"""How many records a task hands its chain at a time: as many as take about a time budget.

Records move through a chain in batches (one call per operator per batch, :mod:`.chain`), so
a record produced early in a batch leaves the task only when the whole batch is through, and
the task looks at its mailbox, its timers, its output's buffer timeout and its cancellation
only between two batches. A fixed batch (``taskmanager.network.batch-size``, 1,024 records)
behind a map that takes 25 ms a record is 25 seconds of that. Flink hands each record on at
once and reacts between two records; here a batch is sized by time instead:

* a source task reads as many records as its chain processed in :attr:`BatchBudget.target_ns`
  last time (:class:`~.source_stream_task.SourceStreamTask`);
* a task with inputs hands its head a buffer in slices of that many records, and between two
  slices does the mailbox's work, checks cancellation and lets a priority event (an unaligned
  barrier's announcement) in (:class:`~.task_input.InputProcessor`).

The size follows the last measurement (the busy time, without the waits for credit): a fast
chain gets whole batches (the limit), so the hot path pays two clock reads per batch and
nothing per record; a slow one gets a few records, one at the least. The first batch of a task
is a single record, as its cost is not known yet. The budget is a tenth of
``execution.buffer-timeout`` between 1 ms and 10 ms: a record waits for its batch at most that
long before the buffer timeout's flush can send it.
"""

from __future__ import annotations

__all__ = ["BatchBudget", "budget_ns"]

#: The longest a batch should take (ns): a priority event or a cancel waits about this long at most.
MAX_BUDGET_NS = 10_000_000
#: The shortest budget, for ``execution.buffer-timeout: 0`` (flush every batch).
MIN_BUDGET_NS = 1_000_000


def budget_ns(buffer_timeout_ms: int) -> int:
    """The time budget of one batch for a task whose ``execution.buffer-timeout`` is
    ``buffer_timeout_ms`` (-1: flush only full buffers).

    >>> budget_ns(100), budget_ns(0), budget_ns(-1)
    (10000000, 1000000, 10000000)
    """
    if buffer_timeout_ms < 0:
        return MAX_BUDGET_NS
    return max(MIN_BUDGET_NS, min(MAX_BUDGET_NS, buffer_timeout_ms * 100_000))


class BatchBudget:
    """The size of a task's next batch (``size``), from how long the last one took (``first``:
    the size of the first batch).

    >>> budget = BatchBudget(limit=1024, target_ns=10_000_000)
    >>> budget.size                                    # nothing measured yet: one record
    1
    >>> budget.measured(1, 25_000_000); budget.size    # 25 ms a record: still one
    1
    >>> budget.measured(1, 20_000); budget.size        # 20 us a record: 500 fit in 10 ms
    500
    >>> budget.measured(500, 1_000_000); budget.size   # 2 us a record: the whole limit
    1024
    """

    __slots__ = ("limit", "target_ns", "size")

    def __init__(self, limit: int, target_ns: int, first: int = 1) -> None:
        self.limit = max(1, int(limit))
        self.target_ns = int(target_ns)
        self.size = max(1, min(self.limit, int(first)))

    def measured(self, records: int, busy_ns: int) -> None:
        """``records`` took ``busy_ns``: size the next batch to take about the budget."""
        if records <= 0:
            return
        if busy_ns <= 0:
            self.size = self.limit
            return
        self.size = max(1, min(self.limit, self.target_ns * records // busy_ns))
