"""Waiting on a future with a timeout, the same on every supported Python.

Before Python 3.11, ``concurrent.futures.TimeoutError`` is not the builtin ``TimeoutError``
(3.11 made it an alias): ``future.result(timeout)`` on 3.10 raises an exception that
``except TimeoutError`` does not catch. Every wait on a future with a timeout in streamkernel
goes through :func:`result_within`, which always raises the builtin ``TimeoutError``.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Optional

__all__ = ["result_within"]


def result_within(future: Any, timeout: Optional[float]) -> Any:
    """``future.result(timeout)``; the builtin ``TimeoutError`` when it is not done within
    ``timeout`` seconds (None: wait forever). The future's own exception is raised as is.

    >>> result_within(concurrent.futures.Future(), 0.0)
    Traceback (most recent call last):
    TimeoutError: no result within 0.0 s
    """
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError as exc:  # on 3.11+ the builtin: also the future's own
        if isinstance(exc, TimeoutError) and future.done():
            raise  # the future failed with a TimeoutError: its own, as is
        raise TimeoutError(f"no result within {timeout} s") from None
