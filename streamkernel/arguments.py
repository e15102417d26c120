"""Argument types shared by the ``streamkernel`` command and the ``%flink`` magics (both argparse).

Like :mod:`streamkernel.errors`, every layer may import it: it holds no engine concept.
"""

from __future__ import annotations

import argparse
import math

__all__ = ["positive_int", "positive_float", "nonblank", "parse_dynamic_properties"]


def _shown(text: str, at: int = 40) -> str:
    return repr(text) if len(text) <= at else f"{text[:at]!r}... ({len(text)} characters)"


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1, with a message that names the bad value.

        >>> positive_int("3")
        3
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {_shown(text)}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0 (seconds, say), with a message that names the bad value.

        >>> positive_float("0.5")
        0.5
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {_shown(text)}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text.strip()}")
    return value


def nonblank(text: str) -> str:
    """An argparse type: text that is not empty or only whitespace (a name, an id prefix), stripped.

    An empty job id prefix would match every job; an empty name names nothing.

        >>> nonblank(" word count ")
        'word count'
    """
    stripped = text.strip()
    if not stripped:
        raise argparse.ArgumentTypeError(f"expected a non-empty value, got {text!r}")
    return stripped


def parse_dynamic_properties(entries: "list[str] | tuple[str, ...]", where: str = "-D") -> dict[str, str]:
    """Flink's dynamic properties, ``["key=value", ...]``, as a dict; ValueError naming the entry
    without ``=`` or key (``where`` says whose option it is).

        >>> parse_dynamic_properties(["rest.port=0", "a = b"])
        {'rest.port': '0', 'a': 'b'}
    """
    configuration: dict[str, str] = {}
    for entry in entries:
        key, sep, value = entry.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{where} {entry!r}: expected key=value (a Flink configuration entry)")
        configuration[key.strip()] = value.strip()
    return configuration
