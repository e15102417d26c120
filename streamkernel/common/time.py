"""Lengths of time and points in time: :class:`Duration`, :class:`Time`, :class:`Instant`.

PyFlink has two ways to say "how long": ``Duration`` (``java.time.Duration``, used by
watermark strategies and checkpointing) and the older ``Time`` (used by windows and
restart strategies in 1.x programs). Both are plain immutable values here, both expose
``to_milliseconds()``, and :func:`to_millis` turns any accepted spelling of a length of
time (``Duration``, ``Time``, ``datetime.timedelta`` or an ``int`` of milliseconds) into
milliseconds, naming the argument when it gets something else.
"""

from __future__ import annotations

import datetime
import functools
from typing import Any, Union

from streamkernel.errors import InvalidArgumentTypeError, InvalidProgramError

__all__ = ["Duration", "Time", "Instant", "to_millis", "TimeLike"]

_NANOS_PER_MILLI = 1_000_000
_NANOS_PER_SECOND = 1_000_000_000

# (nanoseconds per unit, Flink's label, Duration factory name): highest unit first.
# Flink's TimeUtils.formatWithHighestUnit writes a duration with the largest unit that
# divides it exactly; the labels are the first ones Flink's parser accepts.
_UNITS = (
    (86_400 * _NANOS_PER_SECOND, "d", "of_days"),
    (3_600 * _NANOS_PER_SECOND, "h", "of_hours"),
    (60 * _NANOS_PER_SECOND, "min", "of_minutes"),
    (_NANOS_PER_SECOND, "s", "of_seconds"),
    (_NANOS_PER_MILLI, "ms", "of_millis"),
    (1_000, "us", None),
    (1, "ns", "of_nanos"),
)


def _check_int(value: Any, argument: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidProgramError(
            f"{argument} must be an int, got {type(value).__name__} {value!r}"
        )
    return value


@functools.total_ordering
class Duration:
    """A time-based amount of time, such as '34.5 seconds' (Java's ``java.time.Duration``).

    Build one with the ``of_*`` factories; it is immutable, hashable and ordered::

        >>> Duration.of_seconds(5).to_milliseconds()
        5000
        >>> str(Duration.of_minutes(2))
        '2 min'
    """

    __slots__ = ("_nanos",)
    _nanos: int

    def __init__(self, nanos: int) -> None:
        object.__setattr__(self, "_nanos", _check_int(nanos, "Duration(nanos)"))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Duration is immutable")

    @staticmethod
    def of_days(days: int) -> "Duration":
        """A duration of ``days`` standard 24-hour days."""
        return Duration(_check_int(days, "days") * 86_400 * _NANOS_PER_SECOND)

    @staticmethod
    def of_hours(hours: int) -> "Duration":
        """A duration of ``hours`` hours."""
        return Duration(_check_int(hours, "hours") * 3_600 * _NANOS_PER_SECOND)

    @staticmethod
    def of_minutes(minutes: int) -> "Duration":
        """A duration of ``minutes`` minutes."""
        return Duration(_check_int(minutes, "minutes") * 60 * _NANOS_PER_SECOND)

    @staticmethod
    def of_seconds(seconds: int) -> "Duration":
        """A duration of ``seconds`` seconds."""
        return Duration(_check_int(seconds, "seconds") * _NANOS_PER_SECOND)

    @staticmethod
    def of_millis(millis: int) -> "Duration":
        """A duration of ``millis`` milliseconds."""
        return Duration(_check_int(millis, "millis") * _NANOS_PER_MILLI)

    @staticmethod
    def of_nanos(nanos: int) -> "Duration":
        """A duration of ``nanos`` nanoseconds."""
        return Duration(nanos)

    def to_milliseconds(self) -> int:
        """This duration in whole milliseconds (rounded down, like Java's ``toMillis``)."""
        return self._nanos // _NANOS_PER_MILLI

    def to_nanos(self) -> int:
        """This duration in nanoseconds."""
        return self._nanos

    def to_timedelta(self) -> datetime.timedelta:
        """This duration as a ``datetime.timedelta`` (microsecond precision)."""
        return datetime.timedelta(microseconds=self._nanos // 1_000)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and self._nanos == other._nanos

    def __lt__(self, other: "Duration") -> bool:
        if not isinstance(other, Duration):
            return NotImplemented
        return self._nanos < other._nanos

    def __hash__(self) -> int:
        return hash(("Duration", self._nanos))

    def __reduce__(self) -> Any:
        return Duration, (self._nanos,)

    def _highest_unit(self) -> tuple[int, str, Any]:
        if self._nanos == 0:  # zero divides by every unit: say it in milliseconds, as Flink prints 0 ms
            return next(unit for unit in _UNITS if unit[1] == "ms")
        for size, label, factory in _UNITS:
            if self._nanos % size == 0:
                return size, label, factory
        return _UNITS[-1]  # pragma: no cover - 1 ns divides everything

    def __str__(self) -> str:
        """Flink's notation with the highest exact unit, e.g. ``'10 s'`` or ``'1500 ms'``."""
        size, label, _ = self._highest_unit()
        return f"{self._nanos // size} {label}"

    def __repr__(self) -> str:
        size, _, factory = self._highest_unit()
        if factory is None:  # microseconds have no factory: fall back to nanoseconds
            return f"Duration.of_nanos({self._nanos})"
        return f"Duration.{factory}({self._nanos // size})"


@functools.total_ordering
class Time:
    """The definition of a time interval in milliseconds (PyFlink's ``Time``).

    Used by windows and restart strategies in PyFlink 1.x programs::

        >>> Time.seconds(10).to_milliseconds()
        10000
    """

    __slots__ = ("_milliseconds",)
    _milliseconds: int

    def __init__(self, milliseconds: int) -> None:
        object.__setattr__(self, "_milliseconds", _check_int(milliseconds, "milliseconds"))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Time is immutable")

    def to_milliseconds(self) -> int:
        """This interval in milliseconds."""
        return self._milliseconds

    @staticmethod
    def milliseconds(milliseconds: int) -> "Time":
        """An interval of ``milliseconds`` milliseconds."""
        return Time(milliseconds)

    @staticmethod
    def seconds(seconds: int) -> "Time":
        """An interval of ``seconds`` seconds."""
        return Time(_check_int(seconds, "seconds") * 1000)

    @staticmethod
    def minutes(minutes: int) -> "Time":
        """An interval of ``minutes`` minutes."""
        return Time(_check_int(minutes, "minutes") * 60_000)

    @staticmethod
    def hours(hours: int) -> "Time":
        """An interval of ``hours`` hours."""
        return Time(_check_int(hours, "hours") * 3_600_000)

    @staticmethod
    def days(days: int) -> "Time":
        """An interval of ``days`` days."""
        return Time(_check_int(days, "days") * 86_400_000)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Time) and self._milliseconds == other._milliseconds

    def __lt__(self, other: "Time") -> bool:
        if not isinstance(other, Time):
            return NotImplemented
        return self._milliseconds < other._milliseconds

    def __hash__(self) -> int:
        return hash(("Time", self._milliseconds))

    def __reduce__(self) -> Any:
        return Time, (self._milliseconds,)

    def __str__(self) -> str:
        return f"{self._milliseconds} ms"

    def __repr__(self) -> str:
        return f"Time.milliseconds({self._milliseconds})"


@functools.total_ordering
class Instant:
    """An instantaneous point on the time-line (Java's ``java.time.Instant``).

    Held as whole ``seconds`` since the epoch plus ``nanos`` (0 .. 999,999,999) into that
    second, like Java; ``Types.INSTANT()`` values are Instants.
    """

    __slots__ = ("seconds", "nanos")

    def __init__(self, seconds: int, nanos: int) -> None:
        extra, nanos = divmod(_check_int(nanos, "nanos"), _NANOS_PER_SECOND)
        self.seconds = _check_int(seconds, "seconds") + extra
        self.nanos = nanos

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> "Instant":
        """The instant ``epoch_milli`` milliseconds after 1970-01-01T00:00:00Z."""
        secs, millis = divmod(_check_int(epoch_milli, "epoch_milli"), 1000)
        return Instant(secs, millis * _NANOS_PER_MILLI)

    def to_epoch_milli(self) -> int:
        """Milliseconds since 1970-01-01T00:00:00Z (rounded down)."""
        return self.seconds * 1000 + self.nanos // _NANOS_PER_MILLI

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Instant) and self.seconds == other.seconds and self.nanos == other.nanos
        )

    def __lt__(self, other: "Instant") -> bool:
        if not isinstance(other, Instant):
            return NotImplemented
        return (self.seconds, self.nanos) < (other.seconds, other.nanos)

    def __hash__(self) -> int:
        return hash(("Instant", self.seconds, self.nanos))

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"


