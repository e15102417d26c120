"""``DataGeneratorSource``: records made by a function of their index, optionally rate-limited.

Mirrors Flink's Java ``DataGeneratorSource(generatorFunction, count, rateLimiterStrategy,
typeInfo)`` (PyFlink has no Python counterpart; this is a streamkernel extra). The
generator is called with the index 0, 1, 2, ...; ``count=None`` makes the source
unbounded; ``records_per_second`` limits the rate across all source subtasks. Being a
function of the index, it is replayable: restoring a position regenerates the same records.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.datastream.connectors.base import Boundedness, Source
from streamkernel.errors import InvalidFunctionError, InvalidProgramError

__all__ = ["DataGeneratorSource", "RateLimiterStrategy"]


class RateLimiterStrategy:
    """How fast a generator source emits, as Flink's ``RateLimiterStrategy``."""

    def __init__(self, records_per_second: Optional[float]) -> None:
        if records_per_second is not None and records_per_second <= 0:
            raise InvalidProgramError(
                f"RateLimiterStrategy: records_per_second must be > 0, got {records_per_second!r}")
        self.records_per_second = records_per_second

    @staticmethod
    def per_second(records_per_second: float) -> "RateLimiterStrategy":
        """At most ``records_per_second`` records per second, over all subtasks."""
        return RateLimiterStrategy(records_per_second)

    @staticmethod
    def no_op() -> "RateLimiterStrategy":
        """No limit: as fast as downstream accepts."""
        return RateLimiterStrategy(None)

    def __repr__(self) -> str:
        return f"RateLimiterStrategy({self.records_per_second})"


class DataGeneratorSource(Source):
    """Records ``generator_function(i)`` for i = 0, 1, ... (``count`` of them, or forever)."""

    default_name = "Data Generator"

    def __init__(self, generator_function: Callable[[int], Any], count: Optional[int] = None,
                 rate_limiter_strategy: Optional[RateLimiterStrategy | float] = None,
                 type_info: Any = None) -> None:
        if not callable(generator_function):
            raise InvalidFunctionError(
                f"DataGeneratorSource: generator_function must be callable (index -> record), "
                f"got {type(generator_function).__name__}")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise InvalidProgramError(f"DataGeneratorSource: count must be an int >= 0 or None, got {count!r}")
        if not isinstance(rate_limiter_strategy, RateLimiterStrategy):
            rate_limiter_strategy = RateLimiterStrategy(rate_limiter_strategy)
        self.generator_function = generator_function
        self.count = count
        self.rate_limiter_strategy = rate_limiter_strategy
        self.type_info = type_info

    @property
    def records_per_second(self) -> Optional[float]:
        """The rate limit over all subtasks, or None."""
        return self.rate_limiter_strategy.records_per_second

    def get_boundedness(self) -> Boundedness:
        """BOUNDED with a count, CONTINUOUS_UNBOUNDED without."""
        return Boundedness.BOUNDED if self.count is not None else Boundedness.CONTINUOUS_UNBOUNDED

    def __repr__(self) -> str:
        return f"DataGeneratorSource(count={self.count}, rate={self.records_per_second})"
