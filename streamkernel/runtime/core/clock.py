"""Clocks: real time for jobs, a manual clock for deterministic tests of processing time."""

from __future__ import annotations

import threading
import time

__all__ = ["Clock", "SystemClock", "ManualClock"]


class Clock:
    """Tells the current processing time in milliseconds."""

    def now_ms(self) -> int:
        """Milliseconds since the epoch."""
        raise NotImplementedError

    def sleep_until(self, deadline_ms: int, wakeup: threading.Event) -> None:
        """Wait until ``deadline_ms`` or until ``wakeup`` is set, whichever comes first."""
        raise NotImplementedError


class SystemClock(Clock):
    """The wall clock (``time.time``)."""

    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch."""
        return time.time_ns() // 1_000_000

    def sleep_until(self, deadline_ms: int, wakeup: threading.Event) -> None:
        """Block until the deadline or a wake-up."""
        delay = (deadline_ms - self.now_ms()) / 1000
        if delay > 0:
            wakeup.wait(delay)


class ManualClock(Clock):
    """A clock that only moves when told to: ``advance(ms)`` / ``set(ms)``.

    >>> clock = ManualClock(1000); clock.advance(500); clock.now_ms()
    1500
    """

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms
        self._changed = threading.Condition()

    def now_ms(self) -> int:
        """The clock's current time."""
        return self._now

    def advance(self, millis: int) -> None:
        """Move time forward by ``millis``."""
        self.set(self._now + millis)

    def set(self, now_ms: int) -> None:
        """Set the time (never backwards)."""
        with self._changed:
            self._now = max(self._now, now_ms)
            self._changed.notify_all()

    def sleep_until(self, deadline_ms: int, wakeup: threading.Event) -> None:
        """Wait until the clock is moved past ``deadline_ms`` (or a wake-up; polls briefly)."""
        with self._changed:
            if self._now < deadline_ms and not wakeup.is_set():
                self._changed.wait(0.01)
