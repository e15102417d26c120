"""Fractions of a total, capped to a range: Flink's ``RangeFraction`` and
``ProcessMemoryUtils.deriveWithFraction`` / ``deriveWithInverseFraction``.

Flink reads a fraction with ``Configuration.getFloat``: the configured text becomes a 32-bit
float, then a double, so ``0.1`` is ``0.10000000149011612`` in every product (8 GiB x 0.1 is
858993472 bytes, not 858993459). :func:`read_fraction` does the same.

A derived size capped to its min or max is logged at INFO with Flink's words and figures
(``ProcessMemoryUtils.capToMinMax``): "The derived from fraction jvm overhead memory (102.400mb
(107374184 bytes)) is less than its min value 192.000mb (201326592 bytes), min value will be used
instead".
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, NamedTuple

from streamkernel.common.config_options import ConfigOption
from streamkernel.common.memory_size import MemorySize
from streamkernel.errors import IllegalConfigurationError

__all__ = ["RangeFraction", "read_fraction", "read_memory", "range_fraction", "derive_with_fraction",
           "derive_with_inverse_fraction", "described", "java_double"]

_LOG = logging.getLogger(__name__)


def java_double(value: float) -> str:
    """``value`` as Java's ``Double.toString`` writes it (how Flink logs a fraction): the shortest
    decimal that reads back, scientific below 10^-3 and from 10^7.

    >>> java_double(0.20000000298023224), java_double(0.5), java_double(1e-05), java_double(0.0)
    ('0.20000000298023224', '0.5', '1.0E-5', '0.0')
    """
    text = repr(float(value))
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(text).as_tuple()  # the shortest digits, as Java's
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    return f"{'-' if sign else ''}{shown[0]}.{shown[1:] or '0'}E{int(exponent) + len(digits) - 1}"


class RangeFraction(NamedTuple):
    """A fraction of a total with the smallest and largest size it may give."""

    min_size: MemorySize
    max_size: MemorySize
    fraction: float


def described(option: ConfigOption[Any], configuration: Mapping[str, Any], size: MemorySize) -> str:
    """``"'key' (1.563gb (1677721600 bytes))"``: a size and the key it was configured with (or
    defaults from), for error messages."""
    return f"'{option.source_key(configuration)}' ({size.to_human_readable_string()})"


def read_memory(option: ConfigOption[int], configuration: Mapping[str, Any]) -> MemorySize:
    """The option's size (its key, a deprecated key, or its default) as a MemorySize; a bad value
    raises :class:`IllegalConfigurationError` naming the key."""
    value = option.get(configuration)
    if value is None:
        raise IllegalConfigurationError(f"Cannot read memory size from config option '{option.key()}': "
                                        f"it is not set and has no default value")
    return MemorySize(value)


def read_fraction(option: ConfigOption[float], configuration: Mapping[str, Any]) -> float:
    """The option's value as Flink reads it: a Java float widened to a double."""
    value = option.get(configuration)
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        raise IllegalConfigurationError(
            f"Invalid value {value!r} for key '{option.source_key(configuration)}': expected a fraction "
            f"in [0, 1)") from None


def range_fraction(min_option: ConfigOption[int], max_option: ConfigOption[int], fraction_option: ConfigOption[float],
                   configuration: Mapping[str, Any], min_size: MemorySize | None = None,
                   max_size: MemorySize | None = None) -> RangeFraction:
    """The configured fraction and its min and max (``min_size``/``max_size`` when the range is
    fixed, as managed memory's [0, Long.MAX_VALUE]); Flink's checks: min <= max, fraction in [0, 1)."""
    low = min_size if min_size is not None else read_memory(min_option, configuration)
    high = max_size if max_size is not None else read_memory(max_option, configuration)
    fraction = read_fraction(fraction_option, configuration)
    problem = None
    if low.get_bytes() > high.get_bytes():
        problem = (f"its min {described(min_option, configuration, low)} is more than its max "
                   f"{described(max_option, configuration, high)}")
    elif not 0 <= fraction < 1:
        problem = "the fraction must be in [0, 1)"
    if problem:
        raise IllegalConfigurationError(
            f"Inconsistently configured '{fraction_option.source_key(configuration)}' "
            f"({fraction_option.get(configuration)}) and its min ({low.to_human_readable_string()}), max "
            f"({high.to_human_readable_string()}): {problem}")
    return RangeFraction(low, high, fraction)


def _cap(description: str, relative: MemorySize, rf: RangeFraction) -> MemorySize:
    if relative.get_bytes() > rf.max_size.get_bytes():
        _LOG.info("The derived from fraction %s (%s) is greater than its max value %s, max value will be used instead",
                  description, relative.to_human_readable_string(), rf.max_size.to_human_readable_string())
        return rf.max_size
    if relative.get_bytes() < rf.min_size.get_bytes():
        _LOG.info("The derived from fraction %s (%s) is less than its min value %s, min value will be used instead",
                  description, relative.to_human_readable_string(), rf.min_size.to_human_readable_string())
        return rf.min_size
    return relative


def derive_with_fraction(description: str, base: MemorySize, rf: RangeFraction) -> MemorySize:
    """``base * fraction`` capped to [min, max] (Flink's ``deriveWithFraction``); a capped size is
    logged naming the memory (``description``, e.g. ``"network memory"``)."""
    return _cap(description, base.multiply(rf.fraction), rf)


def derive_with_inverse_fraction(description: str, base: MemorySize, rf: RangeFraction) -> MemorySize:
    """The part that is ``fraction`` of ``base + part``: ``base * fraction / (1 - fraction)``
    capped to [min, max] (Flink's ``deriveWithInverseFraction``), logged as :func:`derive_with_fraction`."""
    return _cap(description, base.multiply(rf.fraction / (1 - rf.fraction)), rf)
