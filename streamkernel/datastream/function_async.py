"""Async I/O functions and retry strategies (interfaces, as PyFlink's ``AsyncFunction``).

Part of ``streamkernel.datastream.functions``. An :class:`AsyncFunction` issues one
``async`` request per element (a lookup in a database, a call to a model server) without
blocking the stream; an :class:`AsyncRetryStrategy` says whether and when a failed or
unsatisfying attempt is retried. streamkernel declares these interfaces so PyFlink
programs import unchanged; the async operator itself is not part of the DataStream API
here (PyFlink's ``AsyncDataStream`` is).
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from typing import Any, Callable, Generic, List, Optional, TypeVar

from streamkernel.datastream.function_base import Function

__all__ = [
    "AsyncFunction",
    "AsyncFunctionDescriptor",
    "AsyncRetryPredicate",
    "AsyncRetryStrategy",
]


class AsyncRetryPredicate(ABC):
    """When to retry: a predicate on the results and/or one on the exception of an attempt."""

    @abstractmethod
    def result_predicate(self) -> Optional[Callable[[List[Any]], bool]]:
        """A predicate on an attempt's results that asks for a retry, or None."""

    @abstractmethod
    def exception_predicate(self) -> Optional[Callable[[Exception], bool]]:
        """A predicate on an attempt's exception that asks for a retry, or None."""


class AsyncRetryStrategy(ABC):
    """How often and after which delay an async attempt is retried."""

    @abstractmethod
    def can_retry(self, current_attempts: int) -> bool:
        """Whether another attempt may follow ``current_attempts`` attempts."""

    @abstractmethod
    def get_backoff_time_millis(self, current_attempts: int) -> int:
        """The delay (ms) before the next attempt."""

    @abstractmethod
    def get_retry_predicate(self) -> AsyncRetryPredicate:
        """The predicate deciding whether an attempt needs a retry."""

    @staticmethod
    def no_restart() -> "AsyncRetryStrategy":
        """The strategy that never retries (``async_retry_strategies.NO_RETRY_STRATEGY``)."""
        from streamkernel.datastream.async_retry_strategies import NO_RETRY_STRATEGY

        return NO_RETRY_STRATEGY

    @staticmethod
    def fixed_delay(max_attempts: int, backoff_time_millis: int,
                    result_predicate: Optional[Callable[[List[Any]], bool]],
                    exception_predicate: Optional[Callable[[Exception], bool]]) -> "AsyncRetryStrategy":
        """Up to ``max_attempts`` retries, ``backoff_time_millis`` apart (a FixedDelayRetryStrategy)."""
        from streamkernel.datastream.async_retry_strategies import FixedDelayRetryStrategy

        return FixedDelayRetryStrategy(max_attempts, backoff_time_millis, result_predicate, exception_predicate)

    @staticmethod
    def exponential_backoff(max_attempts: int, initial_delay: int, max_retry_delay: int, multiplier: float,
                            result_predicate: Optional[Callable[[List[Any]], bool]],
                            exception_predicate: Optional[Callable[[Exception], bool]]) -> "AsyncRetryStrategy":
        """Up to ``max_attempts`` retries, the delay growing by ``multiplier`` up to ``max_retry_delay``
        (an ExponentialBackoffDelayRetryStrategy)."""
        from streamkernel.datastream.async_retry_strategies import ExponentialBackoffDelayRetryStrategy

        return ExponentialBackoffDelayRetryStrategy(max_attempts, initial_delay, max_retry_delay, multiplier,
                                                    result_predicate, exception_predicate)


IN = TypeVar("IN")
OUT = TypeVar("OUT")


class AsyncFunction(Function, Generic[IN, OUT]):
    """Triggers an asynchronous operation per element: ``async def async_invoke(value)``."""

    @abstractmethod
    async def async_invoke(self, value: Any) -> List[Any]:
        """The results for ``value`` (raise to fail the task)."""

    def timeout(self, value: Any) -> List[Any]:
        """Called when ``async_invoke`` timed out; by default raises TimeoutError."""
        raise TimeoutError(f"Async function call has timed out for input: {value}")


class AsyncFunctionDescriptor:
    """An AsyncFunction with its timeout, capacity, retry strategy and output mode."""

    class OutputMode(enum.Enum):
        """Whether results keep the input order (ORDERED) or leave as they complete (UNORDERED)."""

        ORDERED = 0
        UNORDERED = 1

    def __init__(self, async_function: AsyncFunction, timeout: Any, capacity: int,
                 async_retry_strategy: Optional[AsyncRetryStrategy], output_mode: "AsyncFunctionDescriptor.OutputMode") -> None:
        self.async_function = async_function
        self.timeout = timeout
        self.capacity = capacity
        self.async_retry_strategy = async_retry_strategy
        self.output_mode = output_mode
