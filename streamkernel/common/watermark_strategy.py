"""WatermarkStrategy: how a stream gets event-time timestamps and watermarks.

A strategy is the user's description (PyFlink's API): a timestamp assigner, the
out-of-orderness bound, idleness and alignment settings. The runtime asks it for a fresh
:class:`WatermarkGenerator` per source split or subtask; a generator is pure logic (no
threads, no clock): it sees event timestamps and, when the runtime's periodic timer fires
(every ``pipeline.auto-watermark-interval``, 200 ms by default), says which watermark to
emit. Idleness is the runtime's job, driven by :attr:`WatermarkStrategy.idle_timeout_ms`.
"""

from __future__ import annotations

import abc
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from streamkernel.common.time import Duration, to_millis
from streamkernel.errors import InvalidFunctionError, InvalidProgramError

__all__ = [
    "WatermarkStrategy",
    "TimestampAssigner",
    "WatermarkGenerator",
    "BoundedOutOfOrdernessWatermarks",
    "NoWatermarksGenerator",
    "WatermarkAlignment",
    "MIN_WATERMARK",
    "MAX_WATERMARK",
]

#: The lowest watermark: no event time has passed yet (Java's Long.MIN_VALUE).
MIN_WATERMARK = -(2**63)
#: The highest watermark: event time has ended (sent at end of input; Java's Long.MAX_VALUE).
MAX_WATERMARK = 2**63 - 1

#: Default interval between alignment updates (Flink's 1 s).
_DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS = 1000


class TimestampAssigner(abc.ABC):
    """Assigns event-time timestamps to elements, in milliseconds since the epoch.

    Subclass it, or pass a plain function ``f(value, record_timestamp)`` (or ``f(value)``)
    to :meth:`WatermarkStrategy.with_timestamp_assigner`.
    """

    @abc.abstractmethod
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        """The timestamp of ``value``. ``record_timestamp`` is the element's current
        timestamp, or :data:`MIN_WATERMARK` if it has none."""


class _FunctionTimestampAssigner(TimestampAssigner):
    """A plain function used as a TimestampAssigner."""

    def __init__(self, function: Callable[..., int]) -> None:
        self._function = function
        self._takes_timestamp = _accepts_two_arguments(function)

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        if self._takes_timestamp:
            return self._function(value, record_timestamp)
        return self._function(value)

    def __repr__(self) -> str:
        return f"TimestampAssigner({getattr(self._function, '__qualname__', self._function)!r})"


