"""Declared configuration options: a key with a type, a default, a description and a check.

:class:`ConfigOption` is a key declared with a value type and a default, built PyFlink's way::

    >>> INTERVAL = ConfigOptions.key("execution.checkpointing.interval").duration_type().no_default_value()
    >>> SLOTS = ConfigOptions.key("taskmanager.numberOfTaskSlots").int_type().default_value(1).with_range(1)
    >>> SLOTS.get({"taskmanager.numberOfTaskSlots": "4"})
    4

:meth:`ConfigOption.get` reads an option from a :class:`~streamkernel.common.configuration.Configuration`
or any mapping of keys to text; :meth:`ConfigOption.parse` parses Flink's notations
(durations ``"10 s"``, memory sizes ``"64 mb"``, ``true``/``false``, enum names in any case)
and checks ranges, raising :class:`IllegalConfigurationError` naming the key, the value and
what is expected. The declared options of the runtime are in :mod:`streamkernel.common.options`.
The value parsers themselves live in :mod:`streamkernel.common.config_values`.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any, Callable, Generic, Optional, TypeVar, Union

from streamkernel.common.config_values import (
    _fail,
    parse_float,
    parse_int,
    format_memory,
    format_value,
    parse_boolean,
    parse_duration_ms,
    parse_memory_size,
)
from streamkernel.common.time import Duration, Time, to_millis
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError

__all__ = [
    "ConfigOption",
    "ConfigOptions",
    "parse_duration_ms",
    "parse_memory_size",
    "parse_boolean",
    "format_value",
    "parse_int",
    "parse_float",
]

T = TypeVar("T")
_MISSING: Any = object()


class _OptionType:
    """How one option type parses text, which Python values it accepts, and what it expects."""

    def __init__(self, name: str, parse: Callable[[Any, Optional[str]], Any], accepts: Callable[[Any], bool],
                 expected: str):
        self.name = name
        self.parse = parse
        self.accepts = accepts
        self.expected = expected


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_time(v: Any) -> bool:
    return isinstance(v, (Duration, Time, datetime.timedelta)) or _is_int(v)


def _parse_duration(value: Any, key: Optional[str] = None) -> Duration:
    return Duration.of_millis(parse_duration_ms(value, key))


def _parse_string(value: Any, key: Optional[str] = None) -> str:
    return value if isinstance(value, str) else format_value(value)


_TYPES = {
    "bool": _OptionType("bool", parse_boolean, lambda v: isinstance(v, bool), "'true' or 'false'"),
    "int": _OptionType("int", parse_int, _is_int, "an integer"),
    "long": _OptionType("long", parse_int, _is_int, "an integer"),
    "float": _OptionType("float", parse_float, _is_number, "a number"),
    "double": _OptionType("double", parse_float, _is_number, "a number"),
    "string": _OptionType("string", _parse_string, lambda v: isinstance(v, str), "text"),
    "duration": _OptionType(
        "duration", _parse_duration, _is_time,
        "a duration such as '10 s', '1 min' or '500 ms' (no unit: ms)"),
    "memory": _OptionType("memory", parse_memory_size, _is_int, "a memory size such as '64 mb' or '1 gb'"),
    "enum": _OptionType("enum", _parse_string, lambda v: isinstance(v, (str, Enum)), "one of the listed names"),
}


#: The values Java's ``int`` and ``long`` hold: Flink's int and long options refuse others.
_INT_BOUNDS = {"int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1), "memory": (0, (1 << 63) - 1)}


def _bound_text(bound: Union[int, float], type_name: str) -> str:
    return str(Duration.of_millis(int(bound))) if type_name == "duration" else f"{bound:g}"


class ConfigOption(Generic[T]):
    """A configuration parameter: its key, value type, default, description, older
    (deprecated) keys, and the values it allows (a range, or an enum's names).

    Built with :class:`ConfigOptions`; immutable once created. Read it with
    :meth:`get` (or ``Configuration.get(option)``), write it with ``Configuration.set``.
    """

    def __init__(
        self,
        key: str,
        option_type: str,
        default: Optional[T] = None,
        description: str = "",
        deprecated_keys: tuple[str, ...] = (),
        *,
        choices: tuple[str, ...] = (),
        min_value: Optional[Union[int, float]] = None,
        max_value: Optional[Union[int, float]] = None,
    ) -> None:
        self._key = key
        self._type = _TYPES[option_type]
        self._default = default
        self._description = description
        self._deprecated_keys = tuple(deprecated_keys)
        self._choices = tuple(choices)
        self._min = min_value
        self._max = max_value

    def _copy(self, **changes: Any) -> "ConfigOption[T]":
        fields: dict[str, Any] = {
            "key": self._key, "option_type": self._type.name, "default": self._default,
            "description": self._description, "deprecated_keys": self._deprecated_keys,
            "choices": self._choices, "min_value": self._min, "max_value": self._max}
        fields.update(changes)
        return ConfigOption(**fields)

    def key(self) -> str:
        """The configuration key."""
        return self._key

    def type_name(self) -> str:
        """The value type: ``bool``, ``int``, ``long``, ``float``, ``double``, ``string``,
        ``duration``, ``memory`` or ``enum``."""
        return self._type.name

    def default_value(self) -> Optional[T]:
        """The default value, or None."""
        return self._default

    def has_default_value(self) -> bool:
        """True when the option declares a default (False: built with ``no_default_value()``)."""
        return self._default is not None

    def description(self) -> str:
        """What the option configures."""
        return self._description

    def deprecated_keys(self) -> tuple[str, ...]:
        """Older keys still read when the key itself is not set."""
        return self._deprecated_keys

    def choices(self) -> tuple[str, ...]:
        """The names an ``enum`` option accepts (in any case); empty for other types."""
        return self._choices

    def range(self) -> tuple[Optional[Union[int, float]], Optional[Union[int, float]]]:
        """The smallest and largest value allowed (None: unbounded); milliseconds for durations."""
        return self._min, self._max

    def with_description(self, description: str) -> "ConfigOption[T]":
        """A copy of this option with ``description``."""
        return self._copy(description=description)

    def with_deprecated_keys(self, *deprecated_keys: str) -> "ConfigOption[T]":
        """A copy of this option that also reads ``deprecated_keys`` (in order) when unset."""
        return self._copy(deprecated_keys=tuple(deprecated_keys))

    def with_range(self, min_value: Optional[Union[int, float]] = None,
                   max_value: Optional[Union[int, float]] = None) -> "ConfigOption[T]":
        """A copy of this option that refuses values below ``min_value`` or above ``max_value``
        (numbers; milliseconds for durations)."""
        if self._type.name not in ("int", "long", "float", "double", "duration", "memory"):
            raise InvalidProgramError(f"Option '{self._key}': a range needs a numeric type, not {self._type.name}")
        return self._copy(min_value=min_value, max_value=max_value)

    def expected(self) -> str:
        """What a valid value looks like, in words (used in error messages and the docs)."""
        if self._choices:
            return "one of " + ", ".join(self._choices) + " (any case)"
        text = self._type.expected
        bounds = []
        if self._min is not None:
            bounds.append(f">= {_bound_text(self._min, self._type.name)}")
        if self._max is not None:
            bounds.append(f"<= {_bound_text(self._max, self._type.name)}")
        return text + (" " + " and ".join(bounds) if bounds else "")

    def parse(self, text: Any) -> T:
        """The typed, checked value of ``text``; :class:`IllegalConfigurationError` names the
        key, the value and what is expected."""
        try:
            value = self._type.parse(text, self._key)
        except IllegalConfigurationError:
            raise _fail(text, self._key, self.expected()) from None
        bounds = _INT_BOUNDS.get(self._type.name)
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            raise IllegalConfigurationError(
                f"Invalid value {text!r} for key '{self._key}': expected {self.expected()} that fits a "
                f"{32 if self._type.name == 'int' else 64}-bit {'long' if self._type.name == 'memory' else self._type.name}")
        if self._choices:
            name = text.name if isinstance(text, Enum) else str(text).strip()
            match = next((c for c in self._choices if c.upper() == name.upper()), None)
            if match is None:
                raise _fail(text, self._key, self.expected())
            return match  # type: ignore[return-value]
        if self._min is not None or self._max is not None:
            number = value.to_milliseconds() if isinstance(value, Duration) else value
            if (self._min is not None and number < self._min) or (self._max is not None and number > self._max):
                raise IllegalConfigurationError(
                    f"Invalid value {text!r} for key '{self._key}': expected {self.expected()}")
        return value

    def is_set(self, configuration: Mapping[str, Any]) -> bool:
        """True if ``configuration`` sets the key or one of its deprecated keys."""
        return any(k in configuration for k in (self._key,) + self._deprecated_keys)

    def source_key(self, configuration: Mapping[str, Any]) -> str:
        """The key ``configuration`` sets this option with, for messages: the key, else the
        first deprecated key set, else (unset) the key. When a deprecated key holds the same
        value as the key, the deprecated key: the environment writes a Flink 1.x key the user
        set again under its 2.x name (keeping the user's), and errors name the key the user wrote.

            >>> option = ConfigOptions.key("new").string_type().no_default_value().with_deprecated_keys("old")
            >>> option.source_key({"old": "/x", "new": "/x"}), option.source_key({"old": "/x", "new": "/y"})
            ('old', 'new')
        """
        keys = [k for k in (self._key,) + self._deprecated_keys if k in configuration]
        if not keys:
            return self._key
        if keys[0] == self._key:
            value = str(configuration[self._key]).strip()
            return next((k for k in keys[1:] if str(configuration[k]).strip() == value), self._key)
        return keys[0]

    def get(self, configuration: Mapping[str, Any], default: Any = _MISSING) -> T:
        """The option's typed value in ``configuration`` (a Configuration or any mapping of
        keys to text): the key's value, else the first deprecated key's, else ``default`` if
        given, else the option's default. An error names the key the value was read from.

            >>> ConfigOptions.key("a").duration_type().default_value(Duration.of_seconds(1)).get({"a": "2 min"})
            Duration.of_minutes(2)
        """
        for candidate in (self._key,) + self._deprecated_keys:
            if candidate in configuration:  # errors name the key read (a deprecated one, if that is it)
                option = self if candidate == self._key else self._copy(key=candidate)
                return option.parse(configuration[candidate])
        return self._default if default is _MISSING else default  # type: ignore[return-value]

    def format(self, value: Any) -> str:
        """``value`` as configuration text, after checking it fits the option's type."""
        if not self._type.accepts(value):
            raise IllegalConfigurationError(
                f"Option '{self._key}' expects a {self._type.name} value, got "
                f"{type(value).__name__} {value!r}"
            )
        if self._type.name == "memory":
            return format_memory(value)
        if self._type.name == "enum":
            return self.parse(value)  # type: ignore[return-value]
        if self._type.name == "duration" and _is_int(value):
            value = Duration.of_millis(value)
        return format_value(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConfigOption) and self._identity() == other._identity()

    def _identity(self) -> tuple:
        return (self._key, self._type.name, self._default, self._deprecated_keys, self._choices, self._min, self._max)

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

        def _typed(self, name: str, choices: tuple[str, ...] = ()) -> "ConfigOptions.TypedConfigOptionBuilder[Any]":
            return ConfigOptions.TypedConfigOptionBuilder(self._key, name, choices)

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

        def enum_type(self, values: Union[type[Enum], Iterable[str]]) -> "ConfigOptions.TypedConfigOptionBuilder[str]":
            """Values are one of the names of ``values`` (an Enum class or names), matched in
            any case and read back as the declared name; Flink's enumType."""
            names = tuple(m.name for m in values) if isinstance(values, type) else tuple(values)
            if not names:
                raise InvalidProgramError(f"Option '{self._key}': enum_type needs at least one name")
            return self._typed("enum", names)

    class TypedConfigOptionBuilder(Generic[T]):
        """Last step of building an option: its default value (or none)."""

        def __init__(self, key: str, option_type: str, choices: tuple[str, ...] = ()) -> None:
            self._key = key
            self._type = option_type
            self._choices = choices

        def default_value(self, value: T) -> "ConfigOption[T]":
            """The option, with ``value`` returned when the key is not set."""
            if not _TYPES[self._type].accepts(value):
                raise InvalidProgramError(
                    f"Default of option '{self._key}' must be a {self._type} value, got "
                    f"{type(value).__name__} {value!r}"
                )
            if self._type == "duration" and not isinstance(value, Duration):
                value = Duration.of_millis(to_millis(value))  # type: ignore[assignment, arg-type]
            option: ConfigOption[T] = ConfigOption(self._key, self._type, None, choices=self._choices)
            if self._choices:
                value = option.parse(value)
            return option._copy(default=value)

        def no_default_value(self) -> "ConfigOption[T]":
            """The option, returning None when the key is not set."""
            return ConfigOption(self._key, self._type, None, choices=self._choices)
