"""Waiting on a condition with a deadline, instead of sleeping."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

__all__ = ["wait_until", "DEFAULT_WAIT_TIMEOUT_SECONDS"]

#: How long :func:`wait_until` waits by default: generous, because a loaded machine (a CI
#: runner, a laptop running other tests) can be many times slower than an idle one; a
#: condition that holds returns at once, so only a failing test pays the whole deadline.
DEFAULT_WAIT_TIMEOUT_SECONDS = 60.0

_T = TypeVar("_T")


def wait_until(condition: Callable[[], _T], timeout: float = DEFAULT_WAIT_TIMEOUT_SECONDS,
               message: str = "the condition", interval: float = 0.01) -> _T:
    """Poll ``condition()`` until it returns something truthy, and return that.

    Fails with ``AssertionError("timed out after 60.0 s waiting for <message> ...")`` once
    ``timeout`` seconds passed without it (the last value it returned is in the message).
    ``message`` says what the test waits for: "the job to be RUNNING", "3 results".
    The polls back off from ``interval`` to at most 0.1 s.

    >>> wait_until(lambda: 42, message="the answer")
    42
    >>> wait_until(lambda: [], timeout=0.05, message="a result")
    Traceback (most recent call last):
    ...
    AssertionError: timed out after 0.05 s waiting for a result (last seen: [])
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out after {timeout} s waiting for {message} (last seen: {value!r})")
        time.sleep(min(interval, remaining))
        interval = min(interval * 1.5, 0.1)