#: Every accepted spelling of a length of time.
TimeLike = Union[Duration, Time, datetime.timedelta, int]


def to_millis(value: TimeLike, argument: str = "value") -> int:
    """Milliseconds in ``value``: a :class:`Duration` or :class:`Time` (or any object with
    ``to_milliseconds()``: duck-typed, so other libraries' durations work too), a ``timedelta``,
    or an ``int`` already in milliseconds. ``argument`` names the caller's parameter in the error:
    :class:`~streamkernel.errors.InvalidArgumentTypeError` (a ``TypeError``) for another type,
    :class:`~streamkernel.errors.InvalidProgramError` when ``to_milliseconds()`` is no whole number.

        >>> to_millis(Duration.of_seconds(2)), to_millis(datetime.timedelta(minutes=1)), to_millis(5)
        (2000, 60000, 5)
    """
    if isinstance(value, bool):
        raise InvalidArgumentTypeError(f"{argument} must be a Duration, a Time or an int number of milliseconds, "
                                       f"got the bool {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, datetime.timedelta):
        return (value.days * 86_400 + value.seconds) * 1000 + value.microseconds // 1000
    to_ms = getattr(value, "to_milliseconds", None)
    if callable(to_ms):
        millis = to_ms()
        if isinstance(millis, int) and not isinstance(millis, bool):
            return millis
        if isinstance(millis, float) and millis.is_integer():
            return int(millis)
        raise InvalidProgramError(f"{argument}: to_milliseconds() of {value!r} returned {millis!r}, "
                                  "not a whole number of milliseconds")
    raise InvalidArgumentTypeError(
        f"{argument} must be a Duration, a Time, a datetime.timedelta or an int number of milliseconds, "
        f"got {type(value).__name__} {value!r}")
