"""Declared configuration options and the parsers for Flink's value notations.

Flink keeps configuration values as text (``"10 s"``, ``"true"``, ``"64 mb"``) and parses
them when a typed value is asked for. This module holds those parsers
(:func:`parse_duration_ms`, :func:`parse_memory_size`, :func:`parse_boolean`) and
:class:`ConfigOption`, a key declared with a type and a default, built PyFlink's way::

    >>> INTERVAL = ConfigOptions.key("execution.checkpointing.interval").duration_type().no_default_value()
    >>> PARALLELISM = ConfigOptions.key("parallelism.default").int_type().default_value(1)

:class:`~streamkernel.common.configuration.Configuration` reads and writes values through
an option's type, so a wrong value fails with :class:`IllegalConfigurationError` naming
the key and the value.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Callable, Generic, Optional, TypeVar

from streamkernel.common.time import Duration, Time, to_millis
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError

__all__ = [
    "ConfigOption",
    "ConfigOptions",
    "parse_duration_ms",
    "parse_memory_size",
    "parse_boolean",
    "format_value",
]

T = TypeVar("T")

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
    return IllegalConfigurationError(f"Could not parse value {value!r}{where}: expected {expected}")


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


def _parse_int(value: Any, key: Optional[str] = None) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise _fail(value, key, "an integer") from None


def _parse_float(value: Any, key: Optional[str] = None) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        raise _fail(value, key, "a floating point number") from None


def _format_memory(value: int) -> str:
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


class _OptionType:
    """How one option type parses text and which Python values it accepts."""

    def __init__(self, name: str, parse: Callable[[Any, Optional[str]], Any], accepts: Callable[[Any], bool]):
        self.name = name
        self.parse = parse
        self.accepts = accepts


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_time(v: Any) -> bool:
    return isinstance(v, (Duration, Time, datetime.timedelta)) or _is_int(v)


def _parse_string(v: Any, key: Optional[str] = None) -> str:
    return v if isinstance(v, str) else format_value(v)


def _parse_duration(v: Any, key: Optional[str] = None) -> Duration:
    return Duration.of_millis(parse_duration_ms(v, key))


_TYPES = {
    "bool": _OptionType("bool", parse_boolean, lambda v: isinstance(v, bool)),
    "int": _OptionType("int", _parse_int, _is_int),
    "long": _OptionType("long", _parse_int, _is_int),
    "float": _OptionType("float", _parse_float, _is_number),
    "double": _OptionType("double", _parse_float, _is_number),
    "string": _OptionType("string", _parse_string, lambda v: isinstance(v, str)),
    "duration": _OptionType("duration", _parse_duration, _is_time),
    "memory": _OptionType("memory", parse_memory_size, _is_int),
}


class ConfigOption(Generic[T]):
    """A configuration parameter: its key, value type, default and older (deprecated) keys.

    Built with :class:`ConfigOptions`; immutable once created. Pass it to
    ``Configuration.get``/``set`` to read and write typed values.
    """

    def __init__(
        self,
        key: str,
        option_type: str,
        default: Optional[T] = None,
        description: str = "",
        deprecated_keys: tuple[str, ...] = (),
    ) -> None:
        self._key = key
        self._type = _TYPES[option_type]
        self._default = default
        self._description = description
        self._deprecated_keys = tuple(deprecated_keys)

    def key(self) -> str:
        """The configuration key."""
        return self._key

    def type_name(self) -> str:
        """The value type: ``bool``, ``int``, ``long``, ``float``, ``double``, ``string``,
        ``duration`` or ``memory``."""
        return self._type.name

    def default_value(self) -> Optional[T]:
        """The default value, or None."""
        return self._default

    def has_default_value(self) -> bool:
        """True when the option declares a default."""
        return self._default is not None

    def description(self) -> str:
        """What the option configures."""
        return self._description

    def deprecated_keys(self) -> tuple[str, ...]:
        """Older keys still read when the key itself is not set."""
        return self._deprecated_keys

    def with_description(self, description: str) -> "ConfigOption[T]":
        """A copy of this option with ``description``."""
        return ConfigOption(self._key, self._type.name, self._default, description, self._deprecated_keys)

    def with_deprecated_keys(self, *deprecated_keys: str) -> "ConfigOption[T]":
        """A copy of this option that also reads ``deprecated_keys`` (in order) when unset."""
        return ConfigOption(self._key, self._type.name, self._default, self._description, deprecated_keys)

    def parse(self, text: Any) -> T:
        """The typed value of ``text``; :class:`IllegalConfigurationError` names the key."""
        return self._type.parse(text, self._key)

    def format(self, value: Any) -> str:
        """``value`` as configuration text, after checking it fits the option's type."""
        if not self._type.accepts(value):
            raise IllegalConfigurationError(
                f"Option '{self._key}' expects a {self._type.name} value, got "
                f"{type(value).__name__} {value!r}"
            )
        if self._type.name == "memory":
            return _format_memory(value)
        if self._type.name == "duration" and _is_int(value):
            value = Duration.of_millis(value)
        return format_value(value)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ConfigOption)
            and (self._key, self._type.name, self._default, self._deprecated_keys)
            == (other._key, other._type.name, other._default, other._deprecated_keys)
        )

    def __hash__(self) -> int:
        return hash((self._key, self._type.name))

    def __repr__(self) -> str:
        return f"ConfigOption(key={self._key!r}, type={self._type.name}, default={self._default!r})"


