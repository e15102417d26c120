"""Configuration: Flink's key/value settings object, with PyFlink's typed getters and setters.

Values are stored as text, exactly as Flink stores them in its configuration files
(``"10 s"``, ``"true"``, ``"4"``); typed getters parse on read and raise
:class:`~streamkernel.errors.IllegalConfigurationError`, naming the key and the value,
when the text does not fit. A Configuration is also a read-only ``Mapping[str, str]``, so
anything that takes a mapping of Flink keys (``restart_strategy_from_configuration``)
takes a Configuration too.
"""

from __future__ import annotations

import base64
import binascii
import datetime
from collections.abc import Iterator, Mapping
from typing import Any, Dict, List, Optional, Set, Union

from streamkernel.common.config_options import (
    ConfigOption,
    format_value,
    parse_boolean,
    parse_duration_ms,
    parse_memory_size,
)
from streamkernel.common.config_options import parse_float, parse_int
from streamkernel.common.time import Duration, Time
from streamkernel.errors import IllegalConfigurationError

__all__ = ["Configuration", "parse_duration_ms", "parse_memory_size"]

_MISSING: Any = object()


class Configuration(Mapping):
    """Lightweight configuration object which stores key/value pairs (Flink's Configuration).

        >>> conf = Configuration()
        >>> conf.set_integer("parallelism.default", 4).set_string("execution.checkpointing.interval", "10 s")
        Configuration({'parallelism.default': '4', 'execution.checkpointing.interval': '10 s'})
        >>> conf.get_integer("parallelism.default", 1)
        4
        >>> parse_duration_ms(conf.get_string("execution.checkpointing.interval", "0"))
        10000

    :param other: if given, the new configuration starts as a copy of it (a Configuration
        or any mapping of keys to values).
    """

    def __init__(self, other: Optional[Union["Configuration", Mapping[str, Any]]] = None) -> None:
        self._data: Dict[str, str] = {}
        if other is not None:
            if isinstance(other, Configuration):
                self._data.update(other._data)
            elif isinstance(other, Mapping):
                for key, value in other.items():
                    self.set(key, value)
            else:
                raise IllegalConfigurationError(
                    f"Configuration(other) takes a Configuration or a dict, got {type(other).__name__}"
                )

    # -- Mapping[str, str]: raw text values --------------------------------------------------

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    # -- typed access --------------------------------------------------------------------------

    @staticmethod
    def _check_key(key: Any) -> str:
        if not isinstance(key, str) or not key:
            raise IllegalConfigurationError(f"Configuration keys are non-empty strings, got {key!r}")
        return key

    def _lookup(self, key: str) -> Optional[str]:
        return self._data.get(self._check_key(key))

    def get_string(self, key: str, default_value: Optional[str] = None) -> Optional[str]:
        """The value of ``key`` as text, or ``default_value`` when unset."""
        value = self._lookup(key)
        return default_value if value is None else value

    def set_string(self, key: str, value: str) -> "Configuration":
        """Sets ``key`` to the text ``value``; returns this configuration."""
        if not isinstance(value, str):
            raise IllegalConfigurationError(
                f"set_string('{key}', value) needs a str, got {type(value).__name__} {value!r}; "
                "use set_integer/set_boolean/set_float or set()"
            )
        self._data[self._check_key(key)] = value
        return self

    def get_integer(self, key: str, default_value: Optional[int] = None) -> Optional[int]:
        """The value of ``key`` parsed as an integer, or ``default_value`` when unset."""
        value = self._lookup(key)
        return default_value if value is None else parse_int(value, key)

    def set_integer(self, key: str, value: int) -> "Configuration":
        """Sets ``key`` to the integer ``value``; returns this configuration."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise IllegalConfigurationError(
                f"set_integer('{key}', value) needs an int, got {type(value).__name__} {value!r}"
            )
        self._data[self._check_key(key)] = str(value)
        return self

    def get_boolean(self, key: str, default_value: Optional[bool] = None) -> Optional[bool]:
        """The value of ``key`` parsed as ``'true'``/``'false'``, or ``default_value``."""
        value = self._lookup(key)
        return default_value if value is None else parse_boolean(value, key)

    def set_boolean(self, key: str, value: bool) -> "Configuration":
        """Sets ``key`` to the boolean ``value`` (stored as ``'true'``/``'false'``)."""
        if not isinstance(value, bool):
            raise IllegalConfigurationError(
                f"set_boolean('{key}', value) needs a bool, got {type(value).__name__} {value!r}"
            )
        self._data[self._check_key(key)] = format_value(value)
        return self

    def get_float(self, key: str, default_value: Optional[float] = None) -> Optional[float]:
        """The value of ``key`` parsed as a float, or ``default_value`` when unset."""
        value = self._lookup(key)
        return default_value if value is None else parse_float(value, key)

    def set_float(self, key: str, value: float) -> "Configuration":
        """Sets ``key`` to the number ``value``; returns this configuration."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise IllegalConfigurationError(
                f"set_float('{key}', value) needs a number, got {type(value).__name__} {value!r}"
            )
        self._data[self._check_key(key)] = repr(float(value))
        return self

    def get_bytearray(self, key: str, default_value: Optional[bytearray] = None) -> Optional[bytearray]:
        """The value of ``key`` as bytes (stored Base64-encoded, as Flink does for text)."""
        value = self._lookup(key)
        if value is None:
            return default_value
        try:
            return bytearray(base64.b64decode(value.encode("ascii"), validate=True))
        except (binascii.Error, UnicodeEncodeError):
            raise IllegalConfigurationError(
                f"Could not parse value {value!r} for key '{key}': expected Base64-encoded bytes"
            ) from None

    def set_bytearray(self, key: str, value: Union[bytes, bytearray]) -> "Configuration":
        """Sets ``key`` to the bytes ``value``; returns this configuration."""
        if not isinstance(value, (bytes, bytearray)):
            raise IllegalConfigurationError(
                f"set_bytearray('{key}', value) needs bytes, got {type(value).__name__}"
            )
        self._data[self._check_key(key)] = base64.b64encode(bytes(value)).decode("ascii")
        return self

    def get(self, key: Union[str, ConfigOption], default: Any = _MISSING) -> Any:
        """A typed value (streamkernel convenience beyond PyFlink's API).

        With a :class:`ConfigOption`, the value is parsed by the option's type (its older
        keys are read too) and the option's default is used when unset, unless ``default``
        is given. With a plain key, the value is parsed to the type of ``default``
        (``bool``, ``int``, ``float``, ``Duration``, ``Time``, ``timedelta``) and returned
        as text when ``default`` is a string or omitted.

            >>> Configuration({"a": "10 s"}).get("a", Duration.of_millis(0))
            Duration.of_seconds(10)
        """
        if isinstance(key, ConfigOption):
            for candidate in (key.key(),) + key.deprecated_keys():
                if candidate in self._data:
                    return key.parse(self._data[candidate])
            return key.default_value() if default is _MISSING else default
        value = self._lookup(key)
        if default is _MISSING:
            return value
        if value is None:
            return default
        if isinstance(default, bool):
            return parse_boolean(value, key)
        if isinstance(default, int):
            return parse_int(value, key)
        if isinstance(default, float):
            return parse_float(value, key)
        if isinstance(default, Duration):
            return Duration.of_millis(parse_duration_ms(value, key))
        if isinstance(default, Time):
            return Time(parse_duration_ms(value, key))
        if isinstance(default, datetime.timedelta):
            return datetime.timedelta(milliseconds=parse_duration_ms(value, key))
        return value

    def set(self, key: Union[str, ConfigOption], value: Any) -> "Configuration":
        """Sets a typed value, written as Flink writes it (streamkernel convenience).

        With a :class:`ConfigOption` the value must fit the option's type; with a plain
        key, ``bool``/``int``/``float``/``str``/``Duration``/lists/dicts are accepted.
        """
        if isinstance(key, ConfigOption):
            self._data[key.key()] = key.format(value)
        else:
            self._data[self._check_key(key)] = format_value(value)
        return self

    # -- PyFlink's bulk operations ---------------------------------------------------------

    def key_set(self) -> Set[str]:
        """The keys of all key/value pairs stored in this configuration."""
        return set(self._data)

    def add_all_to_dict(self, target_dict: Dict) -> None:
        """Adds all entries of this configuration to ``target_dict``."""
        target_dict.update(self._data)

    def add_all(self, other: "Configuration", prefix: Optional[str] = None) -> "Configuration":
        """Adds all entries of ``other``, with ``prefix`` prepended to their keys if given."""
        if not isinstance(other, Configuration):
            other = Configuration(other)
        for key, value in other._data.items():
            self._data[(prefix or "") + key] = value
        return self

    def contains_key(self, key: str) -> bool:
        """True if ``key`` is set."""
        return self._check_key(key) in self._data

    def to_dict(self) -> Dict[str, str]:
        """A copy of this configuration as a dict of text values."""
        return dict(self._data)

    @staticmethod
    def from_dict(config_dict: Mapping[str, Any]) -> "Configuration":
        """A new configuration holding the entries of ``config_dict`` (values written as text)."""
        return Configuration(config_dict)

    def remove_config(self, key: Union[str, ConfigOption]) -> bool:
        """Removes ``key`` (and, for a ConfigOption, its deprecated keys); True if anything was removed."""
        keys = (key.key(),) + key.deprecated_keys() if isinstance(key, ConfigOption) else (key,)
        removed = False
        for candidate in keys:
            removed = self._data.pop(candidate, None) is not None or removed
        return removed

    @staticmethod
    def parse_list_value(value: str) -> List[str]:
        """The items of a list-valued setting: ``'a;b;c'`` (Flink's legacy notation) or a
        YAML flow list ``'[a, b, "c"]'`` (Flink 2's config.yaml)."""
        text = value.strip()
        if not text:
            return []
        if text.startswith("[") and text.endswith("]"):
            items, current, quote = [], "", ""
            for char in text[1:-1]:
                if quote:
                    if char == quote:
                        quote = ""
                    else:
                        current += char
                elif char in "'\"":
                    quote = char
                elif char == ",":
                    items.append(current.strip())
                    current = ""
                else:
                    current += char
            if current.strip() or items:
                items.append(current.strip())
            return items
        return [item for item in text.split(";")]

    # -- value object --------------------------------------------------------------------------

    def __deepcopy__(self, memodict: Any = None) -> "Configuration":
        return Configuration(self)

    def __copy__(self) -> "Configuration":
        return Configuration(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Configuration):
            return self._data == other._data
        return False

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __str__(self) -> str:
        return "{" + ", ".join(f"{k}={v}" for k, v in self._data.items()) + "}"

    def __repr__(self) -> str:
        return f"Configuration({self._data!r})"