def _accepts_two_arguments(function: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature: assume PyFlink's form
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


class WatermarkGenerator(abc.ABC):
    """Generates watermarks from the timestamps of events (Flink's WatermarkGenerator).

    Pure logic: the runtime calls :meth:`on_event` for events (the built-in generators only
    track the maximum timestamp, so calling it once per batch with the batch's largest
    timestamp is equivalent) and :meth:`on_periodic_emit` on its periodic timer. Both return
    the watermark to emit now, or None.
    """

    @abc.abstractmethod
    def on_event(self, event: Any, event_timestamp: int) -> Optional[int]:
        """Sees one event; returns a watermark to emit at once (punctuated), or None."""

    @abc.abstractmethod
    def on_periodic_emit(self) -> Optional[int]:
        """The watermark to emit on the periodic timer, or None."""


class BoundedOutOfOrdernessWatermarks(WatermarkGenerator):
    """Watermarks that trail the largest timestamp seen by a fixed bound (Flink's generator).

    After events up to timestamp ``T`` the watermark is ``T - max_out_of_orderness_ms - 1``:
    events at ``T - bound`` may still come and are not late. With a bound of 0 this is the
    monotonous-timestamps generator. Before the first event there is no watermark (None),
    which is what Flink's initial ``Long.MIN_VALUE`` watermark amounts to.
    """

    def __init__(self, max_out_of_orderness_ms: int) -> None:
        if max_out_of_orderness_ms < 0:
            raise InvalidProgramError(
                f"max_out_of_orderness must not be negative, got {max_out_of_orderness_ms} ms"
            )
        self._bound = max_out_of_orderness_ms
        self._max_timestamp: Optional[int] = None

    def on_event(self, event: Any, event_timestamp: int) -> Optional[int]:
        if self._max_timestamp is None or event_timestamp > self._max_timestamp:
            self._max_timestamp = event_timestamp
        return None

    def on_periodic_emit(self) -> Optional[int]:
        if self._max_timestamp is None:
            return None
        return max(self._max_timestamp - self._bound - 1, MIN_WATERMARK)


class NoWatermarksGenerator(WatermarkGenerator):
    """Never emits a watermark (``WatermarkStrategy.no_watermarks()``)."""

    def on_event(self, event: Any, event_timestamp: int) -> Optional[int]:
        return None

    def on_periodic_emit(self) -> Optional[int]:
        return None


@dataclass(frozen=True)
class WatermarkAlignment:
    """Watermark alignment settings: sources in ``watermark_group`` may not run ahead of the
    group's lowest watermark by more than ``max_allowed_watermark_drift_ms``."""

    watermark_group: str
    max_allowed_watermark_drift_ms: int
    update_interval_ms: int


class WatermarkStrategy:
    """Defines how to generate watermarks and assign timestamps in a stream (PyFlink's API).

        >>> strategy = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
        ...             .with_timestamp_assigner(lambda event, ts: event[1])
        ...             .with_idleness(Duration.of_minutes(1)))
        >>> strategy.idle_timeout_ms
        60000

    As in PyFlink, ``with_*`` methods set the option on this strategy and return it, so
    calls chain; build a new strategy from a factory for a different setting.
    """

    def __init__(self, max_out_of_orderness_ms: Optional[int]) -> None:
        # None means "no watermarks"; 0 means monotonous timestamps.
        self._max_out_of_orderness_ms = max_out_of_orderness_ms
        self._timestamp_assigner: Optional[TimestampAssigner] = None
        self._idle_timeout_ms: Optional[int] = None
        self._alignment: Optional[WatermarkAlignment] = None

    # -- factories -----------------------------------------------------------------------------

    @staticmethod
    def for_monotonous_timestamps() -> "WatermarkStrategy":
        """For ascending timestamps: the watermark follows the latest timestamp."""
        return WatermarkStrategy(0)

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Union[Duration, Any]) -> "WatermarkStrategy":
        """For events out of order by at most ``max_out_of_orderness``: once an event with
        timestamp T was seen, no events older than T - bound are expected."""
        bound = to_millis(max_out_of_orderness, "max_out_of_orderness")
        if bound < 0:
            raise InvalidProgramError(f"max_out_of_orderness must not be negative, got {bound} ms")
        return WatermarkStrategy(bound)

    @staticmethod
    def no_watermarks() -> "WatermarkStrategy":
        """Generates no watermarks (processing-time programs, or timestamps only)."""
        return WatermarkStrategy(None)

    # -- options (PyFlink: set and return self) ------------------------------------------------

    def with_timestamp_assigner(
        self, timestamp_assigner: Union[TimestampAssigner, Callable[..., int]]
    ) -> "WatermarkStrategy":
        """Uses ``timestamp_assigner`` (a TimestampAssigner or a plain function) to extract
        event timestamps from elements."""
        if isinstance(timestamp_assigner, TimestampAssigner):
            self._timestamp_assigner = timestamp_assigner
        elif callable(timestamp_assigner):
            self._timestamp_assigner = _FunctionTimestampAssigner(timestamp_assigner)
        else:
            raise InvalidFunctionError(
                "with_timestamp_assigner(timestamp_assigner) needs a TimestampAssigner or a "
                f"function (value, record_timestamp) -> int, got {timestamp_assigner!r}"
            )
        return self

    def with_idleness(self, idle_timeout: Union[Duration, Any]) -> "WatermarkStrategy":
        """Marks a source split idle after ``idle_timeout`` without events, so it does not
        hold back the watermark downstream."""
        timeout = to_millis(idle_timeout, "idle_timeout")
        if timeout <= 0:
            raise InvalidProgramError(f"idle_timeout must be positive, got {timeout} ms")
        self._idle_timeout_ms = timeout
        return self

    def with_watermark_alignment(
        self,
        watermark_group: str,
        max_allowed_watermark_drift: Union[Duration, Any],
        update_interval: Optional[Union[Duration, Any]] = None,
    ) -> "WatermarkStrategy":
        """Aligns watermarks across the sources of ``watermark_group``: a source pauses when
        it is more than ``max_allowed_watermark_drift`` ahead of the group's lowest watermark;
        alignment is recomputed every ``update_interval`` (1 s by default)."""
        if not isinstance(watermark_group, str) or not watermark_group:
            raise InvalidProgramError(
                f"with_watermark_alignment(watermark_group) needs a non-empty str, got {watermark_group!r}"
            )
        drift = to_millis(max_allowed_watermark_drift, "max_allowed_watermark_drift")
        interval = (
            _DEFAULT_ALIGNMENT_UPDATE_INTERVAL_MS
            if update_interval is None
            else to_millis(update_interval, "update_interval")
        )
        if drift < 0 or interval <= 0:
            raise InvalidProgramError(
                f"with_watermark_alignment needs max_allowed_watermark_drift >= 0 and "
                f"update_interval > 0, got {drift} ms and {interval} ms"
            )
        self._alignment = WatermarkAlignment(watermark_group, drift, interval)
        return self

    # -- what the runtime reads ----------------------------------------------------------------

    @property
    def timestamp_assigner(self) -> Optional[TimestampAssigner]:
        """The timestamp assigner, or None (records keep the timestamps they carry)."""
        return self._timestamp_assigner

    @property
    def idle_timeout_ms(self) -> Optional[int]:
        """The idleness timeout in milliseconds, or None when idleness detection is off."""
        return self._idle_timeout_ms

    @property
    def max_out_of_orderness_ms(self) -> Optional[int]:
        """The out-of-orderness bound in milliseconds (0: monotonous), None for no watermarks."""
        return self._max_out_of_orderness_ms

    @property
    def watermark_alignment(self) -> Optional[WatermarkAlignment]:
        """The alignment settings, or None."""
        return self._alignment

    def create_watermark_generator(self) -> WatermarkGenerator:
        """A fresh generator for one source split or subtask."""
        if self._max_out_of_orderness_ms is None:
            return NoWatermarksGenerator()
        return BoundedOutOfOrdernessWatermarks(self._max_out_of_orderness_ms)

    def __repr__(self) -> str:
        if self._max_out_of_orderness_ms is None:
            kind = "no_watermarks()"
        elif self._max_out_of_orderness_ms == 0:
            kind = "for_monotonous_timestamps()"
        else:
            kind = f"for_bounded_out_of_orderness({Duration.of_millis(self._max_out_of_orderness_ms)!r})"
        parts = [f"WatermarkStrategy.{kind}"]
        if self._timestamp_assigner is not None:
            parts.append(f"with_timestamp_assigner({self._timestamp_assigner!r})")
        if self._idle_timeout_ms is not None:
            parts.append(f"with_idleness({Duration.of_millis(self._idle_timeout_ms)!r})")
        if self._alignment is not None:
            a = self._alignment
            parts.append(
                f"with_watermark_alignment({a.watermark_group!r}, "
                f"{Duration.of_millis(a.max_allowed_watermark_drift_ms)!r}, "
                f"{Duration.of_millis(a.update_interval_ms)!r})"
            )
        return ".".join(parts)
