"""Parsers for Flink's configuration value notations, and the writer back to text.

Flink keeps configuration values as text (``"10 s"``, ``"true"``, ``"64 mb"``) and parses
them when a typed value is asked for: durations (Flink's ``TimeUtils``), memory sizes
(``MemorySize``, binary units), booleans, integers and floats. Each parser takes the key it
parses for, so its :class:`IllegalConfigurationError` names the key, the value and what
was expected.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Optional

from streamkernel.common.time import Duration, Time, to_millis
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError

__all__ = ["parse_duration_ms", "parse_memory_size", "parse_boolean", "format_value", "format_memory"]

# Flink's TimeUtils.TimeUnit labels ("plural" labels also take a trailing "s").
_DURATION_UNITS_NS: dict[str, int] = {}
for _ns, _labels in (
    (86_400_000_000_000, ("d", "day", "days")),
    (3_600_000_000_000, ("h", "hour", "hours")),
    (60_000_000_000, ("min", "m", "minute", "minutes")),
    (1_000_000_000, ("s", "sec", "secs", "second", "seconds")),
    (1_000_000, ("ms", "milli", "millis", "millisecond", "milliseconds")),
    (1_000, ("µs", "us", "micro", "micros", "microsecond", "microseconds")),
    (1, ("ns", "nano", "nanos", "nanosecond", "nanoseconds")),
):
    for _label in _labels:
        _DURATION_UNITS_NS[_label] = _ns

_MEMORY_UNITS = {
    **dict.fromkeys(("b", "bytes"), 1),
    **dict.fromkeys(("k", "kb", "kibibytes"), 1 << 10),
    **dict.fromkeys(("m", "mb", "mebibytes"), 1 << 20),
    **dict.fromkeys(("g", "gb", "gibibytes"), 1 << 30),
    **dict.fromkeys(("t", "tb", "tebibytes"), 1 << 40),
}
_NUMBER_AND_UNIT = re.compile(r"^(\d+)\s*(\D*)$")
_ISO_DURATION = re.compile(
    r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?)?$", re.IGNORECASE
)


def _fail(value: Any, key: Optional[str], expected: str) -> IllegalConfigurationError:
    where = f" for key '{key}'" if key else ""
    shown = repr(value)
    if len(shown) > 60:  # a value pasted by mistake: its start and its length are enough
        shown = f"{shown[:40]}... ({len(str(value))} characters)"
    return IllegalConfigurationError(f"Could not parse value {shown}{where}: expected {expected}")


def parse_duration_ms(value: Any, key: Optional[str] = None) -> int:
    """Milliseconds in a duration written Flink's way: ``'10 s'``, ``'1 min'``, ``'500 ms'``,
    ``'2h'``, ``'PT10S'`` (ISO-8601) or a bare number of milliseconds (``'1000'``).

    ``Duration``, ``Time``, ``timedelta`` and ``int`` values are accepted as they are; ``key``
    (if given) is named in the :class:`IllegalConfigurationError` raised for anything else.

        >>> parse_duration_ms("10 s"), parse_duration_ms("1 min"), parse_duration_ms("250")
        (10000, 60000, 250)
    """
    if isinstance(value, (Duration, Time, datetime.timedelta)) or (
        isinstance(value, int) and not isinstance(value, bool)
    ):
        return to_millis(value)
    if not isinstance(value, str):
        raise _fail(value, key, "a duration such as '10 s', '1 min' or '500 ms'")
    text = value.strip()
    iso = _ISO_DURATION.match(text)
    if iso and text.upper() != "P" and text.upper() != "PT":
        days, hours, minutes, seconds, fraction = iso.groups()
        total_s = int(days or 0) * 86_400 + int(hours or 0) * 3_600 + int(minutes or 0) * 60
        total_s += int(seconds or 0)
        return total_s * 1000 + int((fraction or "0").ljust(9, "0")) // 1_000_000
    match = _NUMBER_AND_UNIT.match(text)
    if match:
        number, unit = int(match.group(1)), match.group(2).strip().lower()
        if not unit:
            return number
        if unit in _DURATION_UNITS_NS:
            return number * _DURATION_UNITS_NS[unit] // 1_000_000
    raise _fail(
        value,
        key,
        "a duration such as '10 s', '1 min' or '500 ms' (units: d, h, min, s, ms, us, ns; "
        "no unit means milliseconds)",
    )


def parse_memory_size(value: Any, key: Optional[str] = None) -> int:
    """Bytes in a memory size written Flink's way: ``'64 mb'``, ``'1g'``, ``'512 kb'`` or a
    bare number of bytes. Units are binary (1 kb = 1024 bytes), as in Flink's MemorySize.

        >>> parse_memory_size("64 mb"), parse_memory_size("1 kb"), parse_memory_size(10)
        (67108864, 1024, 10)
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        match = _NUMBER_AND_UNIT.match(value.strip())
        if match:
            number, unit = int(match.group(1)), match.group(2).strip().lower()
            if not unit:
                return number
            if unit in _MEMORY_UNITS:
                return number * _MEMORY_UNITS[unit]
    raise _fail(value, key, "a memory size such as '64 mb', '1 gb' or a number of bytes")


def parse_boolean(value: Any, key: Optional[str] = None) -> bool:
    """``'true'`` or ``'false'`` (any case), as Flink accepts them; bools pass through."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
    raise _fail(value, key, "'true' or 'false'")


def parse_int(value: Any, key: Optional[str] = None) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if len(text) > 40:  # not an int of Flink's (int() refuses 4300+ digits with an unrelated message)
        raise _fail(value, key, "an integer")
    try:
        return int(text)
    except ValueError:
        raise _fail(value, key, "an integer") from None


def parse_float(value: Any, key: Optional[str] = None) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        raise _fail(value, key, "a floating point number") from None


def format_memory(value: int) -> str:
    """A byte count in its highest exact binary unit (``67108864`` -> ``'64 mb'``)."""
    for unit, size in (("tb", 1 << 40), ("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if value and value % size == 0:
            return f"{value // size} {unit}"
    return f"{value} bytes"


def format_value(value: Any) -> str:
    """A Python value written as Flink writes configuration values: ``True`` -> ``'true'``,
    durations in their highest exact unit (``'10 s'``), lists joined by ``;``, dicts as
    ``'k1:v1,k2:v2'``; strings unchanged."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (Duration, Time, datetime.timedelta)):
        return str(Duration.of_millis(to_millis(value)))
    if isinstance(value, (list, tuple)):
        return ";".join(format_value(item) for item in value)
    if isinstance(value, dict):
        return ",".join(f"{format_value(k)}:{format_value(v)}" for k, v in value.items())
    raise InvalidProgramError(
        f"Cannot store a {type(value).__name__} ({value!r}) in a Configuration: use str, int, "
        "float, bool, Duration, list or dict"
    )
