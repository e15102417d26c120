"""Duration arguments of the DataStream interface modules, as whole milliseconds.

Window sizes, gaps, trigger intervals, state TTLs and checkpoint timeouts are given as a
``Duration`` or a ``Time`` (anything with ``to_milliseconds()``: duck-typed, so objects of
other libraries work too), a ``datetime.timedelta``, or a plain ``int`` number of
milliseconds. :func:`_to_millis` turns each into an ``int`` and names the argument when it
cannot: an argument of another type is an InvalidArgumentTypeError (a ``TypeError``; PyFlink fails
there with an ``AttributeError`` on ``to_milliseconds``, an accident of duck typing).
(Configuration strings such as ``'10 s'`` are parsed by
``streamkernel.common.configuration.parse_duration_ms``.)
"""

from __future__ import annotations

import datetime
from typing import Any

from streamkernel.errors import InvalidArgumentTypeError, InvalidProgramError


def _to_millis(value: Any, argument_name: str) -> int:
    """Return ``value`` (Duration, Time, timedelta or int milliseconds) as int milliseconds.

    Raises :class:`InvalidArgumentTypeError` naming ``argument_name`` for anything else, and
    :class:`InvalidProgramError` when ``to_milliseconds()`` is no whole number.
    """
    if isinstance(value, bool):
        raise InvalidArgumentTypeError(
            f"{argument_name} must be a Duration, a Time or an int number of milliseconds, "
            f"got the bool {value!r}"
        )
    if isinstance(value, int):
        return value
    if isinstance(value, datetime.timedelta):
        return (value.days * 86_400_000) + (value.seconds * 1000) + value.microseconds // 1000
    to_ms = getattr(value, "to_milliseconds", None)
    if callable(to_ms):
        millis = to_ms()
        if isinstance(millis, int) and not isinstance(millis, bool):
            return millis
        if isinstance(millis, float) and millis.is_integer():
            return int(millis)
        raise InvalidProgramError(
            f"{argument_name}: to_milliseconds() of {value!r} returned {millis!r}, "
            "not a whole number of milliseconds"
        )
    raise InvalidArgumentTypeError(
        f"{argument_name} must be a Duration, a Time, a datetime.timedelta or an int number "
        f"of milliseconds, got {type(value).__name__} {value!r}"
    )
