"""Ready-made retry predicates for async I/O, as PyFlink's ``pyflink.datastream.async_retry_predicates``.

Give them to :meth:`AsyncRetryStrategy.fixed_delay` / ``exponential_backoff`` (bind the
extra argument with ``functools.partial``)::

    from streamkernel.datastream import AsyncRetryStrategy, async_retry_predicates

    strategy = AsyncRetryStrategy.fixed_delay(
        max_attempts=3, backoff_time_millis=100,
        result_predicate=async_retry_predicates.empty_result_predicate,
        exception_predicate=functools.partial(async_retry_predicates.exception_type_predicate,
                                              expected_error_type=TimeoutError))
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["empty_result_predicate", "has_exception_predicate", "exception_type_predicate"]


def empty_result_predicate(result: Optional[list]) -> bool:
    """Retry when an attempt returned no results."""
    return result is None or len(result) == 0


def has_exception_predicate(error: Optional[BaseException]) -> bool:
    """Retry when an attempt raised."""
    return error is not None


def exception_type_predicate(error: Optional[BaseException], expected_error_type: Any) -> bool:
    """Retry when an attempt raised an ``expected_error_type``."""
    return isinstance(error, expected_error_type)
