"""The REST API's asynchronous operations (Flink's ``CompletedOperationCache`` and ``TriggerId``).

A savepoint, a stop-with-savepoint or a checkpoint takes longer than an HTTP request should
wait: the trigger request registers the operation's future under a trigger id (32 hex, as
Flink's ``TriggerId``; a client may choose it) and answers at once; the client then polls the
operation's status by that id. A completed operation's result is kept for
``rest.async.store-duration`` (Flink's key, default 5 min) after it completed; one in progress
is kept until it completes. Nothing here ever waits on a future: the futures' callbacks
(on the JobMaster's thread) record the completion, readers look at what is recorded.
"""

from __future__ import annotations

import secrets
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Optional

__all__ = ["AsyncOperations", "OperationStatus", "new_trigger_id"]


def new_trigger_id() -> str:
    """A fresh trigger id: 32 lower-case hex digits (Flink's ``TriggerId``)."""
    return secrets.token_hex(16)


@dataclass(frozen=True)
class OperationStatus:
    """What a status request sees: in progress (``done`` False), or the result or the error."""

    done: bool
    result: Any = None
    error: Optional[BaseException] = None


@dataclass
class _Entry:
    future: "Future[Any]"
    completed_at: Optional[float] = None


class AsyncOperations:
    """The operations triggered through the REST API, by (kind, job id, trigger id).

    ``kind`` separates Flink's caches: ``"savepoint"`` (savepoints and stop-with-savepoint,
    both polled at ``/jobs/:jobid/savepoints/:triggerid``) and ``"checkpoint"``.
    ``store_duration_s``: how long a completed result stays; ``clock``: monotonic seconds.
    Thread-safe.
    """

    def __init__(self, store_duration_s: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        if store_duration_s < 0:
            raise ValueError(f"store_duration_s must be >= 0, got {store_duration_s}")
        self.store_duration_s = store_duration_s
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str, str], _Entry] = {}

    def register(self, kind: str, job_id: str, trigger_id: str, start: Callable[[], "Future[Any]"]) -> bool:
        """Start the operation (``start()`` returns its future) under the key, unless one is there.

        Returns False, starting nothing, when the key is already known (Flink registers
        operations idempotently: a client repeating a trigger with its own id gets the same
        operation). ``start`` is called outside the lock; it must not block.
        """
        key = (kind, job_id, trigger_id)
        with self._lock:
            self._expire()
            if key in self._entries:
                return False
            placeholder: Future[Any] = Future()
            entry = _Entry(placeholder)
            self._entries[key] = entry
        try:
            future = start()
        except BaseException:
            with self._lock:
                self._entries.pop(key, None)
            raise
        entry.future = future
        future.add_done_callback(lambda _: self._completed(entry))
        return True

    def _completed(self, entry: _Entry) -> None:
        with self._lock:
            entry.completed_at = self._clock()

    def status(self, kind: str, job_id: str, trigger_id: str) -> Optional[OperationStatus]:
        """The operation's status, or None when no operation is (or is still) known by that key."""
        with self._lock:
            self._expire()
            entry = self._entries.get((kind, job_id, trigger_id))
            if entry is None:
                return None
            future = entry.future
            if entry.completed_at is None or not future.done():
                return OperationStatus(done=False)
        if future.cancelled():
            return OperationStatus(done=True, error=RuntimeError("the operation was cancelled"))
        error = future.exception()
        if error is not None:
            return OperationStatus(done=True, error=error)
        return OperationStatus(done=True, result=future.result())

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._entries)

    def _expire(self) -> None:
        now = self._clock()
        stale = [key for key, entry in self._entries.items()
                 if entry.completed_at is not None and now - entry.completed_at > self.store_duration_s]
        for key in stale:
            del self._entries[key]
