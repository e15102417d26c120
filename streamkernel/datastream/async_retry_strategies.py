"""Retry strategies for async I/O, as PyFlink's ``pyflink.datastream.async_retry_strategies``.

Give one to ``AsyncDataStream.ordered_wait_with_retry`` / ``unordered_wait_with_retry``::

    from streamkernel.datastream import async_retry_predicates
    from streamkernel.datastream.async_retry_strategies import FixedDelayRetryStrategy

    strategy = FixedDelayRetryStrategy(3, 100, async_retry_predicates.empty_result_predicate,
                                       async_retry_predicates.has_exception_predicate)

An attempt is retried when the result predicate accepts its results (or the exception
predicate its exception), ``can_retry(attempts so far)`` holds (``attempts <= max_attempts``:
``max_attempts`` retries after the first attempt) and the operator's timeout has not
passed; the next attempt starts ``get_backoff_time_millis(attempts so far)`` ms later.
When no retry follows, the last attempt's results are emitted (or its exception fails the
job). As in PyFlink, an :class:`ExponentialBackoffDelayRetryStrategy` remembers its last
delay: each call after the first attempt multiplies it, whichever record asks.
:meth:`AsyncRetryStrategy.fixed_delay` / ``exponential_backoff`` / ``no_restart`` return
these classes.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, List, Optional, TypeVar

from streamkernel.datastream.function_async import AsyncRetryPredicate, AsyncRetryStrategy
from streamkernel.errors import InvalidProgramError

__all__ = [
    "RetryPredicate",
    "NoRetryStrategy",
    "FixedDelayRetryStrategy",
    "ExponentialBackoffDelayRetryStrategy",
]

OUT = TypeVar("OUT")

ResultPredicate = Optional[Callable[[List[Any]], bool]]
ExceptionPredicate = Optional[Callable[[Exception], bool]]


def _require_positive(strategy: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InvalidProgramError(f"{strategy}: {name} should be greater than zero, got {value!r}")


class RetryPredicate(AsyncRetryPredicate, Generic[OUT]):
    """A result predicate and an exception predicate (either may be None: never retry on it)."""

    def __init__(self, result_predicate: ResultPredicate, exception_predicate: ExceptionPredicate) -> None:
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def result_predicate(self) -> ResultPredicate:
        """The predicate on an attempt's results that asks for a retry, or None."""
        return self._result_predicate

    def exception_predicate(self) -> ExceptionPredicate:
        """The predicate on an attempt's exception that asks for a retry, or None."""
        return self._exception_predicate


class NoRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    """Never retries (the strategy of ``ordered_wait`` / ``unordered_wait``)."""

    def can_retry(self, current_attempts: int) -> bool:
        """Always False."""
        return False

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """-1: there is no next attempt."""
        return -1

    def get_retry_predicate(self) -> AsyncRetryPredicate:
        """A predicate with neither a result nor an exception predicate."""
        return RetryPredicate(None, None)


class FixedDelayRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    """Up to ``max_attempts`` retries, ``backoff_time_millis`` ms apart."""

    def __init__(self, max_attempts: int, backoff_time_millis: int, result_predicate: ResultPredicate,
                 exception_predicate: ExceptionPredicate) -> None:
        _require_positive("FixedDelayRetryStrategy", "max_attempts", max_attempts)
        _require_positive("FixedDelayRetryStrategy", "backoff_time_millis", backoff_time_millis)
        self._max_attempts = max_attempts
        self._backoff_time_millis = backoff_time_millis
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate

    def can_retry(self, current_attempts: int) -> bool:
        """Whether ``current_attempts`` attempts leave a retry (``<= max_attempts``)."""
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """The fixed delay (ms)."""
        return self._backoff_time_millis

    def get_retry_predicate(self) -> AsyncRetryPredicate:
        """The result and exception predicates given to the constructor."""
        return RetryPredicate(self._result_predicate, self._exception_predicate)


class ExponentialBackoffDelayRetryStrategy(AsyncRetryStrategy, Generic[OUT]):
    """Up to ``max_attempts`` retries; the delay starts at ``initial_delay`` and is multiplied by
    ``multiplier`` on each later retry, up to ``max_retry_delay`` (all ms)."""

    def __init__(self, max_attempts: int, initial_delay: int, max_retry_delay: int, multiplier: float,
                 result_predicate: ResultPredicate, exception_predicate: ExceptionPredicate) -> None:
        name = "ExponentialBackoffDelayRetryStrategy"
        _require_positive(name, "max_attempts", max_attempts)
        _require_positive(name, "initial_delay", initial_delay)
        _require_positive(name, "max_retry_delay", max_retry_delay)
        _require_positive(name, "multiplier", multiplier)
        self._max_attempts = max_attempts
        self._max_retry_delay = max_retry_delay
        self._multiplier = multiplier
        self._result_predicate = result_predicate
        self._exception_predicate = exception_predicate
        self._initial_delay = initial_delay
        self._last_retry_delay = initial_delay

    def can_retry(self, current_attempts: int) -> bool:
        """Whether ``current_attempts`` attempts leave a retry (``<= max_attempts``)."""
        return current_attempts <= self._max_attempts

    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """``initial_delay`` after the first attempt, else the last delay times ``multiplier``
        (capped at ``max_retry_delay``, truncated to whole ms), which becomes the last delay."""
        if current_attempts <= 1:
            self._last_retry_delay = self._initial_delay
            return self._last_retry_delay
        backoff = int(min(self._last_retry_delay * self._multiplier, self._max_retry_delay))
        self._last_retry_delay = backoff
        return backoff

    def get_retry_predicate(self) -> AsyncRetryPredicate:
        """The result and exception predicates given to the constructor."""
        return RetryPredicate(self._result_predicate, self._exception_predicate)


#: The strategy that never retries (``AsyncRetryStrategy.no_restart()`` returns it).
NO_RETRY_STRATEGY: AsyncRetryStrategy = NoRetryStrategy()
