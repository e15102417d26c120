"""``AsyncDataStream``: apply an AsyncFunction to a stream, as PyFlink's ``AsyncDataStream``.

``unordered_wait`` emits results as their calls complete; ``ordered_wait`` in input order.
Each adds an ``async_wait`` operator whose params are ``timeout`` (ms), ``capacity`` (calls
in flight per subtask), ``output_mode`` ("ORDERED" | "UNORDERED") and ``retry_strategy``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from streamkernel.datastream._durations import _to_millis
from streamkernel.datastream.function_async import AsyncFunction, AsyncRetryStrategy
from streamkernel.errors import InvalidFunctionError, InvalidProgramError
from streamkernel.graph.transformations import OperatorSpec

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.datastream.data_stream import DataStream

__all__ = ["AsyncDataStream"]


def _async_wait(data_stream: "DataStream", async_function: AsyncFunction, timeout: Any, capacity: int,
                output_type: Any, mode: str, retry_strategy: Optional[AsyncRetryStrategy], call: str) -> "DataStream":
    if not isinstance(async_function, AsyncFunction):
        raise InvalidFunctionError(f"{call} expects an AsyncFunction, got {type(async_function).__name__}")
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise InvalidProgramError(f"{call}: capacity must be an int >= 1, got {capacity!r}")
    timeout_ms = _to_millis(timeout, "timeout")
    if timeout_ms <= 0:
        raise InvalidProgramError(f"{call}: timeout must be positive, got {timeout_ms} ms")
    spec = OperatorSpec("async_wait", async_function, {
        "timeout": timeout_ms, "capacity": capacity, "output_mode": mode, "retry_strategy": retry_strategy,
        "key_selector": data_stream._key_selector()})
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
        return _async_wait(data_stream, async_function, timeout, capacity, output_type, "UNORDERED",
                           async_retry_strategy, "AsyncDataStream.unordered_wait_with_retry()")

    @staticmethod
    def ordered_wait_with_retry(data_stream: "DataStream", async_function: AsyncFunction, timeout: Any,
                                async_retry_strategy: AsyncRetryStrategy, capacity: int = 100,
                                output_type: Any = None) -> "DataStream":
        """As ordered_wait, retrying failed or rejected calls by ``async_retry_strategy``."""
        return _async_wait(data_stream, async_function, timeout, capacity, output_type, "ORDERED",
                           async_retry_strategy, "AsyncDataStream.ordered_wait_with_retry()")