class ConfigOptions:
    """Builds :class:`ConfigOption` objects: ``ConfigOptions.key(k).<type>_type().default_value(v)``.

        >>> ConfigOptions.key("tmp.dir").string_type().default_value("/tmp")
        ConfigOption(key='tmp.dir', type=string, default='/tmp')
    """

    @staticmethod
    def key(key: str) -> "ConfigOptions.OptionBuilder":
        """Starts building an option for ``key``."""
        if not isinstance(key, str) or not key.strip():
            raise InvalidProgramError(f"ConfigOptions.key(key) needs a non-empty string, got {key!r}")
        return ConfigOptions.OptionBuilder(key)

    class OptionBuilder:
        """Second step of building an option: choose its value type."""

        def __init__(self, key: str) -> None:
            self._key = key

        def _typed(self, name: str) -> "ConfigOptions.TypedConfigOptionBuilder[Any]":
            return ConfigOptions.TypedConfigOptionBuilder(self._key, name)

        def boolean_type(self) -> "ConfigOptions.TypedConfigOptionBuilder[bool]":
            """Values are ``bool`` (``'true'``/``'false'``)."""
            return self._typed("bool")

        def int_type(self) -> "ConfigOptions.TypedConfigOptionBuilder[int]":
            """Values are 32-bit ``int``."""
            return self._typed("int")

        def long_type(self) -> "ConfigOptions.TypedConfigOptionBuilder[int]":
            """Values are 64-bit ``int``."""
            return self._typed("long")

        def float_type(self) -> "ConfigOptions.TypedConfigOptionBuilder[float]":
            """Values are ``float``."""
            return self._typed("float")

        def double_type(self) -> "ConfigOptions.TypedConfigOptionBuilder[float]":
            """Values are ``float`` (Java double)."""
            return self._typed("double")

        def string_type(self) -> "ConfigOptions.TypedConfigOptionBuilder[str]":
            """Values are ``str``."""
            return self._typed("string")

        def duration_type(self) -> "ConfigOptions.TypedConfigOptionBuilder[Duration]":
            """Values are :class:`Duration` (text like ``'10 s'``); Flink's durationType."""
            return self._typed("duration")

        def memory_type(self) -> "ConfigOptions.TypedConfigOptionBuilder[int]":
            """Values are sizes in bytes (text like ``'64 mb'``); Flink's memoryType."""
            return self._typed("memory")

    class TypedConfigOptionBuilder(Generic[T]):
        """Last step of building an option: its default value (or none)."""

        def __init__(self, key: str, option_type: str) -> None:
            self._key = key
            self._type = option_type

        def default_value(self, value: T) -> "ConfigOption[T]":
            """The option, with ``value`` returned when the key is not set."""
            if not _TYPES[self._type].accepts(value):
                raise InvalidProgramError(
                    f"Default of option '{self._key}' must be a {self._type} value, got "
                    f"{type(value).__name__} {value!r}"
                )
            default: Any = value
            if self._type == "duration" and not isinstance(default, Duration):
                default = Duration.of_millis(to_millis(default))
            return ConfigOption(self._key, self._type, default)

        def no_default_value(self) -> "ConfigOption[T]":
            """The option, returning None when the key is not set."""
            return ConfigOption(self._key, self._type, None)
