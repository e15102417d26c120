"""``AsyncDataStream``: apply an AsyncFunction to a stream, as PyFlink's ``AsyncDataStream``.

``unordered_wait`` emits results as their calls complete; ``ordered_wait`` in input order.
Each adds an ``async_wait`` operator (an AsyncWaitSpec) with ``timeout`` (ms; 0 means none, allowed
without retries as in PyFlink), ``capacity`` (calls in flight per subtask), ``output_mode``
("ORDERED" | "UNORDERED") and ``retry_strategy`` (None: no retries).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from streamkernel.common.time import to_millis
from streamkernel.datastream.async_retry_strategies import NO_RETRY_STRATEGY
from streamkernel.datastream.function_async import AsyncFunction, AsyncRetryStrategy
from streamkernel.errors import InvalidFunctionError, InvalidProgramError
from streamkernel.graph.operator_specs import AsyncWaitSpec

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.datastream.data_stream import DataStream

__all__ = ["AsyncDataStream"]


def _require_strategy(strategy: Any, call: str) -> Optional[AsyncRetryStrategy]:
    """The strategy to run (None for NO_RETRY_STRATEGY); a clear error for None or a non-strategy."""
    if strategy is NO_RETRY_STRATEGY:
        return None
    if strategy is None:
        raise InvalidProgramError(f"{call}: async_retry_strategy should not be None (use "
                                  f"async_retry_strategies.NO_RETRY_STRATEGY for no retries)")
    if not isinstance(strategy, AsyncRetryStrategy):
        raise InvalidProgramError(f"{call}: async_retry_strategy must be an AsyncRetryStrategy, got "
                                  f"{type(strategy).__name__}")
    return strategy


def _async_wait(data_stream: "DataStream", async_function: AsyncFunction, timeout: Any, capacity: int,
                output_type: Any, mode: str, retry_strategy: Optional[AsyncRetryStrategy], call: str) -> "DataStream":
    if not isinstance(async_function, AsyncFunction):
        raise InvalidFunctionError(f"{call} expects an AsyncFunction, got {type(async_function).__name__}")
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise InvalidProgramError(f"{call}: capacity must be an int >= 1, got {capacity!r}")
    timeout_ms = to_millis(timeout, "timeout")
    if timeout_ms < 0:
        raise InvalidProgramError(f"{call}: timeout must be positive (or 0 for none), got {timeout_ms} ms")
    if retry_strategy is not None:
        if timeout_ms == 0:
            raise InvalidProgramError(f"{call}: a timeout must be configured to retry (PyFlink: 'Timeout should "
                                      f"be configured when do async with retry.'), got 0 ms")
        if retry_strategy.get_retry_predicate() is None:
            raise InvalidProgramError(f"{call}: get_retry_predicate() of the async retry strategy "
                                      f"{type(retry_strategy).__name__} returned None")
    spec = AsyncWaitSpec(function=async_function, timeout=timeout_ms, capacity=capacity, output_mode=mode,
                         retry_strategy=retry_strategy, key_selector=data_stream._key_selector())
    return data_stream._one_input("Async Wait", spec, output_type)


class AsyncDataStream:
    """Factory for operators that call an AsyncFunction per element, many calls in flight."""

    @staticmethod
    def unordered_wait(data_stream: "DataStream", async_function: AsyncFunction, timeout: Any,
                       capacity: int = 100, output_type: Any = None) -> "DataStream":
        """Results are emitted as soon as their call completes (order not kept)."""
        return _async_wait(data_stream, async_function, timeout, capacity, output_type, "UNORDERED", None,
                           "AsyncDataStream.unordered_wait()")

    @staticmethod
    def ordered_wait(data_stream: "DataStream", async_function: AsyncFunction, timeout: Any,
                     capacity: int = 100, output_type: Any = None) -> "DataStream":
        """Results are emitted in the order of their inputs."""
        return _async_wait(data_stream, async_function, timeout, capacity, output_type, "ORDERED", None,
                           "AsyncDataStream.ordered_wait()")

    @staticmethod
    def unordered_wait_with_retry(data_stream: "DataStream", async_function: AsyncFunction, timeout: Any,
                                  async_retry_strategy: AsyncRetryStrategy, capacity: int = 100,
                                  output_type: Any = None) -> "DataStream":
        """As unordered_wait, retrying failed or rejected calls by ``async_retry_strategy``."""
        call = "AsyncDataStream.unordered_wait_with_retry()"
        return _async_wait(data_stream, async_function, timeout, capacity, output_type, "UNORDERED",
                           _require_strategy(async_retry_strategy, call), call)

    @staticmethod
    def ordered_wait_with_retry(data_stream: "DataStream", async_function: AsyncFunction, timeout: Any,
                                async_retry_strategy: AsyncRetryStrategy, capacity: int = 100,
                                output_type: Any = None) -> "DataStream":
        """As ordered_wait, retrying failed or rejected calls by ``async_retry_strategy``."""
        call = "AsyncDataStream.ordered_wait_with_retry()"
        return _async_wait(data_stream, async_function, timeout, capacity, output_type, "ORDERED",
                           _require_strategy(async_retry_strategy, call), call)
