"""The task's mailbox: actions other threads hand to the task thread (Flink's ``TaskMailbox``).

Everything an operator does happens in its task's thread, so operators need no locks. What
another thread wants done to them - take a checkpoint at a source, let operators commit a
completed checkpoint, fail as if an operator raised (failure injection) - is put into the
mailbox as an action; the task thread runs the actions, in the order they were put, between
two batches. Putting an action wakes the task thread (``wakeup``: its input gate or source),
so an idle task runs it without waiting for the next record.

Flink's ``MailboxProcessor`` runs the task's default action (``processInput``) in a loop and
the mails between its iterations; here that loop is the stream task's own
(:mod:`.stream_task`), which calls :meth:`TaskMailbox.run_all` between batches. Once the task
ended the mailbox is closed: pending actions and any put later are dropped.

Metrics (Flink's ``mailboxMailsPerSecond``, ``mailboxLatencyMs``, ``mailboxQueueSize``): the
mailbox counts the actions it ran (``processed``) and keeps how long the last
:data:`LATENCY_SAMPLES` waited between ``put`` and their run (``latency_ms``); every action
carries the clock reading of its ``put``. Mails are rare (checkpoint triggers and
notifications, injected failures): this costs nothing per record.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Callable

__all__ = ["TaskMailbox", "LATENCY_SAMPLES"]

#: How many mails' latencies the mailbox keeps (Flink's histogram keeps its last 60 measurements).
LATENCY_SAMPLES = 60


class TaskMailbox:
    """Actions put by any thread, run in order by the task thread between batches.

    ``queue`` is the deque of pending ``(put time in perf_counter ns, action)``: the stream
    task's loops test it directly (``if queue:``), so an empty mailbox costs no call per batch.
    ``processed`` counts the actions run, ``latency_ms`` holds the last waits (module docstring).
    """

    def __init__(self, wakeup: Callable[[], None]) -> None:
        self.queue: collections.deque[tuple[int, Callable[[], None]]] = collections.deque()
        self._wakeup = wakeup
        self._lock = threading.Lock()  # put and close: nothing enters a closed mailbox
        self._closed = False
        self.processed = 0
        self.latency_ms: collections.deque[float] = collections.deque(maxlen=LATENCY_SAMPLES)

    def put(self, action: Callable[[], None]) -> bool:
        """Queue ``action`` for the task thread and wake it; False (dropped) once the mailbox is closed."""
        with self._lock:
            if self._closed:
                return False
            self.queue.append((time.perf_counter_ns(), action))
        self._wakeup()
        return True

    def run_all(self) -> None:
        """(Task thread) run the pending actions in order, those put meanwhile too; an action's
        exception propagates (the actions after it stay queued)."""
        queue = self.queue
        while queue:
            put_at, action = queue.popleft()
            self.latency_ms.append((time.perf_counter_ns() - put_at) / 1e6)
            self.processed += 1
            action()

    def close(self) -> None:
        """The task ended: drop the pending actions; later puts are dropped too."""
        with self._lock:
            self._closed = True
            self.queue.clear()

    @property
    def is_closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed
